# SPDX-License-Identifier: MIT
"""bloomkit from Python: Bloom-filter-family structures over the C library.

Classes: BloomFilter, ForgetfulBloomFilter, AgePartitionedBloomFilter,
IdempotentCounters, CountingBloomFilter, ScalableCountingFilter,
KeyValueBloomFilter, BloomClock and VectorClock (docs/python.md). Keys are
bytes-like objects, str (UTF-8: "a" and b"a" are one key), int (64 bits, as 8
little-endian bytes) or float (its 8 IEEE 754 bytes); batch calls take a list
of keys or a numpy array of 8-byte ints or floats. Keys hash with the
library's seeded hash, never Python's salted hash(), so a saved or pickled
filter answers the same in any process. Every library error is a subclass of
bloomkit.Error.
"""
import enum

from ._bloomkit import (  # noqa: F401
    AddResult,
    AgePartitionedBloomFilter,
    BloomClock,
    BloomFilter,
    BusyError,
    CorruptError,
    CountingBloomFilter,
    Error,
    ForgetfulBloomFilter,
    FullError,
    IdempotentCounters,
    InvalidArgumentError,
    KeyValueBloomFilter,
    MismatchError,
    NotFoundError,
    OutOfMemoryError,
    RangeError,
    SaturatedError,
    ScalableCountingFilter,
    StateError,
    StorageError,
    TooOldError,
    UndecodableError,
    UnderflowError,
    VectorClock,
    VersionError,
    library_version,
)

# The package is the library it wraps: one version (the C library's,
# bk_version_string()).
__version__ = library_version

__all__ = [
    "AddResult",
    "AgePartitionedBloomFilter",
    "BloomClock",
    "BloomFilter",
    "BusyError",
    "CorruptError",
    "CountingBloomFilter",
    "Error",
    "ForgetfulBloomFilter",
    "FullError",
    "IdempotentCounters",
    "InvalidArgumentError",
    "KeyValueBloomFilter",
    "MismatchError",
    "NotFoundError",
    "Order",
    "OutOfMemoryError",
    "RangeError",
    "SaturatedError",
    "ScalableCountingFilter",
    "StateError",
    "StorageError",
    "TooOldError",
    "UndecodableError",
    "UnderflowError",
    "VectorClock",
    "VersionError",
    "library_version",
]


class Order(enum.Enum):
    """What BloomClock.compare and VectorClock.compare found for a.compare(b),
    with the C API's bk_causality values."""

    EQUAL = 0  # the same timestamp
    BEFORE = 1  # a happened before b (a Bloom clock's may be a false positive)
    AFTER = 2  # b happened before a
    CONCURRENT = 3  # neither
