/* SPDX-License-Identifier: MIT */
/*
 * The envelope every serialized bloomkit structure shares (layout drawn in
 * internal.h): writing the prefix and checksum, and validating a buffer
 * before any of its parameters are trusted.
 */
#include <xxhash.h>

#include "internal.h"

void bk__format_write_prefix(unsigned char *p, uint16_t version, uint16_t type,
                             uint32_t header_len, uint64_t payload_len) {
  memcpy(p, BK__MAGIC, 4);
  bk__store_le16(p + 4, version);
  bk__store_le16(p + 6, type);
  bk__store_le32(p + 8, header_len);
  bk__store_le32(p + 12, 0);
  bk__store_le64(p + 16, payload_len);
}

void bk__format_write_trailer(unsigned char *p, size_t body_len) {
  bk__store_le64(p + body_len, (uint64_t)XXH3_64bits(p, body_len));
}

bk_status bk__format_open(const void *buf, size_t len, uint16_t type,
                          uint16_t max_version, uint32_t header_len,
                          bk__format_view *view) {
  const unsigned char *p = buf;
  BK_RETURN_IF(len < BK__PREFIX_SIZE + BK__TRAILER_SIZE, BK_ECORRUPT);
  BK_RETURN_IF(memcmp(p, BK__MAGIC, 4) != 0, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le16(p + 6) != type, BK_ECORRUPT);
  uint16_t version = bk__load_le16(p + 4);
  BK_RETURN_IF(version == 0, BK_ECORRUPT);
  BK_RETURN_IF(version > max_version, BK_EVERSION);
  BK_RETURN_IF(bk__load_le32(p + 8) != header_len, BK_ECORRUPT);
  BK_RETURN_IF(bk__load_le32(p + 12) != 0, BK_ECORRUPT);
  uint64_t payload_len = bk__load_le64(p + 16);
  /* len >= header_len + 8 is needed before subtracting. */
  BK_RETURN_IF(len - BK__TRAILER_SIZE < header_len, BK_ECORRUPT);
  size_t room = len - BK__TRAILER_SIZE - header_len;
  BK_RETURN_IF(payload_len != (uint64_t)room, BK_ECORRUPT);
  size_t body = len - BK__TRAILER_SIZE;
  BK_RETURN_IF((uint64_t)XXH3_64bits(p, body) != bk__load_le64(p + body),
               BK_ECORRUPT);
  view->version = version;
  view->params = p + BK__PREFIX_SIZE;
  view->params_len = header_len - BK__PREFIX_SIZE;
  view->payload = p + header_len;
  view->payload_len = payload_len;
  return BK_OK;
}
