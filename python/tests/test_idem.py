# SPDX-License-Identifier: MIT
# IdempotentCounters: add's (value, applied) for new ops and retries under
# every strategy, TooOldError for the window strategy, the mapping calls
# ([key], get, del, in, len, iteration over (key, value) pairs), info,
# time as for ForgetfulBloomFilter (seconds, int or float, everywhere: on
# time.monotonic() by default, now= read as a time.monotonic() value; the
# caller's seconds with now= at creation; time going backwards refused) and
# advance, copy, to_bytes / from_bytes(monotonic=) / pickle keeping the
# time mode, hostile bytes, and a hypothesis model (a dict
# of values and a set of applied op ids).
import copy
import pickle
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bloomkit

STRATEGIES = ["hybrid", "window", "fbf", "adaptive", "apbf", "rbf"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_retry_is_applied_once(strategy):
    t = bloomkit.IdempotentCounters(100, strategy=strategy)
    assert t.info["strategy"] == strategy
    r = t.add("k", client=1, seq=1, delta=5)
    assert r == (5, True)
    assert r.value == 5 and r.applied is True
    assert t.add("k", client=1, seq=1, delta=5) == (5, False)
    assert t.add("k", client=1, seq=2, delta=-2) == (3, True)
    assert t["k"] == 3
    assert t.info["applied"] == 2
    assert t.info["duplicates"] == 1


def test_none_strategy_counts_every_retry():
    t = bloomkit.IdempotentCounters(100, strategy="none")
    t.add("k", client=1, seq=1)
    assert t.add("k", client=1, seq=1) == (2, True)


def test_window_strategy_too_old_raises():
    t = bloomkit.IdempotentCounters(1000, strategy="window", window=64)
    t.add("k", client=9, seq=1000, delta=4)
    with pytest.raises(bloomkit.TooOldError) as e:
        t.add("k", client=9, seq=1, delta=3)
    assert isinstance(e.value, ValueError)
    assert e.value.value == 4
    assert t["k"] == 4


def test_mapping_calls():
    t = bloomkit.IdempotentCounters(100)
    t.add("a", client=1, seq=1, delta=1)
    t.add(b"b", client=1, seq=2, delta=2)
    t.add(7, client=1, seq=3, delta=3)
    assert len(t) == 3
    assert t[b"a"] == 1 and t.get("b") == 2 and t.get("zz") is None
    assert t.get("zz", 0) == 0
    assert "a" in t and "zz" not in t
    assert dict(t) == {b"a": 1, b"b": 2, (7).to_bytes(8, "little"): 3}
    assert sorted(t.items()) == sorted(dict(t).items())
    del t["a"]
    assert "a" not in t and len(t) == 2
    with pytest.raises(KeyError):
        t["a"]
    with pytest.raises(KeyError):
        del t["a"]
    with pytest.raises(TypeError):
        t["a"] = 5


def test_add_needs_client_and_seq():
    t = bloomkit.IdempotentCounters(100)
    with pytest.raises(TypeError):
        t.add("k", client=1)
    with pytest.raises(TypeError):
        t.add("k", seq=1)


def test_overflow_is_a_range_error():
    t = bloomkit.IdempotentCounters(100)
    t.add("k", client=1, seq=1, delta=2**63 - 1)
    with pytest.raises(bloomkit.RangeError) as e:
        t.add("k", client=1, seq=2, delta=1)
    assert isinstance(e.value, OverflowError)
    assert t["k"] == 2**63 - 1


def test_bad_configuration():
    with pytest.raises(ValueError):
        bloomkit.IdempotentCounters(100, strategy="nope")
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.IdempotentCounters(100, window=100)  # not a power of two
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.IdempotentCounters(0, strategy="fbf")


def test_advance_and_time():
    t = bloomkit.IdempotentCounters(10, strategy="fbf", now=5)
    t.add("k", client=1, seq=1, now=6)
    assert t.info["now"] == 6
    t.advance(1000)
    assert t.info["now"] == 1000
    with pytest.raises(bloomkit.InvalidArgumentError):
        t.advance(999)
    # Long after the retry timeout the op id is forgotten: a retry counts.
    assert t.add("k", client=1, seq=1) == (2, True)


@pytest.mark.parametrize("strategy", STRATEGIES + ["none"])
def test_bytes_and_pickle_round_trip(strategy):
    t = bloomkit.IdempotentCounters(100, strategy=strategy)
    for i in range(50):
        t.add(f"k{i % 7}", client=i % 3, seq=i, delta=i)
    blob = t.to_bytes()
    for u in (bloomkit.IdempotentCounters.from_bytes(blob),
              pickle.loads(pickle.dumps(t))):
        assert type(u) is bloomkit.IdempotentCounters
        assert dict(u) == dict(t)
        assert u.info["strategy"] == strategy
        if strategy != "none":
            # The restored table still knows every applied op id.
            assert u.add("k0", client=0, seq=0).applied is False


def test_hostile_bytes_raise_corrupt_error():
    t = bloomkit.IdempotentCounters(100)
    t.add("k", client=1, seq=1)
    blob = t.to_bytes()
    for bad in (b"", blob[:-1], blob[:16], b"\x00" * len(blob)):
        with pytest.raises(bloomkit.CorruptError):
            bloomkit.IdempotentCounters.from_bytes(bad)


@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data):
    try:
        bloomkit.IdempotentCounters.from_bytes(data)
    except bloomkit.Error:
        pass


ops = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                         st.integers(0, 3), st.integers(0, 20),
                         st.integers(-100, 100)), max_size=150)


@given(ops, st.sampled_from(["hybrid", "window"]))
def test_matches_a_model(seq_ops, strategy):
    # Within the window and the timeout, the exact strategies match a model
    # that applies each op id once.
    t = bloomkit.IdempotentCounters(10**9, strategy=strategy)
    values, seen = {}, set()
    for key, client, seq, delta in seq_ops:
        r = t.add(key, client=client, seq=seq, delta=delta)
        fresh = (client, seq) not in seen
        if fresh:
            seen.add((client, seq))
            values[key] = values.get(key, 0) + delta
        assert r.applied is fresh
        assert r.value == values.get(key, 0)
    model = {k.encode(): v for k, v in values.items()}
    assert dict(t) == model
    assert sorted(t.items()) == sorted(model.items())
    assert sorted(iter(t)) == sorted(model.items())  # (key, value) pairs
    assert len(t) == len(model)
    for k, v in model.items():
        assert t[k] == v and t.get(k) == v and k in t


def test_monotonic_clock_by_default():
    t = bloomkit.IdempotentCounters(0.05, strategy="fbf")
    info = t.info
    assert info["clock"] == "monotonic" and t.monotonic is True
    # now is a time.monotonic() reading, as for ForgetfulBloomFilter.
    assert isinstance(info["now"], float)
    assert abs(info["now"] - time.monotonic()) < 5 and t.now == info["now"]
    assert info["window_min"] >= 0.05 and info["refresh_period"] <= 0.05
    assert t.add("k", client=1, seq=1) == (1, True)
    assert t.add("k", client=1, seq=1) == (1, False)  # a retry in time
    time.sleep(0.3)  # well past the window: the op id is forgotten
    assert t.add("k", client=1, seq=1) == (2, True)
    assert t.info["now"] >= info["now"] + 0.3
    t.advance()  # to time.monotonic()
    # now= is a time.monotonic() value: accepted at or after the clock.
    m = time.monotonic() + 1
    assert t.add("k", client=1, seq=2, now=m) == (3, True)
    assert t.now == pytest.approx(m, abs=0.002)
    assert t.add("k", client=1, seq=2, now=m + 0.01) == (3, False)
    t.advance(m + 0.5)
    assert t.now == pytest.approx(m + 0.5, abs=0.002)
    with pytest.raises(bloomkit.InvalidArgumentError, match="backwards"):
        t.add("k", client=1, seq=3, now=m)  # before the clock
    with pytest.raises(bloomkit.InvalidArgumentError, match="backwards"):
        t.advance(m)
    with pytest.raises(ValueError):
        t.advance(5)  # before the table's origin (time.monotonic() at creation)
    assert t["k"] == 3
    with pytest.raises(TypeError):
        bloomkit.IdempotentCounters("1s")
    with pytest.raises(ValueError):
        bloomkit.IdempotentCounters(-1.0)
    with pytest.raises(ValueError):
        bloomkit.IdempotentCounters(float("nan"))


def test_explicit_clock_with_now():
    t = bloomkit.IdempotentCounters(10, strategy="hybrid", now=0)
    assert t.info["clock"] == "explicit" and t.info["now"] == 0
    assert isinstance(t.info["now"], float) and t.monotonic is False
    t.add("k", client=1, seq=1, now=3)
    t.add("k", client=1, seq=2)  # without now: the table's clock as is
    assert t.info["now"] == 3 and t.now == 3
    t.advance()  # without now: the table's own clock, nothing moves
    assert t.now == 3
    with pytest.raises(bloomkit.InvalidArgumentError, match="backwards"):
        t.add("k", client=1, seq=3, now=2.999)
    assert t.info["applied"] == 2
    with pytest.raises(TypeError):
        t.advance("3")
    with pytest.raises(ValueError):
        t.advance(float("inf"))


def test_explicit_time_is_float_seconds():
    # Seconds, int or float, on a clock of whole milliseconds: the unit of
    # ForgetfulBloomFilter, so one trace replays through both.
    t = bloomkit.IdempotentCounters(0.5, strategy="fbf", now=0.25,
                                    refresh_period=0.125, n_past=4)
    f = bloomkit.ForgetfulBloomFilter(100, 0.01, 0.5, now=0.25)
    info = t.info
    assert info["now"] == 0.25 and info["refresh_period"] == 0.125
    assert info["window_min"] >= 0.5
    assert t.add("k", client=1, seq=1, now=0.3) == (1, True)
    f.add("k", now=0.3)
    assert t.now == f.now == 0.3
    assert t.add("k", client=1, seq=1, now=0.7) == (1, False)  # in time
    t.advance(10)  # far past the timeout: the op id is forgotten
    assert t.add("k", client=1, seq=1) == (2, True)
    assert t.now == 10.0
    # Durations round up to whole milliseconds.
    u = bloomkit.IdempotentCounters(0.0001, strategy="window", now=0)
    assert u.info["window_min"] == 0.001
    with pytest.raises(ValueError):
        bloomkit.IdempotentCounters(2**41, now=0)  # past 2**40 ms
    with pytest.raises(ValueError):
        bloomkit.IdempotentCounters(10, refresh_period=-1, now=0)


@pytest.mark.parametrize("now", [None, 100])
def test_copies_keep_the_clock(now):
    t = bloomkit.IdempotentCounters(60, strategy="hybrid", now=now)
    t.add("a", client=1, seq=1, delta=4)
    blob = t.to_bytes()
    for u in (pickle.loads(pickle.dumps(t)), t.copy(), copy.deepcopy(t),
              bloomkit.IdempotentCounters.from_bytes(
                  blob, monotonic=now is None)):
        assert u.info["clock"] == t.info["clock"]
        assert u.monotonic is t.monotonic
        assert u.info["now"] >= t.info["now"]
        assert dict(u) == dict(t)
        assert u.add("a", client=1, seq=1).applied is False  # still known
        u.add("a", client=1, seq=2)
        assert t["a"] == 4  # independent
    # from_bytes(data) loads on explicit time at the blob's clock (for a
    # monotonic table: its seconds since creation), as the FBF's does.
    u = bloomkit.IdempotentCounters.from_bytes(blob)
    assert u.monotonic is False
    if now is not None:
        assert u.now == t.now == now
        with pytest.raises(bloomkit.InvalidArgumentError):
            u.advance(now - 1)
        u.advance(now + 5)
        assert u.info["now"] == now + 5
    else:
        assert 0 <= u.now < 5
    with pytest.raises(TypeError):
        bloomkit.IdempotentCounters.from_bytes(blob, now=1)  # monotonic=


def test_configuration_knobs_reach_the_library():
    t = bloomkit.IdempotentCounters(8, strategy="fbf", now=0, n_past=3,
                                    refresh_period=2, fpp=0.01,
                                    expected_keys=100)
    info = t.info
    assert info["refresh_period"] == 2 and info["n_filters"] >= 4
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.IdempotentCounters(8, strategy="fbf", now=0, n_past=1,
                                    refresh_period=2)  # (N+1) t < timeout
    a = bloomkit.IdempotentCounters(8, strategy="adaptive", now=0,
                                    target_fpp=0.01, max_filters=6)
    assert a.info["strategy"] == "adaptive"


@pytest.mark.parametrize("kwargs", [{"window": 2**32 + 256}, {"window": -1},
                                    {"n_past": 2**32 + 2}, {"now": -1}])
def test_out_of_range_arguments_do_not_wrap(kwargs):
    with pytest.raises(ValueError):
        bloomkit.IdempotentCounters(100, **kwargs)


# ---- add_many ---------------------------------------------------------------

def test_add_many_lists():
    t = bloomkit.IdempotentCounters(100, now=0)
    values, applied = t.add_many(["a", "b", "a"], [1, 1, 1], [1, 2, 1], [5, 6, 7])
    # The third op retries the first inside the batch: a duplicate.
    assert values == [5, 6, 5] and applied == [True, True, False]
    assert t.add_many([b"b", 7], [1, 1], [2, 3]) == ([6, 1], [False, True])
    assert t.add_many([], [], []) == ([], [])
    # One int as every op's delta.
    assert t.add_many(["c", "c"], (2, 2), (1, 2), -3) == ([-3, -6], [True, True])
    assert t.info["applied"] == 5 and t.info["duplicates"] == 2


def test_add_many_numpy_arrays():
    np = pytest.importorskip("numpy")
    t = bloomkit.IdempotentCounters(100, now=0)
    keys = np.array([1, 2, 1, 3], dtype=np.uint64)
    clients = np.array([4, 4, 4, 5], dtype=np.uint64)
    seqs = np.array([0, 1, 0, 2**63], dtype=np.uint64)
    deltas = np.array([10, -1, 10, 2], dtype=np.int64)
    values, applied = t.add_many(keys, clients, seqs, deltas)
    assert values.dtype == np.int64 and applied.dtype == np.bool_
    assert values.tolist() == [10, -1, 10, 2]
    assert applied.tolist() == [True, True, False, True]
    assert t[1] == 10 and t[(3).to_bytes(8, "little")] == 2
    # Keys as a list, one column an array: arrays come back.
    v, a = t.add_many(["x"], np.array([1], dtype=np.int64), [9])
    assert isinstance(v, np.ndarray) and a.tolist() == [True]
    with pytest.raises(ValueError):  # a negative seq
        t.add_many(["x"], [1], np.array([-1], dtype=np.int64))
    with pytest.raises(TypeError):  # floats are not ids
        t.add_many(["x"], np.array([1.0]), [9])
    with pytest.raises(ValueError):  # a length that is not the keys'
        t.add_many(["x"], np.array([1, 2], dtype=np.uint64), [9])


def test_add_many_bad_arguments_change_nothing():
    t = bloomkit.IdempotentCounters(100, now=0)
    with pytest.raises(ValueError):
        t.add_many(["a", "b"], [1], [1, 2])
    with pytest.raises(ValueError):
        t.add_many(["a", "b"], [1, 1], [1, 2], [1])
    with pytest.raises(TypeError):
        t.add_many(["a"], [1], ["1"])
    with pytest.raises(TypeError):
        t.add_many(["a"], 1, [1])
    with pytest.raises(ValueError):
        t.add_many(["a"], [-1], [1])
    with pytest.raises(OverflowError):
        t.add_many(["a"], [1], [1], [2**63])
    with pytest.raises(bloomkit.InvalidArgumentError):
        t.add_many(["a", ""], [1, 1], [1, 2])  # an empty key: no op applied
    t.advance(5)
    with pytest.raises(bloomkit.InvalidArgumentError):
        t.add_many(["a"], [1], [1], now=4)  # time going backwards
    assert len(t) == 0 and t.info["applied"] == 0


def test_add_many_refused_ops_raise_after_the_batch():
    w = bloomkit.IdempotentCounters(1000, strategy="window", window=64, now=0)
    w.add("k", client=9, seq=1000, delta=4)
    with pytest.raises(bloomkit.TooOldError) as e:
        w.add_many(["k", "k", "j"], [9, 9, 9], [1, 1001, 2], [3, 1, 1])
    # Every op was processed; the exception carries the batch's results.
    assert e.value.index == 0 and e.value.refused == [0, 2]
    assert e.value.value == 4
    assert e.value.values == [4, 5, 0] and e.value.applied == [False, True, False]
    assert w["k"] == 5 and "j" not in w
    t = bloomkit.IdempotentCounters(100, now=0)
    with pytest.raises(bloomkit.RangeError) as r:
        t.add_many(["x", "x", "y", "x"], [2, 2, 2, 2], [1, 2, 3, 1],
                   [2**63 - 1, 1, 5, 2**63 - 1])
    assert isinstance(r.value, OverflowError)
    assert r.value.index == 1 and r.value.refused == [1]
    # The retry of op (2, 1) at the limit is a duplicate, not refused.
    assert r.value.values == [2**63 - 1, 0, 5, 2**63 - 1]
    assert r.value.applied == [True, False, True, False]
    assert t.add("x", client=2, seq=2, delta=-1) == (2**63 - 2, True)


# Streams of ops with retries: a retry repeats an earlier op (key, id, delta).
stream_ops = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]),
                                st.integers(0, 3), st.integers(-50, 50)),
                      min_size=1, max_size=120)


@given(stream_ops, st.lists(st.integers(0, 119), max_size=40),
       st.lists(st.integers(1, 40), min_size=1, max_size=10),
       st.sampled_from(["hybrid", "window", "fbf", "rbf", "none"]))
def test_add_many_matches_a_loop_of_add(new_ops, retries, sizes, strategy):
    stream, seqs = [], [0, 0, 0, 0]
    for key, client, delta in new_ops:
        seqs[client] += 1
        stream.append((key, client, seqs[client], delta))
    for r in retries:  # each retry placed after its op
        if r < len(stream):
            stream.insert(min(len(stream), r + 1 + r % 7), stream[r])
    a = bloomkit.IdempotentCounters(10**6, strategy=strategy, now=0)
    b = bloomkit.IdempotentCounters(10**6, strategy=strategy, now=0)
    single = [a.add(k, client=c, seq=s, delta=d) for k, c, s, d in stream]
    got_values, got_applied, i, j = [], [], 0, 0
    while i < len(stream):
        part = stream[i:i + sizes[j % len(sizes)]]
        v, f = b.add_many([o[0] for o in part], [o[1] for o in part],
                          [o[2] for o in part], [o[3] for o in part])
        got_values += v
        got_applied += f
        i += len(part)
        j += 1
    assert got_values == [r.value for r in single]
    assert got_applied == [r.applied for r in single]
    assert a.to_bytes() == b.to_bytes()


def test_add_many_threads_apply_each_op_once():
    import threading
    n = 4000
    keys = [f"k{i % 16}" for i in range(n)]
    clients = [i % 5 for i in range(n)]
    seqs = [i // 5 for i in range(n)]
    deltas = [i % 7 + 1 for i in range(n)]
    for strategy in ["hybrid", "fbf"]:
        t = bloomkit.IdempotentCounters(10**6, strategy=strategy, now=0,
                                        ops_per_period=10**5)
        results = [None, None]

        def run(me):
            # Overlapping batches of 256 and more (the GIL released), cut
            # differently by each thread.
            out_v, out_a, i = [], [], 0
            size = 256 if me == 0 else 300
            while i < n:
                v, a = t.add_many(keys[i:i + size], clients[i:i + size],
                                  seqs[i:i + size], deltas[i:i + size])
                out_v += v
                out_a += a
                i += size
            results[me] = out_a

        ts = [threading.Thread(target=run, args=(me,)) for me in range(2)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        both = [x and y for x, y in zip(*results)]
        either = [x or y for x, y in zip(*results)]
        assert not any(both) and all(either)
        want = {}
        for k, d in zip(keys, deltas):
            want[k] = want.get(k, 0) + d
        assert {k.decode(): v for k, v in t.items()} == want
        assert t.info["applied"] == n and t.info["duplicates"] == n
