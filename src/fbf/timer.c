/* SPDX-License-Identifier: MIT */
/*
 * The optional background refresher: a thread that advances an FBF against
 * CLOCK_MONOTONIC milliseconds and stops promptly when asked.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "fbf_internal.h"

struct bk_fbf_timer {
  bk__alloc alloc;
  bk_fbf *fbf;
  uint64_t tick_ms;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  bool stop;
  bk_status last; /* the last advance's status, for debugging */
};

uint64_t bk_fbf_clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *timer_main(void *arg) {
  bk_fbf_timer *t = arg;
  pthread_mutex_lock(&t->mu);
  while (!t->stop) {
    pthread_mutex_unlock(&t->mu);
    bk_status s = bk_fbf_advance(t->fbf, bk_fbf_clock_ms());
    pthread_mutex_lock(&t->mu);
    t->last = s;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + t->tick_ms * 1000000u;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    while (!t->stop) {
      int rc = pthread_cond_timedwait(&t->cv, &t->mu, &until);
      if (rc == ETIMEDOUT) break;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

bk_status bk_fbf_timer_start(bk_fbf *f, uint64_t tick_ms, bk_fbf_timer **out) {
  BK_RETURN_IF(!f || !out || tick_ms > 86400000u, BK_EINVAL);
  bk_fbf_timer *t = bk__calloc(&f->alloc, 1, sizeof *t);
  BK_RETURN_IF(!t, BK_ENOMEM);
  t->alloc = f->alloc;
  t->fbf = f;
  t->tick_ms = tick_ms ? tick_ms : 10;
  pthread_condattr_t ca;
  bool mu_ok = false, cv_ok = false;
  if (pthread_mutex_init(&t->mu, NULL) == 0) mu_ok = true;
  if (mu_ok && pthread_condattr_init(&ca) == 0) {
    if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
        pthread_cond_init(&t->cv, &ca) == 0)
      cv_ok = true;
    pthread_condattr_destroy(&ca);
  }
  if (!cv_ok || pthread_create(&t->thread, NULL, timer_main, t) != 0) {
    if (cv_ok) pthread_cond_destroy(&t->cv);
    if (mu_ok) pthread_mutex_destroy(&t->mu);
    bk__free(&t->alloc, t);
    return BK_EIO;
  }
  *out = t;
  return BK_OK;
}

void bk_fbf_timer_stop(bk_fbf_timer *t) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  t->stop = true;
  pthread_cond_signal(&t->cv);
  pthread_mutex_unlock(&t->mu);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  bk__alloc al = t->alloc;
  bk__free(&al, t);
}
