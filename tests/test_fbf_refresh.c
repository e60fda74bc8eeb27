/* SPDX-License-Identifier: MIT */
/*
 * Tests of the FBF's clock and refresh (include/bloomkit/fbf.h): idle
 * fast-forward equal to small steps, advances bounded for any jump and
 * clocks near UINT64_MAX, schedules that saturate, restored schedules left
 * far behind the clock, and the background timer.
 *
 * Shared helpers: tests/fbf_helpers.h. Run a subset with
 * BK_TEST_FILTER=<cmocka glob>; BK_TEST_SEED overrides the seed (printed at
 * start).
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "bloomkit/fbf.h"
#include "bloomkit/hash.h"
#include "core/internal.h"

#include "fbf_helpers.h"

/* A jump over a long idle gap ends in the same state as many small steps,
 * including while the FBF is still growing toward a larger goal (the idle
 * fast-forward must not skip the refreshes that add filters). */
static void test_idle_jump_equals_small_steps(void **state) {
  (void)state;
  for (unsigned goal = 4; goal <= 12; goal++) {
    bk_fbf_config cfg = {.m_bits = 1024,
                         .k = 3,
                         .n_past = 1,
                         .refresh_period = 1000,
                         .max_filters = 12};
    bk_fbf *jump = fbf_make(&cfg), *walk = fbf_make(&cfg);
    assert_bk_ok(bk_fbf_resize(jump, goal, 0));
    assert_bk_ok(bk_fbf_resize(walk, goal, 0));
    fbf_advance(jump, 100000);
    for (uint64_t now = 0; now <= 100000; now += 250) fbf_advance(walk, now);
    bk_fbf_info a = fbf_info_of(jump), b = fbf_info_of(walk);
    assert_int_equal(b.n_filters, goal);
    if (a.n_filters != b.n_filters || a.refreshes != b.refreshes ||
        a.next_refresh != b.next_refresh)
      fail_msg(
          "goal %u: one jump gives %u filters after %llu refreshes, "
          "small steps %u after %llu (next %llu vs %llu)",
          goal, a.n_filters, (unsigned long long)a.refreshes, b.n_filters,
          (unsigned long long)b.refreshes, (unsigned long long)a.next_refresh,
          (unsigned long long)b.next_refresh);
    bk_fbf_destroy(jump);
    bk_fbf_destroy(walk);
  }
}

/* bk_fbf_advance takes any u64 time. Run `fn` in a child process and fail
 * if it does not finish within `ms` (an endless catch-up loop would hang the
 * whole test program otherwise). */
static int run_with_watchdog(void (*fn)(void), unsigned ms) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) fail_msg("fork failed");
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  for (unsigned waited = 0; waited < ms; waited += 10) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
    bk_test_sleep_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return 1;
}

static void child_advance_to_max(void) {
  bk_fbf_config cfg = {
      .m_bits = 1024, .k = 3, .n_past = 1, .refresh_period = 1000};
  bk_fbf *f = NULL;
  if (bk_fbf_create(&f, &cfg) != BK_OK) _exit(3);
  (void)bk_fbf_add(f, "x", 1);
  (void)bk_fbf_advance(f, UINT64_MAX);
  bk_fbf_destroy(f);
}

static void child_restored_near_max(void) {
  bk_fbf_config cfg = {
      .m_bits = 1024, .k = 3, .n_past = 1, .refresh_period = 1000};
  bk_fbf *f = NULL;
  if (bk_fbf_create(&f, &cfg) != BK_OK) _exit(3);
  size_t size = 0, written = 0;
  (void)bk_fbf_serialized_size(f, &size);
  unsigned char *blob = malloc(size);
  if (!blob || bk_fbf_serialize(f, blob, size, &written) != BK_OK) _exit(3);
  bk_fbf_destroy(f);
  /* A saved clock close to the top of the u64 range. */
  bk__store_le64(blob + OFF_NOW, UINT64_MAX - 10);
  bk__store_le64(blob + OFF_NEXT_REFRESH, UINT64_MAX - 5);
  bk_test_reseal(blob, size);
  bk_fbf *g = NULL;
  if (bk_fbf_deserialize(blob, size, NULL, &g) == BK_OK) {
    (void)bk_fbf_advance(g, UINT64_MAX);
    bk_fbf_destroy(g);
  }
  free(blob);
}

/* A restored adaptive FBF whose saved schedule lies far behind its saved
 * clock (next refresh and next tick at 0, now = 2^40): a live FBF never
 * gets there (after any advance both lie in (now, now + period]), and with
 * t = 1 the first advance would run 2^40 refreshes and ticks one by one. */
static void child_restored_stale_schedule(void) {
  bk_fbf_config cfg = {.m_bits = 1024,
                       .k = 3,
                       .n_past = 1,
                       .refresh_period = 10,
                       .adaptive = true,
                       .period_step = 1,
                       .min_period = 1,
                       .max_period = 10,
                       .adapt_interval = 1};
  bk_fbf *f = NULL;
  if (bk_fbf_create(&f, &cfg) != BK_OK) _exit(3);
  (void)bk_fbf_add(f, "x", 1);
  size_t size = 0, written = 0;
  (void)bk_fbf_serialized_size(f, &size);
  unsigned char *blob = malloc(size);
  if (!blob || bk_fbf_serialize(f, blob, size, &written) != BK_OK) _exit(3);
  bk_fbf_destroy(f);
  bk__store_le64(blob + OFF_NOW, (uint64_t)1 << 40);
  bk__store_le64(blob + OFF_NEXT_REFRESH, 0);
  bk__store_le64(blob + OFF_NEXT_ADAPT, 0);
  bk_test_reseal(blob, size);
  bk_fbf *g = NULL;
  if (bk_fbf_deserialize(blob, size, NULL, &g) == BK_OK) {
    (void)bk_fbf_advance(g, (uint64_t)1 << 40);
    bk_fbf_destroy(g);
  }
  free(blob);
}

static void test_deserialize_stale_schedule(void **state) {
  (void)state;
  int r = run_with_watchdog(child_restored_stale_schedule, 5000);
  if (r == 1)
    fail_msg(
        "a blob whose next refresh/tick lie 2^40 units behind its clock "
        "is accepted, and the first bk_fbf_advance then runs for hours "
        "(fbf_io.c should require now <= next_refresh <= now + "
        "max_period, and the same of next_adapt when adaptive)");
  assert_int_equal(r, 0);
}

/* ---- regressions of the correctness sweep (issues #15, #16) --------------
 *
 * Bounded advance: an adaptive FBF with t = 1 and adapt_interval 10^6 (a
 * valid config) took 2.2 s for a jump of 10^7, 24 s for 10^8 and minutes
 * for 2 10^10 (#16.1); ticks every unit with t growing a step a tick kept
 * postponing the refresh one tick at a time. Each child makes the jumps of
 * the reproducer up to 2^64 - 2 for fixed and adaptive configs, with
 * content in the filters, and checks the state is sound after each; the
 * watchdog (a generous 20 s for all of them, sanitizers included) is the
 * only clock: before the fix the first child needed hours. */
static const bk_fbf_config k_jump_cfgs[] = {
    {.m_bits = 4096, .k = 3, .n_past = 2, .refresh_period = 1000},
    {.m_bits = 4096,
     .k = 3,
     .n_past = 2,
     .refresh_period = 1,
     .adaptive = true,
     .adapt_interval = 1000000,
     .period_step = 1},
    {.m_bits = 4096,
     .k = 3,
     .n_past = 2,
     .refresh_period = 1,
     .adaptive = true,
     .adapt_interval = 1,
     .period_step = 1,
     .max_period = 1000000},
    {.m_bits = 4096,
     .k = 3,
     .n_past = 2,
     .refresh_period = 1000,
     .adaptive = true,
     .target_fpp = 1e-9, /* always over target: grows, t falls */
     .adapt_interval = 1,
     .period_step = 1,
     .min_period = 1,
     .max_filters = 64},
};

static void child_jumps(void) {
  static const uint64_t jumps[] = {
      10000000,          100000000,         20000000000,   (uint64_t)1 << 40,
      (uint64_t)1 << 62, (uint64_t)1 << 63, UINT64_MAX - 1};
  for (size_t c = 0; c < sizeof k_jump_cfgs / sizeof k_jump_cfgs[0]; c++) {
    for (size_t j = 0; j < sizeof jumps / sizeof jumps[0]; j++) {
      bk_fbf *f = NULL;
      if (bk_fbf_create(&f, &k_jump_cfgs[c]) != BK_OK) _exit(3);
      for (uint64_t id = 0; id < 200; id++) (void)bk_fbf_add(f, &id, 8);
      if (bk_fbf_advance(f, jumps[j]) != BK_OK) _exit(4);
      bk_fbf_info in;
      if (bk_fbf_info_get(f, &in) != BK_OK || in.now != jumps[j]) _exit(5);
      /* The schedule is past the clock, the old ids are gone, a new one
       * is kept, and the state saves and loads. */
      if (in.next_refresh <= jumps[j]) _exit(6);
      bool found = true;
      uint64_t old = 7;
      (void)bk_fbf_contains(f, &old, 8, &found);
      if (found) _exit(7);
      (void)bk_fbf_add(f, "new", 3);
      (void)bk_fbf_contains(f, "new", 3, &found);
      if (!found) _exit(8);
      size_t size, written;
      (void)bk_fbf_serialized_size(f, &size);
      unsigned char *blob = malloc(size);
      bk_fbf *g = NULL;
      if (!blob || bk_fbf_serialize(f, blob, size, &written) != BK_OK ||
          bk_fbf_deserialize(blob, written, NULL, &g) != BK_OK)
        _exit(9);
      /* ... and the restored copy jumps to the end of time as promptly. */
      if (bk_fbf_advance(g, UINT64_MAX) != BK_OK) _exit(10);
      bk_fbf_destroy(g);
      free(blob);
      bk_fbf_destroy(f);
    }
  }
}

static void test_advance_bounded_any_jump(void **state) {
  (void)state;
  int r = run_with_watchdog(child_jumps, 20000);
  if (r == 1)
    fail_msg(
        "bk_fbf_advance over 10^7 .. 2^64 - 2 units did not return "
        "within 20 s (its cost grows with the jump or interval / t)");
  assert_int_equal(r, 0);
}

/* Found by the codec harness's round trip after the exercise calls: when a
 * refresh pushed next_refresh to "never" (the sum saturated), advance
 * stopped there and left the adaptation ticks due before `now` undone, so
 * next_adapt stayed behind the clock and the saved state did not load.
 * Periods that grow to ~2^62 (max_period high, fpp far under target) make
 * the last refresh saturate; every jump to the end of time must leave a
 * state that saves and loads, with no tick due. */
static void test_advance_to_end_leaves_no_tick_due(void **state) {
  (void)state;
  const uint64_t ends[] = {UINT64_MAX - 1, UINT64_MAX};
  for (size_t e = 0; e < 2; e++)
    for (uint64_t step_log = 50; step_log <= 62; step_log += 4) {
      bk_fbf_config cfg = fbf_small_adaptive_config();
      cfg.period_step = (uint64_t)1 << step_log;
      cfg.max_period = (uint64_t)1 << 63;
      bk_fbf *f = fbf_make(&cfg);
      for (uint64_t i = 0; i < 4; i++) (void)fbf_add_new(f, fbf_hash_id(f, i));
      fbf_advance(f, 1000);
      fbf_advance(f, ends[e]);
      size_t len;
      unsigned char *blob = fbf_blob_of(f, &len);
      bk_fbf *g = NULL;
      bk_status s = bk_fbf_deserialize(blob, len, NULL, &g);
      if (s != BK_OK)
        fail_msg(
            "step 2^%llu, advanced to 2^64 - %zu: the state does not "
            "load (%s)",
            (unsigned long long)step_log, 2 - e, bk_status_name(s));
      bk_fbf_destroy(g);
      free(blob);
      bk_fbf_destroy(f);
    }
}

/* #16.6: next_adapt = start_time + adapt_interval wrapped for an interval
 * near 2^64 and stamped a resize tick at time 989 < start_time. It
 * saturates: no tick ever, and the state saves and loads. */
static void test_create_schedule_saturates(void **state) {
  (void)state;
  bk_fbf_config cfg = {.m_bits = 4096,
                       .k = 3,
                       .n_past = 2,
                       .refresh_period = 100,
                       .adaptive = true,
                       .adapt_interval = UINT64_MAX - 10,
                       .max_period = 1000, /* an idle tick would act */
                       .start_time = 1000};
  bk_fbf *f = fbf_make(&cfg);
  fbf_advance(f, 1001);
  fbf_advance(f, 100000);
  assert_int_equal(bk_fbf_trace_count(f), 0);
  size_t len;
  unsigned char *blob = fbf_blob_of(f, &len);
  bk_fbf *g = NULL;
  assert_bk_ok(bk_test_codec_load(&bk_test_codec_fbf, blob, len, (void **)&g));
  bk_fbf_destroy(g);
  free(blob);
  bk_fbf_destroy(f);
}

static void test_advance_near_u64_max(void **state) {
  (void)state;
  int r = run_with_watchdog(child_advance_to_max, 5000);
  if (r == 1)
    fail_msg(
        "bk_fbf_advance(f, UINT64_MAX) did not return within 5 s "
        "(next_refresh + refresh_period wraps around)");
  assert_int_equal(r, 0);
  r = run_with_watchdog(child_restored_near_max, 5000);
  if (r == 1)
    fail_msg(
        "an FBF restored with its clock near UINT64_MAX hangs in "
        "bk_fbf_advance (the blob should be rejected or the schedule "
        "saturate)");
  assert_int_equal(r, 0);
}

/* ---- the background timer ------------------------------------------------ */

static void test_timer(void **state) {
  (void)state;
  bk_test_alloc st;
  bk_allocator al = bk_test_allocator(&st, 0);
  bk_fbf_config cfg = {.m_bits = 4096,
                       .k = 3,
                       .n_past = 1,
                       .refresh_period = 50,
                       .start_time = bk_fbf_clock_ms(),
                       .allocator = &al};
  bk_fbf *f = fbf_make(&cfg);
  assert_bk_ok(bk_fbf_add(f, "early", 5));
  bk_fbf_timer *tm = NULL;
  assert_bk_ok(bk_fbf_timer_start(f, 0, &tm));
  assert_non_null(tm);
  /* Inserts and checks beside the timer thread. */
  double t0 = bk_test_now_seconds();
  unsigned i = 0, checked = 0;
  while (bk_test_now_seconds() - t0 < 0.3) {
    char key[32];
    int len = snprintf(key, sizeof key, "k%u", i++);
    /* The filter's clock only moves to readings of bk_fbf_clock_ms, so
     * between the add and the check it moves by less than the clock read
     * before (the filter's own time, which is earlier) and after. The key is
     * remembered for (N+1) t = 100 ms of that: it must be found unless the
     * thread was held up that long (a loaded machine), which is no bug. */
    uint64_t before = fbf_info_of(f).now;
    assert_bk_ok(bk_fbf_add(f, key, (size_t)len));
    bool out = false;
    assert_bk_ok(bk_fbf_contains(f, key, (size_t)len, &out));
    if (bk_fbf_clock_ms() - before < 100) {
      assert_true(out);
      checked++;
    }
    bk_test_sleep_ms(1);
  }
  assert_true(checked > 0);
  bk_fbf_info in = fbf_info_of(f);
  /* ~6 refreshes are due in 300 ms at t = 50 ms; 3 leaves room for a slow,
   * loaded machine. */
  assert_true(in.refreshes >= 3);
  assert_true(in.now >= cfg.start_time + 150);
  bool out = true;
  assert_bk_ok(bk_fbf_contains(f, "early", 5, &out));
  assert_false(out); /* forgotten after (N+2) t = 150 ms */
  double s0 = bk_test_now_seconds();
  bk_fbf_timer_stop(tm);
  double stop_s = bk_test_now_seconds() - s0;
  print_message("timer: %llu refreshes in ~300 ms, stop took %.1f ms\n",
                (unsigned long long)in.refreshes, stop_s * 1e3);
  assert_true(stop_s < 0.5);
  /* Stopped: nothing advances any more. */
  uint64_t r = fbf_info_of(f).refreshes;
  bk_test_sleep_ms(120);
  assert_int_equal(fbf_info_of(f).refreshes, r);

  /* A long tick still stops promptly (the thread waits on a condition). */
  assert_bk_ok(bk_fbf_timer_start(f, 60000, &tm));
  bk_test_sleep_ms(20);
  s0 = bk_test_now_seconds();
  bk_fbf_timer_stop(tm);
  assert_true(bk_test_now_seconds() - s0 < 0.5);

  /* Timer start under allocation failure: BK_ENOMEM, nothing leaked. */
  size_t live = st.live;
  st.fail_at = st.calls + 1;
  tm = SENTINEL_TIMER;
  assert_bk_status(bk_fbf_timer_start(f, 10, &tm), BK_ENOMEM);
  assert_ptr_equal(tm, SENTINEL_TIMER);
  assert_int_equal(st.live, live);
  st.fail_at = 0;
  assert_bk_status(bk_fbf_timer_start(NULL, 10, &tm), BK_EINVAL);
  assert_bk_status(bk_fbf_timer_start(f, 10, NULL), BK_EINVAL);
  assert_bk_status(bk_fbf_timer_start(f, 86400001u, &tm), BK_EINVAL);
  bk_fbf_timer_stop(NULL);
  bk_fbf_destroy(f);
  assert_int_equal(st.live, 0);
  /* The clock is monotonic milliseconds. */
  uint64_t a = bk_fbf_clock_ms();
  bk_test_sleep_ms(30);
  uint64_t b = bk_fbf_clock_ms();
  assert_true(b >= a + 25 && b < a + 5000);
}

int main(void) {
  bk_test_begin(FBF_SEED_FALLBACK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_jump_equals_small_steps),
      cmocka_unit_test(test_advance_near_u64_max),
      cmocka_unit_test(test_advance_bounded_any_jump),
      cmocka_unit_test(test_advance_to_end_leaves_no_tick_due),
      cmocka_unit_test(test_create_schedule_saturates),
      cmocka_unit_test(test_timer),
      cmocka_unit_test(test_deserialize_stale_schedule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
