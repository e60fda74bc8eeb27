/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.BloomFilter: a bk_bloom (bloom.h) as a Python object. add,
 * update, `in`, add_if_absent, their batch forms (bkpy_batch: lists or
 * numpy arrays, GIL released), | & |= &=, copy, clear, fpp, len() as the
 * cardinality estimate, single_writer, to_bytes / from_bytes / pickle over
 * the library's serialized form, and the Parquet bitset. Single-key calls
 * keep the GIL (one key costs less than dropping it).
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

static int parse_hash(const char *s, bk_hash_alg *out) {
  if (strcmp(s, "xxh3") == 0)
    *out = BK_HASH_XXH3;
  else if (strcmp(s, "xxh64") == 0)
    *out = BK_HASH_XXH64;
  else if (strcmp(s, "murmur3") == 0)
    *out = BK_HASH_MURMUR3;
  else {
    PyErr_Format(PyExc_ValueError,
                 "hash must be 'xxh3', 'xxh64' or 'murmur3', not '%.50s'", s);
    return -1;
  }
  return 0;
}

/* A new BloomFilter object over cfg (single_writer as cfg says). */
static PyObject *bloom_make(PyTypeObject *type, const bk_bloom_config *cfg) {
  bk_bloom *b = NULL;
  bk_status s;
  /* A big filter's zeroed memory takes a while to fault in: without the
   * GIL (there is no object yet for another thread to see). */
  if (cfg->capacity >= (1u << 20) || cfg->m_bits >= ((uint64_t)1 << 23)) {
    PyThreadState *ts = PyEval_SaveThread();
    s = bk_bloom_create(&b, cfg);
    PyEval_RestoreThread(ts);
  } else {
    s = bk_bloom_create(&b, cfg);
  }
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter");
  PyObject *o = bkpy_wrap(type, b);
  if (o != NULL) ((bkpy_object *)o)->single_writer = cfg->single_writer;
  return o;
}

static PyObject *bloom_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp",    "layout", "single_writer",
                           "seed",     "m_bits", "k",      "hash",
                           NULL};
  PyObject *cap_obj = Py_None, *seed_obj = NULL, *m_obj = Py_None;
  PyObject *k_obj = Py_None;
  double fpp = 0.01;
  const char *layout = "split_block", *hash = "xxh3";
  int single_writer = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Odsp$OOOs", kwlist, &cap_obj,
                                   &fpp, &layout, &single_writer, &seed_obj,
                                   &m_obj, &k_obj, &hash))
    return NULL;
  bk_bloom_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.fpp = fpp;
  cfg.single_writer = single_writer != 0;
  if ((cap_obj != Py_None &&
       bkpy_u64(cap_obj, "capacity", &cfg.capacity) < 0) ||
      (m_obj != Py_None && bkpy_u64(m_obj, "m_bits", &cfg.m_bits) < 0) ||
      (k_obj != Py_None && bkpy_uint(k_obj, "k", 64, &cfg.k) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0) ||
      parse_layout(layout, &cfg.layout) < 0 ||
      parse_hash(hash, &cfg.hash_alg) < 0)
    return NULL;
  if (cfg.capacity == 0 && cfg.m_bits == 0) {
    PyErr_SetString(PyExc_ValueError, "give capacity (at least 1) or m_bits");
    return NULL;
  }
  /* The C config reads 0 as "the default"; from Python it is an error. */
  if (!(fpp > 0) || !(fpp < 1))
    return bkpy_raise(BK_EINVAL, "BloomFilter: fpp must be in (0, 1)");
  return bloom_make(type, &cfg);
}

/* BloomFilter.for_parquet(capacity, fpp=0.01): split-block, XXH64 seed 0,
 * m the least power of two of bytes (32 B .. 128 MiB) meeting fpp. */
static PyObject *bloom_for_parquet(PyObject *cls, PyObject *args,
                                   PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp", NULL};
  PyObject *cap_obj;
  double fpp = 0.01;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d", kwlist, &cap_obj, &fpp))
    return NULL;
  bk_bloom_config cfg;
  memset(&cfg, 0, sizeof cfg);
  if (bkpy_u64(cap_obj, "capacity", &cfg.capacity) < 0) return NULL;
  if (cfg.capacity == 0 || !(fpp > 0) || !(fpp < 1))
    return bkpy_raise(BK_EINVAL,
                      "BloomFilter.for_parquet: capacity >= 1, fpp in (0, 1)");
  cfg.fpp = fpp;
  cfg.layout = BK_BLOOM_SPLIT_BLOCK;
  cfg.hash_alg = BK_HASH_XXH64;
  bk_bloom *probe = NULL;
  bk_status s = bk_bloom_create(&probe, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.for_parquet");
  bk_bloom_info info;
  s = bk_bloom_info_get(probe, &info);
  bk_bloom_destroy(probe);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.for_parquet");
  uint64_t bytes = BK_PARQUET_BITSET_MIN;
  while (bytes < info.m_bits / 8 && bytes < BK_PARQUET_BITSET_MAX) bytes *= 2;
  if (bytes * 8 < info.m_bits)
    return bkpy_raise(BK_EINVAL,
                      "BloomFilter.for_parquet: above Parquet's "
                      "128 MiB bitset for this capacity and fpp");
  cfg.m_bits = bytes * 8;
  cfg.k = 8;
  return bloom_make((PyTypeObject *)cls, &cfg);
}

static PyObject *bloom_from_parquet(PyObject *cls, PyObject *data) {
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  bk_bloom *b = NULL;
  bk_status s = bk_bloom_parquet_import(view.buf, (size_t)view.len, NULL, &b);
  PyBuffer_Release(&view);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.from_parquet");
  return bkpy_wrap((PyTypeObject *)cls, b);
}

static PyObject *bloom_parquet_bitset(PyObject *o, PyObject *unused) {
  (void)unused;
  bk_bloom_info info;
  bk_status s = bk_bloom_info_get(((bkpy_object *)o)->h, &info);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.parquet_bitset");
  PyObject *out =
      PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(info.m_bits / 8));
  if (out == NULL) return NULL;
  size_t written = 0;
  s = bk_bloom_parquet_export(((bkpy_object *)o)->h, PyBytes_AS_STRING(out),
                              (size_t)PyBytes_GET_SIZE(out), &written);
  if (s != BK_OK) {
    Py_DECREF(out);
    return bkpy_raise(s,
                      "BloomFilter.parquet_bitset (make the filter with "
                      "BloomFilter.for_parquet)");
  }
  return out;
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
  static const char *hashes[] = {"default", "xxh3", "murmur3", "xxh64"};
  const char *hash =
      (unsigned)info.hash_alg < 4 ? hashes[info.hash_alg] : "unknown";
  return Py_BuildValue(
      "{s:K,s:I,s:s,s:s,s:K,s:K,s:n}", "m_bits",
      (unsigned long long)info.m_bits, "k", info.k, "layout", layout, "hash",
      hash, "seed", (unsigned long long)info.seed, "capacity",
      (unsigned long long)info.capacity, "memory", (Py_ssize_t)info.memory);
}

static bk_status add_many_fn(void *h, const void *const *keys,
                             const size_t *lens, size_t m, bool *out,
                             void *arg) {
  (void)out;
  (void)arg;
  return bk_bloom_add_many(h, keys, lens, m);
}

static bk_status contains_many_fn(void *h, const void *const *keys,
                                  const size_t *lens, size_t m, bool *out,
                                  void *arg) {
  (void)arg;
  return bk_bloom_contains_many(h, keys, lens, m, out);
}

static bk_status add_if_absent_many_fn(void *h, const void *const *keys,
                                       const size_t *lens, size_t m, bool *out,
                                       void *arg) {
  (void)arg;
  for (size_t i = 0; i < m; i++) {
    bk_status s = bk_bloom_add_if_absent(h, keys[i], lens[i], &out[i]);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}

/* A single-writer filter keeps the GIL through a batch of adds: the GIL
 * is then what keeps a second writer out. */
#define ADDS_RELEASE_GIL BKPY_RELEASE_UNLESS_SINGLE_WRITER

static PyObject *bloom_add_many(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, add_many_fn, NULL, 0, ADDS_RELEASE_GIL,
                         "BloomFilter.add_many");
}

static PyObject *bloom_update(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, add_many_fn, NULL, 0, ADDS_RELEASE_GIL,
                         "BloomFilter.update");
}

static PyObject *bloom_contains_many(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, contains_many_fn, NULL, 1, 1,
                         "BloomFilter.contains_many");
}

static PyObject *bloom_add_if_absent_many(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, add_if_absent_many_fn, NULL, 1,
                         ADDS_RELEASE_GIL, "BloomFilter.add_if_absent_many");
}

static PyObject *bloom_copy(PyObject *o, PyObject *unused) {
  (void)unused;
  PyObject *blob = bkpy_to_bytes(o, NULL);
  if (blob == NULL) return NULL;
  PyObject *c = bkpy_from_bytes((PyObject *)Py_TYPE(o), blob);
  Py_DECREF(blob);
  if (c != NULL && ((bkpy_object *)o)->single_writer) {
    bk_status s = bk_bloom_set_single_writer(((bkpy_object *)c)->h, true);
    if (s != BK_OK) {
      Py_DECREF(c);
      return bkpy_raise(s, "BloomFilter.copy");
    }
    ((bkpy_object *)c)->single_writer = 1;
  }
  return c;
}

static PyObject *bloom_deepcopy(PyObject *o, PyObject *memo) {
  (void)memo;
  return bloom_copy(o, NULL);
}

static PyObject *bloom_clear(PyObject *o, PyObject *unused) {
  (void)unused;
  if (bkpy_exclusive(o, "BloomFilter.clear") < 0) return NULL;
  bk_status s = bk_bloom_clear(((bkpy_object *)o)->h);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.clear");
  Py_RETURN_NONE;
}

static PyObject *bloom_get_fpp(PyObject *o, void *closure) {
  (void)closure;
  double p = 0;
  bk_status s = bk_bloom_fill_fpp(((bkpy_object *)o)->h, &p);
  if (s != BK_OK) return bkpy_raise(s, "BloomFilter.fpp");
  return PyFloat_FromDouble(p);
}

static PyObject *bloom_get_single_writer(PyObject *o, void *closure) {
  (void)closure;
  return PyBool_FromLong(((bkpy_object *)o)->single_writer);
}

static int bloom_set_single_writer(PyObject *o, PyObject *v, void *closure) {
  (void)closure;
  if (v == NULL) {
    PyErr_SetString(PyExc_AttributeError, "cannot delete single_writer");
    return -1;
  }
  int on = PyObject_IsTrue(v);
  if (on < 0 || bkpy_exclusive(o, "BloomFilter.single_writer") < 0) return -1;
  bk_status s = bk_bloom_set_single_writer(((bkpy_object *)o)->h, on != 0);
  if (s != BK_OK) {
    bkpy_raise(s, "BloomFilter.single_writer");
    return -1;
  }
  ((bkpy_object *)o)->single_writer = on;
  return 0;
}

/* dst |= src or dst &= src in place (dst exclusive). */
static int bloom_combine(PyObject *dst, PyObject *src, int intersect) {
  const char *what = intersect ? "BloomFilter &" : "BloomFilter |";
  if (bkpy_exclusive(dst, what) < 0 || bkpy_exclusive(src, what) < 0) return -1;
  bk_bloom *d = ((bkpy_object *)dst)->h;
  const bk_bloom *sr = ((bkpy_object *)src)->h;
  bk_status s = intersect ? bk_bloom_intersect(d, sr) : bk_bloom_merge(d, sr);
  if (s != BK_OK) {
    bkpy_raise(s, what);
    return -1;
  }
  return 0;
}

static int both_filters(PyObject *a, PyObject *b) {
  return PyObject_TypeCheck(a, &bkpy_BloomFilterType) &&
         PyObject_TypeCheck(b, &bkpy_BloomFilterType);
}

static PyObject *bloom_binop(PyObject *a, PyObject *b, int intersect) {
  if (!both_filters(a, b)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *c = bloom_copy(a, NULL);
  if (c == NULL) return NULL;
  if (bloom_combine(c, b, intersect) < 0) {
    Py_DECREF(c);
    return NULL;
  }
  return c;
}

static PyObject *bloom_inplace(PyObject *a, PyObject *b, int intersect) {
  if (!both_filters(a, b)) Py_RETURN_NOTIMPLEMENTED;
  if (bloom_combine(a, b, intersect) < 0) return NULL;
  return Py_NewRef(a);
}

static PyObject *bloom_or(PyObject *a, PyObject *b) {
  return bloom_binop(a, b, 0);
}
static PyObject *bloom_and(PyObject *a, PyObject *b) {
  return bloom_binop(a, b, 1);
}
static PyObject *bloom_ior(PyObject *a, PyObject *b) {
  return bloom_inplace(a, b, 0);
}
static PyObject *bloom_iand(PyObject *a, PyObject *b) {
  return bloom_inplace(a, b, 1);
}

static PyNumberMethods bloom_as_number = {
    .nb_or = bloom_or,
    .nb_and = bloom_and,
    .nb_inplace_or = bloom_ior,
    .nb_inplace_and = bloom_iand,
};

BKPY_DEFINE_CODEC(bkpy_bloom_codec, "BloomFilter", bloom, bloom);

static PyMethodDef bloom_methods[] = {
    {"add", bloom_add, METH_O, "add(key): insert key."},
    {"update", bloom_update, METH_O,
     "update(keys): add every key of an iterable (or a numpy array of "
     "8-byte ints/floats); the same as add_many."},
    {"add_if_absent", bloom_add_if_absent, METH_O,
     "add_if_absent(key) -> bool: add key; True if it was absent before, "
     "False if it was already reported present (added before, or a false "
     "positive). Atomic: of threads racing on one key, exactly one gets "
     "True."},
    {"add_many", bloom_add_many, METH_O,
     "add_many(keys): add a list/iterable of keys or a numpy array of "
     "uint64/int64/float64, in chunks with the GIL released (unless "
     "single_writer)."},
    {"contains_many", bloom_contains_many, METH_O,
     "contains_many(keys) -> list[bool] | numpy.ndarray: membership of each "
     "key; a numpy bool array when keys is an array, with the GIL released."},
    {"add_if_absent_many", bloom_add_if_absent_many, METH_O,
     "add_if_absent_many(keys) -> list[bool] | numpy.ndarray: add_if_absent "
     "of each key in order."},
    {"copy", bloom_copy, METH_NOARGS,
     "copy() -> BloomFilter: an independent copy."},
    {"__copy__", bloom_copy, METH_NOARGS, "copy.copy support"},
    {"__deepcopy__", bloom_deepcopy, METH_O, "copy.deepcopy support"},
    {"clear", bloom_clear, METH_NOARGS, "clear(): remove every key."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "BloomFilter.from_bytes(b): a filter from to_bytes() output; "
     "CorruptError for anything else."},
    {"for_parquet", (PyCFunction)(void (*)(void))bloom_for_parquet,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "BloomFilter.for_parquet(capacity, fpp=0.01): a split-block filter "
     "with XXH64 seed 0 and a power-of-two size, as Apache Parquet's bloom "
     "filters are: add values' plain encodings (an int64 as 8 little-endian "
     "bytes, which is what an int key is; a string's bytes) and write "
     "parquet_bitset()."},
    {"from_parquet", bloom_from_parquet, METH_O | METH_CLASS,
     "BloomFilter.from_parquet(bitset): the filter of a Parquet column "
     "chunk's bloom filter bitset (the bytes after its header); it answers "
     "as Parquet's reader would."},
    {"parquet_bitset", bloom_parquet_bitset, METH_NOARGS,
     "parquet_bitset() -> bytes: the Parquet bitset of a filter made by "
     "for_parquet or from_parquet; MismatchError for any other."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef bloom_getset[] = {
    {"info", bloom_get_info, NULL,
     "dict: m_bits, k, layout, hash, seed, capacity, memory (bytes held).",
     NULL},
    {"fpp", bloom_get_fpp, NULL,
     "float: the false positive probability the current fill implies (not "
     "the target the filter was sized for).",
     NULL},
    {"single_writer", bloom_get_single_writer, bloom_set_single_writer,
     "bool: one adding thread at a time (faster adds; batch adds then keep "
     "the GIL). Settable; a copy or a loaded filter starts as it was, a "
     "pickled one as False.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods bloom_as_sequence = {
    .sq_length = bloom_len,
    .sq_contains = bloom_contains,
};

PyTypeObject bkpy_BloomFilterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.BloomFilter",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_number = &bloom_as_number,
    .tp_as_sequence = &bloom_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "BloomFilter(capacity, fpp=0.01, layout='split_block', "
        "single_writer=False, seed=0, *, m_bits=None, k=None, hash='xxh3')\n\n"
        "A Bloom filter sized for `capacity` keys at false positive "
        "probability `fpp` (or by m_bits and k). Layouts: 'split_block' "
        "(the fastest: 8 bits in one 32-byte block), 'blocked' (k bits in "
        "one 64-byte line), 'standard' (k bits anywhere: the fewest bits for "
        "a fpp). len() is the cardinality estimate from the set bits, not "
        "an exact count. a | b and a & b are new filters; |= and &= change "
        "a in place (the filters must match in size, layout, hash and "
        "seed: MismatchError).",
    .tp_methods = bloom_methods,
    .tp_getset = bloom_getset,
    .tp_new = bloom_new,
};
