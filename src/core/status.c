/* SPDX-License-Identifier: MIT */
/*
 * bk_strerror and bk_status_name, generated from the one status list in
 * common.h so a new code can never lack a name.
 */
#include "bloomkit/common.h"

const char *bk_strerror(bk_status status) {
  switch (status) {
#define BK__STATUS_TEXT(name, value, text) \
  case BK_##name:                          \
    return text;
    BK_STATUS_MAP(BK__STATUS_TEXT)
#undef BK__STATUS_TEXT
  }
  return "unknown status";
}

const char *bk_status_name(bk_status status) {
  switch (status) {
#define BK__STATUS_NAME(name, value, text) \
  case BK_##name:                          \
    return "BK_" #name;
    BK_STATUS_MAP(BK__STATUS_NAME)
#undef BK__STATUS_NAME
  }
  return "BK_UNKNOWN";
}

const char *bk_version_string(void) {
  return BK_VERSION_STRING;
}
