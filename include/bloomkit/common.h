/* SPDX-License-Identifier: MIT */
/*
 * Things every bloomkit component shares: the export macro, the status codes
 * and their names, and the allocator a config may carry.
 *
 * Thread safety: everything declared here is safe to call from any thread.
 */
#ifndef BLOOMKIT_COMMON_H
#define BLOOMKIT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bloomkit/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BK_STATIC_DEFINE)
#define BK_API
#elif defined(_WIN32)
#ifdef BK_BUILDING
#define BK_API __declspec(dllexport)
#else
#define BK_API __declspec(dllimport)
#endif
#else
#define BK_API __attribute__((visibility("default")))
#endif

/*
 * The status list. Values are ABI: append new codes at the end with the next
 * free negative number; never renumber or reuse one.
 */
#define BK_STATUS_MAP(X)                                  \
  X(OK, 0, "success")                                     \
  X(EINVAL, -1, "invalid argument")                       \
  X(ENOMEM, -2, "out of memory")                          \
  X(EFULL, -3, "structure is full")                       \
  X(ENOTFOUND, -4, "not found")                           \
  X(ECORRUPT, -5, "corrupt or truncated serialized data") \
  X(EIO, -6, "input/output error")                        \
  X(EVERSION, -7, "unsupported format version")           \
  X(EMISMATCH, -8, "structures are not compatible")       \
  X(EUNDECODABLE, -9, "value cannot be decoded")          \
  X(ESATURATED, -10, "counter is saturated")              \
  X(EUNDERFLOW, -11, "counter is already zero")           \
  X(ERANGE, -12, "value out of range")                    \
  X(EBUSY, -13, "resource busy")                          \
  X(ESTATE, -14, "operation not valid in the current state")

/** Result of every fallible bloomkit function: BK_OK (0) or a negative error.
 */
typedef enum bk_status {
#define BK__STATUS_ENUM(name, value, text) BK_##name = value,
  BK_STATUS_MAP(BK__STATUS_ENUM)
#undef BK__STATUS_ENUM
} bk_status;

/**
 * Name of a status, e.g. "invalid argument". Never NULL: an unknown value
 * yields "unknown status". The string is static; do not free it.
 */
BK_API const char *bk_strerror(bk_status status);

/**
 * Symbolic name of a status, e.g. "BK_EINVAL"; "BK_UNKNOWN" for an unknown
 * value. Static string.
 */
BK_API const char *bk_status_name(bk_status status);

/**
 * Allocator carried by a config and kept by the object it creates, so a host
 * can account for bloomkit's memory and tests can inject failures.
 * `alloc` and `free` are required; `realloc` may be NULL (bloomkit then
 * allocates, copies and frees). Pass NULL instead of an allocator for libc.
 * The allocator struct is copied at create time; `ctx` must outlive the object.
 */
typedef struct bk_allocator {
  void *(*alloc)(void *ctx, size_t size);
  void *(*realloc)(void *ctx, void *ptr, size_t size);
  void (*free)(void *ctx, void *ptr);
  void *ctx;
} bk_allocator;

/** Library version as a string, e.g. "0.1.0". */
BK_API const char *bk_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
