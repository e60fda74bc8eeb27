/* SPDX-License-Identifier: MIT */
/*
 * Private to the fbf component: bk_rbf's struct, shared by rbf.c (the
 * filter) and rbf_io.c (its serialized form). Never installed.
 */
#ifndef BLOOMKIT_SRC_RBF_INTERNAL_H
#define BLOOMKIT_SRC_RBF_INTERNAL_H

#include "bloomkit/bloom.h"
#include "bloomkit/rbf.h"
#include "core/internal.h"

struct bk_rbf {
  bk__alloc alloc;
  bk_bloom *bloom;
  uint64_t m;
  unsigned k;
  uint64_t threshold;
  uint64_t inserted;  /* atomic */
  uint64_t recycles;  /* atomic */
  uint32_t recycling; /* atomic: an inserter is recycling */
};

#endif
