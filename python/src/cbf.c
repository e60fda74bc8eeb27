/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.CountingBloomFilter over bk_cbf and bloomkit.ScalableCountingFilter
 * over bk_scbf (cbf.h). The counting filter: add, remove (KeyError when the
 * key is certainly absent: the library changes nothing then), discard, `in`,
 * count, update, the batch calls add_many / contains_many / remove_many
 * (bkpy_batch: lists or numpy arrays, GIL released; adds and removes keep
 * it in single_writer mode), | and |= (the library's saturating merge),
 * clear, copy, info and to_bytes / from_bytes / pickle. The scalable one
 * lives in a memory-mapped file (or in memory with path=None) and is a
 * context manager: close() (also __exit__ and dealloc) seals the file; add
 * and remove take the caller's id (dablooms' model), flush (GIL released:
 * it waits on the disk) makes writes durable, and seqnum / mem_seqnum /
 * disk_seqnum report them; contains_many asks a batch with the GIL
 * released. Single-key calls keep the GIL.
 */
#include "bkpy.h"

#include <string.h>

#include "bloomkit/cbf.h"

static const char *const layout_names[] = {"standard", "blocked"};

/* "standard" or "blocked" (the two layouts bk_cbf has). */
static int cbf_layout(const char *s, bk_bloom_layout *out) {
  if (strcmp(s, "standard") == 0) {
    *out = BK_BLOOM_STANDARD;
  } else if (strcmp(s, "blocked") == 0) {
    *out = BK_BLOOM_BLOCKED;
  } else {
    PyErr_Format(PyExc_ValueError,
                 "layout must be 'standard' or 'blocked', not '%.50s'", s);
    return -1;
  }
  return 0;
}

static const char *layout_name(bk_bloom_layout l) {
  return (unsigned)l < 2 ? layout_names[l] : "unknown";
}

/* counter_bits from Python: 4, 8, 16 or 32 (the C default 0 is an error). */
static int counter_bits(PyObject *obj, unsigned *out) {
  if (obj == NULL) {
    *out = 4;
    return 0;
  }
  if (bkpy_uint(obj, "counter_bits", 32, out) < 0) return -1;
  if (*out != 4 && *out != 8 && *out != 16 && *out != 32) {
    PyErr_SetString(PyExc_ValueError, "counter_bits must be 4, 8, 16 or 32");
    return -1;
  }
  return 0;
}

/* capacity >= 1 and fpp > 0 (0 means "the default" to the C config). */
static int capacity_fpp(PyObject *cap_obj, double fpp, const char *what,
                        uint64_t *cap) {
  if (bkpy_u64(cap_obj, "capacity", cap) < 0) return -1;
  if (*cap == 0) {
    PyErr_SetString(PyExc_ValueError, "capacity must be at least 1");
    return -1;
  }
  if (!(fpp > 0)) {
    bkpy_raise(BK_EINVAL, what);
    return -1;
  }
  return 0;
}

/* The key was certainly absent (BK_ENOTFOUND): a KeyError naming it. */
static PyObject *key_error(PyObject *key) {
  PyErr_SetObject(PyExc_KeyError, key);
  return NULL;
}

/* ==== CountingBloomFilter ================================================ */

static PyObject *cbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp",  "counter_bits",
                           "layout",   "seed", "single_writer",
                           NULL};
  PyObject *cap_obj;
  PyObject *bits_obj = NULL;
  PyObject *seed_obj = NULL;
  double fpp;
  const char *layout = "standard";
  int single_writer = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|OsO$p", kwlist, &cap_obj, &fpp,
                                   &bits_obj, &layout, &seed_obj,
                                   &single_writer))
    return NULL;
  bk_cbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.fpp = fpp;
  cfg.single_writer = single_writer != 0;
  if (capacity_fpp(cap_obj, fpp, "CountingBloomFilter: fpp must be in (0, 1)",
                   &cfg.capacity) < 0 ||
      counter_bits(bits_obj, &cfg.counter_bits) < 0 ||
      cbf_layout(layout, &cfg.layout) < 0 ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0))
    return NULL;
  bk_cbf *f = NULL;
  bk_status s = bk_cbf_create(&f, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "CountingBloomFilter");
  PyObject *o = bkpy_wrap(type, f);
  if (o != NULL) ((bkpy_object *)o)->single_writer = single_writer != 0;
  return o;
}

static int cbf_add_one(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_status s = bk_cbf_add(((bkpy_object *)o)->h, k.ptr, k.len);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "CountingBloomFilter.add");
    return -1;
  }
  return 0;
}

static PyObject *cbf_add(PyObject *o, PyObject *key) {
  if (cbf_add_one(o, key) < 0) return NULL;
  Py_RETURN_NONE;
}

/* 1 removed, 0 certainly absent (nothing changed), -1 error. */
static int cbf_remove_one(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_status s = bk_cbf_remove(((bkpy_object *)o)->h, k.ptr, k.len);
  bkpy_key_release(&k);
  if (s == BK_ENOTFOUND) return 0;
  if (s != BK_OK) {
    bkpy_raise(s, "CountingBloomFilter.remove");
    return -1;
  }
  return 1;
}

static PyObject *cbf_remove(PyObject *o, PyObject *key) {
  int rc = cbf_remove_one(o, key);
  if (rc < 0) return NULL;
  if (rc == 0) return key_error(key);
  Py_RETURN_NONE;
}

static PyObject *cbf_discard(PyObject *o, PyObject *key) {
  int rc = cbf_remove_one(o, key);
  if (rc < 0) return NULL;
  return PyBool_FromLong(rc);
}

static int cbf_contains(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bool in = false;
  bk_status s = bk_cbf_contains(((bkpy_object *)o)->h, k.ptr, k.len, &in);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "CountingBloomFilter.__contains__");
    return -1;
  }
  return in ? 1 : 0;
}

static PyObject *cbf_count(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  uint32_t n = 0;
  bk_status s = bk_cbf_count(((bkpy_object *)o)->h, k.ptr, k.len, &n);
  bkpy_key_release(&k);
  if (s != BK_OK) return bkpy_raise(s, "CountingBloomFilter.count");
  return PyLong_FromUnsignedLong(n);
}

static PyObject *cbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_cbf_info i;
  bk_status s = bk_cbf_info_get(((bkpy_object *)o)->h, &i);
  if (s != BK_OK) return bkpy_raise(s, "CountingBloomFilter.info");
  return Py_BuildValue(
      "{s:K,s:I,s:I,s:s,s:K,s:K,s:K,s:K,s:d,s:n}", "m_counters",
      (unsigned long long)i.m_counters, "k", i.k, "counter_bits",
      i.counter_bits, "layout", layout_name(i.layout), "seed",
      (unsigned long long)i.seed, "capacity", (unsigned long long)i.capacity,
      "nonzero", (unsigned long long)i.nonzero, "saturated",
      (unsigned long long)i.saturated, "fill_fpp", i.fill_fpp, "memory",
      (Py_ssize_t)i.memory);
}

/* ---- batches, merge, clear, copy, single_writer ---- */

static bk_status add_many_fn(void *h, const void *const *keys,
                             const size_t *lens, size_t m, bool *out,
                             void *arg) {
  (void)out;
  (void)arg;
  return bk_cbf_add_many(h, keys, lens, m);
}

static bk_status contains_many_fn(void *h, const void *const *keys,
                                  const size_t *lens, size_t m, bool *out,
                                  void *arg) {
  (void)arg;
  return bk_cbf_contains_many(h, keys, lens, m, out);
}

/* arg: the size_t count of keys removed so far. */
static bk_status remove_many_fn(void *h, const void *const *keys,
                                const size_t *lens, size_t m, bool *out,
                                void *arg) {
  (void)out;
  size_t removed = 0;
  bk_status s = bk_cbf_remove_many(h, keys, lens, m, &removed);
  *(size_t *)arg += removed;
  return s;
}

/* Adds and removes drop the GIL unless the filter is single_writer: the
 * GIL is then what keeps a second writer out (as BloomFilter). */
static int writes_release_gil(PyObject *o) {
  return !((bkpy_object *)o)->single_writer;
}

static PyObject *cbf_add_many(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, add_many_fn, NULL, 0,
                         BKPY_RELEASE_UNLESS_SINGLE_WRITER,
                         "CountingBloomFilter.add_many");
}

static PyObject *cbf_update(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, add_many_fn, NULL, 0,
                         BKPY_RELEASE_UNLESS_SINGLE_WRITER,
                         "CountingBloomFilter.update");
}

static PyObject *cbf_contains_many(PyObject *o, PyObject *keys) {
  return bkpy_batch_call(o, keys, contains_many_fn, NULL, 1, 1,
                         "CountingBloomFilter.contains_many");
}

static PyObject *cbf_remove_many(PyObject *o, PyObject *keys) {
  bkpy_batch b;
  if (bkpy_batch_get(keys, &b) < 0) return NULL;
  size_t removed = 0;
  bk_status s = bkpy_batch_run(o, &b, remove_many_fn, NULL, &removed,
                               writes_release_gil(o) && b.n >= 256);
  bkpy_batch_release(&b);
  if (s != BK_OK) return bkpy_raise(s, "CountingBloomFilter.remove_many");
  return PyLong_FromSize_t(removed);
}

static PyObject *cbf_clear(PyObject *o, PyObject *unused) {
  (void)unused;
  if (bkpy_exclusive(o, "CountingBloomFilter.clear") < 0) return NULL;
  bk_status s = bk_cbf_clear(((bkpy_object *)o)->h);
  if (s != BK_OK) return bkpy_raise(s, "CountingBloomFilter.clear");
  Py_RETURN_NONE;
}

/* Switch o's handle to single-writer mode or back (o exclusive). */
static int cbf_single_writer_to(PyObject *o, int on) {
  if (bkpy_exclusive(o, "CountingBloomFilter.single_writer") < 0) return -1;
  bk_status s = bk_cbf_set_single_writer(((bkpy_object *)o)->h, on != 0);
  if (s != BK_OK) {
    bkpy_raise(s, "CountingBloomFilter.single_writer");
    return -1;
  }
  ((bkpy_object *)o)->single_writer = on != 0;
  return 0;
}

static PyObject *cbf_copy(PyObject *o, PyObject *unused) {
  PyObject *c = bkpy_copy(o, unused);
  if (c != NULL && ((bkpy_object *)o)->single_writer &&
      cbf_single_writer_to(c, 1) < 0)
    Py_CLEAR(c);
  return c;
}

static PyObject *cbf_deepcopy(PyObject *o, PyObject *memo) {
  (void)memo;
  return cbf_copy(o, NULL);
}

static PyObject *cbf_get_single_writer(PyObject *o, void *closure) {
  (void)closure;
  return PyBool_FromLong(((bkpy_object *)o)->single_writer);
}

static int cbf_set_single_writer(PyObject *o, PyObject *v, void *closure) {
  (void)closure;
  if (v == NULL) {
    PyErr_SetString(PyExc_AttributeError, "cannot delete single_writer");
    return -1;
  }
  int on = PyObject_IsTrue(v);
  if (on < 0) return -1;
  return cbf_single_writer_to(o, on);
}

/* dst += src (dst and src exclusive: the merge reads src whole). */
static int cbf_merge_into(PyObject *dst, PyObject *src) {
  if (bkpy_exclusive(dst, "CountingBloomFilter |") < 0 ||
      bkpy_exclusive(src, "CountingBloomFilter |") < 0)
    return -1;
  bk_status s = bk_cbf_merge(((bkpy_object *)dst)->h, ((bkpy_object *)src)->h);
  if (s != BK_OK) {
    bkpy_raise(s, "CountingBloomFilter |");
    return -1;
  }
  return 0;
}

static int both_cbf(PyObject *a, PyObject *b) {
  return PyObject_TypeCheck(a, &bkpy_CbfType) &&
         PyObject_TypeCheck(b, &bkpy_CbfType);
}

static PyObject *cbf_or(PyObject *a, PyObject *b) {
  if (!both_cbf(a, b)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *c = cbf_copy(a, NULL);
  if (c != NULL && cbf_merge_into(c, b) < 0) Py_CLEAR(c);
  return c;
}

static PyObject *cbf_ior(PyObject *a, PyObject *b) {
  if (!both_cbf(a, b)) Py_RETURN_NOTIMPLEMENTED;
  if (cbf_merge_into(a, b) < 0) return NULL;
  return Py_NewRef(a);
}

static PyNumberMethods cbf_as_number = {
    .nb_or = cbf_or,
    .nb_inplace_or = cbf_ior,
};

BKPY_DEFINE_CODEC(bkpy_cbf_codec, "CountingBloomFilter", cbf, cbf);

static PyMethodDef cbf_methods[] = {
    {"add", cbf_add, METH_O,
     "add(key): increment the key's counters (saturated ones stay)."},
    {"update", cbf_update, METH_O,
     "update(keys): add every key of an iterable (or a numpy array of "
     "8-byte ints/floats); the same as add_many."},
    {"add_many", cbf_add_many, METH_O,
     "add_many(keys): add a list/iterable of keys or a numpy array of "
     "uint64/int64/float64, in chunks with the GIL released (unless "
     "single_writer)."},
    {"contains_many", cbf_contains_many, METH_O,
     "contains_many(keys) -> list[bool] | numpy.ndarray: membership of each "
     "key (a numpy bool array when keys is an array), with the GIL "
     "released."},
    {"remove_many", cbf_remove_many, METH_O,
     "remove_many(keys) -> int: remove each key in order as discard does "
     "(a certainly absent key changes nothing) and return how many were "
     "removed; GIL released as add_many."},
    {"clear", cbf_clear, METH_NOARGS, "clear(): zero every counter."},
    {"copy", cbf_copy, METH_NOARGS,
     "copy() -> CountingBloomFilter: an independent copy (single_writer "
     "as this one)."},
    {"__copy__", cbf_copy, METH_NOARGS, "copy.copy support"},
    {"__deepcopy__", cbf_deepcopy, METH_O, "copy.deepcopy support"},
    {"remove", cbf_remove, METH_O,
     "remove(key): decrement the key's counters; KeyError (nothing changed) "
     "when one of them is zero, so the key cannot have been added."},
    {"discard", cbf_discard, METH_O,
     "discard(key) -> bool: remove key; False (nothing changed) when it is "
     "certainly absent."},
    {"count", cbf_count, METH_O,
     "count(key) -> int: the smallest of the key's counters, an upper bound "
     "on adds minus removes (a saturated counter reports its maximum)."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "CountingBloomFilter.from_bytes(b): a filter from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef cbf_getset[] = {
    {"info", cbf_get_info, NULL,
     "dict: m_counters, k, counter_bits, layout, seed, capacity, nonzero, "
     "saturated (counters stuck at their maximum), fill_fpp, memory.",
     NULL},
    {"single_writer", cbf_get_single_writer, cbf_set_single_writer,
     "bool: one updating thread at a time (faster adds and removes; batch "
     "adds and removes then keep the GIL). Settable; a copy starts as its "
     "original, a loaded or unpickled filter as False.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods cbf_as_sequence = {
    .sq_contains = cbf_contains,
};

PyTypeObject bkpy_CbfType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.CountingBloomFilter",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_number = &cbf_as_number,
    .tp_as_sequence = &cbf_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "CountingBloomFilter(capacity, fpp, counter_bits=4, "
        "layout='standard', seed=0, *, single_writer=False)\n\n"
        "A counting Bloom filter: keys can be removed. A counter at "
        "its maximum (15 for 4 bits) saturates and never moves again, "
        "so no sequence of adds and removes of added keys makes a "
        "false negative. a | b is a new filter and a |= b merges b into a "
        "in place (counters added, saturating; the filters must match in "
        "size, k, counter_bits, layout and seed: MismatchError). No len(): "
        "the library has no cardinality estimate for it (info['nonzero'] "
        "is the fill). Adds, removes and queries may run from many threads "
        "at once (each counter update is atomic); clear, |= and setting "
        "single_writer raise RuntimeError while a batch call runs on the "
        "filter in another thread.",
    .tp_methods = cbf_methods,
    .tp_getset = cbf_getset,
    .tp_new = cbf_new,
};

/* ==== ScalableCountingFilter ============================================= */

/* The open handle, or NULL with ValueError when closed. */
static bk_scbf *scbf_of(PyObject *o) {
  bk_scbf *s = ((bkpy_object *)o)->h;
  if (s == NULL)
    PyErr_SetString(PyExc_ValueError,
                    "operation on a closed ScalableCountingFilter");
  return s;
}

/* bk_scbf_open's file statuses as the built-in OSError family. */
static PyObject *scbf_raise(bk_status s, const char *what, PyObject *path) {
  if (s == BK_ENOTFOUND && path != NULL) {
    PyErr_SetObject(PyExc_FileNotFoundError, path);
    return NULL;
  }
  if (s == BK_EIO) {
    PyErr_Format(PyExc_OSError, "%s: %s (%s)", what, bk_strerror(s),
                 bk_status_name(s));
    return NULL;
  }
  return bkpy_raise(s, what);
}

static PyObject *scbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path",   "capacity", "fpp",        "counter_bits",
                           "layout", "growth",   "tightening", "max_filters",
                           "seed",   NULL};
  PyObject *path_obj = Py_None;
  PyObject *cap_obj = Py_None;
  PyObject *bits_obj = NULL;
  PyObject *maxf_obj = NULL;
  PyObject *seed_obj = NULL;
  double fpp = 0.01;
  double growth = 2.0;
  double tightening = 0.5;
  const char *layout = "standard";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOdOsddOO", kwlist, &path_obj,
                                   &cap_obj, &fpp, &bits_obj, &layout, &growth,
                                   &tightening, &maxf_obj, &seed_obj))
    return NULL;
  bk_scbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.fpp = fpp;
  cfg.growth = growth;
  cfg.tightening = tightening;
  cfg.max_filters = 32;
  int have_cfg = cap_obj != Py_None;
  if (!have_cfg && path_obj == Py_None) {
    PyErr_SetString(PyExc_TypeError,
                    "ScalableCountingFilter: an in-memory filter "
                    "(path=None) needs a capacity");
    return NULL;
  }
  if (have_cfg &&
      (capacity_fpp(cap_obj, fpp,
                    "ScalableCountingFilter: fpp must be in (0, 0.5]",
                    &cfg.capacity) < 0 ||
       counter_bits(bits_obj, &cfg.counter_bits) < 0 ||
       cbf_layout(layout, &cfg.layout) < 0 ||
       (maxf_obj != NULL &&
        bkpy_uint(maxf_obj, "max_filters", BK_SCBF_FILTERS_MAX,
                  &cfg.max_filters) < 0) ||
       (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0)))
    return NULL;
  if (have_cfg && (!(growth > 0) || !(tightening > 0) || cfg.max_filters == 0))
    return bkpy_raise(BK_EINVAL,
                      "ScalableCountingFilter: growth, tightening and "
                      "max_filters must be positive");
  bk_scbf *h = NULL;
  bk_status s;
  if (path_obj == Py_None) {
    s = bk_scbf_create(&h, &cfg);
    if (s != BK_OK) return bkpy_raise(s, "ScalableCountingFilter");
    return bkpy_wrap(type, h);
  }
  PyObject *fs = NULL;
  if (!PyUnicode_FSConverter(path_obj, &fs)) return NULL;
  s = bk_scbf_open(&h, PyBytes_AS_STRING(fs), have_cfg ? &cfg : NULL);
  Py_DECREF(fs);
  if (s != BK_OK) return scbf_raise(s, "ScalableCountingFilter", path_obj);
  return bkpy_wrap(type, h);
}

/* add or remove: (key, id). */
static PyObject *scbf_update_op(PyObject *o, PyObject *args, int remove) {
  PyObject *key;
  PyObject *id_obj;
  if (!PyArg_ParseTuple(args, remove ? "OO:remove" : "OO:add", &key, &id_obj))
    return NULL;
  uint64_t id;
  if (scbf_of(o) == NULL || bkpy_u64(id_obj, "id", &id) < 0) return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  /* Read after the key: its export may run Python code that closes o. */
  bk_scbf *h = scbf_of(o);
  if (h == NULL) {
    bkpy_key_release(&k);
    return NULL;
  }
  bk_status s = remove ? bk_scbf_remove(h, k.ptr, k.len, id)
                       : bk_scbf_add(h, k.ptr, k.len, id);
  bkpy_key_release(&k);
  if (remove && s == BK_ENOTFOUND) return key_error(key);
  if (s != BK_OK)
    return scbf_raise(
        s,
        remove ? "ScalableCountingFilter.remove" : "ScalableCountingFilter.add",
        NULL);
  Py_RETURN_NONE;
}

static PyObject *scbf_add(PyObject *o, PyObject *args) {
  return scbf_update_op(o, args, 0);
}

static PyObject *scbf_remove(PyObject *o, PyObject *args) {
  return scbf_update_op(o, args, 1);
}

static int scbf_contains(PyObject *o, PyObject *key) {
  if (scbf_of(o) == NULL) return -1;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_scbf *h = scbf_of(o); /* after the key, as scbf_update_op */
  if (h == NULL) {
    bkpy_key_release(&k);
    return -1;
  }
  bool in = false;
  bk_status s = bk_scbf_contains(h, k.ptr, k.len, &in);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "ScalableCountingFilter.__contains__");
    return -1;
  }
  return in ? 1 : 0;
}

/* flush waits on the disk (msync): the GIL is released, and close
 * refuses to run meanwhile (bkpy_exclusive). Writers in other threads wait
 * on the filter's write lock, readers do not. */
static PyObject *scbf_flush(PyObject *o, PyObject *unused) {
  (void)unused;
  bkpy_object *self = (bkpy_object *)o;
  bk_scbf *h = scbf_of(o);
  if (h == NULL) return NULL;
  self->busy++;
  bk_status s;
  Py_BEGIN_ALLOW_THREADS s = bk_scbf_flush(h);
  Py_END_ALLOW_THREADS self->busy--;
  if (s != BK_OK) return scbf_raise(s, "ScalableCountingFilter.flush", NULL);
  Py_RETURN_NONE;
}

static bk_status scbf_contains_many_fn(void *h, const void *const *keys,
                                       const size_t *lens, size_t m, bool *out,
                                       void *arg) {
  (void)arg;
  for (size_t i = 0; i < m; i++) {
    bk_status s = bk_scbf_contains(h, keys[i], lens[i], &out[i]);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}

static PyObject *scbf_contains_many(PyObject *o, PyObject *keys) {
  if (scbf_of(o) == NULL) return NULL;
  return bkpy_batch_call(o, keys, scbf_contains_many_fn, NULL, 1, 1,
                         "ScalableCountingFilter.contains_many");
}

/* verify(): bk_scbf_verify (O(counters) under the write lock: GIL
 * released) as a dict; an inconsistent filter is an answer, not an error. */
static PyObject *scbf_verify(PyObject *o, PyObject *unused) {
  (void)unused;
  bkpy_object *self = (bkpy_object *)o;
  bk_scbf *h = scbf_of(o);
  if (h == NULL) return NULL;
  bk_scbf_verify_result *r = PyMem_Malloc(sizeof *r);
  if (r == NULL) return PyErr_NoMemory();
  self->busy++;
  bk_status s;
  Py_BEGIN_ALLOW_THREADS s = bk_scbf_verify(h, r);
  Py_END_ALLOW_THREADS self->busy--;
  PyObject *out = NULL, *filters = NULL;
  if (s != BK_OK && s != BK_ECORRUPT) {
    bkpy_raise(s, "ScalableCountingFilter.verify");
    goto done;
  }
  filters = PyList_New(0);
  for (unsigned i = 0; filters != NULL && i < r->n_filters; i++) {
    const bk_scbf_filter_check *c = &r->filters[i];
    PyObject *d = Py_BuildValue(
        "{s:K,s:I,s:K,s:K,s:K,s:O,s:O}", "count", (unsigned long long)c->count,
        "k", c->k, "expected_sum", (unsigned long long)c->expected_sum, "sum",
        (unsigned long long)c->sum, "saturated",
        (unsigned long long)c->saturated, "stray_bits",
        c->stray_bits ? Py_True : Py_False, "consistent",
        c->consistent ? Py_True : Py_False);
    if (d == NULL || PyList_Append(filters, d) < 0) Py_CLEAR(filters);
    Py_XDECREF(d);
  }
  if (filters != NULL)
    out = Py_BuildValue("{s:O,s:O,s:O,s:I,s:O}", "consistent",
                        r->n_inconsistent == 0 ? Py_True : Py_False, "verified",
                        r->verified ? Py_True : Py_False, "interrupted",
                        r->interrupted ? Py_True : Py_False, "n_inconsistent",
                        r->n_inconsistent, "filters", filters);
done:
  Py_XDECREF(filters);
  PyMem_Free(r);
  return out;
}

static PyObject *scbf_close(PyObject *o, PyObject *unused) {
  (void)unused;
  if (bkpy_exclusive(o, "ScalableCountingFilter.close") < 0) return NULL;
  bk_scbf_destroy(((bkpy_object *)o)->h);
  ((bkpy_object *)o)->h = NULL;
  Py_RETURN_NONE;
}

static PyObject *scbf_enter(PyObject *o, PyObject *unused) {
  (void)unused;
  if (scbf_of(o) == NULL) return NULL;
  return Py_NewRef(o);
}

static PyObject *scbf_exit(PyObject *o, PyObject *args) {
  (void)args;
  PyObject *r = scbf_close(o, NULL);
  if (r == NULL) return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE; /* exceptions propagate */
}

static PyObject *scbf_to_bytes(PyObject *o, PyObject *unused) {
  if (scbf_of(o) == NULL) return NULL;
  return bkpy_to_bytes(o, unused);
}

static PyObject *scbf_reduce(PyObject *o, PyObject *unused) {
  if (scbf_of(o) == NULL) return NULL;
  return bkpy_reduce(o, unused);
}

static PyObject *scbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_scbf *h = scbf_of(o);
  if (h == NULL) return NULL;
  bk_scbf_info i;
  bk_status s = bk_scbf_info_get(h, &i);
  if (s != BK_OK) return bkpy_raise(s, "ScalableCountingFilter.info");
  bool verified = false;
  s = bk_scbf_verified(h, &verified);
  if (s != BK_OK) return bkpy_raise(s, "ScalableCountingFilter.info");
  return Py_BuildValue(
      "{s:K,s:d,s:d,s:d,s:I,s:s,s:K,s:I,s:I,s:K,s:K,s:K,s:K,s:d,s:K,s:K,s:K,"
      "s:O,s:K,s:n,s:O}",
      "capacity", (unsigned long long)i.capacity, "fpp", i.fpp, "growth",
      i.growth, "tightening", i.tightening, "counter_bits", i.counter_bits,
      "layout", layout_name(i.layout), "seed", (unsigned long long)i.seed,
      "max_filters", i.max_filters, "n_filters", i.n_filters, "count",
      (unsigned long long)i.count, "nonzero", (unsigned long long)i.nonzero,
      "saturated", (unsigned long long)i.saturated, "m_counters",
      (unsigned long long)i.m_counters, "estimated_fpp", i.estimated_fpp,
      "seqnum", (unsigned long long)i.seqnum, "mem_seqnum",
      (unsigned long long)i.mem_seqnum, "disk_seqnum",
      (unsigned long long)i.disk_seqnum, "file_backed",
      i.file_backed ? Py_True : Py_False, "file_size",
      (unsigned long long)i.file_size, "memory", (Py_ssize_t)i.memory,
      "verified", verified ? Py_True : Py_False);
}

/* seqnum (via info: O(counters)), mem_seqnum, disk_seqnum. */
static PyObject *scbf_get_seq(PyObject *o, void *closure) {
  bk_scbf *h = scbf_of(o);
  if (h == NULL) return NULL;
  uint64_t v = 0;
  bk_status s;
  if (closure == NULL) {
    bk_scbf_info i;
    s = bk_scbf_info_get(h, &i);
    v = i.seqnum;
  } else if (strcmp(closure, "mem") == 0) {
    s = bk_scbf_mem_seqnum(h, &v);
  } else {
    s = bk_scbf_disk_seqnum(h, &v);
  }
  if (s != BK_OK) return bkpy_raise(s, "ScalableCountingFilter seqnum");
  return PyLong_FromUnsignedLongLong(v);
}

static PyObject *scbf_get_closed(PyObject *o, void *closure) {
  (void)closure;
  return PyBool_FromLong(((bkpy_object *)o)->h == NULL);
}

BKPY_DEFINE_CODEC(bkpy_scbf_codec, "ScalableCountingFilter", scbf, scbf);

static PyMethodDef scbf_methods[] = {
    {"add", scbf_add, METH_VARARGS,
     "add(key, id): add key with the caller's id (below 2**64 - 1; ids that "
     "grow open new filters as the newest fills). Error (BK_EFULL) when a "
     "new filter is needed and max_filters are open."},
    {"remove", scbf_remove, METH_VARARGS,
     "remove(key, id): remove key added with id; KeyError (nothing changed) "
     "when id is in no filter's range or the key was not added there."},
    {"contains_many", scbf_contains_many, METH_O,
     "contains_many(keys) -> list[bool] | numpy.ndarray: `key in f` for "
     "each key of a list or numpy array of 8-byte ints/floats, with the "
     "GIL released (the library has no batch add: an add needs its id)."},
    {"flush", scbf_flush, METH_NOARGS,
     "flush(): make every write durable (msync), store the checksums and "
     "record disk_seqnum = mem_seqnum; nothing to do in memory. Runs with "
     "the GIL released (it waits on the disk); adds and removes in other "
     "threads wait for it, `in` does not."},
    {"verify", scbf_verify, METH_NOARGS,
     "verify() -> dict: check every filter's counters against its key "
     "count (what can be checked without checksums, for a file that "
     "opened unverified after a crash: info['verified'] False). Keys: "
     "consistent, verified (checksums matched at open), interrupted (the "
     "last write died midway: mem_seqnum 0), n_inconsistent, and filters, "
     "a dict per filter (count, k, expected_sum, sum, saturated, "
     "stray_bits, consistent). O(counters) with the GIL released; writers "
     "wait."},
    {"close", scbf_close, METH_NOARGS,
     "close(): seal the file (a handle that wrote since its last flush "
     "stores its checksums) and release it; closing twice does nothing. "
     "RuntimeError while flush or contains_many runs in another thread."},
    {"__enter__", scbf_enter, METH_NOARGS, "context manager: self"},
    {"__exit__", scbf_exit, METH_VARARGS, "context manager: close()"},
    {"to_bytes", scbf_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: a snapshot in the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "ScalableCountingFilter.from_bytes(b): an in-memory filter from "
     "to_bytes() output; CorruptError for anything else."},
    {"__reduce__", scbf_reduce, METH_NOARGS,
     "pickle support (unpickles in memory)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef scbf_getset[] = {
    {"info", scbf_get_info, NULL,
     "dict: the parameters, n_filters, count, nonzero, saturated, "
     "m_counters, estimated_fpp, the three seqnums, file_backed, file_size, "
     "memory, verified.",
     NULL},
    {"seqnum", scbf_get_seq, NULL,
     "int: the last write begun (every successful add or remove is one "
     "write; create is write 1). Read through info: O(counters).",
     NULL},
    {"mem_seqnum", scbf_get_seq, NULL,
     "int: the last write completed, as the file's header says; 0 while a "
     "write is in progress (a file reopened after a crash: it died "
     "mid-write). Equal to seqnum between calls.",
     "mem"},
    {"disk_seqnum", scbf_get_seq, NULL,
     "int: every write up to it is on disk (set by flush; 0 before the "
     "first flush and always 0 in memory).",
     "disk"},
    {"closed", scbf_get_closed, NULL, "bool: close() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods scbf_as_sequence = {
    .sq_contains = scbf_contains,
};

PyTypeObject bkpy_ScbfType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.ScalableCountingFilter",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &scbf_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "ScalableCountingFilter(path=None, capacity=None, fpp=0.01, "
        "counter_bits=4, layout='standard', growth=2.0, tightening=0.5, "
        "max_filters=32, seed=0)\n\n"
        "A growing list of counting filters (after dablooms) kept in the "
        "memory-mapped file at `path` (created when missing or empty; "
        "with capacity None an existing file's own parameters are used, "
        "otherwise they must match) or in memory with path=None. A "
        "context manager: __exit__ closes it (as does garbage collection; "
        "the file stays). `path` is a str, bytes or os.PathLike. Every "
        "call but close may run from many threads at once (writers take "
        "the filter's write lock in turn). Pickling and from_bytes give "
        "an in-memory copy.",
    .tp_methods = scbf_methods,
    .tp_getset = scbf_getset,
    .tp_new = scbf_new,
};
