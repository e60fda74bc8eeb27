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

/* Every class's object: the library handle behind it, and how many calls
 * on it run with the GIL released right now (bkpy_batch_run). */
typedef struct bkpy_object {
  PyObject_HEAD void *h;
  Py_ssize_t busy;
  int single_writer; /* the handle is in single-writer mode: adds keep the GIL
                      */
} bkpy_object;

/* -1 with RuntimeError naming `what` when a call with the GIL released is
 * running on self in another thread; 0 otherwise. Calls the C contract
 * wants exclusive (clear, merge, set_single_writer...) start with it: the
 * GIL keeps every other call out while they run. */
int bkpy_exclusive(PyObject *self, const char *what);

/* A batch of keys: a sequence or iterable of keys (each as bkpy_key_get
 * takes it), or a 1-D buffer of 8-byte items (numpy uint64, int64 or
 * float64) whose items' bytes are the keys, so array [5] and the key 5 are
 * one key. It holds references (and buffer exports) so the keys stay valid
 * with the GIL released. */
typedef struct bkpy_batch {
  size_t n;
  int is_array;      /* keys from arr, 8 bytes each */
  Py_buffer arr;     /* is_array */
  PyObject *tuple;   /* !is_array: the keys, held */
  const void **ptrs; /* !is_array: n key pointers */
  size_t *lens;      /* !is_array: n key lengths */
  uint64_t *ints;    /* !is_array: the 8 bytes of int/float keys */
  Py_buffer *views;  /* !is_array: exports of buffer keys */
  size_t n_views;
} bkpy_batch;

/* Keys per chunk of bkpy_batch_run (pointer and length arrays on the
 * stack, in cache; the library prefetches within a chunk). */
#define BKPY_CHUNK 512

/* Fill *b from obj; -1 with TypeError/OverflowError (nothing held). */
int bkpy_batch_get(PyObject *obj, bkpy_batch *b);
void bkpy_batch_release(bkpy_batch *b);

/* A library batch call over keys [0, m): out is NULL for calls that
 * return nothing per key. */
typedef bk_status (*bkpy_batch_fn)(void *h, const void *const *keys,
                                   const size_t *lens, size_t m, bool *out,
                                   void *arg);

/* fn over the whole batch chunk by chunk (stopping at the first error),
 * with the GIL released when release_gil (self->busy counts it, see
 * bkpy_exclusive). out: b->n bools or NULL. */
bk_status bkpy_batch_run(PyObject *self, const bkpy_batch *b, bkpy_batch_fn fn,
                         bool *out, void *arg, int release_gil);

/* n bools for a batch's answers: buf is writable with the GIL released;
 * finish gives a numpy bool array when the keys came from a buffer (and
 * numpy imports), a list of bools otherwise. */
typedef struct bkpy_bools {
  bool *buf;
  size_t n;
  PyObject *array; /* the numpy array whose buffer buf is, or NULL */
  Py_buffer view;
} bkpy_bools;
int bkpy_bools_new(const bkpy_batch *b, bkpy_bools *r);
PyObject *bkpy_bools_finish(bkpy_bools *r); /* new reference; frees r */
void bkpy_bools_discard(bkpy_bools *r);

/* release_gil of bkpy_batch_call: release it unless self is in
 * single-writer mode (read after the keys are got: their iterator may
 * switch the mode), for adds, whose one writer the GIL then keeps alone. */
#define BKPY_RELEASE_UNLESS_SINGLE_WRITER 2

/* The common shape of a batch method: keys -> answers (out != NULL) or
 * None (want_out == 0), with the library call fn; ValueError when self's
 * handle is NULL (a closed object). */
PyObject *bkpy_batch_call(PyObject *self, PyObject *keys, bkpy_batch_fn fn,
                          void *arg, int want_out, int release_gil,
                          const char *what);

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
extern const bkpy_codec bkpy_apbf_codec;
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
/* copy() through to_bytes / from_bytes, and __deepcopy__(memo) as it. */
PyObject *bkpy_copy(PyObject *self, PyObject *unused);
PyObject *bkpy_deepcopy(PyObject *self, PyObject *memo);

/* A Python int as an unsigned int at most max; -1 with an exception. */
int bkpy_uint(PyObject *obj, const char *name, unsigned max, unsigned *out);

/* Exception classes (module.c). */
extern PyObject *bkpy_Error;
extern PyObject *bkpy_TooOldError;
extern PyObject *bkpy_UndecodableError;

/* Types (bloom.c, fbf.c, idem.c) and their one-time setup. */
extern PyTypeObject bkpy_BloomFilterType;
extern PyTypeObject bkpy_ForgetfulType;
extern PyTypeObject bkpy_ApbfType; /* apbf.c */
extern PyTypeObject bkpy_IdemType;
extern PyTypeObject bkpy_CbfType, bkpy_ScbfType; /* cbf.c */
int bkpy_idem_init(PyObject *module);
extern PyTypeObject bkpy_KbfType;         /* kbf.c */
extern PyTypeObject bkpy_BloomClockType;  /* clock.c */
extern PyTypeObject bkpy_VectorClockType; /* clock.c */

#endif
