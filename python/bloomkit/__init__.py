# SPDX-License-Identifier: MIT
"""bloomkit from Python: Bloom-filter-family structures over the C library.

This slice wraps BloomFilter, ForgetfulBloomFilter and IdempotentCounters
(python/README.md). Keys are bytes-like objects, str (UTF-8: "a" and b"a"
are one key) or int (64 bits, as 8 little-endian bytes); keys hash with the
library's seeded hash, so a saved or pickled filter answers the same in any
process.
"""
from ._bloomkit import (  # noqa: F401
    AddResult,
    BloomFilter,
    CorruptError,
    CountingBloomFilter,
    Error,
    ForgetfulBloomFilter,
    IdempotentCounters,
    InvalidArgumentError,
    OutOfMemoryError,
    RangeError,
    ScalableCountingFilter,
    TooOldError,
    library_version,
)

__all__ = [
    "AddResult",
    "BloomFilter",
    "CorruptError",
    "CountingBloomFilter",
    "Error",
    "ForgetfulBloomFilter",
    "IdempotentCounters",
    "InvalidArgumentError",
    "OutOfMemoryError",
    "RangeError",
    "ScalableCountingFilter",
    "TooOldError",
    "library_version",
]
