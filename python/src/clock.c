/* SPDX-License-Identifier: MIT */
/*
 * bloomkit.BloomClock and bloomkit.VectorClock: a bk_bloomclock and a
 * bk_vclock (bloomclock.h) as Python objects. tick() is a local event,
 * merge(msg) a receive event (element-wise max, then a tick), and
 * a.compare(b) the causality of a's and b's timestamps as a
 * bloomkit.Order (the enum of python/bloomkit/__init__.py, with the C API's
 * values: EQUAL 0, BEFORE 1 when a happened before b, AFTER 2, CONCURRENT
 * 3). A Bloom clock's BEFORE may be a false positive;
 * probability_before(b) is the library's estimate that it arose by chance.
 * A vector clock is exact. to_bytes / from_bytes / pickle over the
 * library's wire forms. The GIL is held around every call.
 */
#include "bkpy.h"

#include <string.h>

#include "bloomkit/bloomclock.h"

/* bloomkit.Order(c). */
static PyObject *order_of(bk_causality c) {
  PyObject *pkg = PyImport_ImportModule("bloomkit");
  if (pkg == NULL) return NULL;
  PyObject *order = PyObject_GetAttrString(pkg, "Order");
  Py_DECREF(pkg);
  if (order == NULL) return NULL;
  PyObject *out = PyObject_CallFunction(order, "i", (int)c);
  Py_DECREF(order);
  return out;
}

/* other's handle when it is an object of type t; NULL with a TypeError. */
static void *same_type(PyObject *self, PyObject *other) {
  if (Py_TYPE(other) != Py_TYPE(self)) {
    PyErr_Format(PyExc_TypeError, "%.50s expected, not %.100s",
                 Py_TYPE(self)->tp_name, Py_TYPE(other)->tp_name);
    return NULL;
  }
  return ((bkpy_object *)other)->h;
}

/* ---- BloomClock --------------------------------------------------------- */

static PyObject *bc_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"m",    "k", "process_id", "counter_bits",
                           "seed", NULL};
  PyObject *m_obj, *k_obj, *pid_obj = NULL, *bits_obj = NULL;
  PyObject *seed_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOO", kwlist, &m_obj, &k_obj,
                                   &pid_obj, &bits_obj, &seed_obj))
    return NULL;
  bk_bloomclock_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.counter_bits = 8;
  if (bkpy_u64(m_obj, "m", &cfg.m) < 0 ||
      bkpy_uint(k_obj, "k", 64, &cfg.k) < 0 ||
      (pid_obj != NULL &&
       bkpy_u64(pid_obj, "process_id", &cfg.process_id) < 0) ||
      (bits_obj != NULL &&
       bkpy_uint(bits_obj, "counter_bits", 32, &cfg.counter_bits) < 0) ||
      (seed_obj != NULL && bkpy_u64(seed_obj, "seed", &cfg.seed) < 0))
    return NULL;
  /* The C config reads 0 as "the default"; from Python it is an error. */
  if (cfg.m == 0 || cfg.k == 0 || cfg.counter_bits == 0)
    return bkpy_raise(BK_EINVAL,
                      "BloomClock: m and k must be at least 1, counter_bits "
                      "8, 16 or 32");
  bk_bloomclock *c = NULL;
  bk_status s = bk_bloomclock_create(&c, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "BloomClock");
  return bkpy_wrap(type, c);
}

static PyObject *bc_tick(PyObject *o, PyObject *unused) {
  (void)unused;
  bk_status s = bk_bloomclock_tick(((bkpy_object *)o)->h);
  if (s != BK_OK) return bkpy_raise(s, "BloomClock.tick");
  Py_RETURN_NONE;
}

/* A receive event from msg: a clock of self's type (merge) or the wire
 * form of one (receive: validated before self is touched). */
static PyObject *receive(PyObject *o, PyObject *msg,
                         bk_status (*merge)(void *, const void *),
                         bk_status (*recv)(void *, const void *, size_t),
                         const char *what) {
  bk_status s;
  if (Py_TYPE(msg) != Py_TYPE(o) && PyObject_CheckBuffer(msg)) {
    Py_buffer view;
    if (PyObject_GetBuffer(msg, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    s = recv(((bkpy_object *)o)->h, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
  } else {
    void *h = same_type(o, msg);
    if (h == NULL) return NULL;
    s = merge(((bkpy_object *)o)->h, h);
  }
  if (s != BK_OK) return bkpy_raise(s, what);
  Py_RETURN_NONE;
}

static bk_status bc_merge_fn(void *c, const void *msg) {
  return bk_bloomclock_merge(c, msg);
}
static bk_status bc_recv_fn(void *c, const void *buf, size_t len) {
  return bk_bloomclock_receive(c, buf, len);
}
static bk_status vc_merge_fn(void *c, const void *msg) {
  return bk_vclock_merge(c, msg);
}
static bk_status vc_recv_fn(void *c, const void *buf, size_t len) {
  return bk_vclock_receive(c, buf, len);
}

static PyObject *bc_merge(PyObject *o, PyObject *msg) {
  return receive(o, msg, bc_merge_fn, bc_recv_fn, "BloomClock.merge");
}

/* a == b: same type and compare() EQUAL; clocks of other shapes (a
 * MismatchError for compare) are unequal. */
static PyObject *clock_richcompare(PyObject *a, PyObject *b, int op) {
  if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != Py_TYPE(b))
    Py_RETURN_NOTIMPLEMENTED;
  bk_causality c = BK_CAUSAL_CONCURRENT;
  void *x = ((bkpy_object *)a)->h, *y = ((bkpy_object *)b)->h;
  bk_status s = Py_TYPE(a) == &bkpy_BloomClockType
                    ? bk_bloomclock_compare(x, y, &c)
                    : bk_vclock_compare(x, y, &c);
  if (s != BK_OK && s != BK_EMISMATCH) return bkpy_raise(s, "clock ==");
  int eq = s == BK_OK && c == BK_CAUSAL_EQUAL;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *bc_compare(PyObject *o, PyObject *other) {
  void *h = same_type(o, other);
  if (h == NULL) return NULL;
  bk_causality c;
  bk_status s = bk_bloomclock_compare(((bkpy_object *)o)->h, h, &c);
  if (s != BK_OK) return bkpy_raise(s, "BloomClock.compare");
  return order_of(c);
}

static PyObject *bc_probability_before(PyObject *o, PyObject *other) {
  void *h = same_type(o, other);
  if (h == NULL) return NULL;
  double p = 0;
  bk_status s = bk_bloomclock_pr_p(((bkpy_object *)o)->h, h, &p);
  if (s != BK_OK) return bkpy_raise(s, "BloomClock.probability_before");
  return PyFloat_FromDouble(p);
}

static PyObject *bc_get_info(PyObject *o, void *closure) {
  (void)closure;
  bk_bloomclock_info in;
  bk_status s = bk_bloomclock_info_get(((bkpy_object *)o)->h, &in);
  if (s != BK_OK) return bkpy_raise(s, "BloomClock.info");
  return Py_BuildValue("{s:K,s:I,s:I,s:K,s:K,s:K,s:K,s:d}", "m",
                       (unsigned long long)in.m, "k", in.k, "counter_bits",
                       in.counter_bits, "seed", (unsigned long long)in.seed,
                       "process_id", (unsigned long long)in.process_id,
                       "events", (unsigned long long)in.events, "saturated",
                       (unsigned long long)in.saturated, "sum", in.sum);
}

BKPY_DEFINE_CODEC(bkpy_bloomclock_codec, "BloomClock", bc, bloomclock);

static PyMethodDef bc_methods[] = {
    {"tick", bc_tick, METH_NOARGS, "tick(): a local (internal or send) event."},
    {"merge", bc_merge, METH_O,
     "merge(msg): a receive event: element-wise max with msg's clock, then a "
     "tick. msg is a BloomClock or its to_bytes() (checked whole before "
     "this clock changes: CorruptError). MismatchError for another m, k, "
     "counter_bits or seed."},
    {"copy", bkpy_copy, METH_NOARGS, "copy() -> BloomClock: a copy."},
    {"__copy__", bkpy_copy, METH_NOARGS, "copy.copy support"},
    {"__deepcopy__", bkpy_deepcopy, METH_O, "copy.deepcopy support"},
    {"compare", bc_compare, METH_O,
     "compare(other) -> Order: BEFORE when this timestamp happened before "
     "other's (possibly a false positive; never a false negative: if it "
     "happened before, the answer is BEFORE or EQUAL), AFTER, EQUAL or "
     "CONCURRENT. a == b is compare() == Order.EQUAL."},
    {"probability_before", bc_probability_before, METH_O,
     "probability_before(other) -> float: the estimated probability that "
     "other's clock covers this one's by chance (pr_p of Kshemkalyani & "
     "Misra: how likely a BEFORE from compare is a false positive); near "
     "0 means a BEFORE can be trusted."},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's wire form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "BloomClock.from_bytes(b): a clock from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef bc_getset[] = {
    {"info", bc_get_info, NULL,
     "dict: m, k, counter_bits, seed, process_id, events, saturated, sum.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject bkpy_BloomClockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.BloomClock",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "BloomClock(m, k, process_id=0, counter_bits=8, seed=0)\n\n"
        "A Bloom clock (Kshemkalyani & Misra) of m counters of "
        "counter_bits (8, 16 or 32) bits and k hashes per event; every "
        "clock of one system shares m, k, counter_bits and seed, and each "
        "process has its own process_id. Its size does not grow with the "
        "number of processes; compare may report BEFORE falsely, never "
        "miss one. Unhashable (it changes). A clock belongs to one thread "
        "at a time.",
    .tp_richcompare = clock_richcompare,
    .tp_methods = bc_methods,
    .tp_getset = bc_getset,
    .tp_new = bc_new,
};

/* ---- VectorClock -------------------------------------------------------- */

static PyObject *vc_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"processes", "process_id", NULL};
  PyObject *p_obj, *pid_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &p_obj, &pid_obj))
    return NULL;
  bk_vclock_config cfg;
  memset(&cfg, 0, sizeof cfg);
  if (bkpy_u64(p_obj, "processes", &cfg.processes) < 0 ||
      (pid_obj != NULL && bkpy_u64(pid_obj, "process_id", &cfg.process_id) < 0))
    return NULL;
  bk_vclock *v = NULL;
  bk_status s = bk_vclock_create(&v, &cfg);
  if (s != BK_OK) return bkpy_raise(s, "VectorClock");
  return bkpy_wrap(type, v);
}

static PyObject *vc_tick(PyObject *o, PyObject *unused) {
  (void)unused;
  bk_status s = bk_vclock_tick(((bkpy_object *)o)->h);
  if (s != BK_OK) return bkpy_raise(s, "VectorClock.tick");
  Py_RETURN_NONE;
}

static PyObject *vc_merge(PyObject *o, PyObject *msg) {
  return receive(o, msg, vc_merge_fn, vc_recv_fn, "VectorClock.merge");
}

static PyObject *vc_unseen(PyObject *o, PyObject *other) {
  void *h = same_type(o, other);
  if (h == NULL) return NULL;
  uint64_t n = 0;
  bk_status s = bk_vclock_unseen(((bkpy_object *)o)->h, h, &n);
  if (s != BK_OK) return bkpy_raise(s, "VectorClock.unseen");
  return PyLong_FromUnsignedLongLong(n);
}

static PyObject *vc_compare(PyObject *o, PyObject *other) {
  void *h = same_type(o, other);
  if (h == NULL) return NULL;
  bk_causality c;
  bk_status s = bk_vclock_compare(((bkpy_object *)o)->h, h, &c);
  if (s != BK_OK) return bkpy_raise(s, "VectorClock.compare");
  return order_of(c);
}

static Py_ssize_t vc_len(PyObject *o) {
  return (Py_ssize_t)bk_vclock_processes(((bkpy_object *)o)->h);
}

static PyObject *vc_item(PyObject *o, Py_ssize_t j) {
  uint32_t v = 0;
  if (j < 0 || bk_vclock_get(((bkpy_object *)o)->h, (uint64_t)j, &v) != BK_OK) {
    PyErr_SetString(PyExc_IndexError, "VectorClock index out of range");
    return NULL;
  }
  return PyLong_FromUnsignedLong(v);
}

BKPY_DEFINE_CODEC(bkpy_vclock_codec, "VectorClock", vc, vclock);

static PyMethodDef vc_methods[] = {
    {"tick", vc_tick, METH_NOARGS, "tick(): a local event (V[i] += 1)."},
    {"merge", vc_merge, METH_O,
     "merge(msg): a receive event: element-wise max, then a tick. msg is a "
     "VectorClock or its to_bytes(); MismatchError for another number of "
     "processes, RangeError when an entry would pass 2**32 - 1."},
    {"compare", vc_compare, METH_O,
     "compare(other) -> Order: the exact causality of this timestamp and "
     "other's. a == b is compare() == Order.EQUAL."},
    {"unseen", vc_unseen, METH_O,
     "unseen(other) -> int: events in other's causal past that are not in "
     "this one's (sum of max(0, other[j] - self[j])); 0 exactly when "
     "other happened before this or equals it."},
    {"copy", bkpy_copy, METH_NOARGS, "copy() -> VectorClock: a copy."},
    {"__copy__", bkpy_copy, METH_NOARGS, "copy.copy support"},
    {"__deepcopy__", bkpy_deepcopy, METH_O, "copy.deepcopy support"},
    {"to_bytes", bkpy_to_bytes, METH_NOARGS,
     "to_bytes() -> bytes: the library's wire form."},
    {"from_bytes", bkpy_from_bytes, METH_O | METH_CLASS,
     "VectorClock.from_bytes(b): a clock from to_bytes() output; "
     "CorruptError for anything else."},
    {"__reduce__", bkpy_reduce, METH_NOARGS, "pickle support"},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods vc_as_sequence = {
    .sq_length = vc_len,
    .sq_item = vc_item,
};

PyTypeObject bkpy_VectorClockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.VectorClock",
    .tp_basicsize = sizeof(bkpy_object),
    .tp_dealloc = bkpy_dealloc,
    .tp_as_sequence = &vc_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_richcompare = clock_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "VectorClock(processes, process_id=0)\n\n"
        "An exact vector clock of `processes` 32-bit entries; "
        "len() is the number of processes and v[j] entry j. Unhashable "
        "(it changes). A clock belongs to one thread at a time.",
    .tp_methods = vc_methods,
    .tp_new = vc_new,
};
