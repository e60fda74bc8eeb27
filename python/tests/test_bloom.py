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
                 st.integers(min_value=-(2**63), max_value=2**64 - 1))


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
     ((0, 0.01), {}), ((-1, 0.01), {})],
)
def test_bad_arguments_raise_value_error(args, kwargs):
    with pytest.raises(ValueError):
        bloomkit.BloomFilter(*args, **kwargs)


def test_bad_fpp_is_an_invalid_argument_error():
    with pytest.raises(bloomkit.InvalidArgumentError) as e:
        bloomkit.BloomFilter(10, 2.0)
    assert isinstance(e.value, bloomkit.Error)
    assert "BK_EINVAL" in str(e.value)


def test_update_propagates_iterator_errors():
    def gen():
        yield "a"
        raise RuntimeError("boom")

    b = bloomkit.BloomFilter(10, 0.01)
    with pytest.raises(RuntimeError):
        b.update(gen())
    assert "a" in b


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
