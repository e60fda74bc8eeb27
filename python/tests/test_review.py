# SPDX-License-Identifier: MIT
# Crash-and-correctness review of the extension: a fuzz that calls random
# methods of random classes with random arguments (only "no crash, and
# what is raised is an Exception"), and one test per bug the review found
# (each failed before its fix): a batch whose key iterator calls back into
# the object it runs on, from_bytes of a mutable buffer, a key whose
# buffer export runs Python code (3.12+).
import gc
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit


def make_objects():
    """One small object of each class (explicit time where there is one)."""
    return [
        bloomkit.BloomFilter(100),
        bloomkit.BloomFilter(100, single_writer=True),
        bloomkit.CountingBloomFilter(100, 0.01),
        bloomkit.CountingBloomFilter(100, 0.01, single_writer=True),
        bloomkit.ScalableCountingFilter(capacity=50),
        bloomkit.KeyValueBloomFilter(100),
        bloomkit.ForgetfulBloomFilter(100, 0.01, 10, now=0),
        bloomkit.AgePartitionedBloomFilter(100, 0.01, window=10, now=0),
        bloomkit.IdempotentCounters(5, now=0),
        bloomkit.BloomClock(64, 3),
        bloomkit.VectorClock(4, 1),
    ]


def _numpy_values():
    try:
        import numpy as np
    except ImportError:
        return st.nothing()
    return st.sampled_from(
        [
            np.arange(5, dtype=np.uint64),
            np.arange(300, dtype=np.int64),
            np.zeros(0, dtype=np.float64),
            np.arange(6, dtype=np.uint64)[::2],
            np.arange(4, dtype=np.uint32),
            np.zeros((2, 2), dtype=np.uint64),
            np.arange(3, dtype=">u8"),
            np.array([True, False]),
        ]
    )


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**64, 2**64 - 1, -(2**63) - 1, 10**400, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=40),
    st.builds(bytearray, st.binary(max_size=8)),
    st.builds(memoryview, st.binary(max_size=8)),
    st.sampled_from(["\ud800", object(), 1j, (), {}, set()]),
    _numpy_values(),
)
_values = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=5),
    st.lists(st.integers(0, 2**64 - 1), min_size=256, max_size=300),
)


def _methods(obj):
    names = [n for n in dir(obj) if not n.startswith("__")]
    names += ["__contains__", "__len__", "__getitem__", "__setitem__"]
    names += ["__delitem__", "__or__", "__ior__", "__and__", "__iand__"]
    names += ["__eq__", "__reduce__", "__copy__", "__deepcopy__"]
    return sorted(n for n in set(names) if hasattr(type(obj), n))


@settings(max_examples=200, deadline=None)
@given(
    st.data(),
    st.lists(st.tuples(st.integers(0, 10), st.integers(0, 10**6)), max_size=12),
)
def test_fuzz_random_calls(data, calls):
    objs = make_objects()
    for which, _ in calls:
        obj = objs[which]
        name = data.draw(st.sampled_from(_methods(obj)))
        try:
            attr = getattr(obj, name)
        except Exception:  # a closed filter's properties
            continue
        if not callable(attr):
            continue
        args = data.draw(st.lists(st.one_of(_values, st.sampled_from(objs)),
                                  max_size=3))
        kw = data.draw(st.dictionaries(
            st.sampled_from(["now", "default", "keys", "id", "monotonic"]),
            _values, max_size=1))
        try:
            attr(*args, **kw)
        except Exception:
            pass
    for obj in objs:  # each still works afterwards
        try:
            obj.to_bytes()
        except (bloomkit.Error, ValueError):  # a closed filter
            pass


def test_scbf_contains_many_closed_by_its_keys():
    """A key iterator that closes the filter: ValueError, not a call on a
    freed or NULL handle."""
    f = bloomkit.ScalableCountingFilter(capacity=50)
    f.add(b"a", 1)

    def keys():
        yield b"a"
        f.close()
        yield b"b"

    with pytest.raises(ValueError, match="closed"):
        f.contains_many(keys())
    assert f.closed


def test_batch_single_writer_switched_by_its_keys():
    """A key iterator that turns single_writer on: the batch of adds must
    then keep the GIL (the GIL is what keeps the one writer alone), so a
    thread that tries to switch the mode back meanwhile is never told a
    batch runs without the GIL."""
    f = bloomkit.BloomFilter(10**5)
    seen = []
    stop = threading.Event()

    def other():
        while not stop.is_set():
            try:
                f.single_writer = True
            except RuntimeError as e:  # a GIL-released batch is running
                seen.append(e)

    def keys():
        f.single_writer = True
        yield from range(200000)

    t = threading.Thread(target=other)
    t.start()
    try:
        for _ in range(3):
            f.single_writer = False
            f.add_many(keys())
    finally:
        stop.set()
        t.join()
    assert f.single_writer
    assert not seen


@pytest.mark.skipif(sys.version_info < (3, 12), reason="__buffer__ is 3.12+")
@pytest.mark.parametrize("call", ["add", "remove", "in"])
def test_key_buffer_closing_scbf(call):
    """A key whose __buffer__ closes the filter: no use of the freed
    handle."""
    f = bloomkit.ScalableCountingFilter(capacity=50)

    class Key:
        def __buffer__(self, flags):
            f.close()
            return memoryview(b"key")

    with pytest.raises(ValueError, match="closed"):
        if call == "in":
            Key() in f
        else:
            getattr(f, call)(Key(), 1)


def test_from_bytes_keeps_the_gil_over_a_mutable_buffer():
    """A big blob loads with the GIL released only from bytes: another
    thread could write into a bytearray between the loader's checks and
    its use of the bytes it checked. With a long switch interval the other
    thread runs only when this one releases the GIL."""
    blob = bytearray(bloomkit.BloomFilter(2 * 10**6).to_bytes())
    assert len(blob) >= 1 << 20
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1
            time.sleep(0)  # releases the GIL, then waits for it

    old = sys.getswitchinterval()
    sys.setswitchinterval(100)
    t = threading.Thread(target=spin)
    t.start()
    try:
        ran = []
        for _ in range(10):
            c0 = count[0]
            bloomkit.BloomFilter.from_bytes(blob)
            ran.append(count[0] - c0)
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert ran == [0] * 10


_IDEM_ITEMS_FINALIZER = """
import gc, bloomkit
t = bloomkit.IdempotentCounters(5, now=0)
for i in range(300):
    t.add(b"k%d" % i, client=1, seq=i, now=0)
n = [0]
class M:
    def __del__(self):
        n[0] += 1
        if n[0] < 10:
            mk()  # garbage for the next collection, inside items()
        if n[0] > 1:
            for j in range(300):
                t.add(b"k%d" % j, client=3, seq=n[0] * 1000 + j, now=0)
def mk():
    m = M()
    m.self = m
gc.collect()
mk()
gc.set_threshold(1)
items = t.items()
gc.set_threshold(700)
assert len(items) == 300 and n[0] > 2, (len(items), n)
"""


# idem.c's items() once built Python objects inside bk_idem_iterate's
# callback, under a stripe lock: a finalizer the allocation ran that called
# add() on the table deadlocked (idem.h: the callback must not call back
# into the table). It now copies the pairs and builds the list after.
def test_idem_items_finalizer_calling_add_does_not_deadlock():
    import subprocess

    try:
        r = subprocess.run(
            [sys.executable, "-c", _IDEM_ITEMS_FINALIZER],
            timeout=5,
            capture_output=True,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("IdempotentCounters.items() deadlocked")
    assert r.returncode == 0, r.stderr.decode()


def test_batch_answers_numpy_import_error_other_than_import_error_raises():
    """The answers of an array batch are a numpy array when numpy imports
    and a list when it is missing (ImportError); any other error of the
    import (here MemoryError from an import hook) is raised, not lost."""
    import array

    f = bloomkit.BloomFilter(100)
    keys = array.array("Q", [1, 2])
    f.add(1)

    class Hook:
        def find_spec(self, name, path=None, target=None):
            if name == "numpy":
                raise MemoryError("hook")
            return None

    saved = {k: v for k, v in sys.modules.items() if k == "numpy"}
    sys.modules.pop("numpy", None)
    sys.meta_path.insert(0, Hook())
    try:
        with pytest.raises(MemoryError, match="hook"):
            f.contains_many(keys)
        sys.modules["numpy"] = None  # missing: ImportError
        assert f.contains_many(keys) == [True, False]
    finally:
        sys.meta_path.pop(0)
        sys.modules.pop("numpy", None)
        sys.modules.update(saved)


def _racing_calls(kind):
    """(object, calls) for test_threads_racing_exclusive_calls."""
    import random

    keys = list(range(600))
    if kind == "bloom":
        f, g = bloomkit.BloomFilter(10**4), bloomkit.BloomFilter(10**4)
        calls = [lambda: f.add_many(keys), lambda: f.contains_many(keys),
                 f.clear, lambda: f.__ior__(g), lambda: g.__iand__(f),
                 lambda: setattr(f, "single_writer", random.random() < 0.5)]
    elif kind == "cbf":
        f = bloomkit.CountingBloomFilter(10**4, 0.01)
        calls = [lambda: f.add_many(keys), lambda: f.remove_many(keys),
                 lambda: f.contains_many(keys), f.clear, lambda: f.__ior__(f),
                 lambda: setattr(f, "single_writer", random.random() < 0.5)]
    elif kind == "scbf":
        f = bloomkit.ScalableCountingFilter(capacity=1000)
        calls = [lambda: f.contains_many(keys), f.flush, f.verify, f.to_bytes,
                 lambda: f.add(random.randrange(99), random.randrange(10**4)),
                 lambda: random.random() < 0.05 and f.close()]
    else:
        f = bloomkit.KeyValueBloomFilter(10**4)
        calls = [lambda: f.get_many(keys, undecodable=b"?"), f.compress,
                 lambda: f.__setitem__(random.randrange(900), b"v"),
                 lambda: f.__delitem__(random.randrange(900))]
    return f, calls


@pytest.mark.parametrize("kind", ["bloom", "cbf", "scbf", "kbf"])
def test_threads_racing_exclusive_calls(kind):
    """Batches (GIL released) beside the calls the C API wants exclusive,
    close and flush, from 3 threads: only the binding's refusals and the
    library's errors, never a crash."""
    import random

    f, calls = _racing_calls(kind)
    stop = time.monotonic() + 0.3
    unexpected = []

    def worker():
        while time.monotonic() < stop:
            try:
                random.choice(calls)()
            except (RuntimeError, ValueError, KeyError, bloomkit.Error):
                pass
            except Exception as e:  # noqa: BLE001 - collected for the assert
                unexpected.append(e)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not unexpected
