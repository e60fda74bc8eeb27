/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.IdempotentCounters: a bk_idem table (idem.h) as a Python object.
 * add(key, client=, seq=, delta=1, now=None) applies an update once per op
 * id (client, seq) and returns AddResult(value, applied); the WINDOW
 * strategy's BK_IDEM_TOO_OLD raises TooOldError (nothing applied, the
 * counter's value in its `value` attribute). [key], get, del, `in`, len,
 * iteration over (key bytes, value) pairs, info, advance and
 * to_bytes / from_bytes / pickle. Time is the caller's integers, as for
 * ForgetfulBloomFilter.
 */
#include "bkpy.h"

#include <string.h>

#include "bloomkit/idem.h"

static PyTypeObject AddResultType;

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
  static char *kwlist[] = {"retry_timeout", "strategy",       "window",
                           "now",           "n_past",         "fpp",
                           "seed",          "ops_per_period", NULL};
  PyObject *timeout_obj, *now_obj = NULL, *seed_obj = NULL, *ops_obj = NULL;
  PyObject *window_obj = NULL, *n_past_obj = NULL;
  const char *strategy = "hybrid";
  unsigned window = BK_IDEM_WINDOW_DEFAULT, n_past = 0;
  double fpp = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sOOOdOO", kwlist, &timeout_obj,
                                   &strategy, &window_obj, &now_obj,
                                   &n_past_obj, &fpp, &seed_obj, &ops_obj))
    return NULL;
  /* The library checks the ranges; these bounds only keep the values from
   * wrapping in an unsigned int. */
  if ((window_obj != NULL &&
       bkpy_uint(window_obj, "window", BK_IDEM_WINDOW_MAX, &window) < 0) ||
      (n_past_obj != NULL && bkpy_uint(n_past_obj, "n_past", 64, &n_past) < 0))
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
  cfg.strategy = strategies[i].strategy;
  cfg.window = window;
  cfg.n_past = n_past;
  cfg.fpp = fpp;
  if (bkpy_u64(timeout_obj, "retry_timeout", &cfg.retry_timeout) < 0 ||
      (now_obj != NULL && now_obj != Py_None &&
       bkpy_u64(now_obj, "now", &cfg.start_time) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0) ||
      (ops_obj != NULL &&
       bkpy_u64(ops_obj, "ops_per_period", &cfg.ops_per_period) < 0))
    return NULL;
  bk_idem *t = NULL;
  bk_status s = bk_idem_create(&t, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "IdempotentCounters");
  return bkpy_wrap(type, t);
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
  uint64_t now = 0;
  if (client_obj == NULL || seq_obj == NULL) {
    PyErr_SetString(PyExc_TypeError, "add() needs client= and seq=");
    return NULL;
  }
  if (bkpy_u64(client_obj, "client", &id.client) < 0 ||
      bkpy_u64(seq_obj, "seq", &id.seq) < 0 ||
      (now_obj != Py_None && bkpy_u64(now_obj, "now", &now) < 0))
    return NULL;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  int64_t value = 0;
  bk_idem_outcome outcome = BK_IDEM_APPLIED;
  bk_status s = now_obj != Py_None ? bk_idem_advance(self->h, now) : BK_OK;
  if (s == BK_OK)
    s = bk_idem_add(self->h, k.ptr, k.len, id, (int64_t)delta, &value,
                    &outcome);
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
  bk_idem_info i;
  if (idem_info((bkpy_object *)o, &i) < 0) return NULL;
  return Py_BuildValue(
      "{s:s,s:K,s:K,s:K,s:n,s:n,s:d,s:K,s:I,s:K,s:I,s:K,s:K,s:K,s:K,s:K,"
      "s:n,s:K}",
      "strategy", strategy_name(i.strategy), "keys", (unsigned long long)i.keys,
      "applied", (unsigned long long)i.applied, "duplicates",
      (unsigned long long)i.duplicates, "filter_memory",
      (Py_ssize_t)i.filter_memory, "table_memory", (Py_ssize_t)i.table_memory,
      "fpp", i.fpp, "window_min", (unsigned long long)i.window_min, "n_filters",
      i.n_filters, "refresh_period", (unsigned long long)i.refresh_period,
      "window", i.window, "clients", (unsigned long long)i.clients,
      "window_decided", (unsigned long long)i.window_decided, "below_window",
      (unsigned long long)i.below_window, "slid_to_filter",
      (unsigned long long)i.slid_to_filter, "clients_evicted",
      (unsigned long long)i.clients_evicted, "window_memory",
      (Py_ssize_t)i.window_memory, "now", (unsigned long long)i.now);
}

static PyObject *idem_advance(PyObject *o, PyObject *now_obj) {
  uint64_t now;
  if (bkpy_u64(now_obj, "now", &now) < 0) return NULL;
  bk_status s = bk_idem_advance(((bkpy_object *)o)->h, now);
  if (s != BK_OK)
    return bkpy_raise(s,
                      "IdempotentCounters.advance (time going "
                      "backwards?)");
  Py_RETURN_NONE;
}

BKPY_DEFINE_CODEC(bkpy_idem_codec, "IdempotentCounters", idem, idem);

static PyMethodDef idem_methods[] = {
    {"add", (PyCFunction)(void (*)(void))idem_add, METH_VARARGS | METH_KEYWORDS,
     "add(key, *, client, seq, delta=1, now=None) -> AddResult(value, "
     "applied): advance to now (if given), then add delta to key's counter "
     "unless op (client, seq) was already applied. TooOldError (strategy "
     "'window') when the op is below its client's window."},
    {"get", (PyCFunction)(void (*)(void))idem_get, METH_FASTCALL,
     "get(key, default=None): the counter's value, or default."},
    {"items", idem_items, METH_NOARGS,
     "items() -> list of (key bytes, value), in no particular order."},
    {"advance", idem_advance, METH_O,
     "advance(now): move the table's clock; InvalidArgumentError if now is "
     "earlier than the clock."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: a snapshot in the library's serialized form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "IdempotentCounters.from_bytes(b): restore a snapshot; CorruptError "
     "for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef idem_getset[] = {
    {"info", idem_get_info, NULL,
     "dict: strategy, keys, applied, duplicates, memory, the filter's fpp "
     "and shape, the client windows' figures and the clock (now).",
     NULL},
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
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &idem_as_sequence,
    .tp_as_mapping = &idem_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "IdempotentCounters(retry_timeout, strategy='hybrid', "
        "window=256, now=0, n_past=0, fpp=0.0, seed=0, "
        "ops_per_period=0)\n\n"
        "Named int64 counters that apply each client update once per "
        "op id (client, seq). 0 means the library's default for "
        "n_past (2), fpp (0.001) and ops_per_period.",
    .tp_iter = idem_iter,
    .tp_methods = idem_methods,
    .tp_getset = idem_getset,
    .tp_new = idem_new,
};
