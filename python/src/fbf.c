/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.ForgetfulBloomFilter: a bk_fbf (fbf.h) as a Python object, with
 * time in seconds (int or float). The C clock is an integer count of
 * milliseconds (the unit of the library's timer, bk_fbf_clock_ms, and of
 * the Redis module's FBF): a time t is tick round((t - origin) * 1000).
 * Two modes, fixed at creation: with now= given the filter is on explicit
 * time (origin 0: the caller's clock, e.g. a replay's timestamps; a call
 * without now= runs at the filter's own clock, the latest time it was
 * given), without it on time.monotonic() (origin: the monotonic time at
 * creation; a call without now= runs at time.monotonic(), looked up in the
 * time module on each call). Shape as the Redis module's FBF.RESERVE
 * takes it: N = n_past past filters and a refresh period
 * t = ceil(window / (N + 1)) ms, with min_window = window, so every key is
 * kept at least `window`; `capacity` is keys per window, each period sized
 * for ceil(capacity t / window) of them, and `fpp` is the whole filter's
 * rate at that load (adaptive filters as the Redis module's ADAPTIVE).
 */
#include "timed.h"

#include <string.h>

#include "bloomkit/fbf.h"

typedef bkpy_timed fbf_object;
#define FBF(o) ((bkpy_timed *)(o))
#define TICKS_PER_S BKPY_TICKS_PER_S

/* Every FBF call may run beside the others (fbf.h): batches drop the
 * GIL. */
BKPY_DEFINE_TIMED_OPS(fbf_ops, "ForgetfulBloomFilter", fbf);

/* Redis module's ADAPTIVE: sized for 0.8 fpp so a filter at its nominal
 * load does not grow at the worst moment (docs/redis.md). */
#define ADAPTIVE_MARGIN 0.8

static PyObject *fbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp", "window", "n_past",
                           "adaptive", "now", "seed",   NULL};
  PyObject *cap_obj, *win_obj, *now_obj = Py_None, *seed_obj = NULL;
  PyObject *n_past_obj = NULL;
  double fpp;
  int adaptive = 0;
  unsigned n_past = 2;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OdO|OpOO", kwlist, &cap_obj, &fpp,
                                   &win_obj, &n_past_obj, &adaptive, &now_obj,
                                   &seed_obj))
    return NULL;
  if (n_past_obj != NULL &&
      bkpy_uint(n_past_obj, "n_past", BK_FBF_MAX_FILTERS - 2, &n_past) < 0)
    return NULL;
  uint64_t capacity, win, seed = 0;
  if (bkpy_u64(cap_obj, "capacity", &capacity) < 0 ||
      bkpy_window_ticks(win_obj, &win) < 0 ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &seed) < 0))
    return NULL;
  if (capacity == 0 || n_past == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "capacity must be at least 1, n_past in [1, 62]");
    return NULL;
  }
  if (!(fpp > 0) || !(fpp < 1)) /* 0 would be the C config's default */
    return bkpy_raise(BK_EINVAL, "ForgetfulBloomFilter: fpp must be in (0, 1)");
  bkpy_timed probe;
  uint64_t start;
  if (bkpy_timed_start(&probe, now_obj, &start) < 0) return NULL;
  uint64_t periods = (uint64_t)n_past + 1;
  uint64_t period = win / periods + (win % periods != 0);
  /* Keys per period: capacity t / window, rounded up (a sizing figure:
   * long double's 64-bit mantissa is exact enough). */
  long double scaled =
      (long double)capacity * (long double)period / (long double)win;
  uint64_t per_period = (uint64_t)scaled;
  if ((long double)per_period < scaled) per_period++;
  bk_fbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = per_period;
  /* fpp is the whole filter's rate (what a check answers with), as in
   * the Redis module: each constituent filter is sized for the rate that
   * gives it (bk_fbf_filter_fpp_for). */
  bk_status s = bk_fbf_filter_fpp_for(
      per_period, n_past, adaptive ? ADAPTIVE_MARGIN * fpp : fpp, &cfg.fpp);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter");
  cfg.n_past = n_past;
  cfg.refresh_period = period;
  cfg.min_window = win;
  cfg.start_time = start;
  cfg.seed = seed;
  if (adaptive) {
    cfg.adaptive = true;
    cfg.target_fpp = fpp; /* what Algorithm 3 holds the estimate to */
    cfg.adapt_interval = period;
    cfg.period_step = period / 10 ? period / 10 : 1;
  }
  bk_fbf *f = NULL;
  s = bk_fbf_create(&f, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter");
  PyObject *o = bkpy_wrap(type, f);
  if (o == NULL) return NULL;
  FBF(o)->ops = &fbf_ops;
  FBF(o)->monotonic = probe.monotonic;
  FBF(o)->origin = probe.origin;
  FBF(o)->last = start;
  return o;
}

/* ---- state -------------------------------------------------------------- */

static PyObject *u64_list(const uint64_t *v, unsigned n) {
  PyObject *list = PyList_New(n);
  for (unsigned i = 0; list != NULL && i < n; i++) {
    PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
    if (x == NULL) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, x);
  }
  return list;
}

static PyObject *fbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  const fbf_object *self = FBF(o);
  bk_fbf_info i;
  bk_status s = bk_fbf_info_get(self->base.h, &i);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.info");
  unsigned n = i.n_filters <= BK_FBF_MAX_FILTERS ? i.n_filters : 0;
  PyObject *inserted = u64_list(i.inserted, n);
  PyObject *set_bits = u64_list(i.set_bits, n);
  if (inserted == NULL || set_bits == NULL) {
    Py_XDECREF(inserted);
    Py_XDECREF(set_bits);
    return NULL;
  }
  return Py_BuildValue(
      "{s:K,s:I,s:I,s:I,s:I,s:I,s:d,s:d,s:d,s:d,s:d,s:d,s:K,s:K,s:N,s:N,s:n,"
      "s:s,s:O,s:O}",
      "m_bits", (unsigned long long)i.m_bits, "k", i.k, "n_filters",
      i.n_filters, "n_past", i.n_past, "target_filters", i.target_filters,
      "max_filters", i.max_filters, "refresh_period",
      (double)i.refresh_period / TICKS_PER_S, "min_window",
      (double)i.min_window / TICKS_PER_S, "now", bkpy_seconds_at(self, i.now),
      "next_refresh", bkpy_seconds_at(self, i.next_refresh), "window_min",
      (double)i.window_min / TICKS_PER_S, "window_max",
      (double)i.window_max / TICKS_PER_S, "refreshes",
      (unsigned long long)i.refreshes, "deferred",
      (unsigned long long)i.deferred, "inserted", inserted, "set_bits",
      set_bits, "memory", (Py_ssize_t)i.memory, "check",
      i.check == BK_FBF_CHECK_SIMPLE ? "simple" : "optimized", "adaptive",
      i.adaptive ? Py_True : Py_False, "monotonic",
      self->monotonic ? Py_True : Py_False);
}

static PyObject *fbf_get_fpp(PyObject *o, void *closure) {
  (void)closure;
  double p = 0;
  bk_status s = bk_fbf_estimated_fpp(FBF(o)->base.h, BK_FBF_CHECK_DEFAULT, &p);
  if (s != BK_OK) return bkpy_raise(s, "ForgetfulBloomFilter.fpp");
  return PyFloat_FromDouble(p);
}

BKPY_DEFINE_CODEC(bkpy_fbf_codec, "ForgetfulBloomFilter", fbf, fbf);

/* from_bytes(data, monotonic=False): the clock is the blob's; a
 * monotonic filter is re-based so that its clock is time.monotonic() now
 * (the time between saving and loading does not count). */
static PyObject *fbf_from_bytes(PyObject *cls, PyObject *args, PyObject *kw) {
  PyObject *o;
  int monotonic;
  if (bkpy_timed_from_bytes(cls, args, kw, &o, &monotonic) < 0) return NULL;
  FBF(o)->ops = &fbf_ops;
  bk_fbf_info i;
  bk_status s = bk_fbf_info_get(FBF(o)->base.h, &i);
  if (s != BK_OK) {
    Py_DECREF(o);
    return bkpy_raise(s, "ForgetfulBloomFilter.from_bytes");
  }
  if (bkpy_timed_loaded(FBF(o), i.now, monotonic) < 0) {
    Py_DECREF(o);
    return NULL;
  }
  return o;
}

#define KEYWORDS METH_VARARGS | METH_KEYWORDS
#define CFUNC(f) (PyCFunction)(void (*)(void))(f)
#define FASTCALL METH_FASTCALL | METH_KEYWORDS

static PyMethodDef fbf_methods[] = {
    {"add", CFUNC(bkpy_timed_add), FASTCALL,
     "add(key, *, now=None): move the clock to now, then insert key. "
     "InvalidArgumentError if now is earlier than the filter's clock."},
    {"add_if_absent", CFUNC(bkpy_timed_add_if_absent), FASTCALL,
     "add_if_absent(key, *, now=None) -> bool: move the clock to now, then "
     "insert key; True if it was absent (not reported present). Atomic: of "
     "threads racing on one key, exactly one gets True."},
    {"contains", CFUNC(bkpy_timed_contains), FASTCALL,
     "contains(key, *, now=None) -> bool: with now, the answer as of time "
     "now, changing nothing (bk_fbf_contains_at; a now earlier than the "
     "clock answers as of the clock). Without now, as `key in f`."},
    {"advance", CFUNC(bkpy_timed_advance), KEYWORDS,
     "advance(now=None): move the clock to now (explicit time: the filter's "
     "own clock if None; monotonic: time.monotonic()), running the "
     "refreshes due. InvalidArgumentError if now is earlier than the clock."},
    {"add_many", CFUNC(bkpy_timed_add_many), KEYWORDS,
     "add_many(keys, *, now=None): move the clock to now once, then add each "
     "key of a list/iterable or numpy array of 8-byte ints/floats, with the "
     "GIL released."},
    {"add_if_absent_many", CFUNC(bkpy_timed_add_if_absent_many), KEYWORDS,
     "add_if_absent_many(keys, *, now=None) -> list[bool] | numpy.ndarray: "
     "move the clock to now once, then add_if_absent of each key in order "
     "(a key twice: True at most once), with the GIL released."},
    {"contains_many", CFUNC(bkpy_timed_contains_many), KEYWORDS,
     "contains_many(keys, *, now=None) -> list[bool] | numpy.ndarray: "
     "contains of each key (as of now, changing nothing, when given; "
     "otherwise as `key in f`), with the GIL released; a numpy bool array "
     "when keys is an array."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form (the C clock in "
     "ms; not whether the filter is monotonic)."},
    {"from_bytes", CFUNC(fbf_from_bytes), KEYWORDS | METH_CLASS,
     "ForgetfulBloomFilter.from_bytes(data, monotonic=False): a filter from "
     "to_bytes() output, on explicit time at the blob's clock, or with "
     "monotonic=True on time.monotonic(), re-based so that the blob's clock "
     "is now (time while saved does not count). CorruptError for anything "
     "else."},
    {"__reduce__", bkpy_timed_reduce, METH_NOARGS,
     "pickle support: the blob and the time mode (a monotonic filter "
     "loads re-based, as from_bytes(data, monotonic=True))."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef fbf_getset[] = {
    {"info", fbf_get_info, NULL,
     "dict (times in seconds of the filter's time base, durations in "
     "seconds): m_bits, k, n_filters (N + 2 in use), n_past, target_filters, "
     "max_filters, refresh_period, min_window (the window), now (the clock), "
     "next_refresh, window_min and window_max (a key is kept at least "
     "window_min and at most window_max), refreshes, deferred, inserted and "
     "set_bits (per filter, future first), memory (bytes), check, adaptive, "
     "monotonic.",
     NULL},
    {"now", bkpy_timed_get_now, NULL,
     "float: the filter's clock (seconds of its time base), the latest time "
     "it was moved to.",
     NULL},
    {"monotonic", bkpy_timed_get_monotonic, NULL,
     "bool: True when calls without now= run at time.monotonic().", NULL},
    {"fpp", fbf_get_fpp, NULL,
     "float: the estimated false positive rate of the current state "
     "(bk_fbf_estimated_fpp, the figure adaptive filters steer by).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods fbf_as_sequence = {
    .sq_contains = bkpy_timed_in,
};

PyTypeObject bkpy_ForgetfulType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.ForgetfulBloomFilter",
    .tp_basicsize = sizeof(fbf_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &fbf_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "ForgetfulBloomFilter(capacity, fpp, window, n_past=2, adaptive=False, "
        "now=None, seed=0)\n\n"
        "A forgetful Bloom filter (fbf.h): a key added at time a is reported "
        "present at every time q with a <= q <= a + window (no false "
        "negative inside the window), and forgotten by a + info['window_max'] "
        "(the current shape's bound: (n_past + 2) refresh periods of "
        "ceil(window / (n_past + 1)) ms; longer after an adaptive grow); "
        "`capacity` is keys per window, `fpp` the rate a check "
        "answers with at that load. len() is not defined (the library keeps "
        "no count of distinct keys). adaptive=True grows and shrinks the "
        "filter to hold fpp under a changing load (Algorithm 3), never "
        "forgetting a key inside the window.\n\n"
        "Time is in seconds (int or float), kept as whole milliseconds: a "
        "time t is the C clock's tick round((t - origin) * 1000), and the "
        "window is rounded up to whole ms (at least 1 ms).\n"
        "- now=None (the default): monotonic time. Calls without now= run at "
        "time.monotonic() (looked up in the time module at each call); a "
        "now= given is a time.monotonic() value. `key in f` and "
        "contains(key) answer as of time.monotonic(), so a key is not "
        "reported after its window has run out in real time (the clock moves "
        "to the present first). Pickling keeps the clock: the loaded filter "
        "resumes at the saved clock, re-based to the new process's "
        "time.monotonic() (the time while saved does not count; monotonic "
        "times of two processes or boots are not comparable).\n"
        "- now=t (e.g. now=0): explicit time, the caller's seconds from 0. "
        "add, add_if_absent, contains and the batch calls take now=t; "
        "without it they run at the filter's own clock (the latest time it "
        "was given), and `key in f` answers as of that clock.\n"
        "add, add_if_absent, advance and the batch adds with a now earlier "
        "than the filter's clock raise InvalidArgumentError (time does not "
        "go backwards); contains(key, now=t) answers as of t and changes "
        "nothing. Every call may run beside every other from any thread; "
        "batch calls run with the GIL released.",
    .tp_methods = fbf_methods,
    .tp_getset = fbf_getset,
    .tp_new = fbf_new,
};
