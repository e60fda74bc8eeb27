/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the files of the `bloomkit._bloomkit`
 * extension module: the key converter (bytes, bytearray, memoryview or any
 * C-contiguous buffer, str as UTF-8, int as 8 little-endian bytes), the
 * mapping of bk_status to the module's exception classes, and the type
 * objects each file defines and module.c registers.
 */
#ifndef BKPY_H
#define BKPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "bloomkit/common.h"

/* One key's bytes, valid until bkpy_key_release. */
typedef struct bkpy_key {
  const void *ptr;
  size_t len;
  Py_buffer view; /* held when has_view */
  int has_view;
  unsigned char le[8]; /* an int's bytes */
} bkpy_key;

/* Fill *k from obj; 0 on success, -1 with TypeError/OverflowError set. */
int bkpy_key_get(PyObject *obj, bkpy_key *k);
void bkpy_key_release(bkpy_key *k);

/* Set the exception for status s (never BK_OK) with a message naming
 * `what`; returns NULL so callers can `return bkpy_raise(...)`. */
PyObject *bkpy_raise(bk_status s, const char *what);

/* A Python int as uint64_t (0..2^64-1); -1 with an exception set. */
int bkpy_u64(PyObject *obj, const char *name, uint64_t *out);

/* Exception classes (module.c). */
extern PyObject *bkpy_Error;
extern PyObject *bkpy_TooOldError;

/* Types (bloom.c, fbf.c, idem.c) and their one-time setup. */
extern PyTypeObject bkpy_BloomFilterType;
extern PyTypeObject bkpy_ForgetfulType;
extern PyTypeObject bkpy_IdemType;
int bkpy_idem_init(PyObject *module);

#endif
