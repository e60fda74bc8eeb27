/* SPDX-License-Identifier: MIT */
/*
 * Umbrella header: everything bloomkit offers. Including a component's own
 * header is enough to use that component alone.
 */
#ifndef BLOOMKIT_BLOOMKIT_H
#define BLOOMKIT_BLOOMKIT_H

#include "bloomkit/version.h"
#include "bloomkit/common.h"
#include "bloomkit/hash.h"
#include "bloomkit/bits.h"
#include "bloomkit/counters.h"
#include "bloomkit/params.h"
#include "bloomkit/bloom.h"
#include "bloomkit/fbf.h"
#include "bloomkit/rbf.h"
#include "bloomkit/apbf.h"
#include "bloomkit/idem.h"
#include "bloomkit/bloomclock.h"
#include "bloomkit/kbf.h"

#endif
