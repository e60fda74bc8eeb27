/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.ForgetfulBloomFilter: a bk_fbf (fbf.h) as a Python object. Time
 * is the caller's integers (any unit: seconds, ms, ticks), passed as now=
 * to the calls that take it; a call without now= uses the filter's own
 * clock (the latest time it has seen) and does not move it. Shape as the
 * Redis module's FBF.RESERVE takes it: N = n_past past filters and a
 * refresh period t = ceil(window / (N + 1)), so (N + 1) t covers the
 * window and min_window = window keeps every key at least `window`;
 * `capacity` is keys per window, so each period is sized for
 * ceil(capacity t / window) of them.
 */
#include "bkpy.h"

#include <string.h>

#include "bloomkit/fbf.h"

typedef struct {
  PyObject_HEAD bk_fbf *f;
} FbfObject;

static PyObject *fbf_wrap(PyTypeObject *type, bk_fbf *f) {
  FbfObject *self = (FbfObject *)type->tp_alloc(type, 0);
  if (self == NULL) {
    bk_fbf_destroy(f);
    return NULL;
  }
  self->f = f;
  return (PyObject *)self;
}

static PyObject *fbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp",  "window", "n_past",
                           "now",      "seed", NULL};
  PyObject *cap_obj, *win_obj, *now_obj = NULL, *seed_obj = NULL;
  double fpp;
  unsigned n_past = 2;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OdO|IOO", kwlist, &cap_obj, &fpp,
                                   &win_obj, &n_past, &now_obj, &seed_obj))
    return NULL;
  uint64_t capacity, window, now = 0, seed = 0;
  if (bkpy_u64(cap_obj, "capacity", &capacity) < 0 ||
      bkpy_u64(win_obj, "window", &window) < 0 ||
      (now_obj != NULL && now_obj != Py_None &&
       bkpy_u64(now_obj, "now", &now) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &seed) < 0))
    return NULL;
  if (capacity == 0 || window == 0 || n_past == 0 ||
      n_past > BK_FBF_MAX_FILTERS - 2) {
    PyErr_SetString(PyExc_ValueError,
                    "capacity and window must be at least 1, n_past in "
                    "[1, 62]");
    return NULL;
  }
  if (!(fpp > 0)) /* 0 would be the C config's default */
    return bkpy_raise(BK_EINVAL, "ForgetfulBloomFilter: fpp must be in (0, 1)");
  uint64_t periods = (uint64_t)n_past + 1;
  uint64_t period = window / periods + (window % periods != 0);
  /* Keys per period: capacity t / window, rounded up (a sizing figure:
   * long double's 64-bit mantissa is exact enough). */
  long double scaled =
      (long double)capacity * (long double)period / (long double)window;
  uint64_t per_period = (uint64_t)scaled;
  if ((long double)per_period < scaled) per_period++;
  bk_fbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = per_period;
  cfg.fpp = fpp;
  cfg.n_past = n_past;
  cfg.refresh_period = period;
  cfg.min_window = window;
  cfg.start_time = now;
  cfg.seed = seed;
  bk_fbf *f = NULL;
  bk_status s = bk_fbf_create(&f, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter");
  return fbf_wrap(type, f);
}

static void fbf_dealloc(PyObject *o) {
  bk_fbf_destroy(((FbfObject *)o)->f);
  Py_TYPE(o)->tp_free(o);
}

/* Parse (key, now=None); *has_now says whether now was given. */
static int key_now_args(PyObject *args, PyObject *kw, const char *fname,
                        PyObject **key, uint64_t *now, int *has_now) {
  static char *kwlist[] = {"key", "now", NULL};
  PyObject *now_obj = Py_None;
  char fmt[64];
  (void)snprintf(fmt, sizeof fmt, "O|$O:%s", fname);
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, key, &now_obj))
    return -1;
  *has_now = now_obj != Py_None;
  if (*has_now && bkpy_u64(now_obj, "now", now) < 0) return -1;
  return 0;
}

static PyObject *fbf_advance_to(FbfObject *self, uint64_t now) {
  bk_status s = bk_fbf_advance(self->f, now);
  if (s != BK_OK)
    return bkpy_raise(s,
                      "ForgetfulBloomFilter.advance (time going "
                      "backwards?)");
  Py_RETURN_NONE;
}

static PyObject *fbf_add(PyObject *o, PyObject *args, PyObject *kw) {
  FbfObject *self = (FbfObject *)o;
  PyObject *key;
  uint64_t now = 0;
  int has_now;
  if (key_now_args(args, kw, "add", &key, &now, &has_now) < 0) return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  bk_status s = has_now ? bk_fbf_advance(self->f, now) : BK_OK;
  if (s == BK_OK) s = bk_fbf_add(self->f, k.ptr, k.len);
  bkpy_key_release(&k);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.add");
  Py_RETURN_NONE;
}

static PyObject *fbf_add_if_absent(PyObject *o, PyObject *args, PyObject *kw) {
  FbfObject *self = (FbfObject *)o;
  PyObject *key;
  uint64_t now = 0;
  int has_now;
  if (key_now_args(args, kw, "add_if_absent", &key, &now, &has_now) < 0)
    return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  bool added = false;
  bk_status s = has_now ? bk_fbf_advance(self->f, now) : BK_OK;
  if (s == BK_OK) s = bk_fbf_add_if_absent(self->f, k.ptr, k.len, &added);
  bkpy_key_release(&k);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.add_if_absent");
  return PyBool_FromLong(added);
}

static PyObject *fbf_contains_call(PyObject *o, PyObject *args, PyObject *kw) {
  FbfObject *self = (FbfObject *)o;
  PyObject *key;
  uint64_t now = 0;
  int has_now;
  if (key_now_args(args, kw, "contains", &key, &now, &has_now) < 0) return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  bool in = false;
  bk_status s = has_now ? bk_fbf_contains_at(self->f, k.ptr, k.len, now, &in)
                        : bk_fbf_contains(self->f, k.ptr, k.len, &in);
  bkpy_key_release(&k);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.contains");
  return PyBool_FromLong(in);
}

static int fbf_contains(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bool in = false;
  bk_status s = bk_fbf_contains(((FbfObject *)o)->f, k.ptr, k.len, &in);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    bkpy_raise(s, "ForgetfulBloomFilter.__contains__");
    return -1;
  }
  return in ? 1 : 0;
}

static PyObject *fbf_advance(PyObject *o, PyObject *now_obj) {
  uint64_t now;
  if (bkpy_u64(now_obj, "now", &now) < 0) return NULL;
  return fbf_advance_to((FbfObject *)o, now);
}

static PyObject *fbf_to_bytes(PyObject *o, PyObject *unused) {
  (void)unused;
  const bk_fbf *f = ((FbfObject *)o)->f;
  size_t n = 0;
  bk_status s = bk_fbf_serialized_size(f, &n);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.to_bytes");
  PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
  if (out == NULL) return NULL;
  size_t written = 0;
  s = bk_fbf_serialize(f, PyBytes_AS_STRING(out), n, &written);
  if (s != BK_OK || written != n) {
    Py_DECREF(out);
    return bkpy_raise(s != BK_OK ? s : BK_EINVAL,
                      "ForgetfulBloomFilter.to_bytes");
  }
  return out;
}

static PyObject *fbf_from_bytes(PyObject *cls, PyObject *data) {
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  bk_fbf *f = NULL;
  bk_status s = bk_fbf_deserialize(view.buf, (size_t)view.len, NULL, &f);
  PyBuffer_Release(&view);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.from_bytes");
  return fbf_wrap((PyTypeObject *)cls, f);
}

static PyObject *fbf_reduce(PyObject *o, PyObject *unused) {
  (void)unused;
  PyObject *blob = fbf_to_bytes(o, NULL);
  if (blob == NULL) return NULL;
  PyObject *ctor = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "from_bytes");
  if (ctor == NULL) {
    Py_DECREF(blob);
    return NULL;
  }
  return Py_BuildValue("(N(N))", ctor, blob);
}

static PyObject *fbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_fbf_info i;
  bk_status s = bk_fbf_info_get(((FbfObject *)o)->f, &i);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.info");
  return Py_BuildValue(
      "{s:K,s:I,s:I,s:I,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:n}", "m_bits",
      (unsigned long long)i.m_bits, "k", i.k, "n_filters", i.n_filters,
      "n_past", i.n_past, "refresh_period",
      (unsigned long long)i.refresh_period, "min_window",
      (unsigned long long)i.min_window, "now", (unsigned long long)i.now,
      "next_refresh", (unsigned long long)i.next_refresh, "window_min",
      (unsigned long long)i.window_min, "window_max",
      (unsigned long long)i.window_max, "refreshes",
      (unsigned long long)i.refreshes, "memory", (Py_ssize_t)i.memory);
}

static PyMethodDef fbf_methods[] = {
    {"add", (PyCFunction)(void (*)(void))fbf_add, METH_VARARGS | METH_KEYWORDS,
     "add(key, *, now=None): advance the clock to now (if given), then "
     "insert key."},
    {"add_if_absent", (PyCFunction)(void (*)(void))fbf_add_if_absent,
     METH_VARARGS | METH_KEYWORDS,
     "add_if_absent(key, *, now=None) -> bool: advance to now (if given), "
     "then insert key; True if it was absent."},
    {"contains", (PyCFunction)(void (*)(void))fbf_contains_call,
     METH_VARARGS | METH_KEYWORDS,
     "contains(key, *, now=None) -> bool: the answer as of time now "
     "(bk_fbf_contains_at: the filter is not changed), or of the filter's "
     "own clock without now."},
    {"advance", fbf_advance, METH_O,
     "advance(now): move the clock to now, running the refreshes due; "
     "InvalidArgumentError if now is earlier than the clock."},
    {"to_bytes", fbf_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form."},
    {"from_bytes", fbf_from_bytes, METH_O | METH_CLASS,
     "ForgetfulBloomFilter.from_bytes(b): a filter from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", fbf_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef fbf_getset[] = {
    {"info", fbf_get_info, NULL,
     "dict: the shape (m_bits, k, n_filters, n_past, refresh_period, "
     "min_window), the clock (now, next_refresh), the window bounds "
     "(window_min, window_max), refreshes and memory.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods fbf_as_sequence = {
    .sq_contains = fbf_contains,
};

PyTypeObject bkpy_ForgetfulType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.ForgetfulBloomFilter",
    .tp_basicsize = sizeof(FbfObject),
    .tp_dealloc = fbf_dealloc,
    .tp_as_sequence = &fbf_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "ForgetfulBloomFilter(capacity, fpp, window, n_past=2, now=0, "
        "seed=0)\n\n"
        "A forgetful Bloom filter: every key is remembered at least `window` "
        "time units after it was added, and forgotten some time after. "
        "Time is the caller's integers, passed as now=; `key in f` answers "
        "as of the filter's own clock.",
    .tp_methods = fbf_methods,
    .tp_getset = fbf_getset,
    .tp_new = fbf_new,
};
