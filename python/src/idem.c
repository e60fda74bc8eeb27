/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.IdempotentCounters: a bk_idem table (idem.h) as a Python object.
 * add(key, client=, seq=, delta=1, now=None) applies an update once per op
 * id (client, seq) and returns AddResult(value, applied); the WINDOW
 * strategy's BK_IDEM_TOO_OLD raises TooOldError (nothing applied, the
 * counter's value in its `value` attribute). [key], get, del, `in`, len,
 * iteration over (key bytes, value) pairs, info, advance and
 * to_bytes / from_bytes / pickle. Time is the ForgetfulBloomFilter's
 * (timed.h, whose clock code this object embeds): seconds (int or float)
 * everywhere, whole milliseconds on the library's clock; time.monotonic()
 * unless the table is made with now= (explicit time, for tests and
 * replays); a now= given to a monotonic table is a time.monotonic()
 * value; a time before the clock is an InvalidArgumentError.
 */
#include <string.h>

#include "bloomkit/idem.h"
#include "timed.h"

static PyTypeObject AddResultType;

/* The Python object: the table and its clock (only ops->name and
 * ops->advance are used). */
typedef bkpy_timed idem_object;
#define IDEM(o) ((bkpy_timed *)(o))

static bk_status idem_advance_fn(void *h, uint64_t tick) {
  return bk_idem_advance(h, tick);
}

static const bkpy_timed_ops idem_ops = {.name = "IdempotentCounters",
                                        .advance = idem_advance_fn};

static PyStructSequence_Field add_result_fields[] = {
    {"value", "the counter's value after the call (also for a duplicate)"},
    {"applied", "True if this op was applied, False for a duplicate"},
    {NULL, NULL}};

static PyStructSequence_Desc add_result_desc = {
    "bloomkit.AddResult",
    "IdempotentCounters.add's result: (value, applied).",
    add_result_fields,
    2,
};

static const struct {
  const char *name;
  bk_idem_strategy strategy;
} strategies[] = {
    {"hybrid", BK_IDEM_HYBRID}, {"window", BK_IDEM_WINDOW},
    {"fbf", BK_IDEM_FBF},       {"adaptive", BK_IDEM_FBF_ADAPTIVE},
    {"apbf", BK_IDEM_APBF},     {"rbf", BK_IDEM_RBF},
    {"none", BK_IDEM_NONE},
};
#define N_STRATEGIES (sizeof strategies / sizeof strategies[0])

static const char *strategy_name(bk_idem_strategy s) {
  for (size_t i = 0; i < N_STRATEGIES; i++)
    if (strategies[i].strategy == s) return strategies[i].name;
  return "unknown";
}

int bkpy_idem_init(PyObject *module) {
  if (PyStructSequence_InitType2(&AddResultType, &add_result_desc) < 0)
    return -1;
  return PyModule_AddObjectRef(module, "AddResult", (PyObject *)&AddResultType);
}

static PyObject *idem_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"retry_timeout",
                           "strategy",
                           "window",
                           "now",
                           "n_past",
                           "fpp",
                           "seed",
                           "ops_per_period",
                           "refresh_period",
                           "target_fpp",
                           "max_filters",
                           "expected_keys",
                           NULL};
  PyObject *timeout_obj, *now_obj = Py_None, *seed_obj = NULL;
  PyObject *ops_obj = NULL, *window_obj = NULL, *n_past_obj = NULL;
  PyObject *period_obj = NULL, *maxf_obj = NULL, *keys_obj = NULL;
  const char *strategy = "hybrid";
  unsigned window = BK_IDEM_WINDOW_DEFAULT, n_past = 0, max_filters = 0;
  double fpp = 0, target_fpp = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kw, "O|s$OOOdOOOdOO", kwlist, &timeout_obj, &strategy,
          &window_obj, &now_obj, &n_past_obj, &fpp, &seed_obj, &ops_obj,
          &period_obj, &target_fpp, &maxf_obj, &keys_obj))
    return NULL;
  /* The library checks the ranges; these bounds only keep the values from
   * wrapping in an unsigned int. */
  if ((window_obj != NULL &&
       bkpy_uint(window_obj, "window", BK_IDEM_WINDOW_MAX, &window) < 0) ||
      (n_past_obj != NULL &&
       bkpy_uint(n_past_obj, "n_past", 64, &n_past) < 0) ||
      (maxf_obj != NULL &&
       bkpy_uint(maxf_obj, "max_filters", 64, &max_filters) < 0))
    return NULL;
  bk_idem_config cfg;
  memset(&cfg, 0, sizeof cfg);
  size_t i = 0;
  while (i < N_STRATEGIES && strcmp(strategies[i].name, strategy) != 0) i++;
  if (i == N_STRATEGIES) {
    PyErr_Format(PyExc_ValueError,
                 "strategy must be one of 'hybrid', 'window', 'fbf', "
                 "'adaptive', 'apbf', 'rbf', 'none', not '%.50s'",
                 strategy);
    return NULL;
  }
  bkpy_timed probe;
  if (bkpy_timed_start(&probe, now_obj, &cfg.start_time) < 0) return NULL;
  cfg.strategy = strategies[i].strategy;
  cfg.window = window;
  cfg.n_past = n_past;
  cfg.fpp = fpp;
  cfg.target_fpp = target_fpp;
  cfg.max_filters = max_filters;
  if (bkpy_duration_ticks(timeout_obj, "retry_timeout", 1, &cfg.retry_timeout) <
          0 ||
      (period_obj != NULL && bkpy_duration_ticks(period_obj, "refresh_period",
                                                 1, &cfg.refresh_period) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0) ||
      (ops_obj != NULL &&
       bkpy_u64(ops_obj, "ops_per_period", &cfg.ops_per_period) < 0) ||
      (keys_obj != NULL &&
       bkpy_u64(keys_obj, "expected_keys", &cfg.expected_keys) < 0))
    return NULL;
  bk_idem *t = NULL;
  bk_status s = bk_idem_create(&t, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "IdempotentCounters");
  PyObject *o = bkpy_wrap(type, t);
  if (o == NULL) return NULL;
  IDEM(o)->ops = &idem_ops;
  IDEM(o)->monotonic = probe.monotonic;
  IDEM(o)->origin = probe.origin;
  IDEM(o)->last = cfg.start_time;
  return o;
}

static PyObject *idem_add(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"key", "client", "seq", "delta", "now", NULL};
  bkpy_object *self = (bkpy_object *)o;
  PyObject *key, *client_obj = NULL, *seq_obj = NULL, *now_obj = Py_None;
  long long delta = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOLO:add", kwlist, &key,
                                   &client_obj, &seq_obj, &delta, &now_obj))
    return NULL;
  bk_idem_op_id id;
  uint64_t tick;
  if (client_obj == NULL || seq_obj == NULL) {
    PyErr_SetString(PyExc_TypeError, "add() needs client= and seq=");
    return NULL;
  }
  if (bkpy_u64(client_obj, "client", &id.client) < 0 ||
      bkpy_u64(seq_obj, "seq", &id.seq) < 0)
    return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  if (bkpy_tick_for(IDEM(o), now_obj, &tick) < 0 ||
      bkpy_advance_to(IDEM(o), tick, "add") < 0) {
    bkpy_key_release(&k);
    return NULL;
  }
  int64_t value = 0;
  bk_idem_outcome outcome = BK_IDEM_APPLIED;
  bk_status s =
      bk_idem_add(self->h, k.ptr, k.len, id, (int64_t)delta, &value, &outcome);
  bkpy_key_release(&k);
  if (s != BK_OK) return bkpy_raise(s, "IdempotentCounters.add");
  if (outcome == BK_IDEM_TOO_OLD) {
    PyObject *exc = PyObject_CallFunction(
        bkpy_TooOldError, "s",
        "op below its client's window (strategy 'window'): not applied");
    if (exc == NULL) return NULL;
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL || PyObject_SetAttrString(exc, "value", v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(exc);
      return NULL;
    }
    Py_DECREF(v);
    PyErr_SetObject(bkpy_TooOldError, exc);
    Py_DECREF(exc);
    return NULL;
  }
  PyObject *res = PyStructSequence_New(&AddResultType);
  if (res == NULL) return NULL;
  PyObject *v = PyLong_FromLongLong(value);
  if (v == NULL) {
    Py_DECREF(res);
    return NULL;
  }
  PyStructSequence_SET_ITEM(res, 0, v);
  PyStructSequence_SET_ITEM(res, 1,
                            PyBool_FromLong(outcome == BK_IDEM_APPLIED));
  return res;
}

/* The value of key: 1 found, 0 absent, -1 error (exception set). */
static int idem_lookup(bkpy_object *self, PyObject *key, int64_t *value) {
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_status s = bk_idem_get(self->h, k.ptr, k.len, value);
  bkpy_key_release(&k);
  if (s == BK_ENOTFOUND) return 0;
  if (s != BK_OK) {
    bkpy_raise(s, "IdempotentCounters.get");
    return -1;
  }
  return 1;
}

static PyObject *idem_getitem(PyObject *o, PyObject *key) {
  int64_t value;
  int rc = idem_lookup((bkpy_object *)o, key, &value);
  if (rc < 0) return NULL;
  if (rc == 0) {
    PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
  }
  return PyLong_FromLongLong(value);
}

static PyObject *idem_get(PyObject *o, PyObject *const *args,
                          Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
    return NULL;
  }
  int64_t value;
  int rc = idem_lookup((bkpy_object *)o, args[0], &value);
  if (rc < 0) return NULL;
  if (rc == 0) {
    PyObject *dflt = nargs == 2 ? args[1] : Py_None;
    Py_INCREF(dflt);
    return dflt;
  }
  return PyLong_FromLongLong(value);
}

static int idem_contains(PyObject *o, PyObject *key) {
  int64_t value;
  return idem_lookup((bkpy_object *)o, key, &value);
}

static int idem_setitem(PyObject *o, PyObject *key, PyObject *v) {
  if (v != NULL) {
    PyErr_SetString(PyExc_TypeError,
                    "IdempotentCounters: counters change only through "
                    "add(); del t[key] removes one");
    return -1;
  }
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  bk_status s = bk_idem_remove(((bkpy_object *)o)->h, k.ptr, k.len);
  bkpy_key_release(&k);
  if (s == BK_ENOTFOUND) {
    PyErr_SetObject(PyExc_KeyError, key);
    return -1;
  }
  if (s != BK_OK) {
    bkpy_raise(s, "IdempotentCounters.__delitem__");
    return -1;
  }
  return 0;
}

static int collect_pair(void *ctx, const void *key, size_t len, int64_t value) {
  PyObject *pair = Py_BuildValue("(y#L)", (const char *)key, (Py_ssize_t)len,
                                 (long long)value);
  if (pair == NULL) return 1;
  int rc = PyList_Append((PyObject *)ctx, pair);
  Py_DECREF(pair);
  return rc < 0 ? 1 : 0;
}

static PyObject *idem_items(PyObject *o, PyObject *unused) {
  (void)unused;
  PyObject *list = PyList_New(0);
  if (list == NULL) return NULL;
  bk_status s = bk_idem_iterate(((bkpy_object *)o)->h, collect_pair, list);
  if (PyErr_Occurred()) {
    Py_DECREF(list);
    return NULL;
  }
  if (s != BK_OK) {
    Py_DECREF(list);
    return bkpy_raise(s, "IdempotentCounters.items");
  }
  return list;
}

static PyObject *idem_iter(PyObject *o) {
  PyObject *list = idem_items(o, NULL);
  if (list == NULL) return NULL;
  PyObject *it = PyObject_GetIter(list);
  Py_DECREF(list);
  return it;
}

static int idem_info(bkpy_object *self, bk_idem_info *i) {
  bk_status s = bk_idem_info_get(self->h, i);
  if (s != BK_OK) {
    bkpy_raise(s, "IdempotentCounters.info");
    return -1;
  }
  return 0;
}

static Py_ssize_t idem_len(PyObject *o) {
  bk_idem_info i;
  if (idem_info((bkpy_object *)o, &i) < 0) return -1;
  return (Py_ssize_t)i.keys;
}

static PyObject *idem_get_info(PyObject *o, void *closure) {
  (void)closure;
  idem_object *self = IDEM(o);
  bk_idem_info i;
  if (idem_info(&self->base, &i) < 0) return NULL;
  PyObject *d = Py_BuildValue(
      "{s:s,s:s,s:K,s:K,s:K,s:n,s:n,s:d,s:d,s:I,s:d,s:I,s:K,s:K,s:K,s:K,"
      "s:K,s:n,s:d}",
      "strategy", strategy_name(i.strategy), "clock",
      self->monotonic ? "monotonic" : "explicit", "keys",
      (unsigned long long)i.keys, "applied", (unsigned long long)i.applied,
      "duplicates", (unsigned long long)i.duplicates, "filter_memory",
      (Py_ssize_t)i.filter_memory, "table_memory", (Py_ssize_t)i.table_memory,
      "fpp", i.fpp, "window_min", (double)i.window_min / BKPY_TICKS_PER_S,
      "n_filters", i.n_filters, "refresh_period",
      (double)i.refresh_period / BKPY_TICKS_PER_S, "window", i.window,
      "clients", (unsigned long long)i.clients, "window_decided",
      (unsigned long long)i.window_decided, "below_window",
      (unsigned long long)i.below_window, "slid_to_filter",
      (unsigned long long)i.slid_to_filter, "clients_evicted",
      (unsigned long long)i.clients_evicted, "window_memory",
      (Py_ssize_t)i.window_memory, "now", bkpy_seconds_at(self, i.now));
  return d;
}

/* from_bytes(data, monotonic=False): the clock is the blob's; a
 * monotonic table is re-based so that its clock is time.monotonic() now
 * (the time between saving and loading does not count). */
static PyObject *idem_from_bytes(PyObject *cls, PyObject *args, PyObject *kw) {
  PyObject *o;
  int monotonic;
  if (bkpy_timed_from_bytes(cls, args, kw, &o, &monotonic) < 0) return NULL;
  IDEM(o)->ops = &idem_ops;
  bk_idem_info i;
  if (idem_info(&IDEM(o)->base, &i) < 0 ||
      bkpy_timed_loaded(IDEM(o), i.now, monotonic) < 0) {
    Py_DECREF(o);
    return NULL;
  }
  return o;
}

static PyObject *idem_copy(PyObject *o, PyObject *unused) {
  PyObject *r = bkpy_timed_reduce(o, unused);
  if (r == NULL) return NULL;
  PyObject *c =
      PyObject_CallObject(PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1));
  Py_DECREF(r);
  return c;
}

static PyObject *idem_deepcopy(PyObject *o, PyObject *memo) {
  (void)memo;
  return idem_copy(o, NULL);
}

BKPY_DEFINE_CODEC(bkpy_idem_codec, "IdempotentCounters", idem, idem);

static PyMethodDef idem_methods[] = {
    {"add", (PyCFunction)(void (*)(void))idem_add, METH_VARARGS | METH_KEYWORDS,
     "add(key, *, client, seq, delta=1, now=None) -> AddResult(value, "
     "applied): bring the clock to now (seconds of the table's time base: "
     "a time.monotonic() value for a monotonic table; without now=, "
     "time.monotonic() or, on explicit time, the clock as it is; "
     "InvalidArgumentError if now is earlier than the clock), then add "
     "delta (an int64) to key's counter unless op "
     "(client, seq) was already applied; a new key starts at 0. value is "
     "the counter after the call, also for a duplicate. Atomic: of "
     "threads adding one op id, exactly one gets applied=True. "
     "TooOldError (strategy 'window') when the op is below its client's "
     "window; RangeError (an OverflowError) when the sum would leave "
     "int64 (nothing applied)."},
    {"get", (PyCFunction)(void (*)(void))idem_get, METH_FASTCALL,
     "get(key, default=None): the counter's value, or default."},
    {"items", idem_items, METH_NOARGS,
     "items() -> list of (key bytes, value) pairs, in no particular order "
     "(a snapshot: iter(t) walks the same list, so dict(t) works)."},
    {"advance", (PyCFunction)(void (*)(void))bkpy_timed_advance,
     METH_VARARGS | METH_KEYWORDS,
     "advance(now=None): move the table's clock (running the filter's "
     "refreshes and evicting idle clients' windows) to now (seconds of its "
     "time base; the table's own clock if None on explicit time, "
     "time.monotonic() if None on monotonic time); InvalidArgumentError "
     "if now is earlier than the clock."},
    {"copy", idem_copy, METH_NOARGS,
     "copy() -> IdempotentCounters: an independent copy (through a "
     "snapshot), keeping the clock's kind."},
    {"__copy__", idem_copy, METH_NOARGS, "copy.copy support"},
    {"__deepcopy__", idem_deepcopy, METH_O, "copy.deepcopy support"},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: a snapshot in the library's serialized form "
     "(counters, op ids still remembered, the clock in milliseconds since "
     "the time base's origin; not whether the table is monotonic)."},
    {"from_bytes", (PyCFunction)(void (*)(void))idem_from_bytes,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "IdempotentCounters.from_bytes(data, monotonic=False): restore a "
     "snapshot, its clock the snapshot's: on explicit time by default "
     "(continue with add(..., now=t) or advance(t)), with monotonic=True "
     "on time.monotonic(), re-based so that the snapshot's clock is "
     "time.monotonic() now (the time between is not counted: op ids are "
     "kept longer, never shorter). CorruptError for bytes that are not a "
     "snapshot."},
    {"__reduce__", bkpy_timed_reduce, METH_NOARGS,
     "pickle support: the blob and the time mode (a monotonic table loads "
     "re-based, as from_bytes(data, monotonic=True))."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef idem_getset[] = {
    {"info", idem_get_info, NULL,
     "dict: strategy, clock ('monotonic' or 'explicit'), keys, applied, "
     "duplicates, filter_memory, table_memory, fpp (the filter's "
     "estimate now), window_min (op ids are kept at least this long), "
     "n_filters, refresh_period, the client windows' figures (window, "
     "clients, window_decided, below_window, slid_to_filter, "
     "clients_evicted, window_memory) and now (the clock). Times are "
     "float seconds: now of the table's time base (time.monotonic() or "
     "the caller's), window_min and refresh_period as durations.",
     NULL},
    {"now", bkpy_timed_get_now, NULL,
     "float: the table's clock (seconds of its time base), the latest time "
     "it was moved to.",
     NULL},
    {"monotonic", bkpy_timed_get_monotonic, NULL,
     "bool: True when calls without now= run at time.monotonic().", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods idem_as_mapping = {
    .mp_length = idem_len,
    .mp_subscript = idem_getitem,
    .mp_ass_subscript = idem_setitem,
};

static PySequenceMethods idem_as_sequence = {
    .sq_contains = idem_contains,
};

PyTypeObject bkpy_IdemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.IdempotentCounters",
    .tp_basicsize = sizeof(idem_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &idem_as_sequence,
    .tp_as_mapping = &idem_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "IdempotentCounters(retry_timeout, strategy='hybrid', *, "
        "window=256, now=None, n_past=0, fpp=0.0, seed=0, "
        "ops_per_period=0, refresh_period=None, target_fpp=0.0, "
        "max_filters=0, expected_keys=0)\n\n"
        "Named int64 counters that apply each client update once per op "
        "id (client, seq), for clients that retry within retry_timeout. "
        "Strategies (how a retry is recognised): 'hybrid' (a window of "
        "`window` seqs per client, exact, with a forgetful filter behind "
        "it), 'window' (the windows only: TooOldError below one), 'fbf' "
        "(a forgetful Bloom filter of op ids), 'adaptive' (the FBF resized "
        "to keep target_fpp), 'apbf' (an age-partitioned filter), 'rbf' "
        "(one Bloom filter cleared when full) and 'none' (every retry "
        "counts again). Time, as for ForgetfulBloomFilter: seconds (int or "
        "float) everywhere (retry_timeout, refresh_period, now=, info), "
        "whole milliseconds on the library's clock. Without now= the table "
        "keeps time.monotonic() (a now= given to add or advance is a "
        "time.monotonic() value); with now=t (e.g. now=0) it keeps the "
        "caller's seconds, starting at t, moved by add(..., now=t) and "
        "advance(t) (a call without now= runs at the clock as it is). A "
        "now earlier than the clock raises InvalidArgumentError. 0 means the "
        "library's default for n_past (2), fpp (0.001), ops_per_period, "
        "target_fpp (fpp), max_filters and expected_keys. t[key] reads a "
        "counter (KeyError when absent), del t[key] removes one, len(t) "
        "counts keys and iter(t) yields (key bytes, value) pairs, so "
        "dict(t) is the table. Every call may run from many threads.",
    .tp_iter = idem_iter,
    .tp_methods = idem_methods,
    .tp_getset = idem_getset,
    .tp_new = idem_new,
};
