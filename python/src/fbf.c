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
 * ceil(capacity t / window) of them, and `fpp` is the whole filter's
 * false positive rate at that load.
 */
#include "bkpy.h"

#include <string.h>

#include "bloomkit/fbf.h"

static PyObject *fbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp",  "window", "n_past",
                           "now",      "seed", NULL};
  PyObject *cap_obj, *win_obj, *now_obj = NULL, *seed_obj = NULL;
  PyObject *n_past_obj = NULL;
  double fpp;
  unsigned n_past = 2;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OdO|OOO", kwlist, &cap_obj, &fpp,
                                   &win_obj, &n_past_obj, &now_obj, &seed_obj))
    return NULL;
  if (n_past_obj != NULL &&
      bkpy_uint(n_past_obj, "n_past", BK_FBF_MAX_FILTERS - 2, &n_past) < 0)
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
  /* fpp is the whole filter's rate (what a check answers with), as in
   * the Redis module: each constituent filter is sized for the rate that
   * gives it (bk_fbf_filter_fpp_for). */
  bk_status s = bk_fbf_filter_fpp_for(per_period, n_past, fpp, &cfg.fpp);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter");
  cfg.n_past = n_past;
  cfg.refresh_period = period;
  cfg.min_window = window;
  cfg.start_time = now;
  cfg.seed = seed;
  bk_fbf *f = NULL;
  s = bk_fbf_create(&f, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter");
  return bkpy_wrap(type, f);
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

static PyObject *fbf_advance_to(bkpy_object *self, uint64_t now) {
  bk_status s = bk_fbf_advance(self->h, now);
  if (s != BK_OK)
    return bkpy_raise(s,
                      "ForgetfulBloomFilter.advance (time going "
                      "backwards?)");
  Py_RETURN_NONE;
}

/* add, add_if_absent and contains: one key, an optional now=. */
enum fbf_op { FBF_ADD, FBF_ADD_IF_ABSENT, FBF_CONTAINS };

static PyObject *fbf_keyed(PyObject *o, PyObject *args, PyObject *kw,
                           enum fbf_op op) {
  static const char *names[] = {"add", "add_if_absent", "contains"};
  bkpy_object *self = (bkpy_object *)o;
  PyObject *key;
  uint64_t now = 0;
  int has_now;
  if (key_now_args(args, kw, names[op], &key, &now, &has_now) < 0) return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  bool out = false;
  bk_status s = BK_OK;
  if (op == FBF_CONTAINS)
    s = has_now ? bk_fbf_contains_at(self->h, k.ptr, k.len, now, &out)
                : bk_fbf_contains(self->h, k.ptr, k.len, &out);
  else if (has_now)
    s = bk_fbf_advance(self->h, now);
  if (s == BK_OK && op == FBF_ADD) s = bk_fbf_add(self->h, k.ptr, k.len);
  if (s == BK_OK && op == FBF_ADD_IF_ABSENT)
    s = bk_fbf_add_if_absent(self->h, k.ptr, k.len, &out);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    char what[64];
    (void)snprintf(what, sizeof what, "ForgetfulBloomFilter.%s", names[op]);
    return bkpy_raise(s, what);
  }
  if (op == FBF_ADD) Py_RETURN_NONE;
  return PyBool_FromLong(out);
}

static PyObject *fbf_add(PyObject *o, PyObject *args, PyObject *kw) {
  return fbf_keyed(o, args, kw, FBF_ADD);
}

static PyObject *fbf_add_if_absent(PyObject *o, PyObject *args, PyObject *kw) {
  return fbf_keyed(o, args, kw, FBF_ADD_IF_ABSENT);
}

static PyObject *fbf_contains_call(PyObject *o, PyObject *args, PyObject *kw) {
  return fbf_keyed(o, args, kw, FBF_CONTAINS);
}

static int fbf_contains(PyObject *o, PyObject *key) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bool in = false;
  bk_status s = bk_fbf_contains(((bkpy_object *)o)->h, k.ptr, k.len, &in);
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
  return fbf_advance_to((bkpy_object *)o, now);
}

static PyObject *fbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_fbf_info i;
  bk_status s = bk_fbf_info_get(((bkpy_object *)o)->h, &i);
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

BKPY_DEFINE_CODEC(bkpy_fbf_codec, "ForgetfulBloomFilter", fbf, fbf);

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
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "ForgetfulBloomFilter.from_bytes(b): a filter from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
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
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
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
