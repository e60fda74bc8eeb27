/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the extension's time model, shared by the
 * sliding-window classes (ForgetfulBloomFilter, AgePartitionedBloomFilter)
 * and IdempotentCounters: time in seconds (int or float) over a C clock of
 * whole milliseconds, tick round((t - origin) * 1000). An object is on
 * explicit time (origin 0, the caller's now=; a call without now= runs at
 * the object's own clock) or on time.monotonic() (origin: the monotonic
 * time at creation or load; a call without now= runs at time.monotonic(),
 * never before the object's clock). The clock part (bkpy_timed and the
 * functions up to bkpy_timed_get_monotonic) needs only ops->name and
 * ops->advance; the keyed methods need the whole ops table.
 */
#ifndef BKPY_TIMED_H
#define BKPY_TIMED_H

#include "bkpy.h"

/* C ticks per second of Python time. */
#define BKPY_TICKS_PER_S 1000.0

/* A class's library calls, as the generic methods below use them (a class
 * using only the clock gives name and advance, the rest NULL). */
typedef struct bkpy_timed_ops {
  const char *name; /* for messages: "ForgetfulBloomFilter" */
  bk_status (*advance)(void *h, uint64_t tick);
  bk_status (*add)(void *h, const void *key, size_t len);
  bk_status (*add_if_absent)(void *h, const void *key, size_t len, bool *added);
  bk_status (*contains)(const void *h, const void *key, size_t len, bool *out);
  bk_status (*contains_at)(const void *h, const void *key, size_t len,
                           uint64_t tick, bool *out);
  bkpy_batch_fn add_many, add_if_absent_many, contains_many;
} bkpy_timed_ops;

/* The ops of a class whose library calls are bk_<T>_advance, _add,
 * _add_if_absent, _contains, _contains_at, _add_many, _add_if_absent_many
 * and _contains_many (fbf.h, apbf.h): defines the adapters
 * <T>_timed_<call> and the table `var`. */
#define BKPY_DEFINE_TIMED_OPS(var, pyname, T)                                  \
  static bk_status T##_timed_advance(void *h, uint64_t tick) {                 \
    return bk_##T##_advance(h, tick);                                          \
  }                                                                            \
  static bk_status T##_timed_add(void *h, const void *key, size_t len) {       \
    return bk_##T##_add(h, key, len);                                          \
  }                                                                            \
  static bk_status T##_timed_add_if_absent(void *h, const void *key,           \
                                           size_t len, bool *added) {          \
    return bk_##T##_add_if_absent(h, key, len, added);                         \
  }                                                                            \
  static bk_status T##_timed_contains(const void *h, const void *key,          \
                                      size_t len, bool *out) {                 \
    return bk_##T##_contains(h, key, len, out);                                \
  }                                                                            \
  static bk_status T##_timed_contains_at(                                      \
      const void *h, const void *key, size_t len, uint64_t tick, bool *out) {  \
    return bk_##T##_contains_at(h, key, len, tick, out);                       \
  }                                                                            \
  static bk_status T##_timed_add_many(void *h, const void *const *keys,        \
                                      const size_t *lens, size_t m, bool *out, \
                                      void *arg) {                             \
    (void)out;                                                                 \
    (void)arg;                                                                 \
    return bk_##T##_add_many(h, keys, lens, m);                                \
  }                                                                            \
  static bk_status T##_timed_add_if_absent_many(                               \
      void *h, const void *const *keys, const size_t *lens, size_t m,          \
      bool *out, void *arg) {                                                  \
    (void)arg;                                                                 \
    return bk_##T##_add_if_absent_many(h, keys, lens, m, out);                 \
  }                                                                            \
  static bk_status T##_timed_contains_many(void *h, const void *const *keys,   \
                                           const size_t *lens, size_t m,       \
                                           bool *out, void *arg) {             \
    (void)arg;                                                                 \
    return bk_##T##_contains_many(h, keys, lens, m, out);                      \
  }                                                                            \
  static const bkpy_timed_ops var = {pyname,                                   \
                                     T##_timed_advance,                        \
                                     T##_timed_add,                            \
                                     T##_timed_add_if_absent,                  \
                                     T##_timed_contains,                       \
                                     T##_timed_contains_at,                    \
                                     T##_timed_add_many,                       \
                                     T##_timed_add_if_absent_many,             \
                                     T##_timed_contains_many}

/* A timed object: the handle, its calls, the time mode and the clock. */
typedef struct bkpy_timed {
  bkpy_object base;
  const bkpy_timed_ops *ops;
  int monotonic; /* time.monotonic() when no now= is given */
  int timeless;  /* no clock (a count-based window): now= is an error */
  double origin; /* seconds of the time base at tick 0 */
  uint64_t last; /* the C clock: the latest tick it was advanced to */
} bkpy_timed;

/* A number of seconds (int or float, finite); -1 with TypeError or
 * ValueError naming `name`. */
int bkpy_seconds(PyObject *obj, const char *name, double *out);

/* A duration in seconds named `name` as whole ticks, rounded up (at most
 * 2^40; 0 only when zero_ok, else at least 1); -1 with an exception. */
int bkpy_duration_ticks(PyObject *obj, const char *name, int zero_ok,
                        uint64_t *out);

/* bkpy_duration_ticks(obj, "window", 0, out). */
int bkpy_window_ticks(PyObject *obj, uint64_t *out);

/* The mode of a new object (monotonic when now_obj is NULL or None) into
 * *t, and the tick of its creation. */
int bkpy_timed_start(bkpy_timed *t, PyObject *now_obj, uint64_t *start);

/* The tick a call runs at: now_obj's (a time of the object's base), or
 * without it (NULL or None) the object's clock (explicit) or
 * time.monotonic() (monotonic). */
int bkpy_tick_for(bkpy_timed *t, PyObject *now_obj, uint64_t *out);

/* Move the C clock to tick; InvalidArgumentError naming the class and
 * `method` when tick is before the clock. */
int bkpy_advance_to(bkpy_timed *t, uint64_t tick, const char *method);

/* A tick as seconds of the object's time base. */
double bkpy_seconds_at(const bkpy_timed *t, uint64_t tick);

/* After a load: the clock is the blob's tick `now`; monotonic re-bases the
 * origin so that it is time.monotonic() now. */
int bkpy_timed_loaded(bkpy_timed *t, uint64_t now, int monotonic);

/* (cls.from_bytes, (blob, monotonic)): pickle support. */
PyObject *bkpy_timed_reduce(PyObject *self, PyObject *unused);

/* Parse (data, monotonic=False) for a from_bytes class method, load with
 * the generic codec; -1 (and *out NULL) on error. The caller then sets
 * ops and calls bkpy_timed_loaded with the blob's clock. */
int bkpy_timed_from_bytes(PyObject *cls, PyObject *args, PyObject *kw,
                          PyObject **out, int *monotonic);

PyObject *bkpy_timed_get_now(PyObject *self, void *closure);
PyObject *bkpy_timed_get_monotonic(PyObject *self, void *closure);

/* The methods every sliding-window class shares (each class's method
 * table gives its own docstrings): add(key, *, now=None),
 * add_if_absent(key, *, now=None), contains(key, *, now=None), `in`,
 * advance(now=None), add_many / add_if_absent_many / contains_many(keys,
 * *, now=None), the now and monotonic properties. A write with now= moves
 * the clock there first; contains(now=) answers as of now, changing
 * nothing; without now= a monotonic object moves its clock to the present
 * before any call, reads included. Batches drop the GIL (adds keep it in
 * single-writer mode). */
/* add, add_if_absent, contains: METH_FASTCALL | METH_KEYWORDS. */
PyObject *bkpy_timed_add(PyObject *self, PyObject *const *args,
                         Py_ssize_t nargs, PyObject *kwnames);
PyObject *bkpy_timed_add_if_absent(PyObject *self, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames);
PyObject *bkpy_timed_contains(PyObject *self, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);
int bkpy_timed_in(PyObject *self, PyObject *key);
PyObject *bkpy_timed_advance(PyObject *self, PyObject *args, PyObject *kw);
PyObject *bkpy_timed_add_many(PyObject *self, PyObject *args, PyObject *kw);
PyObject *bkpy_timed_add_if_absent_many(PyObject *self, PyObject *args,
                                        PyObject *kw);
PyObject *bkpy_timed_contains_many(PyObject *self, PyObject *args,
                                   PyObject *kw);

#endif
