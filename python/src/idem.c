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

/* ---- add_many ------------------------------------------------------------
 * One column of a batch's ops (clients, seqs or deltas) as n 8-byte ints:
 * from a 1-D C-contiguous buffer of 8-byte ints (numpy uint64 / int64), a
 * sequence of Python ints, or (deltas only) one int for every op. */
static int is_int8_array(const Py_buffer *v, int *is_signed) {
  if (v->ndim != 1 || v->itemsize != 8 || v->format == NULL) return 0;
  const char *f = v->format;
  if (*f == '@' || *f == '=' || (PY_LITTLE_ENDIAN && *f == '<')) f++;
  if (f[0] == '\0' || f[1] != '\0' || strchr("QqLl", f[0]) == NULL) return 0;
  *is_signed = f[0] == 'q' || f[0] == 'l';
  return 1;
}

/* Fill out[0..n) from obj: signed (deltas: int64) or not (uint64). Sets
 * *from_array when obj was a buffer. -1 with an exception. */
static int column_get(PyObject *obj, const char *name, size_t n, int is_delta,
                      uint64_t *out, int *from_array) {
  if (is_delta && PyLong_Check(obj)) {
    long long d = PyLong_AsLongLong(obj);
    if (d == -1 && PyErr_Occurred()) return -1;
    for (size_t i = 0; i < n; i++) out[i] = (uint64_t)d;
    return 0;
  }
  if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj) &&
      !PyByteArray_Check(obj)) {
    Py_buffer v;
    int is_signed = 0;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
      return -1;
    if (!is_int8_array(&v, &is_signed) || (size_t)(v.len / 8) != n) {
      PyErr_Format(
          is_int8_array(&v, &is_signed) ? PyExc_ValueError : PyExc_TypeError,
          "%s: an array must be 1-D, C-contiguous, of 8-byte ints "
          "(numpy uint64 or int64), one per key (%zu), not format "
          "'%.20s' x %zd bytes, %zd items",
          name, n, v.format ? v.format : "B", v.itemsize,
          v.itemsize ? v.len / v.itemsize : 0);
      PyBuffer_Release(&v);
      return -1;
    }
    memcpy(out, v.buf, n * 8);
    PyBuffer_Release(&v);
    for (size_t i = 0; i < n; i++) {
      if (is_signed != is_delta && out[i] >> 63) {
        PyErr_Format(PyExc_ValueError, "%s[%zu] is out of range (%s)", name, i,
                     is_delta ? "int64" : "[0, 2**64)");
        return -1;
      }
    }
    *from_array = 1;
    return 0;
  }
  PyObject *seq = PySequence_Fast(obj, "");
  if (seq == NULL) {
    PyErr_Format(PyExc_TypeError,
                 "%s must be a sequence of ints or an array of 8-byte ints%s, "
                 "not %.100s",
                 name, is_delta ? " or one int" : "", Py_TYPE(obj)->tp_name);
    return -1;
  }
  if ((size_t)PySequence_Fast_GET_SIZE(seq) != n) {
    PyErr_Format(PyExc_ValueError, "%s has %zd items for %zu keys", name,
                 PySequence_Fast_GET_SIZE(seq), n);
    Py_DECREF(seq);
    return -1;
  }
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (size_t i = 0; i < n; i++) {
    int rc;
    if (is_delta) {
      long long d = -1;
      if (!PyLong_Check(items[i])) {
        PyErr_Format(PyExc_TypeError, "%s must hold ints, not %.100s", name,
                     Py_TYPE(items[i])->tp_name);
        rc = -1;
      } else {
        d = PyLong_AsLongLong(items[i]);
        rc = d == -1 && PyErr_Occurred() ? -1 : 0;
      }
      out[i] = (uint64_t)d;
    } else {
      rc = bkpy_u64(items[i], name, &out[i]);
    }
    if (rc < 0) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  return 0;
}

/* One batch's ops and per-op results, walked chunk by chunk by
 * bkpy_batch_run (chunks come in order: `at` is the first op's index). */
typedef struct many_arg {
  const bk_idem_op_id *ids;
  const int64_t *deltas;
  int64_t *values;
  bk_idem_outcome *outcomes;
  bk_status *statuses;
  size_t at, done;
} many_arg;

static bk_status add_many_fn(void *h, const void *const *keys,
                             const size_t *lens, size_t m, bool *out,
                             void *arg) {
  many_arg *a = arg;
  size_t done = 0;
  bk_status s = bk_idem_add_many(
      h, keys, lens, a->ids + a->at, a->deltas + a->at, m, a->values + a->at,
      a->outcomes + a->at, a->statuses + a->at, &done);
  for (size_t j = 0; j < done; j++)
    out[j] = a->outcomes[a->at + j] == BK_IDEM_APPLIED;
  a->at += m;
  a->done += done;
  return s;
}

/* n int64 values as a numpy int64 array (as_array, numpy present) or a
 * list; NULL with an exception. */
static PyObject *values_object(const int64_t *v, size_t n, int as_array) {
  if (as_array) {
    PyObject *np = PyImport_ImportModule("numpy");
    if (np != NULL) {
      PyObject *arr =
          PyObject_CallMethod(np, "empty", "ns", (Py_ssize_t)n, "int64");
      Py_DECREF(np);
      if (arr == NULL) return NULL;
      Py_buffer view;
      if (PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) <
          0) {
        Py_DECREF(arr);
        return NULL;
      }
      if (n) memcpy(view.buf, v, n * sizeof *v);
      PyBuffer_Release(&view);
      return arr;
    }
    PyErr_Clear(); /* numpy is optional: answer with a list */
  }
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list != NULL && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (x == NULL) Py_CLEAR(list);
    if (list != NULL) PyList_SET_ITEM(list, (Py_ssize_t)i, x);
  }
  return list;
}

/* Raise the first refused op's exception (TooOldError, or RangeError for an
 * op out of range) carrying the whole batch's results: index (that op),
 * refused (every refused op's index), values, applied, value. Steals
 * `result` (the (values, applied) pair). */
static PyObject *raise_refused(PyObject *result, const bk_idem_outcome *oc,
                               const bk_status *st, size_t n, size_t first,
                               const int64_t *values) {
  PyObject *cls, *exc = NULL, *refused = PyList_New(0);
  int too_old = st[first] == BK_OK;
  char msg[160];
  if (too_old) {
    cls = bkpy_TooOldError;
    (void)snprintf(msg, sizeof msg,
                   "IdempotentCounters.add_many: op %zu below its client's "
                   "window (strategy 'window'): not applied",
                   first);
  } else {
    /* RangeError is the class bkpy_raise gives BK_ERANGE. */
    bkpy_raise(BK_ERANGE, "IdempotentCounters.add_many");
    cls = PyErr_Occurred();
    PyErr_Clear();
    (void)snprintf(msg, sizeof msg,
                   "IdempotentCounters.add_many: op %zu would take its counter "
                   "out of int64: not applied",
                   first);
  }
  for (size_t i = 0; refused != NULL && i < n; i++) {
    if (st[i] == BK_OK && oc[i] != BK_IDEM_TOO_OLD) continue;
    PyObject *x = PyLong_FromSize_t(i);
    if (x == NULL || PyList_Append(refused, x) < 0) Py_CLEAR(refused);
    Py_XDECREF(x);
  }
  if (refused != NULL) exc = PyObject_CallFunction(cls, "s", msg);
  PyObject *idx = exc ? PyLong_FromSize_t(first) : NULL;
  PyObject *val = idx ? PyLong_FromLongLong(values[first]) : NULL;
  if (val == NULL || PyObject_SetAttrString(exc, "index", idx) < 0 ||
      PyObject_SetAttrString(exc, "value", val) < 0 ||
      PyObject_SetAttrString(exc, "refused", refused) < 0 ||
      PyObject_SetAttrString(exc, "values", PyTuple_GET_ITEM(result, 0)) < 0 ||
      PyObject_SetAttrString(exc, "applied", PyTuple_GET_ITEM(result, 1)) < 0) {
    Py_XDECREF(exc);
    exc = NULL;
  }
  if (exc != NULL) PyErr_SetObject(cls, exc);
  Py_XDECREF(exc);
  Py_XDECREF(idx);
  Py_XDECREF(val);
  Py_XDECREF(refused);
  Py_DECREF(result);
  return NULL;
}

static PyObject *idem_add_many(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"keys", "clients", "seqs", "deltas", "now", NULL};
  PyObject *keys, *clients, *seqs, *deltas_obj = NULL, *now_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O$O:add_many", kwlist, &keys,
                                   &clients, &seqs, &deltas_obj, &now_obj))
    return NULL;
  bkpy_batch b;
  if (bkpy_batch_get(keys, &b) < 0) return NULL;
  const size_t n = b.n;
  int any_array = b.is_array;
  PyObject *result = NULL;
  bk_idem_op_id *ids = NULL;
  uint64_t *col = PyMem_Malloc((n ? n : 1) * 8);
  int64_t *deltas = PyMem_Malloc((n ? n : 1) * sizeof *deltas);
  int64_t *values = PyMem_Calloc(n ? n : 1, sizeof *values);
  bk_idem_outcome *oc = PyMem_Calloc(n ? n : 1, sizeof *oc);
  bk_status *st = PyMem_Calloc(n ? n : 1, sizeof *st);
  bkpy_bools applied = {0};
  int have_applied = 0;
  if (col == NULL || deltas == NULL || values == NULL || oc == NULL ||
      st == NULL || (ids = PyMem_Malloc((n ? n : 1) * sizeof *ids)) == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (column_get(clients, "clients", n, 0, col, &any_array) < 0) goto done;
  for (size_t i = 0; i < n; i++) ids[i].client = col[i];
  if (column_get(seqs, "seqs", n, 0, col, &any_array) < 0) goto done;
  for (size_t i = 0; i < n; i++) ids[i].seq = col[i];
  if (deltas_obj == NULL) {
    for (size_t i = 0; i < n; i++) deltas[i] = 1;
  } else if (column_get(deltas_obj, "deltas", n, 1, (uint64_t *)deltas,
                        &any_array) < 0) {
    goto done;
  }
  /* The answers come as numpy arrays when any column did. */
  bkpy_batch shape = {.n = n, .is_array = any_array};
  if (bkpy_bools_new(&shape, &applied) < 0) goto done;
  have_applied = 1;
  /* The time is read after the columns and the answers' array, whose
   * conversion may run Python code that moves the clock. */
  uint64_t tick;
  if (bkpy_tick_for(IDEM(o), now_obj, &tick) < 0 ||
      bkpy_advance_to(IDEM(o), tick, "add_many") < 0)
    goto done;
  many_arg a = {ids, deltas, values, oc, st, 0, 0};
  /* Adds may run concurrently (idem.h): a long batch lets other threads
   * in. */
  bk_status s = bkpy_batch_run(o, &b, add_many_fn, applied.buf, &a, n >= 256);
  if (s != BK_OK) {
    char what[120];
    (void)snprintf(what, sizeof what,
                   "IdempotentCounters.add_many (op %zu; the %zu before it "
                   "done)",
                   a.done, a.done);
    bkpy_raise(s, what);
    goto done;
  }
  PyObject *vals = values_object(values, n, any_array);
  if (vals == NULL) goto done;
  have_applied = 0;
  PyObject *flags = bkpy_bools_finish(&applied);
  if (flags == NULL) {
    Py_DECREF(vals);
    goto done;
  }
  result = PyTuple_Pack(2, vals, flags);
  Py_DECREF(vals);
  Py_DECREF(flags);
  if (result == NULL) goto done;
  for (size_t i = 0; i < n; i++) {
    if (st[i] != BK_OK || oc[i] == BK_IDEM_TOO_OLD) {
      result = raise_refused(result, oc, st, n, i, values);
      break;
    }
  }
done:
  if (have_applied) bkpy_bools_discard(&applied);
  bkpy_batch_release(&b);
  PyMem_Free(ids);
  PyMem_Free(col);
  PyMem_Free(deltas);
  PyMem_Free(values);
  PyMem_Free(oc);
  PyMem_Free(st);
  return result;
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

/* The pairs bk_idem_iterate visits, copied without a Python call: the
 * callback runs under a stripe lock, and an allocation of a Python object
 * can run a finalizer that calls back into the table (a deadlock), or
 * lets another thread in to do so. */
typedef struct idem_pairs {
  unsigned char *keys; /* the keys' bytes, one after another */
  size_t keys_len, keys_cap;
  size_t *lens;
  int64_t *values;
  size_t n, cap;
  int nomem;
} idem_pairs;

static int collect_pair(void *ctx, const void *key, size_t len, int64_t value) {
  idem_pairs *p = ctx;
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 64;
    size_t *lens = PyMem_Realloc(p->lens, cap * sizeof *lens);
    if (lens != NULL) p->lens = lens;
    int64_t *values = PyMem_Realloc(p->values, cap * sizeof *values);
    if (values != NULL) p->values = values;
    if (lens == NULL || values == NULL) goto nomem;
    p->cap = cap;
  }
  if (len > p->keys_cap - p->keys_len) {
    size_t cap = p->keys_cap ? p->keys_cap : 1024;
    while (cap - p->keys_len < len) {
      if (cap > SIZE_MAX / 4) goto nomem;
      cap *= 2;
    }
    unsigned char *keys = PyMem_Realloc(p->keys, cap);
    if (keys == NULL) goto nomem;
    p->keys = keys;
    p->keys_cap = cap;
  }
  if (len > 0) memcpy(p->keys + p->keys_len, key, len);
  p->keys_len += len;
  p->lens[p->n] = len;
  p->values[p->n++] = value;
  return 0;
nomem:
  p->nomem = 1;
  return 1;
}

static PyObject *idem_items(PyObject *o, PyObject *unused) {
  (void)unused;
  idem_pairs p;
  memset(&p, 0, sizeof p);
  bk_status s = bk_idem_iterate(((bkpy_object *)o)->h, collect_pair, &p);
  PyObject *list = NULL;
  if (p.nomem) {
    PyErr_NoMemory();
  } else if (s != BK_OK) {
    bkpy_raise(s, "IdempotentCounters.items");
  } else {
    list = PyList_New((Py_ssize_t)p.n);
    /* y# makes None of a NULL pointer: the empty key alone has no bytes */
    const char *base = p.keys != NULL ? (const char *)p.keys : "";
    size_t off = 0;
    for (size_t i = 0; list != NULL && i < p.n; i++) {
      PyObject *pair = Py_BuildValue("(y#L)", base + off, (Py_ssize_t)p.lens[i],
                                     (long long)p.values[i]);
      if (pair == NULL) {
        Py_CLEAR(list);
        break;
      }
      PyList_SET_ITEM(list, (Py_ssize_t)i, pair);
      off += p.lens[i];
    }
  }
  PyMem_Free(p.keys);
  PyMem_Free(p.lens);
  PyMem_Free(p.values);
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
    {"add_many", (PyCFunction)(void (*)(void))idem_add_many,
     METH_VARARGS | METH_KEYWORDS,
     "add_many(keys, clients, seqs, deltas=1, *, now=None) -> (values, "
     "applied): bring the clock to now once, then op i = (keys[i], "
     "clients[i], seqs[i], deltas[i]) for each i in order, as add() would "
     "(a retry inside the batch is a duplicate of its first copy). keys as "
     "the other batch calls take them (a sequence, or a numpy uint64 / "
     "int64 / float64 array); clients and seqs sequences of ints or numpy "
     "uint64 / int64 arrays of the same length; deltas the same, or one "
     "int for every op. values (the counters after each op) and applied "
     "are two lists, or a numpy int64 and a numpy bool array when any "
     "argument was an array. The GIL is released for 256 ops or more; a "
     "batch is not atomic (other threads' adds may come between its ops). "
     "Every op is processed: when some are refused (below the window, "
     "strategy 'window', or out of int64), the first one's TooOldError or "
     "RangeError is raised after the batch, with index (that op), refused "
     "(every refused op's index), value, and the whole batch's values and "
     "applied (a refused op: applied False, value its counter's (too old) "
     "or 0 (out of range))."},
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
