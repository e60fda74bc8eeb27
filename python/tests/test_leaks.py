# SPDX-License-Identifier: MIT
# Reference and memory leaks: many calls of every method (keys of each type,
# errors included) must not grow Python's heap (tracemalloc) nor the
# process (RSS, which also sees the library's malloc). Tolerances are far
# below what a leak of one small object per call would add (100k calls x
# at least 32 bytes = 3.2 MB).
import gc
import pickle
import tracemalloc

import bloomkit

N = 100_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def workload(bf, fbf, idem, start, n):
    for i in range(start, start + n):
        j = i % 4096  # a fixed key set: the tables reach their size
        key = (j, str(j), j.to_bytes(8, "little"), bytearray(b"k%d" % j))[i % 4]
        bf.add(key)
        _ = key in bf
        bf.add_if_absent(key)
        fbf.add(key, now=i // 1000)
        fbf.contains(key, now=i // 1000)
        r = idem.add(key if i % 2 else "c", client=i % 5, seq=i, delta=1)
        _ = r.value, r.applied
        idem.get(key)
        try:
            bf.add(1.5)
        except TypeError:
            pass
        if i % 1000 == 0:
            pickle.loads(pickle.dumps(bf))
            try:
                bloomkit.BloomFilter.from_bytes(b"junk")
            except bloomkit.CorruptError:
                pass
            dict(idem)
            fbf.info
            idem.info


def test_no_leaks_over_many_calls():
    bf = bloomkit.BloomFilter(10_000, 0.01)
    fbf = bloomkit.ForgetfulBloomFilter(10_000, 0.01, 10, now=0)
    idem = bloomkit.IdempotentCounters(10, strategy="fbf")
    workload(bf, fbf, idem, 0, 20_000)  # warm-up: tables reach their size
    gc.collect()
    rss0 = rss_bytes()
    workload(bf, fbf, idem, 20_000, N)
    gc.collect()
    rss1 = rss_bytes()
    # tracemalloc's own records grow RSS: the Python heap in a second run.
    tracemalloc.start()
    py0 = tracemalloc.get_traced_memory()[0]
    workload(bf, fbf, idem, 20_000 + N, N)
    gc.collect()
    py1 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert rss1 - rss0 < 2 * 1024 * 1024, f"RSS grew {rss1 - rss0} bytes"
    assert py1 - py0 < 256 * 1024, f"Python heap grew {py1 - py0} bytes"
