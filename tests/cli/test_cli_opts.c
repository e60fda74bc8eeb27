/* SPDX-License-Identifier: MIT */
/*
 * The `bloomkit` command's option parser (src/cli/opts.c, linked in
 * directly): defaults, every kind of value, the exact usage errors (option,
 * value given, what is allowed; status 2) and the generated --help. Output
 * is captured with open_memstream.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "cli/opts.h"

#define PROG "bloomkit test"
#define HINT "\ntry 'bloomkit test --help'\n"

/* Every kind, with a destination each. */
typedef struct dests {
  bool flag, given_count;
  uint64_t count;
  unsigned small;
  int64_t delta;
  double rate, fpp;
  const char *dir;
  unsigned shape;
  unsigned picks[3];
  size_t n_picks;
  double values[3];
  size_t n_values;
  int custom;
} dests;

static const char *const shapes[] = {"steady", "rising", "bursty", NULL};
static const char *const pick_names[] = {"a", "b", "c", NULL};

/* CUSTOM: "even:N" with N an even digit. */
static bool parse_even(const char *text, void *dest) {
  if (strncmp(text, "even:", 5) != 0 || text[5] < '0' || text[5] > '9' ||
      text[6] != '\0' || (text[5] - '0') % 2 != 0)
    return false;
  *(int *)dest = text[5] - '0';
  return true;
}

typedef struct run {
  dests d;
  int status;
  char *out;
  char *err;
  size_t out_len, err_len;
} run;

/* Parse argv (NULL-terminated, without argv[0]) against a fresh table. */
static void parse(run *r, const char *const *args) {
  memset(&r->d, 0xA5, sizeof r->d); /* defaults must overwrite this */
  dests *d = &r->d;
  bk_cli_opt opts[] = {
      BK_CLI_FLAG("flag", &d->flag, "a flag"),
      BK_CLI_U64("count", &d->count, 10, 1, 1000, "N", "a count",
                 .section = "numbers", .given = &d->given_count),
      BK_CLI_UNSIGNED("small", &d->small, 0, 3, 64, "W", "a small one",
                      .default_text = "automatic"),
      BK_CLI_I64("delta", &d->delta, 1, -1000000, 1000000, "D", "a delta"),
      BK_CLI_DOUBLE("rate", &d->rate, 1000.0, 0.001, 1e9, "R", "a rate"),
      BK_CLI_DOUBLE("fpp", &d->fpp, 1e-6, 0.0, 1.0, "P", "a probability",
                    .d_open = BK_CLI_OPEN_MIN | BK_CLI_OPEN_MAX),
      BK_CLI_STRING("out", &d->dir, NULL, "a directory", "DIR", "where",
                    .section = "text"),
      BK_CLI_CHOICE("load", &d->shape, "steady", shapes, "SHAPE", "a shape"),
      BK_CLI_CHOICE_LIST("pick", d->picks, &d->n_picks, 3, "a,b", pick_names,
                         "LIST", "some letters"),
      BK_CLI_DOUBLE_LIST("values", d->values, &d->n_values, 3, NULL, 0.0, 1.0,
                         "LIST", "some shares"),
      BK_CLI_CUSTOM("even", &d->custom, "even:2", parse_even,
                    "even:N with N an even digit", "E", "an even digit"),
  };
  const bk_cli_command cmd = {
      .prog = PROG,
      .description = "Test the parser.\n",
      .epilog = "the end\n",
      .opts = opts,
      .n_opts = sizeof opts / sizeof opts[0],
  };
  char *argv[32];
  int argc = 0;
  argv[argc++] = "test";
  for (; args[argc - 1]; argc++) argv[argc] = (char *)args[argc - 1];
  FILE *out = open_memstream(&r->out, &r->out_len);
  FILE *err = open_memstream(&r->err, &r->err_len);
  assert_non_null(out);
  assert_non_null(err);
  r->status = bk_cli_parse(&cmd, argc, argv, out, err);
  fclose(out);
  fclose(err);
}

static void run_free(run *r) {
  free(r->out);
  free(r->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The status and the error text, whole. */
static void expect_error(const char *const *args, const char *message) {
  run r;
  parse(&r, args);
  assert_int_equal(r.status, BK_CLI_USAGE);
  assert_string_equal(r.err, message);
  assert_string_equal(r.out, "");
  run_free(&r);
}

static void test_defaults(void **state) {
  (void)state;
  run r;
  parse(&r, (const char *const[]){NULL});
  assert_int_equal(r.status, BK_CLI_CONTINUE);
  assert_string_equal(r.err, "");
  assert_false(r.d.flag);
  assert_false(r.d.given_count);
  assert_int_equal(r.d.count, 10);
  assert_int_equal(r.d.small, 0); /* out of range: "automatic" */
  assert_int_equal(r.d.delta, 1);
  assert_true(r.d.rate == 1000.0);
  assert_true(r.d.fpp == 1e-6);
  assert_null(r.d.dir);
  assert_int_equal(r.d.shape, 0);
  assert_int_equal(r.d.n_picks, 2);
  assert_int_equal(r.d.picks[0], 0);
  assert_int_equal(r.d.picks[1], 1);
  assert_int_equal(r.d.n_values, 0);
  assert_int_equal(r.d.custom, 2);
  run_free(&r);
}

static void test_values(void **state) {
  (void)state;
  run r;
  parse(&r, ARGS("--flag", "--count", "7", "--count=1000", "--small", "64",
                 "--delta", "-1000000", "--rate=0x10", "--fpp", "0.5", "--out",
                 "d/e", "--load", "bursty", "--pick", "c,a,c", "--values",
                 "0,1,1e-400", "--even=even:8"));
  assert_int_equal(r.status, BK_CLI_CONTINUE);
  assert_string_equal(r.err, "");
  assert_true(r.d.flag);
  assert_true(r.d.given_count);
  assert_int_equal(r.d.count, 1000); /* the last one wins */
  assert_int_equal(r.d.small, 64);
  assert_int_equal(r.d.delta, -1000000);
  assert_true(r.d.rate == 16.0);
  assert_true(r.d.fpp == 0.5);
  assert_string_equal(r.d.dir, "d/e");
  assert_int_equal(r.d.shape, 2);
  assert_int_equal(r.d.n_picks, 2); /* c listed twice counts once */
  assert_int_equal(r.d.picks[0], 2);
  assert_int_equal(r.d.picks[1], 0);
  assert_int_equal(r.d.n_values, 3);
  assert_true(r.d.values[0] == 0.0 && r.d.values[1] == 1.0);
  assert_true(r.d.values[2] >= 0.0 && r.d.values[2] < 1e-300); /* underflow */
  assert_int_equal(r.d.custom, 8);
  run_free(&r);
  /* A negative value as its own argument; a '+' sign. */
  parse(&r, ARGS("--delta", "-3", "--count", "+5"));
  assert_int_equal(r.status, BK_CLI_CONTINUE);
  assert_int_equal(r.d.delta, -3);
  assert_int_equal(r.d.count, 5);
  run_free(&r);
}

static void test_unknown_and_stray(void **state) {
  (void)state;
  expect_error(ARGS("--bogus"), PROG ": unknown option '--bogus'" HINT);
  expect_error(ARGS("--bogus=3"), PROG ": unknown option '--bogus'" HINT);
  expect_error(ARGS("--cuont", "3"),
               PROG ": unknown option '--cuont' (did you mean --count?)" HINT);
  expect_error(ARGS("--val=1"),
               PROG ": unknown option '--val' (did you mean --values?)" HINT);
  expect_error(ARGS("-x"), PROG ": unknown option '-x'" HINT);
  expect_error(ARGS("stray"), PROG
               ": unexpected argument 'stray' (options "
               "start with --)" HINT);
  expect_error(ARGS("--flag=1"), PROG ": --flag takes no value, got '1'" HINT);
}

static void test_missing_value(void **state) {
  (void)state;
  expect_error(ARGS("--count"), PROG
               ": --count needs a value: an integer "
               "from 1 to 1000" HINT);
  expect_error(ARGS("--count", "--flag"),
               PROG ": --count needs a value: an integer from 1 to 1000" HINT);
  expect_error(ARGS("--load"), PROG
               ": --load needs a value: one of steady, rising or "
               "bursty" HINT);
}

/* A bad value and the problem the parser must name. */
typedef struct bad_value {
  const char *text, *problem;
} bad_value;

/* Each case given as --name=text: the message names the option, quotes the
 * text, says the problem and then what is allowed. */
static void expect_bad_values(const char *name, const char *allowed,
                              const bad_value *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char arg[128], want[512];
    snprintf(arg, sizeof arg, "--%s=%s", name, cases[i].text);
    snprintf(want, sizeof want, PROG ": --%s: '%s' %s; expected %s" HINT, name,
             cases[i].text, cases[i].problem, allowed);
    expect_error(ARGS(arg), want);
  }
}

static void test_integers(void **state) {
  (void)state;
  static const bad_value cases[] = {
      {"12x", "is not an integer"},
      {"x12", "is not an integer"},
      {"1 2", "is not an integer"},
      {" 12", "is not an integer"},
      {"+", "is not an integer"},
      {"1.5", "is not an integer"},
      {"", "is empty"},
      {"0", "is out of range"},
      {"1001", "is out of range"},
      {"-1", "is out of range"},
      {"18446744073709551615", "is out of range"},
      {"18446744073709551616", "is out of range"},
      {"99999999999999999999999", "is out of range"},
  };
  expect_bad_values("count", "an integer from 1 to 1000", cases,
                    sizeof cases / sizeof cases[0]);
  expect_error(ARGS("--small", "2"), PROG
               ": --small: '2' is out of range; "
               "expected an integer from 3 to 64" HINT);
  static const bad_value signed_cases[] = {
      {"1000001", "is out of range"},
      {"-1000001", "is out of range"},
      {"-9223372036854775809", "is out of range"},
      {"9223372036854775808", "is out of range"},
      {"-", "is not an integer"},
  };
  expect_bad_values("delta", "an integer from -1000000 to 1000000",
                    signed_cases, sizeof signed_cases / sizeof signed_cases[0]);
}

static void test_doubles(void **state) {
  (void)state;
  static const bad_value cases[] = {
      {"1e400", "is out of range"}, {"-1e400", "is out of range"},
      {"inf", "is out of range"},   {"1e10", "is out of range"},
      {"0", "is out of range"},     {"nan", "is not a number"},
      {"12x", "is not a number"},   {" 5", "is not a number"},
      {"5 ", "is not a number"},    {"", "is empty"},
      {"--5", "is not a number"},
  };
  expect_bad_values("rate", "a number from 0.001 to 1e9", cases,
                    sizeof cases / sizeof cases[0]);
  /* Open bounds. */
  static const bad_value open_cases[] = {
      {"1", "is out of range"},
      {"0", "is out of range"},
      {"1e-400", "is out of range"}, /* underflows to 0 */
  };
  expect_bad_values("fpp", "a number above 0 and below 1", open_cases,
                    sizeof open_cases / sizeof open_cases[0]);
}

static void test_text_choices_lists(void **state) {
  (void)state;
  static const struct {
    const char *arg, *message;
  } cases[] = {
      {"--out=", "--out: '' is empty; expected a directory"},
      {"--load=fast",
       "--load: 'fast' is not one of the choices; expected one of steady, "
       "rising or bursty"},
      {"--pick=a,x",
       "--pick: 'a,x': item 'x' is not one of the choices; expected a "
       "comma-separated list of a, b, c"},
      {"--pick=a,",
       "--pick: 'a,': item '' is empty; expected a comma-separated list of "
       "a, b, c"},
      {"--values=0.5,2",
       "--values: '0.5,2': item '2' is out of range; expected a "
       "comma-separated list of up to 3 numbers from 0 to 1"},
      {"--values=0.5,x",
       "--values: '0.5,x': item 'x' is not a number; expected a "
       "comma-separated list of up to 3 numbers from 0 to 1"},
      {"--values=0,0,0,0",
       "--values: '0,0,0,0' has more than 3 items; expected a "
       "comma-separated list of up to 3 numbers from 0 to 1"},
      {"--even=even:3",
       "--even: 'even:3' is not valid; expected even:N with N an even "
       "digit"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char want[512];
    snprintf(want, sizeof want, PROG ": %s" HINT, cases[i].message);
    expect_error(ARGS(cases[i].arg), want);
  }
}

static void test_usage_error(void **state) {
  (void)state;
  char *text;
  size_t len;
  FILE *err = open_memstream(&text, &len);
  assert_int_equal(bk_cli_usage_error(err, PROG, "--a %d exceeds --b %d", 5, 4),
                   BK_CLI_USAGE);
  fclose(err);
  assert_string_equal(text, PROG ": --a 5 exceeds --b 4" HINT);
  free(text);
}

/* bk_cli_flush_output passes the status through when the output is
 * written, and turns a failed write (/dev/full) into status 1 and one
 * message. */
static void test_flush_output(void **state) {
  (void)state;
  char *text, *written;
  size_t len, written_len;
  FILE *err = open_memstream(&text, &len);
  FILE *out = open_memstream(&written, &written_len);
  fputs("row\n", out);
  assert_int_equal(bk_cli_flush_output(PROG, 0, out, err), 0);
  assert_int_equal(bk_cli_flush_output(PROG, 2, out, err), 2);
  fclose(out);
  assert_string_equal(written, "row\n");
  free(written);
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    fputs("row\n", full);
    assert_int_equal(bk_cli_flush_output(PROG, 0, full, err), 1);
    fclose(full);
  }
  fclose(err);
  assert_string_equal(text,
                      full ? PROG ": error writing standard output\n" : "");
  free(text);
}

static void test_help(void **state) {
  (void)state;
  run r;
  parse(&r, ARGS("--count", "5", "-h", "--bogus"));
  assert_int_equal(r.status, 0); /* help wins over what follows */
  assert_string_equal(r.err, "");
  /* The whole text: usage, description, sections, one option a line
   * (wrapped before column 80) with its default and range, the epilog. */
  assert_string_equal(r.out,
                      "usage: bloomkit test [options]\n"
                      "\n"
                      "Test the parser.\n"
                      "\n"
                      "options:\n"
                      "  --flag                a flag\n"
                      "\n"
                      "numbers:\n"
                      "  --count N             a count (default 10; an integer "
                      "from 1 to 1000)\n"
                      "  --small W             a small one (default automatic; "
                      "an integer from 3 to\n"
                      "                        64)\n"
                      "  --delta D             a delta (default 1; an integer "
                      "from -1000000 to\n"
                      "                        1000000)\n"
                      "  --rate R              a rate (default 1000; a number "
                      "from 0.001 to 1e9)\n"
                      "  --fpp P               a probability (default 1e-6; a "
                      "number above 0 and below\n"
                      "                        1)\n"
                      "\n"
                      "text:\n"
                      "  --out DIR             where (a directory)\n"
                      "  --load SHAPE          a shape (default steady; one of "
                      "steady, rising or\n"
                      "                        bursty)\n"
                      "  --pick LIST           some letters (default a,b; a "
                      "comma-separated list of a,\n"
                      "                        b, c)\n"
                      "  --values LIST         some shares (a comma-separated "
                      "list of up to 3 numbers\n"
                      "                        from 0 to 1)\n"
                      "  --even E              an even digit (default even:2; "
                      "even:N with N an even\n"
                      "                        digit)\n"
                      "  -h, --help            this text\n"
                      "\n"
                      "the end\n");
  run_free(&r);
  /* No line of the help is longer than 79 columns. */
  parse(&r, ARGS("--help"));
  for (const char *p = r.out; *p;) {
    size_t n = strcspn(p, "\n");
    assert_true(n <= 79);
    p += n + (p[n] != '\0');
  }
  run_free(&r);
}

static int fake_run(int argc, char **argv) {
  return argc == 2 && strcmp(argv[0], "one") == 0 && strcmp(argv[1], "x") == 0
             ? 42
             : 1;
}

static void test_dispatch(void **state) {
  (void)state;
  static const bk_cli_subcommand subs[] = {{"one", "the first", fake_run}};
  const bk_cli_dispatcher d = {"prog", "thing", NULL, subs, 1};
  char *argv[] = {"prog", "one", "x", NULL};
  assert_int_equal(bk_cli_dispatch(&d, 3, argv), 42);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_unknown_and_stray),
      cmocka_unit_test(test_missing_value),
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_doubles),
      cmocka_unit_test(test_text_choices_lists),
      cmocka_unit_test(test_usage_error),
      cmocka_unit_test(test_flush_output),
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_dispatch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
