# SPDX-License-Identifier: MIT
# The model both sliding-window filters (ForgetfulBloomFilter,
# AgePartitionedBloomFilter on explicit time) are tested against: a dict of
# each key's insertion time, in whole milliseconds (the filters' clock
# resolution, so no float rounding is in question). A key inserted at a is
# reported present at every q with q - a <= the window: no false negative
# inside it.


def ms(t):
    return t / 1000


def check_time_window(f, w_ms, ops):
    """Run ops on f (explicit time, created at now=0): ("a", key, step) adds
    `step` ms later, ("i", key, step) add_if_absent, ("c", key, step) asks
    every key as of `step` ms later (contains(now=), changing nothing)."""
    added = {}
    now = 0
    for op, key, step in ops:
        if op == "c":
            later = now + step
            for k, a in added.items():
                if later - a <= w_ms:
                    assert f.contains(k, now=ms(later)), (k, a, later)
            continue
        now += step
        live = [k for k, a in added.items() if now - a <= w_ms]
        if op == "a":
            f.add(key, now=ms(now))
            added[key] = now
        else:
            new = f.add_if_absent(key, now=ms(now))
            assert not (new and key in live)
            if new:
                added[key] = now
        assert f.now == ms(now)
        for k in live:
            assert k in f
            assert f.contains(k)
