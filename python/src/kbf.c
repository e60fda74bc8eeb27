/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.KeyValueBloomFilter: a bk_kbf (kbf.h) as a Python mapping of
 * keys to byte-string values. `f[key] = value` inserts a key that reads as
 * absent and updates one that reads as present; `f[key]` returns the value
 * as bytes, raising KeyError when the key reads as absent and
 * UndecodableError (a KeyError) when its cells hold too many encodings to
 * tell; `del f[key]`, `in` (True unless absent), info, and to_bytes /
 * from_bytes / pickle over the library's serialized form. Values are bytes
 * (any C-contiguous buffer) or str (stored as its UTF-8 bytes); they read
 * back as bytes. The GIL is held around every call.
 */
#include "bkpy.h"

#include <string.h>

#include "bloomkit/kbf.h"

static PyObject *kbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity",  "fpp",        "m",    "k",
                           "cell_bits", "max_values", "seed", NULL};
  PyObject *cap_obj = Py_None, *m_obj = Py_None, *k_obj = Py_None;
  PyObject *bits_obj = NULL, *maxv_obj = NULL, *seed_obj = NULL;
  double fpp = 0.01;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Od$OOOOO", kwlist, &cap_obj,
                                   &fpp, &m_obj, &k_obj, &bits_obj, &maxv_obj,
                                   &seed_obj))
    return NULL;
  bk_kbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  unsigned bits = 32, maxv = 4095;
  if ((cap_obj != Py_None &&
       bkpy_u64(cap_obj, "capacity", &cfg.capacity) < 0) ||
      (m_obj != Py_None && bkpy_u64(m_obj, "m", &cfg.m_cells) < 0) ||
      (k_obj != Py_None && bkpy_uint(k_obj, "k", 64, &cfg.k) < 0) ||
      (bits_obj != NULL && bkpy_uint(bits_obj, "cell_bits", 64, &bits) < 0) ||
      (maxv_obj != NULL &&
       bkpy_uint(maxv_obj, "max_values", (1u << 24) - 1, &maxv) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0))
    return NULL;
  /* Exactly one sizing, and no zero the C config would read as a default. */
  if ((cap_obj == Py_None) == (m_obj == Py_None) ||
      (m_obj != Py_None) != (k_obj != Py_None) ||
      (cap_obj != Py_None && (cfg.capacity == 0 || k_obj != Py_None)) ||
      (m_obj != Py_None && (cfg.m_cells == 0 || cfg.k == 0))) {
    PyErr_SetString(PyExc_ValueError,
                    "KeyValueBloomFilter: give capacity (>= 1, with fpp) "
                    "or both m and k (>= 1)");
    return NULL;
  }
  if (!(fpp > 0 && fpp < 1) || (bits != 32 && bits != 64) || maxv == 0)
    return bkpy_raise(BK_EINVAL,
                      "KeyValueBloomFilter: fpp must be in (0, 1), cell_bits "
                      "32 or 64, max_values at least 1");
  cfg.fpp = fpp;
  cfg.cell_bits = bits;
  cfg.max_values = maxv;
  bk_kbf *f = NULL;
  bk_status s = bk_kbf_create(&f, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "KeyValueBloomFilter");
  return bkpy_wrap(type, f);
}

/* A value's bytes: a buffer or str (an int is refused: values are bytes). */
static int value_get(PyObject *obj, bkpy_key *v) {
  if (PyLong_Check(obj)) {
    PyErr_Format(PyExc_TypeError,
                 "a value must be bytes-like or str, not %.100s",
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  return bkpy_key_get(obj, v);
}

static PyObject *undecodable(PyObject *key) {
  PyErr_SetObject(bkpy_UndecodableError, key);
  return NULL;
}

/* The key's query: 0 found (*out a new bytes), 1 absent, 2 undecodable,
 * -1 error. */
static int kbf_lookup(PyObject *o, PyObject *key, PyObject **out) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_kbf_result r = BK_KBF_ABSENT;
  const void *val = NULL;
  size_t len = 0;
  bk_status s =
      bk_kbf_query(((bkpy_object *)o)->h, k.ptr, k.len, &r, &val, &len);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "KeyValueBloomFilter.query");
    return -1;
  }
  if (r == BK_KBF_ABSENT) return 1;
  if (r == BK_KBF_UNDECODABLE) return 2;
  if (out != NULL) {
    *out = PyBytes_FromStringAndSize(val, (Py_ssize_t)len);
    if (*out == NULL) return -1;
  }
  return 0;
}

static PyObject *kbf_getitem(PyObject *o, PyObject *key) {
  PyObject *v = NULL;
  int rc = kbf_lookup(o, key, &v);
  if (rc < 0) return NULL;
  if (rc == 1) {
    PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
  }
  if (rc == 2) return undecodable(key);
  return v;
}

static PyObject *kbf_get(PyObject *o, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
    return NULL;
  }
  PyObject *v = NULL;
  int rc = kbf_lookup(o, args[0], &v);
  if (rc < 0) return NULL;
  if (rc == 2) return undecodable(args[0]);
  if (rc == 1) {
    v = nargs == 2 ? args[1] : Py_None;
    Py_INCREF(v);
  }
  return v;
}

static int kbf_contains(PyObject *o, PyObject *key) {
  int rc = kbf_lookup(o, key, NULL);
  return rc < 0 ? -1 : rc != 1;
}

/* Insert (insert_only) or set: update when the key reads as present. */
static int kbf_store(PyObject *o, PyObject *key, PyObject *value,
                     int insert_only) {
  bkpy_key k, v;
  if (value_get(value, &v) < 0) return -1;
  if (bkpy_key_get(key, &k) < 0) {
    bkpy_key_release(&v);
    return -1;
  }
  bk_kbf *f = ((bkpy_object *)o)->h;
  bk_status s = BK_ENOTFOUND;
  if (!insert_only) s = bk_kbf_update(f, k.ptr, k.len, v.ptr, v.len);
  if (s == BK_ENOTFOUND) s = bk_kbf_insert(f, k.ptr, k.len, v.ptr, v.len);
  bkpy_key_release(&k);
  bkpy_key_release(&v);
  if (s == BK_EUNDECODABLE) {
    undecodable(key);
    return -1;
  }
  if (s != BK_OK) {
    bkpy_raise(s, "KeyValueBloomFilter: store");
    return -1;
  }
  return 0;
}

static int kbf_setitem(PyObject *o, PyObject *key, PyObject *value) {
  if (value != NULL) return kbf_store(o, key, value, 0);
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_status s = bk_kbf_delete(((bkpy_object *)o)->h, k.ptr, k.len);
  bkpy_key_release(&k);
  if (s == BK_ENOTFOUND) {
    PyErr_SetObject(PyExc_KeyError, key);
    return -1;
  }
  if (s == BK_EUNDECODABLE) {
    undecodable(key);
    return -1;
  }
  if (s != BK_OK) {
    bkpy_raise(s, "KeyValueBloomFilter.__delitem__");
    return -1;
  }
  return 0;
}

static PyObject *kbf_insert(PyObject *o, PyObject *const *args,
                            Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "insert(key, value)");
    return NULL;
  }
  if (kbf_store(o, args[0], args[1], 1) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *kbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_kbf_info in;
  bk_status s = bk_kbf_info_get(((bkpy_object *)o)->h, &in);
  if (s != BK_OK) return bkpy_raise(s, "KeyValueBloomFilter.info");
  return Py_BuildValue("{s:K,s:I,s:I,s:I,s:I,s:K,s:K,s:d,s:K}", "m_cells",
                       (unsigned long long)in.m_cells, "k", in.k, "cell_bits",
                       in.cell_bits, "max_values", (unsigned)in.max_values,
                       "n_values", (unsigned)in.n_values, "n_keys",
                       (unsigned long long)in.n_keys, "capacity",
                       (unsigned long long)in.capacity, "rho", in.rho, "seed",
                       (unsigned long long)in.seed);
}

BKPY_DEFINE_CODEC(bkpy_kbf_codec, "KeyValueBloomFilter", kbf, kbf);

static PyMethodDef kbf_methods[] = {
    {"get", (PyCFunction)(void (*)(void))kbf_get, METH_FASTCALL,
     "get(key, default=None): the value, or default when the key reads as "
     "absent; UndecodableError when it cannot be decoded."},
    {"insert", (PyCFunction)(void (*)(void))kbf_insert, METH_FASTCALL,
     "insert(key, value): store a key known to be new (no query first)."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "KeyValueBloomFilter.from_bytes(b): a filter from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef kbf_getset[] = {
    {"info", kbf_get_info, NULL,
     "dict: m_cells, k, cell_bits, max_values, n_values, n_keys, capacity, "
     "rho, seed.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods kbf_as_mapping = {
    .mp_subscript = kbf_getitem,
    .mp_ass_subscript = kbf_setitem,
};

static PySequenceMethods kbf_as_sequence = {
    .sq_contains = kbf_contains,
};

PyTypeObject bkpy_KbfType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.KeyValueBloomFilter",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &kbf_as_sequence,
    .tp_as_mapping = &kbf_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "KeyValueBloomFilter(capacity=None, fpp=0.01, *, m=None, k=None, "
        "cell_bits=32, max_values=4095, seed=0)\n\n"
        "A key-value Bloom filter (kBF): sized for `capacity` keys at false "
        "positive probability `fpp`, or by m cells and k hashes. Values are "
        "bytes or str, read back as bytes; f[key] raises KeyError when the "
        "key reads as absent and UndecodableError (a KeyError) when its "
        "cells cannot be decoded. A false positive key reads as some value.",
    .tp_methods = kbf_methods,
    .tp_getset = kbf_getset,
    .tp_new = kbf_new,
};
