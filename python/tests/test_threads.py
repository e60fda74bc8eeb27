# SPDX-License-Identifier: MIT
# Threads: many threads racing on one op id or one new key, exactly one
# wins (IdempotentCounters.add applies once, add_if_absent returns True
# once), also when one thread runs batches with the GIL released beside
# threads calling singly, and while another thread saves; nothing is lost
# across threads.
import collections
import random
import sys
import threading

import pytest

import bloomkit

THREADS = 8


def race(fn):
    barrier = threading.Barrier(THREADS)
    results = []
    lock = threading.Lock()

    def run():
        barrier.wait()
        r = fn()
        with lock:
            results.append(r)

    ts = [threading.Thread(target=run) for _ in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return results


def test_one_op_id_applies_once():
    t = bloomkit.IdempotentCounters(100)
    for seq in range(200):
        rs = race(lambda: t.add("k", client=1, seq=seq, delta=1).applied)
        assert rs.count(True) == 1
    assert t["k"] == 200


def test_add_if_absent_wins_once():
    bf = bloomkit.BloomFilter(10_000, 0.001)
    fbf = bloomkit.ForgetfulBloomFilter(10_000, 0.001, 100)
    for i in range(200):
        assert race(lambda: bf.add_if_absent(f"k{i}")).count(True) == 1
        assert race(lambda: fbf.add_if_absent(f"k{i}")).count(True) == 1


# ---- many keys, many threads, batches beside single calls -------------------
# Filters are sized so that none of the keys is a false positive before it is
# added (fill 2 % of a 1e-6 filter), which "exactly one True" needs.

KEYS = [b"key-%d" % i for i in range(3000)]


@pytest.fixture(autouse=True)
def fast_switching():
    # Python threads holding the GIL switch every 5 ms by default, long
    # enough for one thread to run through all its keys alone; switch
    # often so that the single calls really interleave.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def shuffled(ks, seed):
    out = list(ks)
    random.Random(seed).shuffle(out)
    return out


def run_threads(fns):
    barrier = threading.Barrier(len(fns))
    out = [None] * len(fns)
    errors = []

    def run(i):
        barrier.wait()
        try:
            out[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return out


def singles(add_if_absent, ks):
    return lambda: [(k, add_if_absent(k)) for k in ks]


def winners(results):
    wins = collections.Counter()
    for pairs in results:
        for k, r in pairs:
            assert isinstance(r, bool)
            wins[k] += r
    return wins


@pytest.mark.parametrize("make", [
    lambda: bloomkit.BloomFilter(150_000, 1e-6, layout="standard"),
    lambda: bloomkit.BloomFilter(150_000, 1e-6, layout="blocked"),
    lambda: bloomkit.BloomFilter(150_000, 1e-6, layout="split_block"),
    lambda: bloomkit.ForgetfulBloomFilter(150_000, 1e-6, 100),
], ids=["standard", "blocked", "split_block", "fbf"])
def test_add_if_absent_races_over_shared_keys(make):
    f = make()
    results = run_threads([singles(f.add_if_absent, shuffled(KEYS, s))
                           for s in range(THREADS)])
    wins = winners(results)
    assert all(wins[k] == 1 for k in KEYS), [k for k in KEYS if wins[k] != 1][:5]


def batch_vs_singles(f, batch_keys, as_key):
    # One thread adds every key in batches (GIL released for 256 keys or
    # more) while three others add the same keys one by one, each in
    # another order: each key is won exactly once over all of them.
    def batches():
        pairs = []
        for i in range(0, len(batch_keys), 500):
            chunk = batch_keys[i:i + 500]
            pairs += zip((as_key(k) for k in chunk), list(f.add_if_absent_many(chunk)))
        return [(k, bool(r)) for k, r in pairs]

    ks = [as_key(k) for k in batch_keys]
    fns = [batches] + [singles(f.add_if_absent, shuffled(ks, s)) for s in range(3)]
    wins = winners(run_threads(fns))
    assert all(wins[k] == 1 for k in ks)
    assert all(f.contains_many(batch_keys))


def test_add_if_absent_batch_list_races_singles():
    f = bloomkit.BloomFilter(150_000, 1e-6)
    batch_vs_singles(f, KEYS, lambda k: k)


def test_add_if_absent_batch_numpy_races_singles():
    np = pytest.importorskip("numpy")
    f = bloomkit.BloomFilter(150_000, 1e-6)
    arr = np.arange(10**6, 10**6 + 3000, dtype=np.uint64)
    batch_vs_singles(f, arr, int)  # a uint64 is the int's key


def test_batch_adds_beside_single_adds_and_lookups():
    np = pytest.importorskip("numpy")
    f = bloomkit.BloomFilter(200_000, 1e-4)
    arr = np.arange(50_000, dtype=np.uint64)
    lst = [b"s-%d" % i for i in range(20_000)]
    f.add_many(arr[:1000])

    def numpy_batches():
        for i in range(0, len(arr), 5000):
            f.add_many(arr[i:i + 5000])

    def list_batch():
        f.add_many(lst)

    def single_adds():
        for i in range(5000):
            f.add(b"one-%d" % i)

    def lookups():  # keys added before the start never read absent
        return all(bool(f.contains_many(arr[:1000]).all()) for _ in range(50))

    assert run_threads([numpy_batches, list_batch, single_adds, lookups])[3]
    assert bool(f.contains_many(arr).all())
    assert all(f.contains_many(lst))
    assert all(b"one-%d" % i in f for i in range(5000))


def test_idempotent_add_races_beside_snapshots():
    # Many threads deliver the same op (key, client, seq) while another
    # thread keeps saving the table (1 MiB or more: the GIL is dropped): the
    # op is applied exactly once, every answer's value is its delta, and
    # every snapshot loads with each key at 0 or its delta.
    t = bloomkit.IdempotentCounters(1000, strategy="fbf")
    assert len(t.to_bytes()) >= 1 << 20
    done = threading.Event()
    snapshots = []

    def saver():
        while not done.is_set():
            snapshots.append(t.to_bytes())

    s = threading.Thread(target=saver)
    s.start()
    try:
        for seq in range(60):
            key, delta = "k%d" % seq, seq + 1
            rs = race(lambda: t.add(key, client=3, seq=seq, delta=delta))
            assert [r.applied for r in rs].count(True) == 1
            assert all(r.value == delta for r in rs)
    finally:
        done.set()
        s.join()
    assert snapshots
    for blob in snapshots[:: max(1, len(snapshots) // 5)]:
        u = bloomkit.IdempotentCounters.from_bytes(blob)
        for k, v in dict(u).items():
            assert v == int(k[1:]) + 1
    assert dict(t) == {b"k%d" % s: s + 1 for s in range(60)}
