/* SPDX-License-Identifier: MIT */
/*
 * The `bloomkit._bloomkit` extension module: module creation, the
 * exception classes under bloomkit.Error (one per bk_status family, each
 * also a subclass of the matching built-in exception), and the key
 * converter every class uses. Keys are bytes-like objects (any C-contiguous
 * buffer), str (its UTF-8 bytes, so "a" and b"a" are one key) or int (64
 * bits, signed or unsigned, as 8 little-endian bytes); anything else is a
 * TypeError. Keys hash with the library's seeded hash, never Python's
 * salted hash(), so a filter answers the same in every process.
 */
#include "bkpy.h"

#include <string.h>

PyObject *bkpy_Error;
PyObject *bkpy_TooOldError;
PyObject *bkpy_UndecodableError;
static PyObject *InvalidArgumentError;
static PyObject *OutOfMemoryError;
static PyObject *CorruptError;
static PyObject *RangeError;

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
  if (PyLong_Check(obj)) {
    uint64_t v;
    int overflow = 0;
    long long sv = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow == 0) {
      if (sv == -1 && PyErr_Occurred()) return -1;
      v = (uint64_t)sv;
    } else if (overflow > 0) {
      unsigned long long uv = PyLong_AsUnsignedLongLong(obj);
      if (uv == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_SetString(PyExc_OverflowError, "int key out of the 64-bit range");
        return -1;
      }
      v = (uint64_t)uv;
    } else {
      PyErr_SetString(PyExc_OverflowError, "int key out of the 64-bit range");
      return -1;
    }
    for (int i = 0; i < 8; i++) k->le[i] = (unsigned char)(v >> (8 * i));
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
               "a key must be bytes, bytearray, memoryview, str or int, "
               "not %.100s",
               Py_TYPE(obj)->tp_name);
  return -1;
}

void bkpy_key_release(bkpy_key *k) {
  if (k->has_view) PyBuffer_Release(&k->view);
  k->has_view = 0;
}

PyObject *bkpy_raise(bk_status s, const char *what) {
  PyObject *cls;
  switch (s) {
    case BK_EINVAL:
      cls = InvalidArgumentError;
      break;
    case BK_ENOMEM:
      cls = OutOfMemoryError;
      break;
    case BK_ECORRUPT:
    case BK_EVERSION:
      cls = CorruptError;
      break;
    case BK_ERANGE:
      cls = RangeError;
      break;
    default:
      cls = bkpy_Error;
      break;
  }
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

PyObject *bkpy_to_bytes(PyObject *self, PyObject *unused) {
  (void)unused;
  const bkpy_codec *c = codec_of(Py_TYPE(self));
  const void *h = ((bkpy_object *)self)->h;
  size_t n = 0;
  bk_status s = c->size(h, &n);
  if (s != BK_OK) return bkpy_raise(s, c->name);
  PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
  if (out == NULL) return NULL;
  size_t written = 0;
  s = c->write(h, PyBytes_AS_STRING(out), n, &written);
  if (s != BK_OK) {
    Py_DECREF(out);
    return bkpy_raise(s, c->name);
  }
  /* A size is an upper bound for some structures (the counters' table). */
  if (written != n && _PyBytes_Resize(&out, (Py_ssize_t)written) < 0)
    return NULL;
  return out;
}

PyObject *bkpy_from_bytes(PyObject *cls, PyObject *data) {
  const bkpy_codec *c = codec_of((PyTypeObject *)cls);
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  void *h = NULL;
  bk_status s = c->read(view.buf, (size_t)view.len, &h);
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

static int add_errors(PyObject *m) {
  bkpy_Error = new_error(m, "Error", PyExc_Exception,
                         "Base class of every bloomkit error.");
  if (bkpy_Error == NULL) return -1;
  InvalidArgumentError = new_error2(m, "InvalidArgumentError", PyExc_ValueError,
                                    "BK_EINVAL: an invalid argument.");
  OutOfMemoryError = new_error2(m, "OutOfMemoryError", PyExc_MemoryError,
                                "BK_ENOMEM: the library ran out of memory.");
  CorruptError =
      new_error2(m, "CorruptError", PyExc_ValueError,
                 "BK_ECORRUPT / BK_EVERSION: bytes that are not a valid blob.");
  RangeError = new_error2(m, "RangeError", PyExc_OverflowError,
                          "BK_ERANGE: a counter would leave int64's range.");
  bkpy_TooOldError = new_error2(
      m, "TooOldError", PyExc_ValueError,
      "IdempotentCounters (strategy 'window'): the op's seq is below its "
      "client's window, so it cannot be decided; nothing was applied. "
      "The counter's current value is in the `value` attribute.");
  bkpy_UndecodableError = new_error2(
      m, "UndecodableError", PyExc_KeyError,
      "KeyValueBloomFilter: the key's cells hold too many values to decode.");
  if (bkpy_UndecodableError == NULL) return -1;
  if (InvalidArgumentError == NULL || OutOfMemoryError == NULL ||
      CorruptError == NULL || RangeError == NULL || bkpy_TooOldError == NULL)
    return -1;
  return 0;
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
