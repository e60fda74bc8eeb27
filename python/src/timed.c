/* SPDX-License-Identifier: MIT */
/*
 * Time for the extension's sliding-window classes and IdempotentCounters
 * (timed.h): seconds from Python (int or float) as the C clock's whole
 * milliseconds, explicit or time.monotonic() time, a clock that never goes
 * backwards, and pickling that re-bases a monotonic clock to the loading
 * process (monotonic times of two processes or boots are not comparable:
 * the time while saved does not count).
 */
#include "timed.h"

#include <math.h>
#include <time.h>

/* Largest tick a Python time may map to (doubles are exact below 2^53). */
#define MAX_TICK 9007199254740992.0

/* time.monotonic() as the time module has it now (so a test can patch
 * it): while it is the built-in one, its clock read directly (Linux's
 * CLOCK_MONOTONIC, the clock Python's time.monotonic() reads), without
 * the call and the float object. */
static int monotonic_now(double *out) {
  static PyObject *time_mod, *name, *builtin; /* live as long as the VM */
  if (time_mod == NULL) {
    name = PyUnicode_InternFromString("monotonic");
    if (name == NULL) return -1;
    time_mod = PyImport_ImportModule("time");
    if (time_mod == NULL) return -1;
    builtin = PyObject_GetAttr(time_mod, name);
    if (builtin == NULL) return -1;
  }
  PyObject *fn = PyObject_GetAttr(time_mod, name);
  if (fn == NULL) return -1;
  double d;
  struct timespec ts;
  if (fn == builtin && clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
    Py_DECREF(fn);
    d = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  } else {
    PyObject *v = PyObject_CallNoArgs(fn);
    Py_DECREF(fn);
    if (v == NULL) return -1;
    d = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (d == -1.0 && PyErr_Occurred()) return -1;
  }
  if (!isfinite(d)) {
    PyErr_SetString(PyExc_ValueError, "time.monotonic() is not finite");
    return -1;
  }
  *out = d;
  return 0;
}

int bkpy_seconds(PyObject *obj, const char *name, double *out) {
  if (!PyLong_Check(obj) && !PyFloat_Check(obj)) {
    PyErr_Format(PyExc_TypeError,
                 "%s must be a number of seconds (int or float), not %.100s",
                 name, Py_TYPE(obj)->tp_name);
    return -1;
  }
  double d = PyFloat_AsDouble(obj);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear(); /* an int too large for a double */
    d = NAN;
  }
  if (!isfinite(d)) {
    PyErr_Format(PyExc_ValueError, "%s must be a finite number of seconds",
                 name);
    return -1;
  }
  *out = d;
  return 0;
}

int bkpy_duration_ticks(PyObject *obj, const char *name, int zero_ok,
                        uint64_t *out) {
  double d;
  if (bkpy_seconds(obj, name, &d) < 0) return -1;
  double x = d * BKPY_TICKS_PER_S;
  if (!(zero_ok ? x >= 0 : x > 0) || !(x <= (double)((uint64_t)1 << 40))) {
    PyErr_Format(PyExc_ValueError,
                 "%s must be a number of seconds in %s0, 2**40 / 1000]", name,
                 zero_ok ? "[" : "(");
    return -1;
  }
  /* Rounded up to whole ticks, 1e-6 ms of float noise ignored. */
  double w = ceil(x - 1e-6);
  *out = w < 1 ? (x > 0 ? 1 : 0) : (uint64_t)w;
  return 0;
}

int bkpy_window_ticks(PyObject *obj, uint64_t *out) {
  return bkpy_duration_ticks(obj, "window", 0, out);
}

/* Time t (seconds, the object's time base) as a tick. */
static int tick_of(const bkpy_timed *t, double s, const char *name,
                   uint64_t *out) {
  double x = (s - t->origin) * BKPY_TICKS_PER_S;
  if (!(x > -0.5) || !(x < MAX_TICK)) {
    PyErr_Format(PyExc_ValueError,
                 "%s must be at or after the clock's origin (%s) and below "
                 "2**53 ms after it",
                 name, t->monotonic ? "time.monotonic() at creation" : "0");
    return -1;
  }
  *out = (uint64_t)llround(x);
  return 0;
}

int bkpy_timed_start(bkpy_timed *t, PyObject *now_obj, uint64_t *start) {
  t->monotonic = now_obj == NULL || now_obj == Py_None;
  t->origin = 0;
  *start = 0;
  if (t->monotonic) return monotonic_now(&t->origin);
  double s;
  if (bkpy_seconds(now_obj, "now", &s) < 0) return -1;
  return tick_of(t, s, "now", start);
}

double bkpy_seconds_at(const bkpy_timed *t, uint64_t tick) {
  return t->origin + (double)tick / BKPY_TICKS_PER_S;
}

int bkpy_tick_for(bkpy_timed *t, PyObject *now_obj, uint64_t *out) {
  if (t->timeless && now_obj != NULL && now_obj != Py_None) {
    PyErr_Format(PyExc_TypeError,
                 "%s: now= is for a window in time (this one counts inserts)",
                 t->ops->name);
    return -1;
  }
  if (now_obj != NULL && now_obj != Py_None) {
    double s;
    if (bkpy_seconds(now_obj, "now", &s) < 0) return -1;
    return tick_of(t, s, "now", out);
  }
  *out = t->last;
  if (!t->monotonic) return 0;
  double m;
  if (monotonic_now(&m) < 0) return -1;
  double x = (m - t->origin) * BKPY_TICKS_PER_S;
  if (x >= MAX_TICK) {
    PyErr_SetString(PyExc_OverflowError,
                    "time.monotonic() is 2**53 ms past the clock's origin");
    return -1;
  }
  /* Never before the clock: a re-based origin or a patched clock may put
   * time.monotonic() behind it. */
  if (x > (double)t->last) *out = (uint64_t)llround(x);
  if (*out < t->last) *out = t->last;
  return 0;
}

/* Raise s naming "<Class>.<method>" (formatted only on error). */
static void raise_for(const bkpy_timed *t, const char *method, bk_status s) {
  char what[96];
  (void)snprintf(what, sizeof what, "%s.%s", t->ops->name, method);
  bkpy_raise(s, what);
}

int bkpy_advance_to(bkpy_timed *t, uint64_t tick, const char *method) {
  if (tick == t->last) return 0;
  if (tick < t->last) {
    char msg[200];
    (void)snprintf(msg, sizeof msg,
                   "%s.%s: now (%.3f s) is earlier than the clock "
                   "(%.3f s), time cannot go backwards",
                   t->ops->name, method, bkpy_seconds_at(t, tick),
                   bkpy_seconds_at(t, t->last));
    bkpy_raise(BK_EINVAL, msg);
    return -1;
  }
  /* With the GIL held: t->last stays the C clock (no other advance runs
   * in between). */
  bk_status s = t->ops->advance(t->base.h, tick);
  if (s != BK_OK) {
    raise_for(t, method, s);
    return -1;
  }
  t->last = tick;
  return 0;
}

int bkpy_timed_loaded(bkpy_timed *t, uint64_t now, int monotonic) {
  t->last = now;
  t->monotonic = monotonic;
  t->origin = 0;
  if (!monotonic) return 0;
  double m;
  if (monotonic_now(&m) < 0) return -1;
  t->origin = m - (double)now / BKPY_TICKS_PER_S;
  return 0;
}

PyObject *bkpy_timed_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *r = bkpy_reduce(self, NULL); /* (cls.from_bytes, (blob,)) */
  if (r == NULL || !((bkpy_timed *)self)->monotonic) return r;
  PyObject *out =
      Py_BuildValue("(O(OO))", PyTuple_GET_ITEM(r, 0),
                    PyTuple_GET_ITEM(PyTuple_GET_ITEM(r, 1), 0), Py_True);
  Py_DECREF(r);
  return out;
}

int bkpy_timed_from_bytes(PyObject *cls, PyObject *args, PyObject *kw,
                          PyObject **out, int *monotonic) {
  static char *kwlist[] = {"data", "monotonic", NULL};
  PyObject *data;
  *monotonic = 0;
  *out = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:from_bytes", kwlist, &data,
                                   monotonic))
    return -1;
  *out = bkpy_from_bytes(cls, data);
  return *out == NULL ? -1 : 0;
}

/* ---- the shared methods ------------------------------------------------- */

#define T(o) ((bkpy_timed *)(o))

enum keyed_op { OP_ADD, OP_ADD_IF_ABSENT, OP_CONTAINS };

static const char *const keyed_names[] = {"add", "add_if_absent", "contains"};

static int is_name(PyObject *name, const char *s) {
  return PyUnicode_Check(name) &&
         PyUnicode_CompareWithASCIIString(name, s) == 0;
}

/* (key, *, now=None) of a vectorcall (METH_FASTCALL | METH_KEYWORDS: no
 * argument tuple or dict is built, a third of a single call's time). */
static int key_now_args(PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames, const char *fname, PyObject **key,
                        PyObject **now_obj) {
  *key = nargs >= 1 ? args[0] : NULL;
  *now_obj = Py_None;
  if (nargs > 1) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes 1 positional argument but %zd were given (now= "
                 "is keyword-only)",
                 fname, nargs);
    return -1;
  }
  Py_ssize_t nk = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nk; i++) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, i);
    if (is_name(name, "now")) {
      *now_obj = args[nargs + i];
    } else if (is_name(name, "key") && *key == NULL) {
      *key = args[nargs + i];
    } else {
      PyErr_Format(PyExc_TypeError,
                   "%s() got an unexpected (or repeated) keyword argument %R",
                   fname, name);
      return -1;
    }
  }
  if (*key == NULL) {
    PyErr_Format(PyExc_TypeError, "%s() missing required argument 'key'",
                 fname);
    return -1;
  }
  return 0;
}

/* add, add_if_absent and contains: (key, *, now=None). */
static PyObject *keyed(PyObject *o, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, enum keyed_op op) {
  bkpy_timed *t = T(o);
  PyObject *key, *now_obj;
  if (key_now_args(args, nargs, kwnames, keyed_names[op], &key, &now_obj) < 0)
    return NULL;
  uint64_t tick;
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return NULL;
  bool out = false;
  bk_status s = BK_OK;
  if (bkpy_tick_for(t, now_obj, &tick) < 0) {
    bkpy_key_release(&k);
    return NULL;
  }
  if (op == OP_CONTAINS && now_obj != Py_None) {
    /* As of now=, changing nothing (as of the clock when now= is
     * earlier). */
    s = t->ops->contains_at(t->base.h, k.ptr, k.len, tick, &out);
  } else {
    /* Without now=, a monotonic object's reads move its clock to the
     * present too (the state as of now: what an add would see). */
    if (bkpy_advance_to(t, tick, keyed_names[op]) < 0) {
      bkpy_key_release(&k);
      return NULL;
    }
    if (op == OP_ADD)
      s = t->ops->add(t->base.h, k.ptr, k.len);
    else if (op == OP_ADD_IF_ABSENT)
      s = t->ops->add_if_absent(t->base.h, k.ptr, k.len, &out);
    else
      s = t->ops->contains(t->base.h, k.ptr, k.len, &out);
  }
  bkpy_key_release(&k);
  if (s != BK_OK) {
    raise_for(t, keyed_names[op], s);
    return NULL;
  }
  if (op == OP_ADD) Py_RETURN_NONE;
  return PyBool_FromLong(out);
}

PyObject *bkpy_timed_add(PyObject *o, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames) {
  return keyed(o, args, nargs, kwnames, OP_ADD);
}

PyObject *bkpy_timed_add_if_absent(PyObject *o, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames) {
  return keyed(o, args, nargs, kwnames, OP_ADD_IF_ABSENT);
}

PyObject *bkpy_timed_contains(PyObject *o, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames) {
  return keyed(o, args, nargs, kwnames, OP_CONTAINS);
}

int bkpy_timed_in(PyObject *o, PyObject *key) {
  bkpy_timed *t = T(o);
  bkpy_key k;
  if (bkpy_key_get(key, &k) < 0) return -1;
  uint64_t tick;
  if (bkpy_tick_for(t, NULL, &tick) < 0 ||
      bkpy_advance_to(t, tick, "__contains__") < 0) {
    bkpy_key_release(&k);
    return -1;
  }
  bool in = false;
  bk_status s = t->ops->contains(t->base.h, k.ptr, k.len, &in);
  bkpy_key_release(&k);
  if (s != BK_OK) {
    raise_for(t, "__contains__", s);
    return -1;
  }
  return in ? 1 : 0;
}

PyObject *bkpy_timed_advance(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"now", NULL};
  PyObject *now_obj = Py_None;
  uint64_t tick;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:advance", kwlist, &now_obj) ||
      bkpy_tick_for(T(o), now_obj, &tick) < 0 ||
      bkpy_advance_to(T(o), tick, "advance") < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* contains_at of each key as of one tick (the libraries have no batch
 * form). */
struct at_arg {
  const bkpy_timed_ops *ops;
  uint64_t tick;
};

static bk_status contains_at_many_fn(void *h, const void *const *keys,
                                     const size_t *lens, size_t m, bool *out,
                                     void *arg) {
  const struct at_arg *a = arg;
  for (size_t i = 0; i < m; i++) {
    bk_status s = a->ops->contains_at(h, keys[i], lens[i], a->tick, &out[i]);
    if (s != BK_OK) return s;
  }
  return BK_OK;
}

enum batch_op { B_ADD, B_ADD_IF_ABSENT, B_CONTAINS };

/* The batches: (keys, *, now=None); the clock moves first, holding the
 * GIL. */
static PyObject *batch(PyObject *o, PyObject *args, PyObject *kw,
                       enum batch_op op) {
  static const char *fmts[] = {"O|$O:add_many", "O|$O:add_if_absent_many",
                               "O|$O:contains_many"};
  static char *kwlist[] = {"keys", "now", NULL};
  bkpy_timed *t = T(o);
  char what[96]; /* a batch is long: formatted ahead */
  (void)snprintf(what, sizeof what, "%s.%s", t->ops->name, fmts[op] + 5);
  PyObject *keys, *now_obj = Py_None;
  uint64_t tick;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmts[op], kwlist, &keys,
                                   &now_obj) ||
      bkpy_tick_for(t, now_obj, &tick) < 0)
    return NULL;
  if (op == B_CONTAINS && now_obj != Py_None) {
    struct at_arg a = {t->ops, tick};
    return bkpy_batch_call(o, keys, contains_at_many_fn, &a, 1, 1, what);
  }
  if (bkpy_advance_to(t, tick, fmts[op] + 5) < 0) return NULL;
  if (op == B_CONTAINS)
    return bkpy_batch_call(o, keys, t->ops->contains_many, NULL, 1, 1, what);
  /* A single-writer object keeps the GIL through its adds: the GIL is
   * then what keeps a second writer out. */
  return bkpy_batch_call(
      o, keys, op == B_ADD ? t->ops->add_many : t->ops->add_if_absent_many,
      NULL, op != B_ADD, BKPY_RELEASE_UNLESS_SINGLE_WRITER, what);
}

PyObject *bkpy_timed_add_many(PyObject *o, PyObject *args, PyObject *kw) {
  return batch(o, args, kw, B_ADD);
}

PyObject *bkpy_timed_add_if_absent_many(PyObject *o, PyObject *args,
                                        PyObject *kw) {
  return batch(o, args, kw, B_ADD_IF_ABSENT);
}

PyObject *bkpy_timed_contains_many(PyObject *o, PyObject *args, PyObject *kw) {
  return batch(o, args, kw, B_CONTAINS);
}

PyObject *bkpy_timed_get_now(PyObject *o, void *closure) {
  (void)closure;
  if (T(o)->timeless) Py_RETURN_NONE;
  return PyFloat_FromDouble(bkpy_seconds_at(T(o), T(o)->last));
}

PyObject *bkpy_timed_get_monotonic(PyObject *o, void *closure) {
  (void)closure;
  return PyBool_FromLong(T(o)->monotonic);
}
