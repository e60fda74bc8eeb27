# SPDX-License-Identifier: MIT
# Hostile bytes for every class with to_bytes / from_bytes: random bytes
# (hypothesis), every truncation and every single-byte flip of valid blobs,
# and RESEALED edits: a byte of the envelope, the parameters or the payload
# changed and the checksum recomputed, so the edit gets past the checksum
# to the loader's field checks (docs/design/format.md, 3.3 rule 2: "the
# checksum is no MAC"). Each must raise a bloomkit.Error (CorruptError, or
# the version error for a version field above the newest) or load into an
# object that then works (its calls, to_bytes, pickle) and, but for
# IdempotentCounters whose key records come out in table order, saves back
# to the same bytes (rule 6: only reachable states load, canonically).
# The same blobs go through pickle.loads (the classes pickle as
# (cls.from_bytes, (blob,))). Everything runs in this process: a crash
# fails the run.
import contextlib
import ctypes
import ctypes.util
import pickle
import resource
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit

# The envelope (docs/design/format.md, 3.2): "BKIT", u16 version, u16 type
# tag, u32 header length H, u32 reserved, u64 payload length P, the type's
# parameters up to H, P payload bytes, then the checksum: XXH3-64 with seed
# 0 (XXH3_64bits) of bytes [0, H + P), little-endian, in the last 8 bytes.
# libxxhash is the library's own hash dependency (libxxhash-dev), so its
# shared object is present wherever bloomkit builds.
_xxh = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def body_len(blob):
    """H + P: the checksummed prefix of a valid blob."""
    h = struct.unpack_from("<I", blob, 8)[0]
    p = struct.unpack_from("<Q", blob, 16)[0]
    return h + p


def reseal(body):
    """body (bytes [0, H+P) of a blob, edited) with a matching checksum."""
    body = bytes(body)
    return body + struct.pack("<Q", _xxh.XXH3_64bits(body, len(body)))


def test_reseal_reproduces_valid_blobs():
    for cls, blob in BLOBS:
        assert reseal(blob[:body_len(blob)]) == blob, cls.__name__
        assert len(blob) == body_len(blob) + 8


# ---- valid blobs of every class -------------------------------------------------


def _bloom(layout):
    b = bloomkit.BloomFilter(40, 0.05, layout=layout, seed=3)
    b.update(range(25))
    return b


def _fbf():
    f = bloomkit.ForgetfulBloomFilter(16, 0.05, 10, now=0)
    for i in range(40):
        f.add(i, now=i // 2)
    return f


def _idem(strategy):
    t = bloomkit.IdempotentCounters(30, strategy=strategy, window=64, now=0,
                                    ops_per_period=8, fpp=0.05)
    for i in range(100):  # in order: seqs slide out of the 64-wide windows
        t.add("k%d" % (i % 3), client=i % 2, seq=i // 2, delta=i, now=i // 4)
    if strategy != "window":
        t.add("k0", client=0, seq=1, delta=1, now=25)  # below the window
    return t


def _cbf(bits, layout):
    c = bloomkit.CountingBloomFilter(20, 0.05, counter_bits=bits, layout=layout)
    c.update(range(15))
    c.update(range(5))
    for _ in range(20):
        c.add("hot")  # saturates 4-bit counters
    return c


def _scbf():
    s = bloomkit.ScalableCountingFilter(capacity=4, fpp=0.05)
    for i in range(20):
        s.add(i, i)  # five filters
    s.remove(3, 3)
    return s


def _kbf():
    f = bloomkit.KeyValueBloomFilter(m=32, k=3, max_values=4)
    for i in range(12):
        f.insert(i, b"v%d" % (i % 3))
    return f


def _bloomclock():
    a = bloomkit.BloomClock(16, 2, 1, counter_bits=8)
    b = bloomkit.BloomClock(16, 2, 0, counter_bits=8)
    for _ in range(5):
        a.tick()
    b.merge(a)
    return b


def _vclock():
    v = bloomkit.VectorClock(3, 1)
    w = bloomkit.VectorClock(3, 2)
    w.tick()
    v.merge(w)
    v.tick()
    return v


OBJECTS = ([_bloom(layout) for layout in ("standard", "blocked", "split_block")]
           + [_fbf()]
           + [_idem(s) for s in ("hybrid", "window", "fbf", "adaptive", "apbf",
                                 "rbf", "none")]
           + [_cbf(4, "standard"), _cbf(8, "blocked"), _scbf(), _kbf(),
              _bloomclock(), _vclock()])
BLOBS = [(type(o), o.to_bytes()) for o in OBJECTS]
CLASSES = sorted({cls for cls, _ in BLOBS}, key=lambda c: c.__name__)
IDS = ["%s-%d" % (cls.__name__, i) for i, (cls, _) in enumerate(BLOBS)]


# ---- what a loaded object must do ---------------------------------------------------


@contextlib.contextmanager
def address_space_cap(extra=1 << 30):
    """Cap this process' address space at its size now + extra, so that a
    call asking for gigabytes fails with ENOMEM instead of waking the OOM
    killer (pytest runs these tests on one thread)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    cap = size + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# The latest explicit time in seconds a call may pass (tick 2**53 - 1 ms).
MAX_NOW = (2**53 - 1) / 1000


def exercise(x):
    """Calls of x's class on a loaded (maybe edited) object: each may
    refuse with a bloomkit.Error or KeyError, nothing else, and none may
    ask for a gigabyte (a HYBRID table's lazy FBF is at most 4 MiB: the
    loader refuses a bigger config, test_hybrid_config_cannot_ask_for_gigabytes)."""
    with address_space_cap():
        _exercise(x)


def _exercise(x):
    calls = {
        bloomkit.BloomFilter: [lambda: x.add("new"), lambda: "new" in x,
                               lambda: x.add_if_absent(7), lambda: len(x),
                               lambda: x.info],
        bloomkit.ForgetfulBloomFilter: [
            lambda: x.add("new"), lambda: "new" in x,
            lambda: x.add_if_absent(7), lambda: x.info,
            lambda: x.contains("new", now=x.info["now"] + 10**6),
            lambda: x.advance(x.info["now"] + 10**12)],
        bloomkit.IdempotentCounters: [
            lambda: x.add("new", client=1, seq=10**6, delta=1),
            lambda: x.add("k0", client=0, seq=1), lambda: x.get("k1"),
            lambda: dict(x), lambda: len(x), lambda: x.info,
            lambda: x.advance(),
            # Seconds; a clock past the largest time Python can give
            # (2**53 ms) refuses any later one with InvalidArgumentError.
            lambda: x.advance(min(x.now + 10**6, MAX_NOW)),
            lambda: x.add("k2", client=5, seq=5)],
        bloomkit.CountingBloomFilter: [
            lambda: x.add("new"), lambda: x.remove("new"), lambda: x.count(3),
            lambda: x.discard(4), lambda: "hot" in x, lambda: x.info],
        bloomkit.ScalableCountingFilter: [
            lambda: x.add("new", 10**6), lambda: x.remove(5, 5), lambda: 7 in x,
            lambda: x.info, lambda: (x.seqnum, x.mem_seqnum, x.disk_seqnum),
            lambda: x.flush()],
        bloomkit.KeyValueBloomFilter: [
            lambda: x.get(1), lambda: x.get("absent"), lambda: 2 in x,
            lambda: x.__setitem__("new", b"v1"), lambda: x.insert("z", b"v9"),
            lambda: x.__delitem__(4), lambda: x.info],
        bloomkit.BloomClock: [
            lambda: x.compare(x), lambda: x.probability_before(x),
            lambda: x.merge(type(x).from_bytes(x.to_bytes())), lambda: x.tick(),
            lambda: x.info],
        bloomkit.VectorClock: [
            lambda: list(x), lambda: x.compare(x),
            lambda: x.merge(type(x).from_bytes(x.to_bytes())), lambda: x.tick()],
    }[type(x)]
    for call in calls:
        try:
            call()
        except bloomkit.OutOfMemoryError:
            raise  # no loaded state may ask for a gigabyte (format.md 3.3)
        except (bloomkit.Error, KeyError):
            pass
    again = type(x).from_bytes(x.to_bytes())
    assert type(again) is type(x)
    pickle.loads(pickle.dumps(x))


def load_or_refuse(cls, data):
    """from_bytes(data): a bloomkit.Error, or an object that works."""
    try:
        x = cls.from_bytes(data)
    except bloomkit.Error:
        return False
    assert type(x) is cls
    if cls is not bloomkit.IdempotentCounters:
        assert x.to_bytes() == data  # rule 6: canonical round trip
    exercise(x)
    return True


class _Reduce:
    """Pickles as cls.from_bytes(blob), as the classes' __reduce__ does."""

    def __init__(self, cls, blob):
        self.cls, self.blob = cls, blob

    def __reduce__(self):
        return (self.cls.from_bytes, (self.blob,))


def unpickle_or_refuse(cls, data):
    try:
        x = pickle.loads(pickle.dumps(_Reduce(cls, data)))
    except bloomkit.Error:
        return
    assert type(x) is cls
    exercise(x)


# ---- the tests ------------------------------------------------------------------------


def test_valid_blobs_load_and_work():
    for cls, blob in BLOBS:
        assert load_or_refuse(cls, blob)


@pytest.mark.parametrize("cls, blob", BLOBS, ids=IDS)
def test_every_truncation_is_refused(cls, blob):
    for n in range(len(blob)):
        with pytest.raises(bloomkit.CorruptError):
            cls.from_bytes(blob[:n])
    with pytest.raises(bloomkit.CorruptError):
        cls.from_bytes(blob + b"\x00")  # trailing bytes are refused too
    unpickle_or_refuse(cls, blob[: len(blob) // 2])


@pytest.mark.parametrize("cls, blob", BLOBS, ids=IDS)
def test_every_single_byte_flip_is_refused(cls, blob):
    # Without a reseal the checksum (or a check before it: the magic, the
    # type tag, the version) refuses every edit.
    for pos in range(len(blob)):
        bad = bytearray(blob)
        bad[pos] ^= 0xFF if pos % 2 else 0x01
        with pytest.raises(bloomkit.Error):
            cls.from_bytes(bytes(bad))


@pytest.mark.parametrize("cls, blob", BLOBS, ids=IDS)
def test_every_resealed_byte_edit_is_refused_or_works(cls, blob):
    n = body_len(blob)
    loaded = 0
    for pos in range(n):
        for x in (0x01, 0x80, 0xFF):
            bad = bytearray(blob[:n])
            bad[pos] ^= x
            loaded += load_or_refuse(cls, reseal(bad))
    # Envelope edits never load: magic, type, H, reserved, P (24 bytes).
    for pos in range(24):
        bad = bytearray(blob[:n])
        bad[pos] ^= 0x10
        with pytest.raises(bloomkit.Error):
            cls.from_bytes(reseal(bad))


@pytest.mark.parametrize("cls, blob", BLOBS, ids=IDS)
def test_hostile_pickles_raise(cls, blob):
    # The object's own pickle with its blob swapped for an edited one of the
    # same length: its __reduce__ path (cls.from_bytes) refuses it.
    obj = cls.from_bytes(blob)
    data = pickle.dumps(obj)
    assert data.count(blob) == 1
    n = body_len(blob)
    for pos in range(0, n, max(1, n // 64)):
        bad = bytearray(blob)
        bad[pos] ^= 0x55
        with pytest.raises(bloomkit.Error):
            pickle.loads(data.replace(blob, bytes(bad)))
        sealed = bytearray(blob[:n])
        sealed[pos] ^= 0x55
        try:
            x = pickle.loads(data.replace(blob, reseal(sealed)))
        except bloomkit.Error:
            continue
        exercise(x)
    for bad in (b"", b"BKIT", blob[:-1], b"\xff" * len(blob)):
        unpickle_or_refuse(cls, bad)


hostile_settings = settings(derandomize=True, deadline=None, max_examples=60)


@hostile_settings
@given(st.sampled_from(CLASSES), st.binary(max_size=400))
def test_random_bytes_are_refused_or_work(cls, data):
    load_or_refuse(cls, data)
    unpickle_or_refuse(cls, data)


@hostile_settings
@given(st.sampled_from(range(len(BLOBS))),
       st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 255)),
                min_size=1, max_size=6))
def test_resealed_random_edits_are_refused_or_work(i, edits):
    # Several bytes replaced at once (positions weighted to the header and
    # the parameters, where the field checks are), then resealed.
    cls, blob = BLOBS[i]
    n = body_len(blob)
    h = struct.unpack_from("<I", blob, 8)[0]
    bad = bytearray(blob[:n])
    for pos, value in edits:
        pos = 24 + pos % (h - 24) if pos % 3 else pos % n
        bad[pos] = value
    load_or_refuse(cls, reseal(bad))


@hostile_settings
@given(st.sampled_from(range(len(BLOBS))), st.data())
def test_resealed_random_parameters_are_refused_or_work(i, data):
    # A sound envelope around random parameters and payload of the blob's
    # own lengths: every field check sees hostile values.
    cls, blob = BLOBS[i]
    n = body_len(blob)
    rest = data.draw(st.binary(min_size=n - 24, max_size=n - 24))
    load_or_refuse(cls, reseal(blob[:24] + rest))


def test_hybrid_config_cannot_ask_for_gigabytes():
    cls, blob = BLOBS[IDS.index("IdempotentCounters-4")]
    assert struct.unpack_from("<Q", blob, 64)[0] == 0  # F: no FBF yet
    n = body_len(blob)
    bad = bytearray(blob[:n])
    struct.pack_into("<Q", bad, 136, 2**31 + 8)  # the FBF's capacity
    try:
        t = cls.from_bytes(reseal(bad))  # explicit time, as saved (25 s)
    except bloomkit.CorruptError:
        return  # refused at load: fixed
    with address_space_cap():
        for seq in range(200):  # slides seqs out of the window: the FBF
            t.add("k", client=0, seq=seq, now=30)
