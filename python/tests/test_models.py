# SPDX-License-Identifier: MIT
# Model tests across interleaved histories: each class driven by a random
# sequence of its operations beside a plain Python model, with save/load
# round trips in the middle, asserting exactly what the C documentation
# guarantees. BloomFilter against a set (a key the set holds is always
# present and add_if_absent answers False for it); CountingBloomFilter
# against a Counter (no false negative, count >= the true count up to
# saturation, remove of a present key never fails); KeyValueBloomFilter
# against a dict (a stored key reads as its value or as undecodable, never as
# another value, across updates and deletes: docs/design/kbf.md);
# IdempotentCounters against a dict with in-order clients retrying within
# the timeout (HYBRID is exact: docs/design/idem.md's theorem; the FBF
# strategies never apply a retry twice: docs/counters.md); BloomClock
# against VectorClock over message-passing runs with messages delivered out
# of order (no false negative on "before": docs/design/bloomclock.md).
# The ForgetfulBloomFilter's model (a dict of expiry times) is in
# test_fbf.py; the per-class files hold the simpler one-shot properties.
import collections

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
from test_cbf import same_key
from test_clock import reference as exact_order
from test_kbf import read

Order = bloomkit.Order
SEEDS = st.integers(min_value=0, max_value=2**64 - 1)
keys = st.one_of(st.binary(max_size=24), st.text(max_size=12),
                 st.integers(min_value=-(2**63), max_value=2**64 - 1))
model_settings = settings(derandomize=True, deadline=None, max_examples=40)


def reload(x):
    # The blob holds the clock's time, not its mode: from_bytes loads on
    # explicit time at that clock unless told monotonic=True (the timed
    # classes, as their pickles do).
    if getattr(x, "monotonic", False):
        return type(x).from_bytes(x.to_bytes(), monotonic=True)
    return type(x).from_bytes(x.to_bytes())


# ---- BloomFilter vs a set --------------------------------------------------

bloom_ops = st.lists(st.tuples(
    st.sampled_from(["add", "add_if_absent", "contains", "reload"]),
    st.integers(0, 39)), min_size=60, max_size=150)


@model_settings
@given(st.lists(keys, min_size=40, max_size=40), bloom_ops,
       st.sampled_from(["standard", "blocked", "split_block"]), SEEDS)
def test_bloom_filter_against_a_set(pool, ops, layout, seed):
    # Sized for 16 keys and fed up to 40: false positives are common, so
    # add_if_absent's False for new keys happens; it must never be True for
    # a key the set holds, nor may a held key read absent (asked as its
    # own type and as its bytes).
    b = bloomkit.BloomFilter(16, 0.05, layout=layout, seed=seed)
    model = set()
    for op, i in ops:
        k = pool[i]
        kb = same_key(k)
        if op == "add":
            b.add(k)
            model.add(kb)
        elif op == "add_if_absent":
            r = b.add_if_absent(k)
            assert isinstance(r, bool)
            if kb in model:
                assert r is False
            model.add(kb)
        elif op == "contains":
            if kb in model:
                assert k in b and kb in b
        else:
            b = reload(b)
    assert all(kb in b for kb in model)
    assert all(b.add_if_absent(kb) is False for kb in model)


# ---- CountingBloomFilter vs a Counter ---------------------------------------

cbf_ops = st.lists(st.tuples(
    st.sampled_from(["add", "add", "remove", "discard", "count", "reload"]),
    st.integers(0, 11)), min_size=80, max_size=200)


@model_settings
@given(st.lists(keys, min_size=12, max_size=12), cbf_ops,
       st.sampled_from([4, 8]), st.sampled_from(["standard", "blocked"]), SEEDS)
def test_counting_filter_against_a_counter(pool, ops, bits, layout, seed):
    # Only keys the Counter holds are removed (removing a false positive
    # takes other keys' counts: the structure's nature). 4-bit counters
    # saturate at 15 after a dozen adds of one key: a saturated counter
    # never moves again, so count >= min(true count, 15) still holds.
    c = bloomkit.CountingBloomFilter(12, 0.05, counter_bits=bits,
                                     layout=layout, seed=seed)
    top = 2**bits - 1
    model = collections.Counter()
    for op, i in ops:
        k = pool[i]
        kb = same_key(k)
        if op == "add":
            c.add(k)
            model[kb] += 1
        elif op in ("remove", "discard"):
            if model[kb] == 0:
                continue
            if op == "remove":
                c.remove(k)  # never a KeyError: the key is present
            else:
                assert c.discard(k) is True
            model[kb] -= 1
        elif op == "count":
            assert c.count(k) >= min(model[kb], top)
        else:
            c = reload(c)
        for kb2, n in model.items():
            if n:
                assert kb2 in c
    for kb, n in model.items():
        assert c.count(kb) >= min(n, top)
    if sum(model.values()) == 0 and c.info["saturated"] == 0:
        assert c.info["nonzero"] == 0  # every add undone: all counters zero


# ---- KeyValueBloomFilter vs a dict ------------------------------------------

VALUES = [b"v%d" % i for i in range(6)]
kbf_ops = st.lists(st.tuples(st.sampled_from(["set", "set", "del", "get", "reload"]),
                             st.integers(0, 29), st.integers(0, len(VALUES) - 1)),
                   min_size=60, max_size=150)


@model_settings
@given(st.lists(st.binary(max_size=16), min_size=30, max_size=30, unique=True),
       kbf_ops, SEEDS)
def test_kbf_against_a_dict(pool, ops, seed):
    # kbf.md: INSERT, UPDATE (of a key that decoded) and DELETE (checked
    # before it writes) keep every cell's form, so a stored key reads as its
    # own value or as undecodable, never absent and never another value. A
    # key the model lacks is inserted with insert() (keys known new):
    # assigning to an absent key that happens to decode would rewrite cells
    # it shares with stored keys. An update or delete that cannot decode
    # the old value raises UndecodableError and changes nothing.
    f = bloomkit.KeyValueBloomFilter(m=48, k=3, max_values=8, seed=seed)
    model = {}
    for op, i, v in ops:
        k = pool[i]
        if op == "set":
            if k in model:
                try:
                    f[k] = VALUES[v]
                except bloomkit.UndecodableError:
                    continue
            else:
                f.insert(k, VALUES[v])
            model[k] = VALUES[v]
        elif op == "del":
            if k not in model:
                continue
            try:
                del f[k]
            except bloomkit.UndecodableError:
                continue
            del model[k]
        elif op == "get":
            if k in model:
                assert read(f, k) in (("found", model[k]), ("undecodable",))
        else:
            f = reload(f)
        assert f.info["n_keys"] == len(model)
    for k, v in model.items():
        assert read(f, k) in (("found", v), ("undecodable",))
        assert k in f


# ---- IdempotentCounters vs a dict ---------------------------------------------

TIMEOUT = 50
# (what, key, client, delta, dt, back): "new" sends the client's next seq;
# "retry" resends one of its earlier ops still within the retry timeout
# (`back` picks which); dt advances the clock.
idem_ops = st.lists(st.tuples(st.sampled_from(["new", "new", "retry", "reload"]),
                              st.sampled_from(["a", "b", "c"]), st.integers(0, 3),
                              st.integers(-50, 50), st.integers(0, 4),
                              st.integers(0, 1000)), min_size=80, max_size=200)


def run_idem(t, ops, exact):
    values = {}
    sent = collections.defaultdict(list)  # client -> [(seq, key, delta, time)]
    applied_ids = set()
    now = 0
    for what, key, client, delta, dt, back in ops:
        now += dt
        if what == "reload":
            t = reload(t)
            continue
        if what == "retry":
            recent = [s for s in sent[client] if now - s[3] <= TIMEOUT]
            if not recent:
                continue
            seq, key, delta, _ = recent[back % len(recent)]
            fresh = False
        else:
            seq = len(sent[client])
            sent[client].append((seq, key, delta, now))
            fresh = True
        r = t.add(key, client=client, seq=seq, delta=delta, now=now)
        if exact:
            assert r.applied is fresh
        # Otherwise a new op may be dismissed as a false positive of the
        # filter, but no op id is ever applied twice:
        if r.applied:
            assert (client, seq) not in applied_ids
            applied_ids.add((client, seq))
            values[key] = values.get(key, 0) + delta
        assert r.value == values.get(key, 0)
    assert dict(t) == {k.encode(): v for k, v in values.items()}
    return t


@model_settings
@given(idem_ops, st.sampled_from([64, 256]))
def test_hybrid_counters_against_a_dict(ops, window):
    # In-order clients, retries within the timeout: HYBRID applies exactly
    # the new op ids (window=64 pushes old seqs out of the client windows
    # into the FBF, whose retries the theorem also covers).
    t = bloomkit.IdempotentCounters(TIMEOUT, strategy="hybrid", window=window,
                                    now=0)
    run_idem(t, ops, exact=True)


@model_settings
@given(idem_ops, st.sampled_from(["fbf", "adaptive", "apbf"]))
def test_filter_counters_never_apply_a_retry_twice(ops, strategy):
    # Small filters at a high fpp: new ops are dismissed now and then.
    t = bloomkit.IdempotentCounters(TIMEOUT, strategy=strategy, now=0,
                                    ops_per_period=32, fpp=0.05)
    run_idem(t, ops, exact=False)


# ---- BloomClock vs VectorClock ------------------------------------------------

P = 4
BLOOM_CLOCK_MAY_SAY = {
    Order.EQUAL: {Order.EQUAL},
    Order.BEFORE: {Order.BEFORE, Order.EQUAL},
    Order.AFTER: {Order.AFTER, Order.EQUAL},
    Order.CONCURRENT: set(Order),  # a Bloom clock may see any order
}
# ("tick", i), ("send", i, _): i ticks and a copy of its clocks goes in
# flight; ("recv", i, j): i receives the j-th message in flight (any order).
clock_ops = st.lists(st.tuples(st.sampled_from(["tick", "send", "send", "recv"]),
                               st.integers(0, P - 1), st.integers(0, 50)),
                     min_size=30, max_size=80)


@model_settings
@given(clock_ops, SEEDS, st.sampled_from([(16, 2, 8), (64, 3, 16)]))
def test_bloom_clock_against_vector_clocks(run, seed, shape):
    m, k, bits = shape
    vcs = [bloomkit.VectorClock(P, i) for i in range(P)]
    bcs = [bloomkit.BloomClock(m, k, i, counter_bits=bits, seed=seed)
           for i in range(P)]
    ref = [[0] * P for _ in range(P)]
    flight = []  # (reference vector, vector clock blob, Bloom clock blob)
    history = []  # one (reference, vector clock, Bloom clock) per event
    for what, i, j in run:
        if what == "recv":
            if not flight:
                continue
            rv, vb, bb = flight.pop(j % len(flight))
            vcs[i].merge(bloomkit.VectorClock.from_bytes(vb))
            bcs[i].merge(bloomkit.BloomClock.from_bytes(bb))
            ref[i] = [max(x, y) for x, y in zip(ref[i], rv)]
        else:
            vcs[i].tick()
            bcs[i].tick()
        ref[i][i] += 1
        assert list(vcs[i]) == ref[i]
        if what == "send":
            flight.append((list(ref[i]), vcs[i].to_bytes(), bcs[i].to_bytes()))
        history.append((list(ref[i]), reload(vcs[i]), reload(bcs[i])))
    for rv, vc, bc in history:
        for rw, wc, wb in history:
            want = vc.compare(wc)
            assert want is exact_order(rv, rw)
            # never a false negative: BEFORE reads BEFORE (or EQUAL when
            # only saturated counters moved), and so on
            assert bc.compare(wb) in BLOOM_CLOCK_MAY_SAY[want]
