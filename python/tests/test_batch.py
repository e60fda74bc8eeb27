# SPDX-License-Identifier: MIT
# Batch calls (BloomFilter.add_many / contains_many / add_if_absent_many /
# update): a list, tuple or iterable of keys answers with a list of bools;
# a numpy array of 8-byte ints or floats answers with a numpy bool array,
# and its items are the same keys as the ints/floats themselves. Bad
# batches raise TypeError with nothing added; a clear() or |= while a batch
# runs in another thread (the GIL released) raises RuntimeError.
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit

keys = st.one_of(st.binary(max_size=24), st.text(max_size=12),
                 st.integers(min_value=-(2**63), max_value=2**64 - 1),
                 st.floats(allow_nan=False))


@settings(max_examples=60, deadline=None)
@given(st.lists(keys, max_size=600), st.lists(keys, max_size=300))
def test_batch_answers_as_single_calls(added, probes):
    a = bloomkit.BloomFilter(1000, 0.01)
    b = bloomkit.BloomFilter(1000, 0.01)
    a.add_many(added)
    for k in added:
        b.add(k)
    assert a.to_bytes() == b.to_bytes()
    got = a.contains_many(added + probes)
    assert isinstance(got, list)
    assert got == [k in a for k in added + probes]
    assert all(got[: len(added)])


def test_iterables_tuples_and_generators():
    a = bloomkit.BloomFilter(1000, 0.01)
    a.add_many(f"k{i}" for i in range(100))
    a.update(("x", "y"))
    assert a.contains_many(iter(["k5", "x", "y"])) == [True, True, True]
    assert a.contains_many([]) == []


def test_add_if_absent_many_in_order():
    a = bloomkit.BloomFilter(1000, 0.01)
    assert a.add_if_absent_many(["a", "b", "a", b"b"]) == [True, True, False,
                                                          False]


def test_numpy_arrays_are_the_same_keys_as_ints():
    np = pytest.importorskip("numpy")
    a = bloomkit.BloomFilter(100_000, 0.01)
    keys = np.arange(50_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    a.add_many(keys)
    for i in (0, 1, 49_999):
        assert int(keys[i]) in a  # the array's items are the int keys
    got = a.contains_many(keys)
    assert isinstance(got, np.ndarray) and got.dtype == np.bool_
    assert got.shape == (50_000,) and got.all()
    absent = a.contains_many(np.arange(10**12, 10**12 + 50_000,
                                       dtype=np.uint64))
    assert absent.mean() < 0.02  # 1 % target
    signed = np.array([-1, 5], dtype=np.int64)
    assert a.contains_many(signed).tolist() == [(-1 in a), (5 in a)]
    floats = np.array([0.5, 2.25])
    a.add_many(floats)
    assert 0.5 in a and 2.25 in a
    assert list(a.add_if_absent_many(np.array([7, 7], dtype=np.uint64))) == [
        True, False]


def test_array_module_buffer_is_accepted():
    import array

    a = bloomkit.BloomFilter(1000, 0.01)
    arr = array.array("Q", [1, 2, 3])
    a.add_many(arr)
    assert 2 in a
    got = a.contains_many(arr)
    assert list(got) == [True, True, True]


@pytest.mark.parametrize("bad", [b"abc", "abc", bytearray(b"ab"), 5, None])
def test_a_single_key_or_non_iterable_is_not_a_batch(bad):
    with pytest.raises(TypeError):
        bloomkit.BloomFilter(10).add_many(bad)


def test_wrong_arrays_are_type_errors_and_add_nothing():
    np = pytest.importorskip("numpy")
    a = bloomkit.BloomFilter(1000, 0.01)
    for bad in (np.arange(4, dtype=np.uint32), np.zeros((2, 2), np.uint64),
                np.arange(8, dtype=np.uint64)[::2],
                np.arange(4, dtype=">u8")):
        with pytest.raises(TypeError):
            a.add_many(bad)
    with pytest.raises(TypeError):
        a.add_many([1, 2, None])
    assert len(a) == 0


def test_exclusive_calls_refuse_while_a_batch_runs():
    np = pytest.importorskip("numpy")
    a = bloomkit.BloomFilter(4_000_000, 0.01, layout="standard")
    big = np.arange(4_000_000, dtype=np.uint64)
    errors = []
    refused = 0
    for _ in range(5):  # until one clear() lands inside a running batch
        t = threading.Thread(target=lambda: a.add_many(big))
        t.start()
        while t.is_alive():
            try:
                a.clear()  # allowed before and after the batch, never in it
            except RuntimeError as e:
                assert "batch call" in str(e)
                refused += 1
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
        t.join()
        if refused:
            break
    assert errors == []
    assert refused > 0
    a.add_many(big)
    assert bool(a.contains_many(big).all())


def test_batches_from_threads_lose_no_key():
    np = pytest.importorskip("numpy")
    a = bloomkit.BloomFilter(400_000, 0.01)
    parts = [np.arange(i * 100_000, (i + 1) * 100_000, dtype=np.uint64)
             for i in range(4)]
    ts = [threading.Thread(target=a.add_many, args=(p,)) for p in parts]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(bool(a.contains_many(p).all()) for p in parts)


def test_big_blobs_round_trip_with_the_gil_released():
    # 1 MiB and more: to_bytes and from_bytes drop the GIL; adds from
    # another thread meanwhile are allowed (bloom.h: serialize is safe
    # beside adds) and the blob still loads.
    np = pytest.importorskip("numpy")
    a = bloomkit.BloomFilter(2_000_000, 0.01)
    keys = np.arange(1_000_000, dtype=np.uint64)
    a.add_many(keys)
    stop = threading.Event()

    def writer():
        i = 10**9
        while not stop.is_set():
            a.add(i)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        blobs = [a.to_bytes() for _ in range(5)]
    finally:
        stop.set()
        t.join()
    assert len(blobs[0]) >= 1 << 20
    for blob in blobs:
        b = bloomkit.BloomFilter.from_bytes(bytearray(blob))
        assert bool(b.contains_many(keys).all())
