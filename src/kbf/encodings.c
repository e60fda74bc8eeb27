/* SPDX-License-Identifier: MIT */
/*
 * The value encodings of the kBF (Sec. 3.2): the pool bloomkit uses (the
 * cubes of GF(2^t)), the paper's greedy search (Algorithm 1) with its Bloom
 * filter acceleration, an exact checker of the encoding rules, and the
 * paper's regression inverse from encoding to index (Sec. 3.6, Fig. 3).
 *
 * Why cubes: a set E in which all elements and all XORs of two distinct
 * elements differ is a set whose union with {0} is a Sidon set of the group
 * (GF(2)^P, XOR): a ^ b = c ^ d only for {a, b} = {c, d}, and a ^ b = c ^ 0
 * never. The classic Sidon set of GF(2^t)^2 is {(x, x^3)}: if
 * x1 + x2 = x3 + x4 = s != 0 and x1^3 + x2^3 = x3^3 + x4^3, then, as
 * x1^3 + x2^3 = s (s^2 + x1 x2) in characteristic 2, x1 x2 = x3 x4, so
 * {x1, x2} and {x3, x4} are the roots of one quadratic and equal. Dropping
 * x = 0 (the point (0, 0)) leaves 2^t - 1 encodings of P = 2t bits; the
 * bound 2^P >= n(n-1)/2 + n needs P >= 2 log2(n) - 1, so this is within
 * one or two bits of it for every n. Writing (x, x^3) as x * 2^t + x^3
 * makes the encodings increase with x: index = x - 1 = (e >> t) - 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kbf/kbf_internal.h"

/* ---- GF(2)[x] arithmetic on words ------------------------------------- */

static unsigned degree(uint64_t a) {
  return a ? 63u - (unsigned)__builtin_clzll(a) : 0;
}

/* a * b mod poly (deg poly = t <= 31, deg a, b < t). */
static uint64_t gf_mulmod(uint64_t a, uint64_t b, uint64_t poly, unsigned t) {
  uint64_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    b >>= 1;
    a <<= 1;
    if (a >> t & 1) a ^= poly;
  }
  return r;
}

static uint64_t poly_mod(uint64_t a, uint64_t poly) {
  const unsigned dp = degree(poly);
  while (a && degree(a) >= dp) a ^= poly << (degree(a) - dp);
  return a;
}

static uint64_t poly_gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t r = poly_mod(a, b);
    a = b;
    b = r;
  }
  return a;
}

/* Ben-Or: poly of degree t is irreducible iff gcd(x^(2^i) - x, poly) = 1
 * for i = 1 .. t/2. */
bool bk__kbf_is_irreducible(uint32_t poly, unsigned t) {
  if (t < 1 || t > 31 || degree(poly) != t || !(poly & 1)) return t == 1;
  uint64_t xp = 2; /* x^(2^i) mod poly */
  for (unsigned i = 1; i <= t / 2; i++) {
    xp = gf_mulmod(xp, xp, poly, t);
    if (poly_gcd(poly, xp ^ 2) != 1) return false;
  }
  return true;
}

uint32_t bk__kbf_irreducible(unsigned t) {
  /* Trinomials x^t + x^a + 1 first, then pentanomials, smallest first. */
  for (unsigned a = 1; a < t; a++) {
    uint32_t p = (1u << t) | (1u << a) | 1u;
    if (bk__kbf_is_irreducible(p, t)) return p;
  }
  for (unsigned a = 3; a < t; a++)
    for (unsigned b = 2; b < a; b++)
      for (unsigned c = 1; c < b; c++) {
        uint32_t p = (1u << t) | (1u << a) | (1u << b) | (1u << c) | 1u;
        if (bk__kbf_is_irreducible(p, t)) return p;
      }
  return 0; /* not reached for 2 <= t <= 31 */
}

uint64_t bk__kbf_pool_encoding(const bk__kbf_pool *p, uint32_t index) {
  const uint64_t x = (uint64_t)index + 1;
  const uint64_t x2 = gf_mulmod(x, x, p->poly, p->t);
  return x << p->t | gf_mulmod(x2, x, p->poly, p->t);
}

bk_status bk_kbf_encoding(unsigned t, uint32_t index, uint64_t *out) {
  BK_RETURN_IF(!out || t < 2 || t > 28, BK_EINVAL);
  BK_RETURN_IF((uint64_t)index >= ((uint64_t)1 << t) - 1, BK_EINVAL);
  bk__kbf_pool p;
  bk__kbf_pool_init(&p, t);
  *out = bk__kbf_pool_encoding(&p, index);
  return BK_OK;
}

unsigned bk_kbf_pool_t(uint64_t n) {
  unsigned t = 2;
  while (t < 63 && ((uint64_t)1 << t) - 1 < n) t++;
  return t;
}

unsigned bk_kbf_encoding_bound(uint64_t n) {
  /* n(n-1)/2 + n = n(n+1)/2, in 128 bits. */
  const bk__u128 need = (bk__u128)n * (n + 1) / 2;
  unsigned p = 0;
  while (p < 127 && ((bk__u128)1 << p) < need) p++;
  return p;
}

/* ---- Algorithm 1 ---------------------------------------------------------
 *
 * The set S of admitted encodings and their pairwise XORs lives in a
 * membership structure: an exact bitmap over [0, 2^max_bits), or the
 * paper's Bloom filter (steps 3 and 9). A candidate c is admitted when c and
 * every c ^ e_i are outside S; then they all join S. A Bloom false positive
 * only rejects a good candidate, so whatever is admitted is exact.
 */

typedef struct member_set {
  uint64_t *words;
  uint64_t n_bits;
  unsigned k; /* 0: exact bitmap indexed by the value itself */
} member_set;

static inline void member_probe(uint64_t v, uint64_t *a, uint64_t *b) {
  *a = bk__mix64(v ^ 0x6B62665F656E63ull);
  *b = bk__mix64(*a) | 1;
}

static inline bool member_has(const member_set *s, uint64_t v) {
  if (!s->k) return s->words[v >> 6] >> (v & 63) & 1;
  uint64_t a, b;
  member_probe(v, &a, &b);
  for (unsigned i = 0; i < s->k; i++, a += b) {
    uint64_t bit = bk_reduce(a, s->n_bits);
    if (!(s->words[bit >> 6] >> (bit & 63) & 1)) return false;
  }
  return true;
}

static inline void member_add(member_set *s, uint64_t v) {
  if (!s->k) {
    s->words[v >> 6] |= (uint64_t)1 << (v & 63);
    return;
  }
  uint64_t a, b;
  member_probe(v, &a, &b);
  for (unsigned i = 0; i < s->k; i++, a += b) {
    uint64_t bit = bk_reduce(a, s->n_bits);
    s->words[bit >> 6] |= (uint64_t)1 << (bit & 63);
  }
}

/* Exact membership of v in S (v is an admitted encoding or the XOR of
 * two), to count the Bloom filter's false rejections. O(j log j); asked
 * only when the filter said yes. */
static bool exact_in(const uint64_t *e, uint32_t j, uint64_t v) {
  for (uint32_t i = 0; i < j; i++) {
    if (e[i] == v) return true;
    const uint64_t w = v ^ e[i];
    /* w must be another admitted encoding (binary search: e increases). */
    if (w > e[i] && bk_kbf_binary_find(e, j, w) >= 0) return true;
  }
  return false;
}

bk_status bk_kbf_encodings_greedy(uint32_t n, unsigned max_bits,
                                  double bloom_bits_per_entry, uint64_t *out,
                                  uint32_t *found, bk_kbf_greedy_stats *stats) {
  BK_RETURN_IF(!out || n == 0 || max_bits < 2 || max_bits > 36, BK_EINVAL);
  BK_RETURN_IF(!(bloom_bits_per_entry >= 0.0) || bloom_bits_per_entry > 1024.0,
               BK_EINVAL);
  /* The exact bitmap is 2^max_bits bits: at most 512 MiB. */
  BK_RETURN_IF(bloom_bits_per_entry == 0.0 && max_bits > 32, BK_EINVAL);
  member_set s = {0};
  const uint64_t limit = (uint64_t)1 << max_bits;
  if (bloom_bits_per_entry > 0) {
    const double entries = (double)n * ((double)n + 1) / 2;
    const double bits = ceil(entries * bloom_bits_per_entry);
    BK_RETURN_IF(bits > 0x1p35, BK_EINVAL); /* 4 GiB of filter */
    s.n_bits = (uint64_t)bits < 64 ? 64 : (uint64_t)bits;
    double k = round(bloom_bits_per_entry * 0.6931471805599453);
    s.k = k < 1 ? 1u : k > 32 ? 32u : (unsigned)k;
  } else {
    s.n_bits = limit;
  }
  const size_t n_words = (size_t)((s.n_bits + 63) / 64);
  s.words = calloc(n_words, sizeof *s.words);
  BK_RETURN_IF(!s.words, BK_ENOMEM);
  uint64_t candidates = 1, false_rej = 0;
  out[0] = 1;
  member_add(&s, 1);
  uint32_t j = 1;
  uint64_t c = 2;
  bk_status st = BK_OK;
  for (; j < n; j++) {
    for (;; c++) {
      if (c >= limit) {
        st = BK_ERANGE;
        goto done;
      }
      candidates++;
      bool hit = member_has(&s, c);
      uint64_t collided = c;
      for (uint32_t i = 0; !hit && i < j; i++) {
        collided = c ^ out[i];
        hit = collided >= limit ? false : member_has(&s, collided);
      }
      if (!hit) break;
      if (s.k && !exact_in(out, j, collided)) false_rej++;
    }
    out[j] = c;
    member_add(&s, c);
    for (uint32_t i = 0; i < j; i++) member_add(&s, c ^ out[i]);
    c++;
  }
done:
  free(s.words);
  if (found) *found = j;
  if (stats) {
    stats->candidates = candidates;
    stats->false_rejections = false_rej;
    stats->memory = n_words * sizeof(uint64_t);
  }
  return st;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

bk_status bk_kbf_encodings_check(const uint64_t *enc, uint32_t n, bool *ok) {
  BK_RETURN_IF(!ok || (n && !enc), BK_EINVAL);
  const size_t total = (size_t)n * ((size_t)n + 1) / 2;
  uint64_t *all = malloc((total ? total : 1) * sizeof *all);
  BK_RETURN_IF(!all, BK_ENOMEM);
  size_t w = 0;
  bool good = true;
  for (uint32_t i = 0; i < n; i++) {
    if (enc[i] == 0) good = false;
    all[w++] = enc[i];
    for (uint32_t j = i + 1; j < n; j++) all[w++] = enc[i] ^ enc[j];
  }
  qsort(all, w, sizeof *all, cmp_u64);
  for (size_t i = 1; i < w && good; i++)
    if (all[i] == all[i - 1]) good = false;
  free(all);
  *ok = good;
  return BK_OK;
}

/* ---- Sec. 3.6: regression inverse ---------------------------------------- */

static inline int64_t regression_guess(const bk_kbf_regression *r, uint64_t e) {
  const double y = (double)e;
  double x;
  if (fabs(r->c) < 1e-300) {
    x = (y - r->a) / r->b;
  } else {
    const double d = r->b * r->b - 4 * r->c * (r->a - y);
    x = d < 0 ? 0 : (-r->b + sqrt(d)) / (2 * r->c);
  }
  if (!(x > 0)) x = 0;
  if (x > (double)(r->n - 1)) x = (double)(r->n - 1);
  return (int64_t)(x + 0.5);
}

bk_status bk_kbf_regression_fit(const uint64_t *table, uint32_t n,
                                bk_kbf_regression *out) {
  BK_RETURN_IF(!table || !out || n < 3, BK_EINVAL);
  for (uint32_t i = 1; i < n; i++)
    BK_RETURN_IF(table[i] <= table[i - 1], BK_EINVAL);
  /* Normal equations of y = a + b x + c x^2 in x scaled to [0, 1]. */
  double s[5] = {0}, r[3] = {0};
  const double scale = (double)(n - 1);
  for (uint32_t i = 0; i < n; i++) {
    const double x = (double)i / scale, y = (double)table[i];
    double p = 1;
    for (int d = 0; d < 5; d++, p *= x) s[d] += p;
    r[0] += y;
    r[1] += y * x;
    r[2] += y * x * x;
  }
  double m[3][4] = {{s[0], s[1], s[2], r[0]},
                    {s[1], s[2], s[3], r[1]},
                    {s[2], s[3], s[4], r[2]}};
  for (int c = 0; c < 3; c++) {
    int piv = c;
    for (int q = c + 1; q < 3; q++)
      if (fabs(m[q][c]) > fabs(m[piv][c])) piv = q;
    for (int q = 0; q < 4; q++) {
      double tmp = m[c][q];
      m[c][q] = m[piv][q];
      m[piv][q] = tmp;
    }
    BK_RETURN_IF(m[c][c] == 0, BK_EINVAL);
    for (int q = 0; q < 3; q++) {
      if (q == c) continue;
      const double f = m[q][c] / m[c][c];
      for (int z = c; z < 4; z++) m[q][z] -= f * m[c][z];
    }
  }
  /* Back to x in index units. */
  out->a = m[0][3] / m[0][0];
  out->b = m[1][3] / m[1][1] / scale;
  out->c = m[2][3] / m[2][2] / (scale * scale);
  out->table = table;
  out->n = n;
  uint64_t worst = 0;
  for (uint32_t i = 0; i < n; i++) {
    const int64_t g = regression_guess(out, table[i]);
    const uint64_t err =
        (uint64_t)(g > (int64_t)i ? g - (int64_t)i : (int64_t)i - g);
    if (err > worst) worst = err;
  }
  out->max_error = worst;
  return BK_OK;
}

int64_t bk_kbf_binary_find(const uint64_t *table, uint32_t n, uint64_t e) {
  if (!table) return -1;
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (table[mid] < e)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && table[lo] == e ? (int64_t)lo : -1;
}

int64_t bk_kbf_regression_find(const bk_kbf_regression *r, uint64_t e) {
  if (!r || !r->table || r->n == 0) return -1;
  const int64_t g = regression_guess(r, e);
  if (r->table[g] == e) return g;
  /* Every stored encoding's guess is within max_error of its index, so
   * e (if stored) is in this window. */
  int64_t lo = g - (int64_t)r->max_error, hi = g + (int64_t)r->max_error + 1;
  if (lo < 0) lo = 0;
  if (hi > (int64_t)r->n) hi = r->n;
  int64_t at = bk_kbf_binary_find(r->table + lo, (uint32_t)(hi - lo), e);
  return at < 0 ? -1 : at + lo;
}

/* ---- decode2 in closed form ----------------------------------------------
 *
 * v = e(x) ^ e(y) = (s, r) with s = x + y, r = x^3 + y^3 = s (s^2 + x y).
 * So x y = r / s + s^2, and x, y are the roots of z^2 + s z + x y. With
 * z = s w: w^2 + w = c, c = x y / s^2 = r / s^3 + 1. L(w) = w^2 + w is
 * linear over GF(2) with kernel {0, 1}: its image (the trace-0 half) is
 * spanned by echelon rows built once per pool, and w is read off them.
 */

/* The inverse of a != 0 mod the irreducible poly: Euclid on polynomials,
 * keeping u * a = r (mod poly) for both remainders. */
static uint32_t gf_inv(uint32_t a, uint32_t poly) {
  uint64_t r0 = a, r1 = poly, u0 = 1, u1 = 0;
  while (r0 != 1 && r1 != 1) {
    if (degree(r0) < degree(r1)) {
      uint64_t tmp = r0;
      r0 = r1;
      r1 = tmp;
      tmp = u0;
      u0 = u1;
      u1 = tmp;
    }
    const unsigned d = degree(r0) - degree(r1);
    r0 ^= r1 << d;
    u0 ^= u1 << d;
  }
  return (uint32_t)poly_mod(r0 == 1 ? u0 : u1, poly);
}

void bk__kbf_pool_init(bk__kbf_pool *p, unsigned t) {
  memset(p, 0, sizeof *p);
  p->t = t;
  p->poly = bk__kbf_irreducible(t);
  /* Rows (L(u), u) for u = each basis vector, reduced to echelon form. */
  for (unsigned i = 0; i < t; i++) {
    uint32_t u = 1u << i;
    uint32_t img = (uint32_t)(gf_mulmod(u, u, p->poly, t) ^ u);
    for (unsigned j = 0; j < p->n_rows && img; j++)
      if (img >> degree(p->row_image[j]) & 1) {
        img ^= p->row_image[j];
        u ^= p->row_pre[j];
      }
    if (!img) continue; /* in the span already (the kernel direction) */
    /* Keep the rows sorted by top bit, highest first, so reduction is one
     * pass. */
    unsigned at = p->n_rows;
    while (at > 0 && degree(p->row_image[at - 1]) < degree(img)) {
      p->row_image[at] = p->row_image[at - 1];
      p->row_pre[at] = p->row_pre[at - 1];
      at--;
    }
    p->row_image[at] = img;
    p->row_pre[at] = u;
    p->n_rows++;
    /* A later row may now have a bit at this top: reduce every other row
     * so the tops stay distinct and single-pass reduction stays exact. */
    for (unsigned j = 0; j < p->n_rows; j++)
      if (j != at && (p->row_image[j] >> degree(img) & 1)) {
        p->row_image[j] ^= img;
        p->row_pre[j] ^= u;
      }
  }
}

bool bk__kbf_pool_split(const bk__kbf_pool *p, uint64_t v, uint32_t *x,
                        uint32_t *y) {
  const unsigned t = p->t;
  const uint32_t mask = (uint32_t)(((uint64_t)1 << t) - 1);
  if (v >> (2 * t)) return false;
  const uint32_t s = (uint32_t)(v >> t), r = (uint32_t)v & mask;
  if (s == 0) return false;
  const uint32_t s3 =
      (uint32_t)gf_mulmod(gf_mulmod(s, s, p->poly, t), s, p->poly, t);
  uint32_t c = (uint32_t)gf_mulmod(r, gf_inv(s3, p->poly), p->poly, t) ^ 1u;
  uint32_t w = 0;
  for (unsigned j = 0; j < p->n_rows; j++)
    if (c >> degree(p->row_image[j]) & 1) {
      c ^= p->row_image[j];
      w ^= p->row_pre[j];
    }
  if (c) return false; /* no root: v is no XOR of two encodings */
  uint32_t a = (uint32_t)gf_mulmod(s, w, p->poly, t), b = a ^ s;
  if (a == 0 || b == 0) return false; /* (0, 0) is not an encoding */
  if (a > b) {
    uint32_t tmp = a;
    a = b;
    b = tmp;
  }
  *x = a;
  *y = b;
  return true;
}
