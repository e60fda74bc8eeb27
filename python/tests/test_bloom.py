# SPDX-License-Identifier: MIT
# BloomFilter: construction and its errors, add / update / in /
# add_if_absent, len() as the cardinality estimate, to_bytes / from_bytes /
# pickle (also for hostile bytes), and hypothesis properties: no false
# negative for any set of keys, and round trips that answer the same.
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bloomkit

LAYOUTS = ["standard", "blocked", "split_block"]
keys = st.one_of(st.binary(max_size=40), st.text(max_size=20),
                 st.integers(min_value=-(2**63), max_value=2**64 - 1),
                 st.floats())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_contains_and_layout(layout):
    b = bloomkit.BloomFilter(1000, 0.01, layout=layout, seed=7)
    assert b.info["layout"] == layout
    assert b.info["seed"] == 7
    b.add("x")
    b.update([b"y", 3, "z"])
    for k in ("x", "y", 3, "z"):
        assert k in b
    absent = sum(1 for i in range(10_000) if f"absent-{i}" in b)
    assert absent < 300  # 1 % target, 4 keys in: far below 3 %


def test_add_if_absent():
    b = bloomkit.BloomFilter(100, 0.01)
    assert b.add_if_absent("k") is True
    assert b.add_if_absent("k") is False
    assert "k" in b


def test_len_is_the_cardinality_estimate():
    b = bloomkit.BloomFilter(100_000, 0.01)
    assert len(b) == 0
    b.update(range(10_000))
    assert 9_500 <= len(b) <= 10_500  # the estimate, within 5 %


@pytest.mark.parametrize(
    "args, kwargs",
    [((1000, 0.0), {}), ((1000, 1.0), {}), ((1000, 0.01), {"layout": "x"}),
     ((0, 0.01), {}), ((-1, 0.01), {}), ((1000,), {"hash": "md5"}),
     ((1000,), {"k": 65}), ((), {}), ((1000,), {"layout": "split_block",
                                                   "k": 3})],
)
def test_bad_arguments_raise_value_error(args, kwargs):
    with pytest.raises(ValueError):
        bloomkit.BloomFilter(*args, **kwargs)


def test_bad_fpp_is_an_invalid_argument_error():
    with pytest.raises(bloomkit.InvalidArgumentError) as e:
        bloomkit.BloomFilter(10, 2.0)
    assert isinstance(e.value, bloomkit.Error)
    assert "BK_EINVAL" in str(e.value)


def test_update_propagates_iterator_errors_and_adds_nothing():
    def gen():
        yield "a"
        raise RuntimeError("boom")

    b = bloomkit.BloomFilter(10, 0.01)
    with pytest.raises(RuntimeError):
        b.update(gen())
    assert "a" not in b  # the keys are all read before any is added
    with pytest.raises(TypeError):
        b.update(["b", None])
    assert "b" not in b


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bytes_and_pickle_round_trip(layout):
    b = bloomkit.BloomFilter(500, 0.01, layout=layout, seed=3)
    b.update(range(200))
    blob = b.to_bytes()
    c = bloomkit.BloomFilter.from_bytes(blob)
    d = pickle.loads(pickle.dumps(b))
    for x in (c, d):
        assert type(x) is bloomkit.BloomFilter
        assert x.to_bytes() == blob
        assert all(i in x for i in range(200))
        assert x.info == b.info


def test_hostile_bytes_raise_corrupt_error():
    blob = bloomkit.BloomFilter(100, 0.01).to_bytes()
    for bad in (b"", b"\x00" * 8, blob[:-1], blob[: len(blob) // 2], b"x" * 100):
        with pytest.raises(bloomkit.CorruptError) as e:
            bloomkit.BloomFilter.from_bytes(bad)
        assert isinstance(e.value, ValueError)
        assert "corrupt" in str(e.value)


@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data):
    try:
        b = bloomkit.BloomFilter.from_bytes(data)
    except bloomkit.Error:
        return
    assert b.to_bytes() == data


@given(st.lists(keys, max_size=200), st.sampled_from(LAYOUTS))
def test_no_false_negatives(ks, layout):
    b = bloomkit.BloomFilter(max(len(ks), 1), 0.01, layout=layout)
    b.update(ks)
    assert all(k in b for k in ks)
    assert all(b.add_if_absent(k) is False for k in ks)


@given(st.lists(keys, max_size=100), st.lists(keys, max_size=50))
def test_round_trip_answers_the_same(ks, probes):
    b = bloomkit.BloomFilter(200, 0.05)
    b.update(ks)
    c = bloomkit.BloomFilter.from_bytes(b.to_bytes())
    assert [p in c for p in ks + probes] == [p in b for p in ks + probes]


def test_defaults_are_split_block_xxh3_seed_0():
    b = bloomkit.BloomFilter(1000)
    assert b.info["layout"] == "split_block"
    assert b.info["hash"] == "xxh3"
    assert b.info["seed"] == 0
    assert b.single_writer is False


def test_sized_by_m_bits_and_k():
    b = bloomkit.BloomFilter(m_bits=4096, k=5, layout="standard", hash="xxh64")
    assert (b.info["m_bits"], b.info["k"], b.info["hash"]) == (4096, 5, "xxh64")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_fpp_is_the_current_fill(layout):
    b = bloomkit.BloomFilter(10_000, 0.01, layout=layout)
    assert b.fpp == 0.0
    b.update(range(10_000))
    # Full at capacity: near the 1 % target (the block layouts' own rate).
    assert 0.003 < b.fpp < 0.03
    measured = sum(1 for i in range(20_000) if f"absent-{i}" in b) / 20_000
    assert abs(measured - b.fpp) < 0.5 * b.fpp + 0.002


def test_union_and_intersection():
    a = bloomkit.BloomFilter(1000, 0.01, seed=1)
    b = bloomkit.BloomFilter(1000, 0.01, seed=1)
    a.update(range(0, 300))
    b.update(range(200, 500))
    u = a | b
    i = a & b
    assert all(k in u for k in range(500))
    assert all(k in i for k in range(200, 300))
    assert sum(1 for k in range(0, 200) if k in i) < 20  # mostly gone
    assert 0 in a and 499 not in a  # a and b unchanged
    c = a.copy()
    c |= b
    assert c.to_bytes() == u.to_bytes()
    c &= a
    assert all(k in c for k in range(300))
    with pytest.raises(bloomkit.MismatchError):
        a | bloomkit.BloomFilter(1000, 0.01, seed=2)
    with pytest.raises(bloomkit.MismatchError):
        a |= bloomkit.BloomFilter(50, 0.01, seed=1)
    with pytest.raises(TypeError):
        a | {1}


def test_copy_is_independent_and_clear_empties():
    import copy

    a = bloomkit.BloomFilter(100, 0.01)
    a.add("k")
    for c in (a.copy(), copy.copy(a), copy.deepcopy(a)):
        assert "k" in c
        c.clear()
        assert "k" not in c and len(c) == 0
    assert "k" in a


def test_single_writer_mode():
    a = bloomkit.BloomFilter(1000, 0.01, single_writer=True)
    assert a.single_writer is True
    a.update(range(100))
    assert a.add_if_absent(5) is False
    assert a.copy().single_writer is True
    a.single_writer = False
    a.update(range(100, 200))
    assert all(k in a for k in range(200))
    assert pickle.loads(pickle.dumps(a)).single_writer is False


def test_parquet_bitset_round_trip():
    p = bloomkit.BloomFilter.for_parquet(5000, 0.01)
    assert p.info["hash"] == "xxh64" and p.info["seed"] == 0
    nbytes = p.info["m_bits"] // 8
    assert nbytes & (nbytes - 1) == 0 and nbytes >= 32
    p.update(range(5000))
    bits = p.parquet_bitset()
    assert len(bits) == nbytes
    q = bloomkit.BloomFilter.from_parquet(bits)
    assert q.parquet_bitset() == bits
    assert all(k in q for k in range(5000))
    with pytest.raises(bloomkit.MismatchError):
        bloomkit.BloomFilter(100).parquet_bitset()
    for bad in (b"", b"x" * 33, b"x" * 16):
        with pytest.raises(bloomkit.CorruptError):
            bloomkit.BloomFilter.from_parquet(bad)


def test_parquet_bitset_one_bit_per_word():
    # Parquet's split-block filter: a value sets one bit in each of the
    # eight 32-bit words of one 32-byte block (the C tests check the
    # specification's bit positions; this checks the binding's bytes).
    import struct

    p = bloomkit.BloomFilter.from_parquet(bytes(32))
    p.add(42)
    words = struct.unpack("<8I", p.parquet_bitset())
    assert all(bin(w).count("1") == 1 for w in words)
    assert 42 in p
