/* SPDX-License-Identifier: MIT */
/*
 * The d-kBF master's decisions (kBF paper Sec. 5): rho over a load table,
 * Algorithm 8's greedy slab exchanges, placement of a new slab and the
 * slabs that may be freed. Pure functions of the table; see dkbf.h.
 */
#include "kbfapps/dkbf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bk_status bk__dkbf_check(const bk__dkbf_table *t) {
  if (!t || t->n_slabs == 0 || t->n_slabs > BK_DKBF_MAX_SLABS ||
      t->n_servers == 0 || t->n_servers > BK_DKBF_MAX_SERVERS || !t->load ||
      !t->server)
    return BK_EINVAL;
  for (uint32_t i = 0; i < t->n_slabs; i++)
    if (t->server[i] >= t->n_servers || t->load[i] > BK_DKBF_MAX_LOAD)
      return BK_ERANGE;
  return BK_OK;
}

bk_status bk__dkbf_server_loads(const bk__dkbf_table *t, uint64_t *per_server) {
  bk_status st = bk__dkbf_check(t);
  if (st != BK_OK) return st;
  if (!per_server) return BK_EINVAL;
  memset(per_server, 0, t->n_servers * sizeof *per_server);
  /* At most 2^24 loads of at most 2^39 each: no overflow. */
  for (uint32_t i = 0; i < t->n_slabs; i++)
    per_server[t->server[i]] += t->load[i];
  return BK_OK;
}

double bk__dkbf_rho_of(const uint64_t *per_server, uint32_t n) {
  if (n == 0) return 0.0;
  /* Two passes in long double: the totals reach 2^64, and the deviations
   * of a nearly balanced table are tiny next to them. */
  long double sum = 0.0L;
  for (uint32_t s = 0; s < n; s++) sum += (long double)per_server[s];
  long double mean = sum / n;
  if (mean == 0.0L) return 0.0;
  long double ss = 0.0L;
  for (uint32_t s = 0; s < n; s++) {
    long double d = (long double)per_server[s] - mean;
    ss += d * d;
  }
  return (double)(sqrtl(ss / n) / mean);
}

bk_status bk__dkbf_rho(const bk__dkbf_table *t, double *rho) {
  if (!rho) return BK_EINVAL;
  bk_status st = bk__dkbf_check(t);
  if (st != BK_OK) return st;
  uint64_t *tot = malloc(t->n_servers * sizeof *tot);
  if (!tot) return BK_ENOMEM;
  st = bk__dkbf_server_loads(t, tot);
  if (st == BK_OK) *rho = bk__dkbf_rho_of(tot, t->n_servers);
  free(tot);
  return st;
}

/* The extreme servers by total load: ties to the lowest index. */
static void extreme_servers(const uint64_t *tot, uint32_t n, uint32_t *hi,
                            uint32_t *lo) {
  uint32_t h = 0, l = 0;
  for (uint32_t s = 1; s < n; s++) {
    if (tot[s] > tot[h]) h = s;
    if (tot[s] < tot[l]) l = s;
  }
  *hi = h;
  *lo = l;
}

bk_status bk__dkbf_balance(const bk__dkbf_table *t, unsigned c_max,
                           bk__dkbf_move *moves, size_t cap, size_t *n_moves,
                           double *rho_steps) {
  bk_status st = bk__dkbf_check(t);
  if (st != BK_OK) return st;
  if (c_max == 0 || !moves || !n_moves || cap < c_max) return BK_EINVAL;
  uint64_t *tot = malloc(t->n_servers * sizeof *tot);
  uint32_t *where = malloc(t->n_slabs * sizeof *where);
  if (!tot || !where) {
    free(tot);
    free(where);
    return BK_ENOMEM;
  }
  memcpy(where, t->server, t->n_slabs * sizeof *where);
  (void)bk__dkbf_server_loads(t, tot);
  double rho = bk__dkbf_rho_of(tot, t->n_servers);
  if (rho_steps) rho_steps[0] = rho;
  size_t done = 0;
  /* Algorithm 8, lines 6-19. The paper's counter starts at 1 and the loop
   * stops when counter >= C_max before exchanging, so it makes at most
   * C_max - 1 exchanges; and it goes on when rho_new == rho. Here: at most
   * c_max exchanges, each lowering rho strictly (docs/design/kbf.md 5.11). */
  while (done < c_max) {
    uint32_t hi, lo;
    extreme_servers(tot, t->n_servers, &hi, &lo);
    if (hi == lo || tot[hi] == tot[lo]) break; /* balanced (or one server) */
    /* The most loaded slab on the heaviest server, the least loaded on the
     * lightest (lowest index on ties). */
    uint32_t heavy = BK_DKBF_NO_SLAB, light = BK_DKBF_NO_SLAB;
    for (uint32_t i = 0; i < t->n_slabs; i++) {
      if (where[i] == hi &&
          (heavy == BK_DKBF_NO_SLAB || t->load[i] > t->load[heavy]))
        heavy = i;
      if (where[i] == lo &&
          (light == BK_DKBF_NO_SLAB || t->load[i] < t->load[light]))
        light = i;
    }
    /* tot[hi] > 0, so the heaviest server holds a slab. */
    uint64_t l_heavy = t->load[heavy];
    uint64_t l_light = light == BK_DKBF_NO_SLAB ? 0 : t->load[light];
    if (l_heavy <= l_light) break; /* the exchange would move load uphill */
    uint64_t delta = l_heavy - l_light;
    tot[hi] -= delta;
    tot[lo] += delta;
    double rho_new = bk__dkbf_rho_of(tot, t->n_servers);
    if (!(rho_new < rho)) { /* line 10, strictly (no gain: stop) */
      tot[hi] += delta;
      tot[lo] -= delta;
      break;
    }
    where[heavy] = lo;
    if (light != BK_DKBF_NO_SLAB) where[light] = hi;
    moves[done] = (bk__dkbf_move){.heavy = heavy,
                                  .light = light,
                                  .from = hi,
                                  .to = lo,
                                  .pairs_moved = l_heavy + l_light,
                                  .rho_after = rho_new};
    rho = rho_new;
    done++;
    if (rho_steps) rho_steps[done] = rho;
  }
  *n_moves = done;
  free(tot);
  free(where);
  return BK_OK;
}

bk_status bk__dkbf_apply(uint32_t n_slabs, uint32_t n_servers, uint32_t *server,
                         const bk__dkbf_move *moves, size_t n_moves) {
  if (!server || (n_moves && !moves) || n_slabs == 0 ||
      n_slabs > BK_DKBF_MAX_SLABS || n_servers == 0 ||
      n_servers > BK_DKBF_MAX_SERVERS)
    return BK_EINVAL;
  /* Check the whole plan on a copy first, so a bad plan changes nothing. */
  uint32_t *copy = malloc(n_slabs * sizeof *copy);
  if (!copy) return BK_ENOMEM;
  memcpy(copy, server, n_slabs * sizeof *copy);
  for (size_t j = 0; j < n_moves; j++) {
    const bk__dkbf_move *m = &moves[j];
    bool bad = m->heavy >= n_slabs || m->from >= n_servers ||
               m->to >= n_servers || m->from == m->to ||
               copy[m->heavy] != m->from ||
               (m->light != BK_DKBF_NO_SLAB &&
                (m->light >= n_slabs || m->light == m->heavy ||
                 copy[m->light] != m->to));
    if (bad) {
      free(copy);
      return BK_EINVAL;
    }
    copy[m->heavy] = m->to;
    if (m->light != BK_DKBF_NO_SLAB) copy[m->light] = m->from;
  }
  memcpy(server, copy, n_slabs * sizeof *copy);
  free(copy);
  return BK_OK;
}

bk_status bk__dkbf_place(const bk__dkbf_table *t, uint32_t *server) {
  if (!t || !server || t->n_servers == 0 ||
      t->n_servers > BK_DKBF_MAX_SERVERS || t->n_slabs >= BK_DKBF_MAX_SLABS)
    return BK_EINVAL;
  if (t->n_slabs > 0) {
    bk_status st = bk__dkbf_check(t);
    if (st != BK_OK) return st;
  }
  uint64_t *tot = calloc(t->n_servers, sizeof *tot);
  uint32_t *count = calloc(t->n_servers, sizeof *count);
  if (!tot || !count) {
    free(tot);
    free(count);
    return BK_ENOMEM;
  }
  for (uint32_t i = 0; i < t->n_slabs; i++) {
    tot[t->server[i]] += t->load[i];
    count[t->server[i]]++;
  }
  uint32_t best = 0;
  for (uint32_t s = 1; s < t->n_servers; s++)
    if (count[s] < count[best] ||
        (count[s] == count[best] && tot[s] < tot[best]))
      best = s;
  *server = best;
  free(tot);
  free(count);
  return BK_OK;
}

bk_status bk__dkbf_reclaimable(const bk__dkbf_table *t, uint32_t *slabs,
                               size_t cap, size_t *n) {
  bk_status st = bk__dkbf_check(t);
  if (st != BK_OK) return st;
  if (!n || (cap && !slabs)) return BK_EINVAL;
  size_t found = 0;
  for (uint32_t i = 0; i < t->n_slabs; i++)
    if (t->load[i] == 0) {
      if (found < cap) slabs[found] = i;
      found++;
    }
  *n = found;
  return BK_OK;
}
