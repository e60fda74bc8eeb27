/* SPDX-License-Identifier: MIT */
/*
 * The `bloomkit._bloomkit` extension module: module creation, the
 * exception classes under bloomkit.Error (one per bk_status family, each
 * also a subclass of the matching built-in exception), and the key
 * converter every class uses. Keys are bytes-like objects (any C-contiguous
 * buffer), str (its UTF-8 bytes, so "a" and b"a" are one key), int (64
 * bits, signed or unsigned, as 8 little-endian bytes) or float (its IEEE
 * 754 bits, 8 bytes); anything else is a TypeError. Batches (bkpy_batch)
 * are sequences of such keys or arrays of 8-byte items run chunk by chunk
 * with the GIL released. Keys hash with the library's seeded hash, never
 * Python's salted hash(), so a filter answers the same in every process.
 */
#include "bkpy.h"

#include <string.h>

PyObject *bkpy_Error;
PyObject *bkpy_TooOldError;
PyObject *bkpy_UndecodableError;

/* An int or float key's 8 bytes as a uint64_t (stored little-endian):
 * ints in [-2**63, 2**64) as two's complement, floats as their IEEE 754
 * binary64 bits. 1 if obj is one, 0 if it is neither, -1 on error. */
static int key_u64(PyObject *obj, uint64_t *out) {
  if (PyLong_Check(obj)) {
    int overflow = 0;
    long long sv = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow == 0) {
      if (sv == -1 && PyErr_Occurred()) return -1;
      *out = (uint64_t)sv;
      return 1;
    }
    if (overflow > 0) {
      unsigned long long uv = PyLong_AsUnsignedLongLong(obj);
      if (!(uv == (unsigned long long)-1 && PyErr_Occurred())) {
        *out = (uint64_t)uv;
        return 1;
      }
      PyErr_Clear();
    }
    PyErr_SetString(PyExc_OverflowError, "int key out of the 64-bit range");
    return -1;
  }
  if (PyFloat_Check(obj)) {
    double d = PyFloat_AS_DOUBLE(obj);
    memcpy(out, &d, sizeof d);
    return 1;
  }
  return 0;
}

/* v's 8 bytes, least significant first, at p. */
static void store_le(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

int bkpy_key_get(PyObject *obj, bkpy_key *k) {
  k->has_view = 0;
  if (PyBytes_Check(obj)) {
    k->ptr = PyBytes_AS_STRING(obj);
    k->len = (size_t)PyBytes_GET_SIZE(obj);
    return 0;
  }
  if (PyUnicode_Check(obj)) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (s == NULL) return -1;
    k->ptr = s;
    k->len = (size_t)n;
    return 0;
  }
  uint64_t v;
  int rc = key_u64(obj, &v);
  if (rc < 0) return -1;
  if (rc > 0) {
    store_le(k->le, v);
    k->ptr = k->le;
    k->len = 8;
    return 0;
  }
  if (PyObject_CheckBuffer(obj)) {
    if (PyObject_GetBuffer(obj, &k->view, PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Format(PyExc_TypeError,
                   "a buffer key must be C-contiguous, not %.100s",
                   Py_TYPE(obj)->tp_name);
      return -1;
    }
    k->has_view = 1;
    k->ptr = k->view.buf;
    k->len = (size_t)k->view.len;
    return 0;
  }
  PyErr_Format(PyExc_TypeError,
               "a key must be bytes, bytearray, memoryview, str, int or "
               "float, not %.100s",
               Py_TYPE(obj)->tp_name);
  return -1;
}

void bkpy_key_release(bkpy_key *k) {
  if (k->has_view) PyBuffer_Release(&k->view);
  k->has_view = 0;
}

int bkpy_exclusive(PyObject *self, const char *what) {
  if (((bkpy_object *)self)->busy > 0) {
    PyErr_Format(PyExc_RuntimeError,
                 "%s: a batch call on this object is running in another "
                 "thread",
                 what);
    return -1;
  }
  return 0;
}

/* 1 if v is a 1-D buffer of 8-byte integers or floats in this machine's
 * byte order ('@', '=' or '<' on a little-endian machine). */
static int is_key8_array(const Py_buffer *v) {
  if (v->ndim != 1 || v->itemsize != 8 || v->format == NULL) return 0;
  const char *f = v->format;
  if (*f == '@' || *f == '=' || (PY_LITTLE_ENDIAN && *f == '<')) f++;
  return f[0] != '\0' && f[1] == '\0' && strchr("QqLld", f[0]) != NULL;
}

void bkpy_batch_release(bkpy_batch *b) {
  if (b->is_array) PyBuffer_Release(&b->arr);
  for (size_t i = 0; i < b->n_views; i++) PyBuffer_Release(&b->views[i]);
  PyMem_Free(b->views);
  PyMem_Free(b->ptrs);
  PyMem_Free(b->lens);
  PyMem_Free(b->ints);
  Py_CLEAR(b->tuple);
  memset(b, 0, sizeof *b);
}

/* Key i of a sequence batch; -1 with an exception. */
static int batch_key(bkpy_batch *b, size_t i, PyObject *obj) {
  if (PyBytes_Check(obj)) {
    b->ptrs[i] = PyBytes_AS_STRING(obj);
    b->lens[i] = (size_t)PyBytes_GET_SIZE(obj);
    return 0;
  }
  if (PyUnicode_Check(obj)) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (s == NULL) return -1;
    b->ptrs[i] = s;
    b->lens[i] = (size_t)n;
    return 0;
  }
  uint64_t v;
  int rc = key_u64(obj, &v);
  if (rc < 0) return -1;
  if (rc > 0) {
    if (b->ints == NULL) {
      b->ints = PyMem_Calloc(b->n, sizeof *b->ints);
      if (b->ints == NULL) {
        PyErr_NoMemory();
        return -1;
      }
    }
    store_le((unsigned char *)&b->ints[i], v);
    b->ptrs[i] = &b->ints[i];
    b->lens[i] = 8;
    return 0;
  }
  bkpy_key k;
  if (bkpy_key_get(obj, &k) < 0) return -1;   /* a buffer, or TypeError */
  if ((b->n_views & (b->n_views - 1)) == 0) { /* 0, 1, 2, 4...: grow */
    size_t cap = b->n_views ? 2 * b->n_views : 1;
    Py_buffer *nv = PyMem_Realloc(b->views, cap * sizeof *nv);
    if (nv == NULL) {
      bkpy_key_release(&k);
      PyErr_NoMemory();
      return -1;
    }
    b->views = nv;
  }
  /* The export keeps a bytearray from resizing under the batch. */
  b->views[b->n_views++] = k.view;
  b->ptrs[i] = k.ptr;
  b->lens[i] = k.len;
  return 0;
}

int bkpy_batch_get(PyObject *obj, bkpy_batch *b) {
  memset(b, 0, sizeof *b);
  if (PyBytes_Check(obj) || PyByteArray_Check(obj) || PyUnicode_Check(obj)) {
    PyErr_Format(PyExc_TypeError,
                 "a batch is a sequence of keys or an array of 8-byte "
                 "ints/floats, not one %.100s key (wrap it in a list)",
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  if (PyObject_CheckBuffer(obj) && !PyList_Check(obj)) {
    if (PyObject_GetBuffer(obj, &b->arr, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) <
        0) {
      if (PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
      PyErr_Clear(); /* numpy says ValueError for a strided array */
      PyErr_Format(PyExc_TypeError,
                   "an array of keys must be C-contiguous (this %.100s is not: "
                   "numpy.ascontiguousarray copies it)",
                   Py_TYPE(obj)->tp_name);
      return -1;
    }
    if (!is_key8_array(&b->arr)) {
      PyErr_Format(PyExc_TypeError,
                   "an array of keys must be 1-D, C-contiguous, of 8-byte "
                   "ints or floats in native byte order (numpy uint64, int64, "
                   "float64), not format '%.20s' x %zd bytes in %d dims",
                   b->arr.format ? b->arr.format : "B", b->arr.itemsize,
                   b->arr.ndim);
      PyBuffer_Release(&b->arr);
      return -1;
    }
    b->is_array = 1;
    b->n = (size_t)(b->arr.len / 8);
    return 0;
  }
  b->tuple = PySequence_Tuple(obj);
  if (b->tuple == NULL) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "a batch is a sequence or iterable of keys or an array of "
                   "8-byte ints/floats, not %.100s",
                   Py_TYPE(obj)->tp_name);
    }
    return -1;
  }
  b->n = (size_t)PyTuple_GET_SIZE(b->tuple);
  b->ptrs = PyMem_Malloc((b->n ? b->n : 1) * sizeof *b->ptrs);
  b->lens = PyMem_Malloc((b->n ? b->n : 1) * sizeof *b->lens);
  if (b->ptrs == NULL || b->lens == NULL) {
    bkpy_batch_release(b);
    PyErr_NoMemory();
    return -1;
  }
  for (size_t i = 0; i < b->n; i++) {
    if (batch_key(b, i, PyTuple_GET_ITEM(b->tuple, (Py_ssize_t)i)) < 0) {
      bkpy_batch_release(b);
      return -1;
    }
  }
  return 0;
}

bk_status bkpy_batch_run(PyObject *self, const bkpy_batch *b, bkpy_batch_fn fn,
                         bool *out, void *arg, int release_gil) {
  bkpy_object *o = (bkpy_object *)self;
  PyThreadState *ts = NULL;
  if (release_gil) {
    o->busy++;
    ts = PyEval_SaveThread();
  }
  bk_status s = BK_OK;
  const void *ptrs[BKPY_CHUNK];
  size_t lens[BKPY_CHUNK];
  if (b->is_array)
    for (size_t j = 0; j < BKPY_CHUNK; j++) lens[j] = 8;
  for (size_t i = 0; i < b->n && s == BK_OK; i += BKPY_CHUNK) {
    size_t m = b->n - i < BKPY_CHUNK ? b->n - i : BKPY_CHUNK;
    if (b->is_array) {
      const unsigned char *base = (const unsigned char *)b->arr.buf + 8 * i;
      for (size_t j = 0; j < m; j++) ptrs[j] = base + 8 * j;
      s = fn(o->h, ptrs, lens, m, out ? out + i : NULL, arg);
    } else {
      s = fn(o->h, b->ptrs + i, b->lens + i, m, out ? out + i : NULL, arg);
    }
  }
  if (release_gil) {
    PyEval_RestoreThread(ts);
    o->busy--;
  }
  return s;
}

int bkpy_bools_new(const bkpy_batch *b, bkpy_bools *r) {
  memset(r, 0, sizeof *r);
  r->n = b->n;
  if (b->is_array) {
    PyObject *np = PyImport_ImportModule("numpy");
    if (np == NULL) {
      /* numpy is optional: answer with a list when it is missing (any
       * other error of its import is raised). */
      if (!PyErr_ExceptionMatches(PyExc_ImportError)) return -1;
      PyErr_Clear();
    } else {
      r->array =
          PyObject_CallMethod(np, "zeros", "ns", (Py_ssize_t)b->n, "bool");
      Py_DECREF(np);
      if (r->array == NULL) return -1;
      if (PyObject_GetBuffer(r->array, &r->view,
                             PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_CLEAR(r->array);
        return -1;
      }
      if (r->view.len != (Py_ssize_t)b->n || r->view.itemsize != 1) {
        PyErr_SetString(PyExc_SystemError, "numpy bool array of odd size");
        bkpy_bools_discard(r);
        return -1;
      }
      r->buf = r->view.buf;
      return 0;
    }
  }
  r->buf = PyMem_Malloc(b->n ? b->n : 1);
  if (r->buf == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

void bkpy_bools_discard(bkpy_bools *r) {
  if (r->array != NULL) {
    PyBuffer_Release(&r->view);
    Py_CLEAR(r->array);
  } else {
    PyMem_Free(r->buf);
  }
  r->buf = NULL;
}

PyObject *bkpy_bools_finish(bkpy_bools *r) {
  if (r->array != NULL) {
    PyObject *a = Py_NewRef(r->array);
    bkpy_bools_discard(r);
    return a;
  }
  PyObject *list = PyList_New((Py_ssize_t)r->n);
  for (size_t i = 0; list != NULL && i < r->n; i++)
    PyList_SET_ITEM(list, (Py_ssize_t)i,
                    Py_NewRef(r->buf[i] ? Py_True : Py_False));
  bkpy_bools_discard(r);
  return list;
}

PyObject *bkpy_batch_call(PyObject *self, PyObject *keys, bkpy_batch_fn fn,
                          void *arg, int want_out, int release_gil,
                          const char *what) {
  bkpy_batch b;
  if (bkpy_batch_get(keys, &b) < 0) return NULL;
  bkpy_bools r;
  if (want_out && bkpy_bools_new(&b, &r) < 0) {
    bkpy_batch_release(&b);
    return NULL;
  }
  /* Getting the keys and the answers' array ran Python code (an iterator,
   * an import) that may have closed self or switched it to single-writer
   * mode: both are read now, after it. */
  bkpy_object *o = (bkpy_object *)self;
  if (o->h == NULL) {
    if (want_out) bkpy_bools_discard(&r);
    bkpy_batch_release(&b);
    PyErr_Format(PyExc_ValueError, "%s: operation on a closed object", what);
    return NULL;
  }
  if (release_gil == BKPY_RELEASE_UNLESS_SINGLE_WRITER)
    release_gil = !o->single_writer;
  /* Below a few hundred keys, dropping and taking the GIL costs more
   * than it lets other threads do. */
  bk_status s = bkpy_batch_run(self, &b, fn, want_out ? r.buf : NULL, arg,
                               release_gil && b.n >= 256);
  bkpy_batch_release(&b);
  if (s != BK_OK) {
    if (want_out) bkpy_bools_discard(&r);
    return bkpy_raise(s, what);
  }
  if (!want_out) Py_RETURN_NONE;
  return bkpy_bools_finish(&r);
}

/* The exception class of each bk_status (index -status), set up by
 * add_errors. */
static PyObject *status_class[32];

PyObject *bkpy_raise(bk_status s, const char *what) {
  unsigned i = (unsigned)-(int)s;
  PyObject *cls =
      i < 32 && status_class[i] != NULL ? status_class[i] : bkpy_Error;
  PyErr_Format(cls, "%s: %s (%s)", what, bk_strerror(s), bk_status_name(s));
  return NULL;
}

int bkpy_u64(PyObject *obj, const char *name, uint64_t *out) {
  if (!PyLong_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name,
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(obj);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s must be in [0, 2**64)", name);
    return -1;
  }
  *out = (uint64_t)v;
  return 0;
}

static const bkpy_codec *codec_of(PyTypeObject *type) {
  if (type == &bkpy_BloomFilterType) return &bkpy_bloom_codec;
  if (type == &bkpy_ForgetfulType) return &bkpy_fbf_codec;
  if (type == &bkpy_ApbfType) return &bkpy_apbf_codec;
  if (type == &bkpy_CbfType) return &bkpy_cbf_codec;
  if (type == &bkpy_ScbfType) return &bkpy_scbf_codec;
  if (type == &bkpy_KbfType) return &bkpy_kbf_codec;
  if (type == &bkpy_BloomClockType) return &bkpy_bloomclock_codec;
  if (type == &bkpy_VectorClockType) return &bkpy_vclock_codec;
  return &bkpy_idem_codec;
}

PyObject *bkpy_wrap(PyTypeObject *type, void *h) {
  bkpy_object *self = (bkpy_object *)type->tp_alloc(type, 0);
  if (self == NULL) {
    codec_of(type)->destroy(h);
    return NULL;
  }
  self->h = h;
  return (PyObject *)self;
}

void bkpy_dealloc(PyObject *self) {
  codec_of(Py_TYPE(self))->destroy(((bkpy_object *)self)->h);
  Py_TYPE(self)->tp_free(self);
}

/* Blobs from this size on are written and read with the GIL released. */
#define BKPY_BIG_BLOB ((size_t)1 << 20)

/* Whether c's serialize may run beside the other calls on the same handle
 * (bloom.h, fbf.h and idem.h say so), so to_bytes can drop the GIL. */
static int serialize_beside_writes(const bkpy_codec *c) {
  return c == &bkpy_bloom_codec || c == &bkpy_fbf_codec ||
         c == &bkpy_idem_codec;
}

/* c->write into a new bytes object of c->size bytes; GIL dropped when
 * release (self->busy counts it). */
static PyObject *write_blob(PyObject *self, const bkpy_codec *c, int release,
                            bk_status *st) {
  const void *h = ((bkpy_object *)self)->h;
  size_t n = 0;
  *st = c->size(h, &n);
  if (*st != BK_OK) return NULL;
  PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
  if (out == NULL) return NULL;
  size_t written = 0;
  if (release && n >= BKPY_BIG_BLOB) {
    ((bkpy_object *)self)->busy++;
    PyThreadState *ts = PyEval_SaveThread();
    *st = c->write(h, PyBytes_AS_STRING(out), n, &written);
    PyEval_RestoreThread(ts);
    ((bkpy_object *)self)->busy--;
  } else {
    *st = c->write(h, PyBytes_AS_STRING(out), n, &written);
  }
  if (*st != BK_OK) {
    Py_DECREF(out);
    return NULL;
  }
  /* A size is an upper bound for some structures (the counters' table). */
  if (written != n && _PyBytes_Resize(&out, (Py_ssize_t)written) < 0)
    return NULL;
  return out;
}

PyObject *bkpy_to_bytes(PyObject *self, PyObject *unused) {
  (void)unused;
  const bkpy_codec *c = codec_of(Py_TYPE(self));
  int release = serialize_beside_writes(c);
  bk_status s = BK_OK;
  PyObject *out = write_blob(self, c, release, &s);
  /* Another thread's adds may have grown the structure past the size
   * read before the GIL was dropped: once more, holding it. */
  if (out == NULL && release && s == BK_EINVAL && !PyErr_Occurred())
    out = write_blob(self, c, 0, &s);
  if (out == NULL && !PyErr_Occurred()) return bkpy_raise(s, c->name);
  return out;
}

PyObject *bkpy_from_bytes(PyObject *cls, PyObject *data) {
  const bkpy_codec *c = codec_of((PyTypeObject *)cls);
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  void *h = NULL;
  bk_status s;
  /* Only a bytes object's content cannot change while the GIL is out:
   * another thread could write into a bytearray (or any other exporter)
   * between the loader's checks and its use of what it checked. */
  if ((size_t)view.len >= BKPY_BIG_BLOB && PyBytes_Check(data)) {
    PyThreadState *ts = PyEval_SaveThread();
    s = c->read(view.buf, (size_t)view.len, &h);
    PyEval_RestoreThread(ts);
  } else {
    s = c->read(view.buf, (size_t)view.len, &h);
  }
  PyBuffer_Release(&view);
  if (s != BK_OK) return bkpy_raise(s, c->name);
  return bkpy_wrap((PyTypeObject *)cls, h);
}

PyObject *bkpy_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *blob = bkpy_to_bytes(self, NULL);
  if (blob == NULL) return NULL;
  PyObject *ctor =
      PyObject_GetAttrString((PyObject *)Py_TYPE(self), "from_bytes");
  if (ctor == NULL) {
    Py_DECREF(blob);
    return NULL;
  }
  return Py_BuildValue("(N(N))", ctor, blob);
}

PyObject *bkpy_copy(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *blob = bkpy_to_bytes(self, NULL);
  if (blob == NULL) return NULL;
  PyObject *c = bkpy_from_bytes((PyObject *)Py_TYPE(self), blob);
  Py_DECREF(blob);
  return c;
}

PyObject *bkpy_deepcopy(PyObject *self, PyObject *memo) {
  (void)memo;
  return bkpy_copy(self, NULL);
}

int bkpy_uint(PyObject *obj, const char *name, unsigned max, unsigned *out) {
  uint64_t v;
  if (bkpy_u64(obj, name, &v) < 0) return -1;
  if (v > max) {
    PyErr_Format(PyExc_ValueError, "%s must be at most %u", name, max);
    return -1;
  }
  *out = (unsigned)v;
  return 0;
}

/* A new exception class bloomkit.<name> under `bases`; added to m. */
static PyObject *new_error(PyObject *m, const char *name, PyObject *bases,
                           const char *doc) {
  char full[64];
  (void)snprintf(full, sizeof full, "bloomkit.%s", name);
  PyObject *cls = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
  if (cls == NULL) return NULL;
  if (PyModule_AddObjectRef(m, name, cls) < 0) {
    Py_DECREF(cls);
    return NULL;
  }
  return cls;
}

/* bloomkit.<name> with bases (Error, builtin). */
static PyObject *new_error2(PyObject *m, const char *name, PyObject *builtin,
                            const char *doc) {
  PyObject *bases = PyTuple_Pack(2, bkpy_Error, builtin);
  if (bases == NULL) return NULL;
  PyObject *cls = new_error(m, name, bases, doc);
  Py_DECREF(bases);
  return cls;
}

/* One class per bk_status, under Error and the built-in exception that
 * fits (NULL: Error alone). BK_EVERSION's class derives from
 * BK_ECORRUPT's (both are "bytes that are not a blob this build reads"). */
static const struct {
  bk_status status;
  const char *name;
  const char *doc;
} error_classes[] = {
    {BK_EINVAL, "InvalidArgumentError", "BK_EINVAL: an invalid argument."},
    {BK_ENOMEM, "OutOfMemoryError",
     "BK_ENOMEM: the library ran out of memory."},
    {BK_EFULL, "FullError", "BK_EFULL: the structure is full."},
    {BK_ENOTFOUND, "NotFoundError", "BK_ENOTFOUND: not found."},
    {BK_ECORRUPT, "CorruptError",
     "BK_ECORRUPT: bytes that are not a valid blob (truncated, bad checksum, "
     "or a state no sequence of operations reaches)."},
    {BK_EIO, "StorageError", "BK_EIO: an input/output error on the file."},
    {BK_EVERSION, "VersionError",
     "BK_EVERSION: a blob of a format version this build does not read (a "
     "CorruptError)."},
    {BK_EMISMATCH, "MismatchError",
     "BK_EMISMATCH: the structures are not compatible (size, hash, seed)."},
    {BK_EUNDECODABLE, "UndecodableError",
     "BK_EUNDECODABLE: KeyValueBloomFilter: the key's cells hold too many "
     "values to decode (a KeyError)."},
    {BK_ESATURATED, "SaturatedError", "BK_ESATURATED: a counter is saturated."},
    {BK_EUNDERFLOW, "UnderflowError", "BK_EUNDERFLOW: a counter is already 0."},
    {BK_ERANGE, "RangeError", "BK_ERANGE: a value would leave its range."},
    {BK_EBUSY, "BusyError", "BK_EBUSY: the resource is busy."},
    {BK_ESTATE, "StateError",
     "BK_ESTATE: the operation is not valid in the current state."},
};

static PyObject *builtin_base(bk_status s) {
  switch (s) {
    case BK_EINVAL:
    case BK_EMISMATCH:
    case BK_EUNDERFLOW:
    case BK_ECORRUPT:
      return PyExc_ValueError;
    case BK_ENOMEM:
      return PyExc_MemoryError;
    case BK_ENOTFOUND:
    case BK_EUNDECODABLE:
      return PyExc_KeyError;
    case BK_EIO:
      return PyExc_OSError;
    case BK_ESATURATED:
    case BK_ERANGE:
      return PyExc_OverflowError;
    case BK_EBUSY:
    case BK_ESTATE:
      return PyExc_RuntimeError;
    default:
      return NULL;
  }
}

static int add_errors(PyObject *m) {
  bkpy_Error = new_error(m, "Error", PyExc_Exception,
                         "Base class of every bloomkit error.");
  if (bkpy_Error == NULL) return -1;
  for (size_t i = 0; i < sizeof error_classes / sizeof error_classes[0]; i++) {
    bk_status s = error_classes[i].status;
    PyObject *cls;
    if (s == BK_EVERSION)
      cls = new_error(m, error_classes[i].name, status_class[-BK_ECORRUPT],
                      error_classes[i].doc);
    else if (builtin_base(s) != NULL)
      cls = new_error2(m, error_classes[i].name, builtin_base(s),
                       error_classes[i].doc);
    else
      cls =
          new_error(m, error_classes[i].name, bkpy_Error, error_classes[i].doc);
    if (cls == NULL) return -1;
    status_class[-s] = cls;
  }
  bkpy_UndecodableError = status_class[-BK_EUNDECODABLE];
  bkpy_TooOldError = new_error2(
      m, "TooOldError", PyExc_ValueError,
      "IdempotentCounters (strategy 'window'): the op's seq is below its "
      "client's window, so it cannot be decided; nothing was applied. "
      "The counter's current value is in the `value` attribute.");
  return bkpy_TooOldError == NULL ? -1 : 0;
}

static int add_type(PyObject *m, PyTypeObject *t, const char *name) {
  if (PyType_Ready(t) < 0) return -1;
  return PyModule_AddObjectRef(m, name, (PyObject *)t);
}

static struct PyModuleDef bkpy_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bloomkit._bloomkit",
    .m_doc = "bloomkit's C extension (import bloomkit instead).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__bloomkit(void);
PyMODINIT_FUNC PyInit__bloomkit(void) {
  PyObject *m = PyModule_Create(&bkpy_module);
  if (m == NULL) return NULL;
  if (add_errors(m) < 0 ||
      add_type(m, &bkpy_BloomFilterType, "BloomFilter") < 0 ||
      add_type(m, &bkpy_ForgetfulType, "ForgetfulBloomFilter") < 0 ||
      add_type(m, &bkpy_ApbfType, "AgePartitionedBloomFilter") < 0 ||
      bkpy_idem_init(m) < 0 ||
      add_type(m, &bkpy_IdemType, "IdempotentCounters") < 0 ||
      add_type(m, &bkpy_CbfType, "CountingBloomFilter") < 0 ||
      add_type(m, &bkpy_ScbfType, "ScalableCountingFilter") < 0 ||
      add_type(m, &bkpy_KbfType, "KeyValueBloomFilter") < 0 ||
      add_type(m, &bkpy_BloomClockType, "BloomClock") < 0 ||
      add_type(m, &bkpy_VectorClockType, "VectorClock") < 0 ||
      PyModule_AddStringConstant(m, "library_version", bk_version_string()) <
          0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
