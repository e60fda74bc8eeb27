/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.BloomFilter: a bk_bloom (bloom.h) as a Python object. add,
 * update, `in`, add_if_absent, len() as the cardinality estimate, and
 * to_bytes / from_bytes / pickle over the library's serialized form. The
 * GIL is held around every call (each is one key or one blob).
 */
#include "bkpy.h"

#include <math.h>
#include <string.h>

#include "bloomkit/bloom.h"

static int parse_layout(const char *s, bk_bloom_layout *out) {
  if (strcmp(s, "standard") == 0)
    *out = BK_BLOOM_STANDARD;
  else if (strcmp(s, "blocked") == 0)
    *out = BK_BLOOM_BLOCKED;
  else if (strcmp(s, "split_block") == 0)
    *out = BK_BLOOM_SPLIT_BLOCK;
  else {
    PyErr_Format(PyExc_ValueError,
                 "layout must be 'standard', 'blocked' or 'split_block', "
                 "not '%.50s'",
                 s);
    return -1;
  }
  return 0;
}

static PyObject *bloom_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp", "layout", "seed", NULL};
  PyObject *cap_obj;
  PyObject *seed_obj = NULL;
  double fpp;
  const char *layout = "standard";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|sO", kwlist, &cap_obj, &fpp,
                                   &layout, &seed_obj))
    return NULL;
  bk_bloom_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.fpp = fpp;
  if (bkpy_u64(cap_obj, "capacity", &cfg.capacity) < 0 ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0) ||
      parse_layout(layout, &cfg.layout) < 0)
    return NULL;
  if (cfg.capacity == 0) {
    PyErr_SetString(PyExc_ValueError, "capacity must be at least 1");
    return NULL;
  }
  /* The C config reads 0 as "the default"; from Python it is an error. */
  if (!(fpp > 0))
    return bkpy_raise(BK_EINVAL, "BloomFilter: fpp must be in (0, 1)");
  bk_bloom *b = NULL;
  bk_status s = bk_bloom_create(&b, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter");
  return bkpy_wrap(type, b);
}

static int bloom_add_one(bkpy_object *self, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_status s = bk_bloom_add(self->h, k.ptr, k.len);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "BloomFilter.add");
    return -1;
  }
  return 0;
}

static PyObject *bloom_add(PyObject *o, PyObject *key) {
  if (bloom_add_one((bkpy_object *)o, key) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *bloom_update(PyObject *o, PyObject *iterable) {
  PyObject *it = PyObject_GetIter(iterable);
  if (it == NULL) return NULL;
  PyObject *key;
  while ((key = PyIter_Next(it)) != NULL) {
    int rc = bloom_add_one((bkpy_object *)o, key);
    Py_DECREF(key);
    if (rc < 0) {
      Py_DECREF(it);
      return NULL;
    }
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) return NULL;
  Py_RETURN_NONE;
}

static int bloom_contains(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bool in = false;
  bk_status s = bk_bloom_contains(((bkpy_object *)o)->h, k.ptr, k.len, &in);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "BloomFilter.__contains__");
    return -1;
  }
  return in ? 1 : 0;
}

static PyObject *bloom_add_if_absent(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  bool added = false;
  bk_status s =
      bk_bloom_add_if_absent(((bkpy_object *)o)->h, k.ptr, k.len, &added);
  bkpy_key_release(&k);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.add_if_absent");
  return PyBool_FromLong(added);
}

static Py_ssize_t bloom_len(PyObject *o) {
  double est = 0;
  bk_status s = bk_bloom_cardinality(((bkpy_object *)o)->h, &est);
  if (s != BK_OK) {
    bkpy_raise(s, "BloomFilter.__len__");
    return -1;
  }
  /* A saturated filter estimates +inf: report the largest length. */
  if (!(est < (double)PY_SSIZE_T_MAX)) return PY_SSIZE_T_MAX;
  return (Py_ssize_t)llround(est);
}

static PyObject *bloom_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_bloom_info info;
  bk_status s = bk_bloom_info_get(((bkpy_object *)o)->h, &info);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.info");
  static const char *layouts[] = {"standard", "blocked", "split_block"};
  const char *layout =
      (unsigned)info.layout < 3 ? layouts[info.layout] : "unknown";
  return Py_BuildValue("{s:K,s:I,s:s,s:K,s:K,s:n}", "m_bits",
                       (unsigned long long)info.m_bits, "k", info.k, "layout",
                       layout, "seed", (unsigned long long)info.seed,
                       "capacity", (unsigned long long)info.capacity, "memory",
                       (Py_ssize_t)info.memory);
}

BKPY_DEFINE_CODEC(bkpy_bloom_codec, "BloomFilter", bloom, bloom);

static PyMethodDef bloom_methods[] = {
    {"add", bloom_add, METH_O, "add(key): insert key."},
    {"update", bloom_update, METH_O, "update(iterable): add every key."},
    {"add_if_absent", bloom_add_if_absent, METH_O,
     "add_if_absent(key) -> bool: add key; True if it was (apparently) "
     "absent before, False if it was already there (or a false positive)."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "BloomFilter.from_bytes(b): a filter from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef bloom_getset[] = {
    {"info", bloom_get_info, NULL,
     "dict: m_bits, k, layout, seed, capacity, memory (bytes held).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods bloom_as_sequence = {
    .sq_length = bloom_len,
    .sq_contains = bloom_contains,
};

PyTypeObject bkpy_BloomFilterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.BloomFilter",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &bloom_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "BloomFilter(capacity, fpp, layout='standard', seed=0)\n\n"
        "A Bloom filter sized for `capacity` keys at false positive "
        "probability `fpp`. len() is the cardinality estimate from "
        "the set bits (not an exact count).",
    .tp_methods = bloom_methods,
    .tp_getset = bloom_getset,
    .tp_new = bloom_new,
};
