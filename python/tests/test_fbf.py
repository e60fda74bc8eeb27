# SPDX-License-Identifier: MIT
# ForgetfulBloomFilter: explicit time (now=), the window (a key is kept at
# least `window` and forgotten within the filter's window_max), contains
# with now= answering as of that time without changing the filter, advance
# and its errors, to_bytes / from_bytes / pickle, and a hypothesis model
# (a dict of insertion times: no key younger than the window is ever
# missing).
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bloomkit


def test_key_is_kept_for_the_window_then_forgotten():
    f = bloomkit.ForgetfulBloomFilter(1000, 0.01, 30, now=0)
    f.add("k", now=5)
    assert "k" in f
    assert f.contains("k", now=5 + 30)
    info = f.info
    assert info["window_min"] >= 30
    late = 5 + info["window_max"] + info["refresh_period"]
    f.advance(late)
    assert "k" not in f
    assert f.info["now"] == late


def test_contains_now_does_not_change_the_filter():
    f = bloomkit.ForgetfulBloomFilter(1000, 0.01, 30, now=0)
    f.add(b"k", now=1)
    assert f.contains(b"k", now=10_000) is False
    assert f.info["now"] == 1
    assert f.contains(b"k") is True
    assert b"k" in f


def test_add_if_absent_with_time():
    f = bloomkit.ForgetfulBloomFilter(1000, 0.01, 20, n_past=3, now=0)
    assert f.info["n_past"] == 3
    assert f.add_if_absent("k", now=1) is True
    assert f.add_if_absent("k", now=2) is False
    f.advance(10_000)
    assert f.add_if_absent("k") is True


def test_time_going_backwards_is_an_error():
    f = bloomkit.ForgetfulBloomFilter(100, 0.01, 10, now=50)
    with pytest.raises(bloomkit.InvalidArgumentError):
        f.advance(49)
    with pytest.raises(ValueError):
        f.add("k", now=-1)
    with pytest.raises(ValueError):
        bloomkit.ForgetfulBloomFilter(100, 0.01, 0)
    with pytest.raises(ValueError):
        bloomkit.ForgetfulBloomFilter(100, 1.5, 10)
    with pytest.raises(ValueError):
        bloomkit.ForgetfulBloomFilter(100, 0.0, 10)
    for n_past in (0, 63, 2**32 + 2, -1):
        with pytest.raises(ValueError):
            bloomkit.ForgetfulBloomFilter(100, 0.01, 10, n_past=n_past)


def test_bytes_and_pickle_round_trip():
    f = bloomkit.ForgetfulBloomFilter(1000, 0.01, 30, now=0)
    for i in range(100):
        f.add(i, now=i)
    blob = f.to_bytes()
    for g in (bloomkit.ForgetfulBloomFilter.from_bytes(blob),
              pickle.loads(pickle.dumps(f))):
        assert type(g) is bloomkit.ForgetfulBloomFilter
        assert g.to_bytes() == blob
        assert g.info == f.info
        assert all(g.contains(i) == f.contains(i) for i in range(200))


def test_hostile_bytes_raise_corrupt_error():
    blob = bloomkit.ForgetfulBloomFilter(100, 0.01, 10).to_bytes()
    for bad in (b"", blob[:-1], blob[:20], b"\xff" * len(blob)):
        with pytest.raises(bloomkit.CorruptError):
            bloomkit.ForgetfulBloomFilter.from_bytes(bad)


@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data):
    try:
        bloomkit.ForgetfulBloomFilter.from_bytes(data)
    except bloomkit.Error:
        pass


@given(st.lists(st.tuples(st.binary(max_size=8), st.integers(0, 5)),
                max_size=100))
def test_no_key_younger_than_the_window_is_missing(ops):
    window = 12
    f = bloomkit.ForgetfulBloomFilter(200, 0.01, window, now=0)
    added = {}
    now = 0
    for key, step in ops:
        now += step
        f.add(key, now=now)
        added[key] = now
        for k, t in added.items():
            if now - t <= window:
                assert k in f
                assert f.contains(k, now=t + window)


def test_fpp_is_the_whole_filters_rate():
    # 1000 keys per window, added over two windows, then 20000 absent keys
    # asked: the rate must be at most 2 % (1 % target; the library's model
    # runs 3-6 % above the measured rate, binomial sd of 20000 draws at 1 %
    # is 0.07 %) and above 0 (a check of every filter, not of one).
    f = bloomkit.ForgetfulBloomFilter(1000, 0.01, 100, now=0)
    for i in range(2000):
        f.add(i, now=i // 10)
    fp = sum(f.contains(f"absent-{i}") for i in range(20_000))
    assert 0 < fp <= 400
