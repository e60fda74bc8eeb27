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

/* Every class's object: the library handle behind it. */
typedef struct bkpy_object {
  PyObject_HEAD void *h;
} bkpy_object;

/* One class's serialized form and destructor, as the generic methods
 * below use them (module.c finds a type's codec). */
typedef struct bkpy_codec {
  const char *name; /* for messages: "BloomFilter" */
  bk_status (*size)(const void *h, size_t *out);
  bk_status (*write)(const void *h, void *buf, size_t cap, size_t *written);
  bk_status (*read)(const void *buf, size_t len, void **out);
  void (*destroy)(void *h);
} bkpy_codec;

/* The codec of a type whose library calls are bk_<T>_serialized_size,
 * _serialize, _deserialize (libc allocator) and _destroy: defines
 * <p>_size, <p>_write, <p>_read, <p>_destroy and `var`. */
#define BKPY_DEFINE_CODEC(var, pyname, p, T)                           \
  static bk_status p##_size(const void *h, size_t *out) {              \
    return bk_##T##_serialized_size(h, out);                           \
  }                                                                    \
  static bk_status p##_write(const void *h, void *buf, size_t cap,     \
                             size_t *written) {                        \
    return bk_##T##_serialize(h, buf, cap, written);                   \
  }                                                                    \
  static bk_status p##_read(const void *buf, size_t len, void **out) { \
    bk_##T *h = NULL;                                                  \
    bk_status s = bk_##T##_deserialize(buf, len, NULL, &h);            \
    *out = h;                                                          \
    return s;                                                          \
  }                                                                    \
  static void p##_destroy(void *h) {                                   \
    bk_##T##_destroy(h);                                               \
  }                                                                    \
  const bkpy_codec var = {pyname, p##_size, p##_write, p##_read, p##_destroy}

extern const bkpy_codec bkpy_bloom_codec;
extern const bkpy_codec bkpy_fbf_codec;
extern const bkpy_codec bkpy_idem_codec;
extern const bkpy_codec bkpy_cbf_codec, bkpy_scbf_codec;
extern const bkpy_codec bkpy_kbf_codec;
extern const bkpy_codec bkpy_bloomclock_codec;
extern const bkpy_codec bkpy_vclock_codec;

/* A new object of `type` owning h (destroyed on failure). */
PyObject *bkpy_wrap(PyTypeObject *type, void *h);
/* tp_dealloc, to_bytes, from_bytes (a class method) and __reduce__ of
 * every class, over its codec. */
void bkpy_dealloc(PyObject *self);
PyObject *bkpy_to_bytes(PyObject *self, PyObject *unused);
PyObject *bkpy_from_bytes(PyObject *cls, PyObject *data);
PyObject *bkpy_reduce(PyObject *self, PyObject *unused);

/* A Python int as an unsigned int at most max; -1 with an exception. */
int bkpy_uint(PyObject *obj, const char *name, unsigned max, unsigned *out);

/* Exception classes (module.c). */
extern PyObject *bkpy_Error;
extern PyObject *bkpy_TooOldError;
extern PyObject *bkpy_UndecodableError;

/* Types (bloom.c, fbf.c, idem.c) and their one-time setup. */
extern PyTypeObject bkpy_BloomFilterType;
extern PyTypeObject bkpy_ForgetfulType;
extern PyTypeObject bkpy_IdemType;
extern PyTypeObject bkpy_CbfType, bkpy_ScbfType; /* cbf.c */
int bkpy_idem_init(PyObject *module);
extern PyTypeObject bkpy_KbfType;         /* kbf.c */
extern PyTypeObject bkpy_BloomClockType;  /* clock.c */
extern PyTypeObject bkpy_VectorClockType; /* clock.c */

#endif
