/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.KeyValueBloomFilter: a bk_kbf (kbf.h) as a Python mapping of
 * keys to byte-string values. `f[key] = value` inserts a key that reads as
 * absent and updates one that reads as present; `f[key]` returns the value
 * as bytes, raising KeyError when the key reads as absent and
 * UndecodableError (a KeyError) when its cells hold too many encodings to
 * tell; `del f[key]`, `in` (True unless absent), get, get_many (a batch
 * of queries with the GIL released), len() (keys inserted minus deleted),
 * | and |= (the paper's JOIN), compress, copy, info, and to_bytes /
 * from_bytes / pickle over the library's serialized form. Values are bytes
 * (any C-contiguous buffer) or str (stored as its UTF-8 bytes); they read
 * back as bytes. Single-key calls keep the GIL; every mutation refuses to
 * run while get_many runs on the filter in another thread (the library
 * wants mutations exclusive).
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
  if (bkpy_exclusive(o, "KeyValueBloomFilter: store") < 0) {
    bkpy_key_release(&k);
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
  /* After the key (its export may run Python code, another thread's). */
  if (bkpy_exclusive(o, "KeyValueBloomFilter.__delitem__") < 0) {
    bkpy_key_release(&k);
    return -1;
  }
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

/* ---- get_many, len, join, compress, copy ---- */

/* get_many's answers, filled chunk by chunk with the GIL released. */
typedef struct kbf_answers {
  bk_kbf_result *res;
  uint32_t *idx;
  size_t pos; /* keys answered so far */
} kbf_answers;

static bk_status query_many_fn(void *h, const void *const *keys,
                               const size_t *lens, size_t m, bool *out,
                               void *arg) {
  (void)out;
  kbf_answers *a = arg;
  for (size_t i = 0; i < m; i++, a->pos++) {
    bk_hash hh;
    bk_status s = bk_kbf_hash(h, keys[i], lens[i], &hh);
    if (s == BK_OK)
      s = bk_kbf_query_index_hash(h, hh, &a->res[a->pos], &a->idx[a->pos]);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}

/* Key i of a batch as an object for UndecodableError: the key itself, or
 * an array item's 8 bytes as an unsigned int. */
static PyObject *batch_key_obj(const bkpy_batch *b, size_t i) {
  if (!b->is_array) return Py_NewRef(PyTuple_GET_ITEM(b->tuple, (Py_ssize_t)i));
  uint64_t v;
  memcpy(&v, (const unsigned char *)b->arr.buf + 8 * i, 8);
  return PyLong_FromUnsignedLongLong(v);
}

/* The answers as a list (default for absent keys; undecodable ones are
 * `undec`, or UndecodableError when it is NULL). */
static PyObject *answers_list(PyObject *o, const bkpy_batch *b,
                              const kbf_answers *a, PyObject *dflt,
                              PyObject *undec) {
  PyObject *list = PyList_New((Py_ssize_t)b->n);
  if (list == NULL) return NULL;
  for (size_t i = 0; i < b->n; i++) {
    PyObject *v;
    if (a->res[i] == BK_KBF_FOUND) {
      const void *val = NULL;
      size_t len = 0;
      bk_status s = bk_kbf_value(((bkpy_object *)o)->h, a->idx[i], &val, &len);
      if (s != BK_OK) {
        Py_DECREF(list);
        return bkpy_raise(s, "KeyValueBloomFilter.get_many");
      }
      v = PyBytes_FromStringAndSize(val, (Py_ssize_t)len);
    } else if (a->res[i] == BK_KBF_ABSENT || undec != NULL) {
      v = Py_NewRef(a->res[i] == BK_KBF_ABSENT ? dflt : undec);
    } else {
      PyObject *key = batch_key_obj(b, i);
      if (key != NULL) {
        undecodable(key);
        Py_DECREF(key);
      }
      v = NULL;
    }
    if (v == NULL) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, v);
  }
  return list;
}

static PyObject *kbf_get_many(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"keys", "default", "undecodable", NULL};
  PyObject *keys, *dflt = Py_None, *undec = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:get_many", kwlist, &keys,
                                   &dflt, &undec))
    return NULL;
  bkpy_batch b;
  if (bkpy_batch_get(keys, &b) < 0) return NULL;
  kbf_answers a = {PyMem_Malloc((b.n ? b.n : 1) * sizeof *a.res),
                   PyMem_Malloc((b.n ? b.n : 1) * sizeof *a.idx), 0};
  PyObject *out = NULL;
  if (a.res == NULL || a.idx == NULL) {
    PyErr_NoMemory();
  } else {
    bk_status s = bkpy_batch_run(o, &b, query_many_fn, NULL, &a, b.n >= 256);
    /* The answers are value indexes until the values are read: mutations
     * (a finalizer the list's allocation runs, another thread it lets
     * in) stay out until then. */
    ((bkpy_object *)o)->busy++;
    out = s != BK_OK ? bkpy_raise(s, "KeyValueBloomFilter.get_many")
                     : answers_list(o, &b, &a, dflt, undec);
    ((bkpy_object *)o)->busy--;
  }
  PyMem_Free(a.res);
  PyMem_Free(a.idx);
  bkpy_batch_release(&b);
  return out;
}

static Py_ssize_t kbf_len(PyObject *o) {
  bk_kbf_info in;
  bk_status s = bk_kbf_info_get(((bkpy_object *)o)->h, &in);
  if (s != BK_OK) {
    bkpy_raise(s, "KeyValueBloomFilter.__len__");
    return -1;
  }
  return (Py_ssize_t)in.n_keys;
}

static PyObject *kbf_compress(PyObject *o, PyObject *unused) {
  (void)unused;
  if (bkpy_exclusive(o, "KeyValueBloomFilter.compress") < 0) return NULL;
  bk_status s = bk_kbf_compress(((bkpy_object *)o)->h);
  if (s != BK_OK) return bkpy_raise(s, "KeyValueBloomFilter.compress");
  Py_RETURN_NONE;
}

/* dst := JOIN(dst, src) (dst exclusive). */
static int kbf_join_into(PyObject *dst, PyObject *src) {
  if (bkpy_exclusive(dst, "KeyValueBloomFilter |") < 0) return -1;
  bk_status s = bk_kbf_join(((bkpy_object *)dst)->h, ((bkpy_object *)src)->h);
  if (s != BK_OK) {
    bkpy_raise(s, "KeyValueBloomFilter |");
    return -1;
  }
  return 0;
}

static int both_kbf(PyObject *a, PyObject *b) {
  return PyObject_TypeCheck(a, &bkpy_KbfType) &&
         PyObject_TypeCheck(b, &bkpy_KbfType);
}

static PyObject *kbf_or(PyObject *a, PyObject *b) {
  if (!both_kbf(a, b)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *c = bkpy_copy(a, NULL);
  if (c != NULL && kbf_join_into(c, b) < 0) Py_CLEAR(c);
  return c;
}

static PyObject *kbf_ior(PyObject *a, PyObject *b) {
  if (!both_kbf(a, b)) Py_RETURN_NOTIMPLEMENTED;
  if (kbf_join_into(a, b) < 0) return NULL;
  return Py_NewRef(a);
}

static PyNumberMethods kbf_as_number = {
    .nb_or = kbf_or,
    .nb_inplace_or = kbf_ior,
};

BKPY_DEFINE_CODEC(bkpy_kbf_codec, "KeyValueBloomFilter", kbf, kbf);

static PyMethodDef kbf_methods[] = {
    {"get", (PyCFunction)(void (*)(void))kbf_get, METH_FASTCALL,
     "get(key, default=None): the value, or default when the key reads as "
     "absent; UndecodableError when it cannot be decoded."},
    {"insert", (PyCFunction)(void (*)(void))kbf_insert, METH_FASTCALL,
     "insert(key, value): store a key known to be new (no query first; "
     "inserting a key twice superimposes two values)."},
    {"get_many", (PyCFunction)(void (*)(void))kbf_get_many,
     METH_VARARGS | METH_KEYWORDS,
     "get_many(keys, default=None, *, undecodable=<raise>) -> list: get() "
     "of each key of a list/iterable or numpy array of 8-byte ints/floats, "
     "queried with the GIL released. An undecodable key gives the "
     "`undecodable` value when one is passed, else UndecodableError (with "
     "the key; an array item as its unsigned int)."},
    {"compress", kbf_compress, METH_NOARGS,
     "compress(): fold the second half of the cells onto the first (the "
     "paper's COMPRESS), halving the memory and raising the load; "
     "StateError when the cell count is odd."},
    {"copy", bkpy_copy, METH_NOARGS,
     "copy() -> KeyValueBloomFilter: an independent copy."},
    {"__copy__", bkpy_copy, METH_NOARGS, "copy.copy support"},
    {"__deepcopy__", bkpy_deepcopy, METH_O, "copy.deepcopy support"},
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
    .mp_length = kbf_len,
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
    .tp_as_number = &kbf_as_number,
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
        "cells cannot be decoded. A false positive key reads as some value. "
        "len() is the keys inserted minus deleted (O(m): it reads the "
        "info). a | b and a |= b are the paper's JOIN: the filters must "
        "share their shape and seed and have value tables of which one is "
        "a prefix of the other (values first stored in the same order), "
        "else MismatchError. Keys cannot be listed (no iteration). Queries "
        "may run from many threads; a mutation (store, del, insert, |=, "
        "compress) raises RuntimeError while get_many runs on the filter "
        "in another thread.",
    .tp_methods = kbf_methods,
    .tp_getset = kbf_getset,
    .tp_new = kbf_new,
};
