# SPDX-License-Identifier: MIT
# CountingBloomFilter and ScalableCountingFilter: construction and its
# errors, add / remove / discard / in / count / update, saturation,
# to_bytes / from_bytes / pickle (also for hostile bytes), the scalable
# filter's file (survives close and reopen with its keys, seqnums, flush,
# context manager, closed handles), and hypothesis properties: no false
# negative for any multiset of keys under adds and removes; no leaks.
import copy
import gc
import os
import pickle
import threading
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit

LAYOUTS = ["standard", "blocked"]
BITS = [4, 8, 16, 32]
keys = st.one_of(st.binary(max_size=40), st.text(max_size=20),
                 st.integers(min_value=-(2**63), max_value=2**64 - 1))


def same_key(k):
    """The bytes a key hashes as (str: UTF-8, int: 8 little-endian)."""
    if isinstance(k, str):
        return k.encode()
    if isinstance(k, int):
        return (k % 2**64).to_bytes(8, "little")
    return bytes(k)


# ---- CountingBloomFilter ---------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("bits", BITS)
def test_add_remove_contains(layout, bits):
    c = bloomkit.CountingBloomFilter(1000, 0.01, counter_bits=bits,
                                     layout=layout, seed=9)
    info = c.info
    assert (info["layout"], info["counter_bits"], info["seed"]) == (layout, bits, 9)
    c.add("x")
    c.update([b"y", 3, "z"])
    assert all(k in c for k in ("x", "y", 3, "z"))
    assert c.count("x") >= 1
    c.remove("x")
    assert "x" not in c  # added once, removed once: its counters are back
    assert all(k in c for k in ("y", 3, "z"))
    absent = sum(1 for i in range(10_000) if f"absent-{i}" in c)
    assert absent < 300  # 1 % target, 3 keys in: far below 3 %


def test_remove_of_an_absent_key_is_a_key_error_and_changes_nothing():
    c = bloomkit.CountingBloomFilter(100, 0.01)
    c.add("a")
    before = c.to_bytes()
    with pytest.raises(KeyError):
        c.remove("never added")
    assert c.to_bytes() == before
    assert c.discard("never added") is False
    assert c.discard("a") is True
    assert c.discard("a") is False
    assert c.info["nonzero"] == 0


def test_count_is_an_upper_bound_of_adds_minus_removes():
    c = bloomkit.CountingBloomFilter(1000, 0.001, counter_bits=8)
    for _ in range(5):
        c.add("k")
    assert c.count("k") >= 5
    c.remove("k")
    c.remove("k")
    assert c.count("k") >= 3
    assert c.count("k") <= 5
    assert c.count("other") == 0 or "other" in c


def test_saturation_keeps_the_key_and_is_reported():
    c = bloomkit.CountingBloomFilter(100, 0.01, counter_bits=4)
    for _ in range(20):  # past 15: every counter of "hot" saturates
        c.add("hot")
    assert c.count("hot") == 15
    assert c.info["saturated"] >= c.info["k"] - 1  # k counters, maybe shared
    assert c.info["saturated"] >= 1
    for _ in range(20):  # a saturated counter never moves again
        c.remove("hot")
    assert "hot" in c
    assert c.count("hot") == 15


@pytest.mark.parametrize(
    "args, kwargs",
    [((1000, 0.0), {}), ((1000, 1.0), {}), ((1000, 0.01), {"layout": "split_block"}),
     ((0, 0.01), {}), ((-1, 0.01), {}), ((1000, 0.01), {"counter_bits": 5}),
     ((1000, 0.01), {"counter_bits": 0}), ((1000, 0.01), {"counter_bits": -4}),
     ((1000, 0.01), {"seed": -1})],
)
def test_bad_arguments_raise_value_error(args, kwargs):
    with pytest.raises(ValueError):
        bloomkit.CountingBloomFilter(*args, **kwargs)


def test_bad_fpp_is_an_invalid_argument_error_and_bad_keys_a_type_error():
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.CountingBloomFilter(10, 2.0)
    c = bloomkit.CountingBloomFilter(10, 0.01)
    for op in (c.add, c.remove, c.discard, c.count, c.__contains__):
        with pytest.raises(TypeError):
            op(1j)
    with pytest.raises(TypeError):
        c.update([b"ok", None])
    assert b"ok" not in c  # a batch is checked whole before any key is added


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bytes_and_pickle_round_trip(layout):
    c = bloomkit.CountingBloomFilter(500, 0.01, counter_bits=8, layout=layout, seed=3)
    c.update(range(200))
    c.update(range(50))
    blob = c.to_bytes()
    for x in (bloomkit.CountingBloomFilter.from_bytes(blob),
              pickle.loads(pickle.dumps(c))):
        assert type(x) is bloomkit.CountingBloomFilter
        assert x.to_bytes() == blob
        assert x.info == c.info
        assert [x.count(i) for i in range(200)] == [c.count(i) for i in range(200)]
        x.remove(0)  # a loaded filter still counts
        assert x.count(0) == c.count(0) - 1


def test_hostile_bytes_raise_corrupt_error():
    blob = bloomkit.CountingBloomFilter(100, 0.01).to_bytes()
    for bad in (b"", b"\x00" * 8, blob[:-1], blob[: len(blob) // 2], b"x" * 100,
                bloomkit.BloomFilter(100, 0.01).to_bytes()):
        with pytest.raises(bloomkit.CorruptError):
            bloomkit.CountingBloomFilter.from_bytes(bad)


@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data):
    for cls in (bloomkit.CountingBloomFilter, bloomkit.ScalableCountingFilter):
        try:
            x = cls.from_bytes(data)
        except bloomkit.Error:
            continue
        assert x.to_bytes() == data


@given(st.lists(keys, max_size=150), st.data(), st.sampled_from(LAYOUTS),
       st.sampled_from(BITS))
def test_no_false_negatives_under_adds_and_removes(ks, data, layout, bits):
    c = bloomkit.CountingBloomFilter(max(len(ks), 1), 0.01, counter_bits=bits,
                                     layout=layout)
    c.update(ks)
    # remove a sub-multiset of what was added: the rest must stay present
    removed = data.draw(st.lists(st.sampled_from(range(len(ks))), unique=True)
                        if ks else st.just([]))
    left = [same_key(k) for k in ks]
    for j in removed:
        c.remove(ks[j])  # never KeyError: every removed key was added
        left.remove(same_key(ks[j]))
    assert all(k in c for k in left)
    assert all(c.count(k) >= left.count(k) for k in left)


@settings(max_examples=40, deadline=None)
@given(st.lists(keys, max_size=400), st.lists(keys, max_size=200),
       st.sampled_from(LAYOUTS), st.booleans())
def test_batches_answer_as_single_calls(added, removed, layout, single_writer):
    a = bloomkit.CountingBloomFilter(500, 0.01, counter_bits=8, layout=layout,
                                     single_writer=single_writer)
    b = bloomkit.CountingBloomFilter(500, 0.01, counter_bits=8, layout=layout)
    a.add_many(added)
    for k in added:
        b.add(k)
    assert a.to_bytes() == b.to_bytes()
    probes = added + removed
    assert a.contains_many(probes) == [k in b for k in probes]
    n = a.remove_many(removed)
    assert n == sum(b.discard(k) for k in removed)
    assert a.to_bytes() == b.to_bytes()


def test_batches_take_numpy_arrays_and_release_the_gil():
    np = pytest.importorskip("numpy")
    c = bloomkit.CountingBloomFilter(100_000, 0.01)
    keys = np.arange(50_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    c.add_many(keys)
    c.add_many(keys[:10])
    assert int(keys[3]) in c and c.count(int(keys[3])) >= 2
    got = c.contains_many(keys)
    assert isinstance(got, np.ndarray) and got.dtype == np.bool_ and got.all()
    assert c.remove_many(keys) == 50_000
    assert c.contains_many(keys[:10]).all()  # added twice, removed once
    assert c.remove_many(keys[10:20]) == 0  # certainly absent now
    with pytest.raises(TypeError):
        c.add_many(np.zeros(4, dtype=np.uint32))


def test_merge_clear_copy_and_single_writer():
    a = bloomkit.CountingBloomFilter(1000, 0.01, counter_bits=8, seed=4)
    b = bloomkit.CountingBloomFilter(1000, 0.01, counter_bits=8, seed=4)
    a.add_many(["x", "y"])
    b.add_many(["y", "z"])
    c = a | b
    assert type(c) is bloomkit.CountingBloomFilter
    assert all(k in c for k in "xyz") and "z" not in a
    assert c.count("y") >= 2
    a |= b
    assert a.to_bytes() == c.to_bytes()
    with pytest.raises(bloomkit.MismatchError):
        a |= bloomkit.CountingBloomFilter(1000, 0.01, counter_bits=8, seed=5)
    with pytest.raises(TypeError):
        a | bloomkit.BloomFilter(1000, 0.01)
    d = copy.copy(a)
    assert d.to_bytes() == a.to_bytes() and copy.deepcopy(a).info == a.info
    d.remove("x")
    assert "x" in a and "x" not in d
    a.clear()
    assert a.info["nonzero"] == 0 and "y" not in a and "y" in d

    assert a.single_writer is False
    a.single_writer = True
    a.add_many(range(100))
    a.remove(5)
    assert a.copy().single_writer is True
    assert pickle.loads(pickle.dumps(a)).single_writer is False
    s = bloomkit.CountingBloomFilter(1000, 0.01, single_writer=True)
    s.update(range(100))
    assert s.single_writer and s.contains_many(range(100)) == [True] * 100


def test_exclusive_calls_refuse_while_a_batch_runs():
    np = pytest.importorskip("numpy")
    c = bloomkit.CountingBloomFilter(10**6, 0.01)
    other = bloomkit.CountingBloomFilter(10**6, 0.01)
    keys = np.arange(2_000_000, dtype=np.uint64)
    t = threading.Thread(target=lambda: [c.add_many(keys) for _ in range(4)])
    t.start()
    refused, errors = set(), []
    while t.is_alive():
        for name, call in (("clear", c.clear), ("|", lambda: c.__ior__(other)),
                           ("single_writer",
                            lambda: setattr(c, "single_writer", False))):
            try:
                call()
            except RuntimeError as e:
                assert "CountingBloomFilter" in str(e)
                refused.add(name)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
    t.join()
    assert errors == []
    assert refused  # the batches released the GIL; the calls saw them
    c.clear()  # no batch in flight: allowed
    assert c.info["nonzero"] == 0


# ---- ScalableCountingFilter ------------------------------------------------


def test_file_survives_close_and_reopen_with_its_keys(tmp_path):
    path = tmp_path / "f.scbf"
    with bloomkit.ScalableCountingFilter(path, capacity=100, fpp=0.01,
                                         counter_bits=8, seed=5) as s:
        for i in range(1000):  # ten times the first filter: it grows
            s.add(f"k{i}", i)
        s.remove("k7", 7)
        n_filters = s.info["n_filters"]
        assert n_filters > 1
        seq = s.seqnum
        assert seq == s.mem_seqnum == 1 + 1000 + 1  # create is write 1
    assert s.closed
    assert os.path.getsize(path) > 0
    with bloomkit.ScalableCountingFilter(str(path)) as r:  # its own parameters
        info = r.info
        assert info["verified"] and info["file_backed"]
        assert (info["n_filters"], info["seed"], info["counter_bits"]) == (n_filters, 5, 8)
        assert info["count"] == 999
        assert r.mem_seqnum == seq
        assert all(f"k{i}" in r for i in range(1000) if i != 7)
        absent = sum(1 for i in range(2000) if f"absent-{i}" in r)
        assert absent < 60  # compound 1 % target: far below 3 %
        r.add("new", 1000)
    with bloomkit.ScalableCountingFilter(path, capacity=100, fpp=0.01,
                                         counter_bits=8, seed=5) as r:
        assert "new" in r  # matching parameters open the same file


def test_flush_and_seqnums(tmp_path):
    path = tmp_path / "f"
    with bloomkit.ScalableCountingFilter(path, capacity=10) as s:
        assert (s.seqnum, s.mem_seqnum, s.disk_seqnum) == (1, 1, 0)
        s.add("a", 1)
        s.add("b", 2)
        assert (s.seqnum, s.mem_seqnum, s.disk_seqnum) == (3, 3, 0)
        s.flush()
        assert s.disk_seqnum == 3
        s.remove("a", 1)
        assert (s.seqnum, s.mem_seqnum, s.disk_seqnum) == (4, 4, 3)
        with pytest.raises(KeyError):
            s.remove("a", 1)  # its counters are back to zero
        assert s.seqnum == 4  # a failed remove is not a write
    with bloomkit.ScalableCountingFilter(path) as s:
        assert s.disk_seqnum == 3 and s.mem_seqnum == 4
        assert "a" not in s and "b" in s


def test_in_memory_and_pickle(tmp_path):
    m = bloomkit.ScalableCountingFilter(capacity=50, layout="blocked")
    assert m.info["file_backed"] is False
    for i in range(300):
        m.add(i, i)
    assert m.disk_seqnum == 0
    m.flush()  # nothing to do in memory
    for x in (pickle.loads(pickle.dumps(m)),
              bloomkit.ScalableCountingFilter.from_bytes(m.to_bytes())):
        assert type(x) is bloomkit.ScalableCountingFilter
        assert all(i in x for i in range(300))
        assert x.info["n_filters"] == m.info["n_filters"] > 1
        x.remove(5, 5)
        assert 5 in m
    with bloomkit.ScalableCountingFilter(tmp_path / "g", capacity=10) as f:
        f.add("k", 0)
        g = pickle.loads(pickle.dumps(f))  # a file-backed one unpickles in memory
    assert "k" in g and g.info["file_backed"] is False


def test_contains_many_and_a_flush_beside_readers(tmp_path):
    with bloomkit.ScalableCountingFilter(tmp_path / "c", capacity=100) as s:
        for i in range(500):
            s.add(i, i)
        assert s.contains_many(range(500)) == [True] * 500
        probes = [f"absent-{i}" for i in range(1000)]
        assert s.contains_many(probes) == [k in s for k in probes]
        seen = []

        def flusher():
            for _ in range(20):
                s.flush()
            seen.append(s.disk_seqnum)

        t = threading.Thread(target=flusher)
        t.start()
        for i in range(500, 700):  # writers wait on the write lock in turn
            s.add(i, i)
            assert i in s
        t.join()
        s.flush()
        assert s.disk_seqnum == s.mem_seqnum == s.seqnum == 1 + 700
        assert 1 + 500 <= seen[0] <= 1 + 700
    with pytest.raises(ValueError):
        s.contains_many([1])
    np = pytest.importorskip("numpy")
    m = bloomkit.ScalableCountingFilter(capacity=10)
    m.add(7, 0)
    got = m.contains_many(np.array([7, 8], dtype=np.int64))
    assert got.dtype == np.bool_ and bool(got[0])


def test_verify_reports_each_filter(tmp_path):
    path = tmp_path / "v"
    with bloomkit.ScalableCountingFilter(path, capacity=50, counter_bits=8) as s:
        for i in range(200):
            s.add(i, i)
        r = s.verify()
        assert r["consistent"] and r["verified"] and not r["interrupted"]
        assert r["n_inconsistent"] == 0
        assert len(r["filters"]) == s.info["n_filters"] > 1
        f0 = r["filters"][0]
        assert f0["consistent"] and f0["sum"] == f0["expected_sum"] == \
            f0["k"] * f0["count"]
        s.remove(5, 5)
        assert s.verify()["consistent"]
        m = bloomkit.ScalableCountingFilter.from_bytes(s.to_bytes())
    assert m.verify()["consistent"]
    with pytest.raises(ValueError):
        s.verify()


def test_a_crashed_file_opens_unverified_and_verify_finds_damage(tmp_path):
    # A process that dies without closing leaves a file not closed cleanly;
    # it reopens unverified with every write, and verify() (no checksums
    # then) finds counters that were damaged afterwards.
    import subprocess
    import sys

    path = tmp_path / "crash"
    pkg = os.path.dirname(os.path.dirname(bloomkit.__file__))
    code = ("import os, sys, bloomkit\n"
            "s = bloomkit.ScalableCountingFilter(sys.argv[1], capacity=1000, "
            "counter_bits=8)\n"
            "for i in range(800): s.add(i, i)\n"
            "os._exit(0)\n")
    env = dict(os.environ, PYTHONPATH=pkg)
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=env)
    with bloomkit.ScalableCountingFilter(path) as s:
        assert s.info["verified"] is False
        assert (s.mem_seqnum, s.disk_seqnum) == (801, 0)
        assert s.verify()["consistent"] and s.contains_many(range(800)) == [True] * 800
    subprocess.run([sys.executable, "-c", code, str(path) + "2"], check=True,
                   env=env)
    n = os.path.getsize(str(path) + "2")
    with open(str(path) + "2", "r+b") as fh:  # zero some counters
        fh.seek(n // 2)
        fh.write(b"\0" * (n // 8))
    with bloomkit.ScalableCountingFilter(str(path) + "2") as s:
        r = s.verify()
        assert not r["consistent"] and r["n_inconsistent"] == 1
        f0 = r["filters"][0]
        assert not f0["consistent"] and f0["sum"] < f0["expected_sum"] == 6400


def test_remove_needs_the_right_id():
    s = bloomkit.ScalableCountingFilter(capacity=10)
    s.add("a", 1)
    with pytest.raises(KeyError):
        s.remove("a", 10**6)  # in no filter's range
    with pytest.raises(KeyError):
        s.remove("b", 1)
    assert "a" in s
    s.remove("a", 1)
    assert "a" not in s


def test_closed_handle_raises_and_close_is_idempotent(tmp_path):
    s = bloomkit.ScalableCountingFilter(tmp_path / "c", capacity=10)
    s.add("a", 0)
    s.close()
    s.close()
    assert s.closed
    for call in (lambda: s.add("a", 1), lambda: s.remove("a", 0),
                 lambda: "a" in s, s.flush, lambda: s.seqnum, lambda: s.info,
                 s.to_bytes, lambda: pickle.dumps(s), lambda: s.__enter__()):
        with pytest.raises(ValueError):
            call()


def test_exit_closes_on_exceptions(tmp_path):
    path = tmp_path / "e"
    with pytest.raises(RuntimeError):
        with bloomkit.ScalableCountingFilter(path, capacity=10) as s:
            s.add("a", 0)
            raise RuntimeError("boom")
    assert s.closed
    with bloomkit.ScalableCountingFilter(path) as s:
        assert "a" in s and s.info["verified"]


def test_full_after_max_filters():
    s = bloomkit.ScalableCountingFilter(capacity=1, max_filters=2, growth=1.0)
    s.add("a", 0)
    s.add("b", 1)
    with pytest.raises(bloomkit.Error) as e:
        s.add("c", 2)
    assert "BK_EFULL" in str(e.value)
    assert s.info["count"] == 2


def test_bad_arguments_and_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        bloomkit.ScalableCountingFilter(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(TypeError):
        bloomkit.ScalableCountingFilter()  # in memory needs a capacity
    for kwargs in ({"capacity": 0}, {"capacity": 10, "fpp": 0.0},
                   {"capacity": 10, "fpp": 0.9}, {"capacity": 10, "growth": 0.5},
                   {"capacity": 10, "tightening": 1.0},
                   {"capacity": 10, "max_filters": 0},
                   {"capacity": 10, "max_filters": 65},
                   {"capacity": 10, "counter_bits": 3},
                   {"capacity": 10, "layout": "split_block"}):
        with pytest.raises(ValueError):
            bloomkit.ScalableCountingFilter(**kwargs)
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a filter file" * 100)
    with pytest.raises(bloomkit.CorruptError):
        bloomkit.ScalableCountingFilter(junk)
    path = tmp_path / "p"
    bloomkit.ScalableCountingFilter(path, capacity=10, seed=1).close()
    with pytest.raises(bloomkit.Error) as e:  # parameters differ from the file's
        bloomkit.ScalableCountingFilter(path, capacity=10, seed=2)
    assert "BK_EMISMATCH" in str(e.value)
    s = bloomkit.ScalableCountingFilter(capacity=10)
    with pytest.raises(bloomkit.InvalidArgumentError):
        s.add("a", 2**64 - 1)  # the id UINT64_MAX is reserved
    with pytest.raises(ValueError):
        s.add("a", -1)
    with pytest.raises(TypeError):
        s.add(1j, 0)
    with pytest.raises(TypeError):
        s.add("a")  # the id is required


@given(st.lists(st.tuples(keys, st.integers(0, 1000)), max_size=100), st.data())
def test_scalable_no_false_negatives(ops, data):
    s = bloomkit.ScalableCountingFilter(capacity=8, fpp=0.01)
    ops = sorted(ops, key=lambda t: t[1])  # ids grow, as dablooms' callers do
    for k, i in ops:
        s.add(k, i)
    removed = data.draw(st.lists(st.sampled_from(range(len(ops))), unique=True)
                        if ops else st.just([]))
    for j in removed:
        s.remove(*ops[j])
    left = [ops[j][0] for j in range(len(ops)) if j not in set(removed)]
    assert all(k in s for k in left)
    assert s.info["count"] == len(left)


def leak_workload(c, s, start, n):
    for i in range(start, start + n):
        j = i % 4096  # a fixed key set
        key = (j, str(j), j.to_bytes(8, "little"), bytearray(b"k%d" % j))[i % 4]
        c.add(key)
        c.count(key)
        _ = key in c
        c.discard(key)
        try:
            c.remove(key)
        except KeyError:
            pass
        s.add(key, j)
        _ = key in s
        try:
            s.remove(key, 10**9)
        except KeyError:
            pass
        s.remove(key, j)
        if i % 100 == 0:
            batch = [key, j, str(j)]
            c.add_many(batch)
            c.contains_many(batch)
            c.remove_many(batch)
            s.contains_many(batch)
            try:
                c.add_many([key, None])
            except TypeError:
                pass
        if i % 1000 == 0:
            (c | c.copy()).clear()
            pickle.loads(pickle.dumps(c))
            pickle.loads(pickle.dumps(s))
            _ = s.info, s.seqnum, s.mem_seqnum, s.disk_seqnum, c.info
            s.flush()
            try:
                bloomkit.ScalableCountingFilter.from_bytes(b"junk")
            except bloomkit.CorruptError:
                pass


def test_no_leaks_over_many_calls(tmp_path):
    from test_leaks import rss_bytes

    c = bloomkit.CountingBloomFilter(10_000, 0.01)
    with bloomkit.ScalableCountingFilter(tmp_path / "l", capacity=10_000) as s:
        leak_workload(c, s, 0, 10_000)  # warm-up
        gc.collect()
        rss0 = rss_bytes()
        leak_workload(c, s, 10_000, 50_000)
        gc.collect()
        rss1 = rss_bytes()
        tracemalloc.start()
        py0 = tracemalloc.get_traced_memory()[0]
        leak_workload(c, s, 60_000, 50_000)
        gc.collect()
        py1 = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    # a leak of one 32-byte object per call would add 1.6 MB
    assert rss1 - rss0 < 1024 * 1024, f"RSS grew {rss1 - rss0} bytes"
    assert py1 - py0 < 128 * 1024, f"Python heap grew {py1 - py0} bytes"
