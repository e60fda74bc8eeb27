# SPDX-License-Identifier: MIT
# Key conversion, shared by every class: bytes, bytearray, memoryview (any
# C-contiguous buffer), str as UTF-8 and int as 8 little-endian bytes are
# accepted, and the same bytes are the same key whatever the type;
# anything else is a TypeError. Floats are their IEEE 754 bytes.
import array

import pytest

import bloomkit


def make():
    return bloomkit.BloomFilter(1000, 0.001)


@pytest.mark.parametrize(
    "added, asked",
    [
        ("a", b"a"),
        (b"a", "a"),
        ("é", "é".encode("utf-8")),
        (bytearray(b"xyz"), b"xyz"),
        (memoryview(b"xyz"), b"xyz"),
        (array.array("B", b"abc"), b"abc"),
        (1, (1).to_bytes(8, "little")),
        (-1, b"\xff" * 8),
        (2**64 - 1, -1),
        (True, 1),
    ],
)
def test_same_bytes_same_key(added, asked):
    b = make()
    b.add(added)
    assert asked in b
    assert b.add_if_absent(asked) is False


def test_str_and_int_differ_from_other_bytes():
    b = make()
    b.add("a")
    b.add(7)
    assert "b" not in b
    assert 8 not in b
    assert b"a\x00" not in b


@pytest.mark.parametrize("bad", [None, object(), 1j, ["a"], ("a",), {"a": 1}])
def test_unsupported_key_types_raise_type_error(bad):
    b = make()
    with pytest.raises(TypeError):
        b.add(bad)
    with pytest.raises(TypeError):
        bad in b  # noqa: B015
    f = bloomkit.ForgetfulBloomFilter(100, 0.01, 10)
    with pytest.raises(TypeError):
        f.add(bad)
    t = bloomkit.IdempotentCounters(10)
    with pytest.raises(TypeError):
        t.add(bad, client=1, seq=1)


@pytest.mark.parametrize("big", [2**64, -(2**63) - 1])
def test_int_keys_outside_64_bits_raise_overflow(big):
    with pytest.raises(OverflowError):
        make().add(big)


def test_non_contiguous_buffer_is_rejected():
    m = memoryview(b"abcdef")[::2]
    with pytest.raises(TypeError):
        make().add(m)


def test_empty_key_is_a_key():
    b = make()
    b.add(b"")
    assert "" in b


def test_float_keys_are_their_ieee_754_bytes():
    import struct

    b = make()
    b.add(1.5)
    assert 1.5 in b
    assert struct.pack("<d", 1.5) in b  # the same 8 bytes
    assert 1.25 not in b
    # 1.0 and 1 are different keys: a float's bytes are not its int's.
    b.add(1.0)
    assert struct.pack("<d", 1.0) in b
    assert struct.pack("<q", 1) != struct.pack("<d", 1.0)
    for special in (float("nan"), float("inf"), -0.0):
        b.add(special)
        assert special in b
    assert 0.0 not in b or struct.pack("<d", 0.0) in b  # -0.0 is not 0.0


def test_numpy_scalars_are_keys():
    np = pytest.importorskip("numpy")
    b = make()
    b.add(np.uint64(5))
    b.add(np.float64(2.5))
    assert 5 in b and 2.5 in b


def test_keys_hash_the_same_in_another_process():
    # Python's hash() is salted per process (PYTHONHASHSEED); bloomkit's is
    # not: a child with another salt builds byte-identical structures from
    # the same keys, and answers for a pickle made here.
    import os
    import pickle
    import subprocess
    import sys

    keys = ["alice", b"bob", 42, -7, 2.5, bytearray(b"\x00\x01")]
    b = make()
    b.update(keys)
    kv = bloomkit.KeyValueBloomFilter(100)
    kv["alice"] = b"1"
    script = (
        "import bloomkit, pickle, sys\n"
        "b = bloomkit.BloomFilter(1000, 0.001)\n"
        "b.update(['alice', b'bob', 42, -7, 2.5, bytearray(b'\\x00\\x01')])\n"
        "kv = bloomkit.KeyValueBloomFilter(100); kv['alice'] = b'1'\n"
        "got = pickle.loads(sys.stdin.buffer.read())\n"
        "assert all(k in got for k in ['alice', b'bob', 42, -7, 2.5])\n"
        "sys.stdout.buffer.write(b.to_bytes() + b'|' + kv.to_bytes())\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    r = subprocess.run([sys.executable, "-c", script], env=env,
                       input=pickle.dumps(b), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b.to_bytes() + b"|" + kv.to_bytes()


def test_version_is_the_librarys():
    assert bloomkit.__version__ == bloomkit.library_version
    assert bloomkit.__version__.count(".") >= 2
