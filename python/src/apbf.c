/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.AgePartitionedBloomFilter: a bk_apbf (apbf.h) as a Python
 * object, count-based (no window: the last `capacity` inserts are always
 * found) or time-based (window= seconds, with the ForgetfulBloomFilter's
 * time handling, timed.h: explicit now= or time.monotonic(), a clock of
 * whole milliseconds). The methods are the shared sliding-window ones
 * (timed.c); here are the constructor, the library calls, info and the
 * loader.
 */
#include "timed.h"

#include <string.h>

#include "bloomkit/apbf.h"

#define APBF(o) ((bkpy_timed *)(o))

/* The APBF's contract is the FBF's (apbf.h): every call beside every
 * other, batches with the GIL released; single_writer adds keep it. */
BKPY_DEFINE_TIMED_OPS(apbf_ops, "AgePartitionedBloomFilter", apbf);

static PyObject *apbf_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"capacity", "fpp",           "window", "k", "l",
                           "now",      "single_writer", "seed",   NULL};
  PyObject *cap_obj, *win_obj = Py_None, *k_obj = Py_None, *l_obj = Py_None;
  PyObject *now_obj = Py_None, *seed_obj = NULL;
  double fpp = 0.01;
  int single_writer = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dO$OOOpO", kwlist, &cap_obj,
                                   &fpp, &win_obj, &k_obj, &l_obj, &now_obj,
                                   &single_writer, &seed_obj))
    return NULL;
  bk_apbf_config cfg;
  memset(&cfg, 0, sizeof cfg);
  if (bkpy_u64(cap_obj, "capacity", &cfg.capacity) < 0 ||
      (k_obj != Py_None && bkpy_uint(k_obj, "k", BK_APBF_MAX_K, &cfg.k) < 0) ||
      (l_obj != Py_None &&
       bkpy_uint(l_obj, "l", BK_APBF_MAX_SLICES, &cfg.l) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0))
    return NULL;
  if (cfg.capacity == 0) {
    PyErr_SetString(PyExc_ValueError, "capacity must be at least 1");
    return NULL;
  }
  if ((k_obj == Py_None) != (l_obj == Py_None) ||
      (k_obj != Py_None && (cfg.k == 0 || cfg.l == 0))) {
    PyErr_SetString(PyExc_ValueError,
                    "give k and l (each at least 1) together, or neither "
                    "(then they follow from fpp)");
    return NULL;
  }
  /* The C config reads 0 as "the default"; from Python it is an error. */
  if (!(fpp > 0) || !(fpp < 1))
    return bkpy_raise(BK_EINVAL,
                      "AgePartitionedBloomFilter: fpp must be in (0, 1)");
  cfg.fpp = fpp;
  cfg.single_writer = single_writer != 0;
  bkpy_timed probe = {.timeless = win_obj == Py_None};
  uint64_t start = 0;
  if (probe.timeless) {
    if (now_obj != Py_None) {
      PyErr_SetString(PyExc_TypeError,
                      "AgePartitionedBloomFilter: now= is for a window in "
                      "time (give window=)");
      return NULL;
    }
  } else if (bkpy_window_ticks(win_obj, &cfg.window) < 0 ||
             bkpy_timed_start(&probe, now_obj, &start) < 0) {
    return NULL;
  }
  cfg.start_time = start;
  bk_apbf *f = NULL;
  bk_status s = bk_apbf_create(&f, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "AgePartitionedBloomFilter");
  PyObject *o = bkpy_wrap(type, f);
  if (o == NULL) return NULL;
  APBF(o)->base.single_writer = single_writer;
  APBF(o)->ops = &apbf_ops;
  APBF(o)->timeless = probe.timeless;
  APBF(o)->monotonic = probe.monotonic;
  APBF(o)->origin = probe.origin;
  APBF(o)->last = start;
  return o;
}

/* A count of inserts (count-based) or a duration in seconds. */
static PyObject *span(const bk_apbf_info *i, uint64_t v) {
  if (!i->time_based) return PyLong_FromUnsignedLongLong(v);
  return PyFloat_FromDouble((double)v / BKPY_TICKS_PER_S);
}

static PyObject *apbf_get_info(PyObject *o, void *closure) {
  (void)closure;
  const bkpy_timed *self = APBF(o);
  bk_apbf_info i;
  bk_status s = bk_apbf_info_get(self->base.h, &i);
  if (s != BK_OK) return bkpy_raise(s, "AgePartitionedBloomFilter.info");
  PyObject *now = i.time_based
                      ? PyFloat_FromDouble(bkpy_seconds_at(self, i.now))
                      : Py_NewRef(Py_None);
  PyObject *period = i.time_based ? span(&i, i.period) : Py_NewRef(Py_None);
  PyObject *wmin = span(&i, i.window_min), *wmax = span(&i, i.window_max);
  if (now == NULL || period == NULL || wmin == NULL || wmax == NULL) {
    Py_XDECREF(now);
    Py_XDECREF(period);
    Py_XDECREF(wmin);
    Py_XDECREF(wmax);
    return NULL;
  }
  return Py_BuildValue(
      "{s:I,s:I,s:K,s:K,s:N,s:N,s:N,s:K,s:K,s:K,s:N,s:n,s:O,s:O,s:O}", "k", i.k,
      "l", i.l, "m_bits", (unsigned long long)i.m_bits, "generation",
      (unsigned long long)i.generation, "period", period, "window_min", wmin,
      "window_max", wmax, "in_generation", (unsigned long long)i.in_generation,
      "shifts", (unsigned long long)i.shifts, "inserted",
      (unsigned long long)i.inserted, "now", now, "memory",
      (Py_ssize_t)i.memory, "time_based", i.time_based ? Py_True : Py_False,
      "single_writer", i.single_writer ? Py_True : Py_False, "monotonic",
      self->monotonic ? Py_True : Py_False);
}

static PyObject *apbf_get_fpp(PyObject *o, void *closure) {
  (void)closure;
  double p = 0;
  bk_status s = bk_apbf_estimated_fpp(APBF(o)->base.h, &p);
  if (s != BK_OK) return bkpy_raise(s, "AgePartitionedBloomFilter.fpp");
  return PyFloat_FromDouble(p);
}

static PyObject *apbf_get_single_writer(PyObject *o, void *closure) {
  (void)closure;
  return PyBool_FromLong(APBF(o)->base.single_writer);
}

BKPY_DEFINE_CODEC(bkpy_apbf_codec, "AgePartitionedBloomFilter", apbf, apbf);

/* from_bytes(data, monotonic=False): the clock is the blob's; monotonic
 * (time-based blobs only) re-bases it to time.monotonic() now. */
static PyObject *apbf_from_bytes(PyObject *cls, PyObject *args, PyObject *kw) {
  PyObject *o;
  int monotonic;
  if (bkpy_timed_from_bytes(cls, args, kw, &o, &monotonic) < 0) return NULL;
  APBF(o)->ops = &apbf_ops;
  bk_apbf_info i;
  bk_status s = bk_apbf_info_get(APBF(o)->base.h, &i);
  if (s != BK_OK) {
    Py_DECREF(o);
    return bkpy_raise(s, "AgePartitionedBloomFilter.from_bytes");
  }
  APBF(o)->timeless = !i.time_based;
  if (bkpy_timed_loaded(APBF(o), i.time_based ? i.now : 0,
                        monotonic && i.time_based) < 0) {
    Py_DECREF(o);
    return NULL;
  }
  return o;
}

#define KEYWORDS METH_VARARGS | METH_KEYWORDS
#define CFUNC(f) (PyCFunction)(void (*)(void))(f)
#define FASTCALL METH_FASTCALL | METH_KEYWORDS

static PyMethodDef apbf_methods[] = {
    {"add", CFUNC(bkpy_timed_add), FASTCALL,
     "add(key, *, now=None): insert key (one insert of the count-based "
     "window, even when the key is there already); time-based, move the "
     "clock to now first (InvalidArgumentError if earlier than the clock)."},
    {"add_if_absent", CFUNC(bkpy_timed_add_if_absent), FASTCALL,
     "add_if_absent(key, *, now=None) -> bool: insert key unless it is "
     "found (then its window keeps running from its first insert); True if "
     "it was inserted. Atomic: of threads racing on one key, exactly one "
     "gets True."},
    {"contains", CFUNC(bkpy_timed_contains), FASTCALL,
     "contains(key, *, now=None) -> bool: with now (time-based), the answer "
     "as of now, changing nothing (bk_apbf_contains_at); without, as "
     "`key in f`."},
    {"advance", CFUNC(bkpy_timed_advance), KEYWORDS,
     "advance(now=None): time-based, move the clock to now (explicit time: "
     "the own clock if None; monotonic: time.monotonic()), shifting the "
     "slices due. Count-based: nothing (now= is a TypeError)."},
    {"add_many", CFUNC(bkpy_timed_add_many), KEYWORDS,
     "add_many(keys, *, now=None): move the clock to now once, then add each "
     "key of a list/iterable or numpy array of 8-byte ints/floats, with the "
     "GIL released (held when single_writer)."},
    {"add_if_absent_many", CFUNC(bkpy_timed_add_if_absent_many), KEYWORDS,
     "add_if_absent_many(keys, *, now=None) -> list[bool] | numpy.ndarray: "
     "move the clock to now once, then add_if_absent of each key in order."},
    {"contains_many", CFUNC(bkpy_timed_contains_many), KEYWORDS,
     "contains_many(keys, *, now=None) -> list[bool] | numpy.ndarray: "
     "contains of each key (as of now, changing nothing, when given), with "
     "the GIL released; a numpy bool array when keys is an array."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's serialized form (the clock in ms; "
     "not single_writer, not whether the filter is monotonic)."},
    {"from_bytes", CFUNC(apbf_from_bytes), KEYWORDS | METH_CLASS,
     "AgePartitionedBloomFilter.from_bytes(data, monotonic=False): a filter "
     "from to_bytes() output; a time-based one on explicit time at the "
     "blob's clock, or with monotonic=True on time.monotonic(), re-based so "
     "that the blob's clock is now. CorruptError for anything else."},
    {"__reduce__", bkpy_timed_reduce, METH_NOARGS,
     "pickle support: the blob and the time mode (single_writer is not "
     "kept)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef apbf_getset[] = {
    {"info", apbf_get_info, NULL,
     "dict: k, l, m_bits (per slice), generation (g), period (seconds; None "
     "count-based), window_min and window_max (count-based: inserts, l g + 1 "
     "and (l + 1) g; time-based: seconds, l period and (l + 1) period), "
     "in_generation, shifts, inserted, now (seconds; None count-based), "
     "memory (bytes), time_based, single_writer, monotonic.",
     NULL},
    {"now", bkpy_timed_get_now, NULL,
     "float | None: the clock (seconds of the time base); None count-based.",
     NULL},
    {"monotonic", bkpy_timed_get_monotonic, NULL,
     "bool: True when calls without now= run at time.monotonic().", NULL},
    {"single_writer", apbf_get_single_writer, NULL,
     "bool: at most one thread adds at a time (faster adds; batch adds keep "
     "the GIL).",
     NULL},
    {"fpp", apbf_get_fpp, NULL,
     "float: the estimated false positive rate of the current state "
     "(bk_apbf_estimated_fpp).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods apbf_as_sequence = {
    .sq_contains = bkpy_timed_in,
};

PyTypeObject bkpy_ApbfType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name =
        "bloomkit.AgePartitionedBloomFilter",
    .tp_basicsize = sizeof(bkpy_timed),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &apbf_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "AgePartitionedBloomFilter(capacity, fpp=0.01, window=None, *, "
        "k=None, l=None, now=None, single_writer=False, seed=0)\n\n"
        "An age-partitioned Bloom filter (apbf.h; Shtul, Baquero, Almeida "
        "2020): k + l slices, a key present when k consecutive slices hold "
        "it, the oldest slice dropped at each shift.\n"
        "- window=None: count-based. The last `capacity` inserts are always "
        "found (info['window_min'] = l g + 1 >= capacity; every add is an "
        "insert, add_if_absent only when it returns True); older ones are "
        "forgotten gradually: about half of the inserts just past l g + 1 "
        "back are still reported, a key's last slice going after l + k "
        "shifts (docs/design/fbf.md, APBF errata A1 and A3). now= is a "
        "TypeError.\n"
        "- window=seconds: time-based, `capacity` inserts per window (more "
        "only raise the false positive rate). A key inserted at a is found "
        "at every q with a <= q <= a + window; from a + info['window_max'] "
        "(one period, ceil(window / l), more) it has lost a slice and "
        "fades out as above. Time as "
        "ForgetfulBloomFilter's: seconds kept as whole ms; now=None at "
        "creation means time.monotonic() (calls without now= run at it, "
        "`key in f` answers as of it, pickles re-base it), now=t explicit "
        "time (calls without now= run at the filter's own clock).\n"
        "k and l (both or neither) fix the shape; otherwise the (k, l) of "
        "fewest bits whose rate meets fpp. single_writer: at most one thread "
        "adds at a time (not kept by to_bytes or pickle). Every call may run "
        "beside every other from any thread; batches drop the GIL. len() is "
        "not defined (info['inserted'] counts inserts, not keys).",
    .tp_methods = apbf_methods,
    .tp_getset = apbf_getset,
    .tp_new = apbf_new,
};
