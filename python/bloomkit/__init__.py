# SPDX-License-Identifier: MIT
"""bloomkit from Python: Bloom-filter-family structures over the C library.

This slice wraps BloomFilter, ForgetfulBloomFilter, IdempotentCounters,
CountingBloomFilter, ScalableCountingFilter, KeyValueBloomFilter, BloomClock
and VectorClock (python/README.md). Keys are bytes-like objects, str (UTF-8: "a" and b"a"
are one key) or int (64 bits, as 8 little-endian bytes); keys hash with the
library's seeded hash, so a saved or pickled filter answers the same in any
process.
"""
import enum

from ._bloomkit import (  # noqa: F401
    AddResult,
    BloomClock,
    BloomFilter,
    CorruptError,
    CountingBloomFilter,
    Error,
    ForgetfulBloomFilter,
    IdempotentCounters,
    InvalidArgumentError,
    KeyValueBloomFilter,
    OutOfMemoryError,
    RangeError,
    ScalableCountingFilter,
    TooOldError,
    UndecodableError,
    VectorClock,
    library_version,
)

__all__ = [
    "AddResult",
    "BloomClock",
    "BloomFilter",
    "CorruptError",
    "CountingBloomFilter",
    "Error",
    "ForgetfulBloomFilter",
    "IdempotentCounters",
    "InvalidArgumentError",
    "KeyValueBloomFilter",
    "OutOfMemoryError",
    "Order",
    "RangeError",
    "ScalableCountingFilter",
    "TooOldError",
    "UndecodableError",
    "VectorClock",
    "library_version",
]


class Order(enum.Enum):
    """What BloomClock.compare and VectorClock.compare found for a.compare(b),
    with the C API's bk_causality values."""

    EQUAL = 0  # the same timestamp
    BEFORE = 1  # a happened before b (a Bloom clock's may be a false positive)
    AFTER = 2  # b happened before a
    CONCURRENT = 3  # neither
