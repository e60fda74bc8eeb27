/* SPDX-License-Identifier: MIT */
/*
 * Golden blobs: serialized forms frozen in tests/data, one or more per
 * type and version, that every later bloomkit must still load. The fuzz
 * corpus (tests/fuzz/corpus, checked by bk_fuzz_seeds --check) pins what
 * the library writes now; these files pin what it wrote then, so a format
 * change that forgets its old version fails here. Each must load, answer
 * calls as its type's codec harness expects (tests/codecs.c), and, when
 * its version is the newest, save to the same bytes (or, for a type whose
 * blob is not canonical, to a blob that loads as the same state).
 *
 * The files (copies of corpus seeds made by tests/fuzz/make_seeds.c, whose
 * recipes say what they hold): fbf_v1_fixed.bin (fixed-full-simple),
 * fbf_v1_adaptive.bin (adaptive-grown), rbf_v1_half.bin (half),
 * counters_v1_w4.bin (w4-mixed), idem_v2_hybrid.bin (hybrid-slid: client
 * windows and an FBF made by slide-outs), idem_v2_window.bin
 * (window-keys). The idem version 1 files have their own test in
 * test_idem_format.c; bloom, bloomclock and kbf theirs in their tests.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "bloomkit/idem.h"
#include "codecs.h"
#include "core/internal.h"

typedef struct golden {
  const char *file;
  const bk_test_codec *codec;
  uint16_t version;
} golden;

static void test_golden_blobs(void **state) {
  (void)state;
  const golden goldens[] = {
      {"fbf_v1_fixed.bin", &bk_test_codec_fbf, 1},
      {"fbf_v1_adaptive.bin", &bk_test_codec_fbf, 1},
      {"rbf_v1_half.bin", &bk_test_codec_rbf, 1},
      {"counters_v1_w4.bin", &bk_test_codec_counters, 1},
      {"idem_v2_hybrid.bin", &bk_test_codec_idem, 2},
      {"idem_v2_window.bin", &bk_test_codec_idem, 2},
  };
  for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
    const golden *g = &goldens[i];
    size_t len;
    unsigned char *blob = bk_test_data_file(g->file, &len);
    assert_true(len > BK__PREFIX_SIZE);
    assert_int_equal(bk__load_le16(blob + 4), g->version);
    assert_int_equal(bk__load_le16(blob + 6), g->codec->type_tag);
    void *obj = NULL;
    bk_status s = g->codec->deserialize(blob, len, NULL, &obj);
    if (s != BK_OK) fail_msg("%s: %s", g->file, bk_status_name(s));
    if (g->version == g->codec->version) {
      if (g->codec->canonical) {
        bk_test_assert_serializes_to(g->codec, obj, blob, len);
      } else {
        size_t l2;
        unsigned char *again = bk_test_serialize(g->codec, obj, &l2);
        void *back = NULL;
        assert_bk_ok(g->codec->deserialize(again, l2, NULL, &back));
        const char *why = g->codec->same(obj, back);
        if (why) fail_msg("%s: saved again, %s", g->file, why);
        g->codec->destroy(back);
        free(again);
      }
    }
    const char *why = g->codec->exercise(obj, 0x601DEull + i);
    if (why) fail_msg("%s: %s", g->file, why);
    g->codec->destroy(obj);
    free(blob);
  }
  /* What the idem goldens hold. */
  size_t len;
  unsigned char *blob = bk_test_data_file("idem_v2_hybrid.bin", &len);
  bk_idem *t = NULL;
  assert_bk_ok(bk_idem_deserialize(blob, len, NULL, &t));
  bk_idem_info in;
  assert_bk_ok(bk_idem_info_get(t, &in));
  assert_int_equal(in.strategy, BK_IDEM_HYBRID);
  assert_int_equal(in.window, 64);
  assert_int_equal(in.clients, 3);
  assert_int_equal(in.keys, 7);
  assert_true(in.filter_memory > 0); /* its FBF was made by slide-outs */
  assert_true(in.slid_to_filter > 0);
  /* The newest op of client 0xC1 + 299 % 3 is still a duplicate. */
  int64_t v;
  bk_idem_outcome oc;
  assert_bk_ok(bk_idem_add(t, "key5", 4, (bk_idem_op_id){0xC1u + 299 % 3, 299},
                           1, &v, &oc));
  assert_int_equal(oc, BK_IDEM_DUPLICATE);
  bk_idem_destroy(t);
  free(blob);
}

int main(void) {
  bk_test_begin(0x601DE);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_blobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
