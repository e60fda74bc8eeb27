/* SPDX-License-Identifier: MIT */
/* libFuzzer target for bk_apbf_deserialize (see fuzz_common.h). */
#include "fuzz_common.h"

BK_FUZZ_CODEC_TARGET(bk_test_codec_apbf)
