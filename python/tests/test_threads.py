# SPDX-License-Identifier: MIT
# Threads: many threads racing on one op id or one new key, exactly one
# wins (IdempotentCounters.add applies once, add_if_absent returns True
# once), and nothing is lost across threads.
import threading

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
