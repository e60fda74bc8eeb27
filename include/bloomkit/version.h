/* SPDX-License-Identifier: MIT */
/*
 * bloomkit version numbers. BK_VERSION_NUMBER orders releases as one integer
 * (major * 10000 + minor * 100 + patch) for compile-time checks.
 */
#ifndef BLOOMKIT_VERSION_H
#define BLOOMKIT_VERSION_H

#define BK_VERSION_MAJOR 0
#define BK_VERSION_MINOR 2
#define BK_VERSION_PATCH 0
#define BK_VERSION_NUMBER \
  (BK_VERSION_MAJOR * 10000 + BK_VERSION_MINOR * 100 + BK_VERSION_PATCH)
#define BK_VERSION_STRING "0.2.0"

#endif
