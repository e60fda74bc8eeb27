# SPDX-License-Identifier: MIT
# BloomClock and VectorClock: construction and its errors, tick / merge /
# compare as bloomkit.Order, a vector clock's exact causality against a
# reference computed here (hypothesis: random runs of sends, receives and
# local events), a Bloom clock's "never a false negative" on the same runs,
# probability_before, == / copy / merge from the wire form / unseen,
# to_bytes / from_bytes / pickle (also hostile bytes).
import copy as copymod
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bloomkit

Order = bloomkit.Order


def copy(c):
    return pickle.loads(pickle.dumps(c))


def test_order_mirrors_the_c_values():
    assert [(o.name, o.value) for o in Order] == [
        ("EQUAL", 0), ("BEFORE", 1), ("AFTER", 2), ("CONCURRENT", 3)]


@pytest.mark.parametrize("make", [lambda p: bloomkit.BloomClock(256, 3, p),
                                  lambda p: bloomkit.VectorClock(4, p)])
def test_tick_makes_before_and_merge_makes_after(make):
    a, b = make(0), make(1)
    assert a.compare(b) is Order.EQUAL
    old = copy(a)
    a.tick()
    assert old.compare(a) is Order.BEFORE and a.compare(old) is Order.AFTER
    b.tick()
    assert a.compare(b) in (Order.CONCURRENT, Order.BEFORE, Order.AFTER)
    b_old = copy(b)
    b.merge(a)
    assert b.compare(a) is Order.AFTER and b.compare(b_old) is Order.AFTER
    assert a.compare(b) is Order.BEFORE


def test_vector_clock_entries_and_concurrency():
    a, b = bloomkit.VectorClock(3, 0), bloomkit.VectorClock(3, 1)
    a.tick()
    b.tick()
    b.tick()
    assert list(a) == [1, 0, 0] and list(b) == [0, 2, 0] and len(a) == 3
    assert a.compare(b) is Order.CONCURRENT
    a.merge(b)
    assert list(a) == [2, 2, 0] and a[-1] == 0
    with pytest.raises(IndexError):
        a[3]


def reference(v, w):
    """The exact order of vector timestamps v and w."""
    if v == w:
        return Order.EQUAL
    if all(x <= y for x, y in zip(v, w)):
        return Order.BEFORE
    if all(x >= y for x, y in zip(v, w)):
        return Order.AFTER
    return Order.CONCURRENT


P = 4
# ("tick", i) or ("recv", i, j): process i receives j's current clock.
ops = st.lists(st.one_of(
    st.tuples(st.just("tick"), st.integers(0, P - 1)),
    st.tuples(st.just("recv"), st.integers(0, P - 1), st.integers(0, P - 1))),
    max_size=60)


@given(ops, st.integers(min_value=0, max_value=2**64 - 1))
def test_random_runs(run, seed):
    vcs = [bloomkit.VectorClock(P, i) for i in range(P)]
    bcs = [bloomkit.BloomClock(64, 2, i, seed=seed) for i in range(P)]
    ref = [[0] * P for _ in range(P)]
    history = []  # (reference vector, vector clock, Bloom clock) per event
    for op in run:
        i = op[1]
        if op[0] == "recv":
            j = op[2]
            if len(history) % 2:  # a clock, or its wire form off a socket
                vcs[i].merge(copy(vcs[j]))
                bcs[i].merge(copy(bcs[j]))
            else:
                vcs[i].merge(vcs[j].to_bytes())
                bcs[i].merge(bytearray(bcs[j].to_bytes()))
            ref[i] = [max(x, y) for x, y in zip(ref[i], ref[j])]
        else:
            vcs[i].tick()
            bcs[i].tick()
        ref[i][i] += 1
        assert list(vcs[i]) == ref[i]
        history.append((list(ref[i]), copy(vcs[i]), copy(bcs[i])))
    for rv, vc, bc in history[-12:]:
        for rw, wc, wb in history[-12:]:
            want = reference(rv, rw)
            assert vc.compare(wc) is want
            assert (vc == wc) is (want is Order.EQUAL)
            assert (vc != wc) is (want is not Order.EQUAL)
            assert vc.unseen(wc) == sum(max(0, y - x) for x, y in zip(rv, rw))
            got = bc.compare(wb)
            if want is Order.BEFORE:  # never a false negative
                assert got in (Order.BEFORE, Order.EQUAL)
            elif want is Order.AFTER:
                assert got in (Order.AFTER, Order.EQUAL)
            elif want is Order.EQUAL:
                assert got is Order.EQUAL
            assert 0.0 <= bc.probability_before(wb) <= 1.0


def test_probability_before():
    fresh = bloomkit.BloomClock(128, 3, 0)
    y = bloomkit.BloomClock(128, 3, 1)
    for _ in range(20):
        y.tick()
    # Any clock covers the zero clock.
    assert fresh.probability_before(y) == pytest.approx(1.0)
    # y's 20 events (60 increments) are unlikely to be covered by a clock of
    # 3 events (9 increments) by chance.
    z = bloomkit.BloomClock(128, 3, 2)
    for _ in range(3):
        z.tick()
    assert y.probability_before(z) < 1e-6


@pytest.mark.parametrize("make", [
    lambda: bloomkit.BloomClock(100, 4, 2, counter_bits=16, seed=3),
    lambda: bloomkit.VectorClock(5, 2)])
def test_bytes_and_pickle_round_trip(make):
    a = make()
    for _ in range(7):
        a.tick()
    b = type(a).from_bytes(a.to_bytes())
    c = pickle.loads(pickle.dumps(a))
    assert type(b) is type(a)
    assert b.to_bytes() == a.to_bytes() == c.to_bytes()
    assert a.compare(b) is Order.EQUAL and a.compare(c) is Order.EQUAL
    b.tick()
    assert a.compare(b) is Order.BEFORE


def test_bloom_clock_info():
    a = bloomkit.BloomClock(100, 4, 2, counter_bits=16, seed=3)
    a.tick()
    info = a.info
    assert (info["m"], info["k"], info["counter_bits"], info["seed"],
            info["process_id"], info["events"]) == (100, 4, 16, 3, 2, 1)
    assert 1 <= info["sum"] <= 4


@pytest.mark.parametrize("cls", [bloomkit.BloomClock, bloomkit.VectorClock])
def test_hostile_bytes_raise_corrupt_error(cls):
    a = cls(16, 1) if cls is bloomkit.VectorClock else cls(16, 2)
    a.tick()
    blob = a.to_bytes()
    for bad in (b"", b"garbage", blob[:-1], blob[:8] + b"\xff" * (len(blob) - 8),
                bloomkit.BloomFilter(10, 0.01).to_bytes()):
        with pytest.raises(bloomkit.CorruptError):
            cls.from_bytes(bad)


@pytest.mark.parametrize(
    "args, kwargs",
    [((0, 2), {}), ((16, 0), {}), ((16, 65), {}), ((-1, 2), {}),
     ((16, 2), {"counter_bits": 12}), ((16, 2), {"counter_bits": 64}),
     ((2**24 + 1, 2), {})],
)
def test_bloom_clock_bad_arguments_raise_value_error(args, kwargs):
    with pytest.raises(ValueError):
        bloomkit.BloomClock(*args, **kwargs)


@pytest.mark.parametrize("args", [(0,), (3, 3), (-1,), (2**24 + 1,)])
def test_vector_clock_bad_arguments_raise_value_error(args):
    with pytest.raises(ValueError):
        bloomkit.VectorClock(*args)


def test_mismatch_and_wrong_types():
    a, b = bloomkit.BloomClock(16, 2), bloomkit.BloomClock(32, 2)
    with pytest.raises(bloomkit.Error) as e:
        a.merge(b)
    assert "BK_EMISMATCH" in str(e.value)
    with pytest.raises(bloomkit.Error):
        a.compare(bloomkit.BloomClock(16, 2, seed=1))
    v, w = bloomkit.VectorClock(3), bloomkit.VectorClock(4)
    with pytest.raises(bloomkit.Error):
        v.compare(w)
    with pytest.raises(bloomkit.Error):
        v.merge(w)
    assert list(v) == [0, 0, 0]  # nothing changed
    with pytest.raises(TypeError):
        a.merge(v)
    with pytest.raises(TypeError):
        v.compare(a)
    with pytest.raises(TypeError):
        a.probability_before(None)


@pytest.mark.parametrize("make", [lambda p: bloomkit.BloomClock(128, 3, p, seed=7),
                                  lambda p: bloomkit.VectorClock(3, p)])
def test_equality_copy_and_merge_from_bytes(make):
    a, b = make(0), make(1)
    assert a == b and not (a != b)  # both zero
    a.tick()
    assert a != b and a != "clock" and not (a == a.to_bytes())
    c = a.copy()
    assert c == a and copymod.copy(a) == a and copymod.deepcopy(a) == a
    c.tick()
    assert c != a and a.compare(c) is Order.BEFORE  # independent
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(TypeError):
        a < c
    # A receive from the wire form is the receive from the clock.
    x, y = b.copy(), b.copy()
    x.merge(a)
    y.merge(a.to_bytes())
    assert x == y and x.to_bytes() == y.to_bytes()
    before = y.to_bytes()
    for bad in (b"", a.to_bytes()[:-1], b"\x00" * 64):
        with pytest.raises(bloomkit.CorruptError):
            y.merge(bad)
        assert y.to_bytes() == before  # checked before the clock changed
    with pytest.raises(TypeError):
        y.merge(42)


def test_clocks_of_other_shapes_are_unequal_and_do_not_merge():
    a, b = bloomkit.BloomClock(64, 2), bloomkit.BloomClock(128, 2)
    assert a != b
    with pytest.raises(bloomkit.MismatchError):
        a.merge(b.to_bytes())
    v, w = bloomkit.VectorClock(3), bloomkit.VectorClock(4)
    assert v != w
    with pytest.raises(bloomkit.MismatchError):
        v.unseen(w)
    assert a != v
