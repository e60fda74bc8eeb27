/* SPDX-License-Identifier: MIT */
/*
 * The `bloomkit` command's option parser and subcommand dispatcher (see
 * opts.h). Values are checked whole: an integer is digits only (a leading
 * '+' is allowed, a '-' makes an unsigned value out of range rather than
 * "not a number", which is what the user meant), a number is what strtod
 * reads up to the end of the text, finite; nothing may trail. Every message
 * quotes the option and the text given and says what is allowed, in the
 * same words --help uses.
 */
#include "cli/opts.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 79   /* wrap --help lines before this column */
#define HELP_COLUMN 24  /* where option help starts, when the name fits */
#define TEXT_CAP 512    /* the longest "allowed" or default text */
#define SUGGEST_MAX 64u /* longest option name considered for a suggestion */

/* ---- describing an option ------------------------------------------------ */

/* %g, then "1e+09" -> "1e9", "1e-06" -> "1e-6": numbers as one types them. */
static void format_double(double v, char *buf, size_t cap) {
  char raw[64];
  snprintf(raw, sizeof raw, "%g", v);
  char *e = strchr(raw, 'e');
  if (!e) {
    snprintf(buf, cap, "%s", raw);
    return;
  }
  const char *exponent = e + 1;
  bool negative = *exponent == '-';
  if (*exponent == '+' || *exponent == '-') exponent++;
  while (exponent[0] == '0' && exponent[1] != '\0') exponent++;
  snprintf(buf, cap, "%.*se%s%s", (int)(e - raw), raw, negative ? "-" : "",
           exponent);
}

static void append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

/* "a, b or c" (last_sep " or ") or "a, b, c" (", "). */
static void append_choices(char *buf, size_t cap, const char *const *choices,
                           const char *last_sep) {
  for (size_t i = 0; choices[i]; i++) {
    const char *sep = ", ";
    if (i == 0)
      sep = "";
    else if (!choices[i + 1])
      sep = last_sep;
    append(buf, cap, "%s%s", sep, choices[i]);
  }
}

/* "from 1 to 5", "above 0 and below 1", "above 0, at most 1e6". */
static void append_double_range(char *buf, size_t cap, const bk_cli_opt *o) {
  char lo[64], hi[64];
  format_double(o->d_min, lo, sizeof lo);
  format_double(o->d_max, hi, sizeof hi);
  bool open_min = o->d_open & BK_CLI_OPEN_MIN;
  bool open_max = o->d_open & BK_CLI_OPEN_MAX;
  if (!open_min && !open_max)
    append(buf, cap, "from %s to %s", lo, hi);
  else if (open_min && open_max)
    append(buf, cap, "above %s and below %s", lo, hi);
  else if (open_min)
    append(buf, cap, "above %s, at most %s", lo, hi);
  else
    append(buf, cap, "at least %s, below %s", lo, hi);
}

/* What a value must be, in words; the same text for --help and errors. */
static void describe_allowed(const bk_cli_opt *o, char *buf, size_t cap) {
  buf[0] = '\0';
  switch (o->kind) {
    case BK_CLI_KIND_FLAG:
      append(buf, cap, "no value");
      return;
    case BK_CLI_KIND_U64:
    case BK_CLI_KIND_UNSIGNED:
      append(buf, cap, "an integer from %" PRIu64 " to %" PRIu64, o->u_min,
             o->u_max);
      return;
    case BK_CLI_KIND_I64:
      append(buf, cap, "an integer from %" PRId64 " to %" PRId64, o->i_min,
             o->i_max);
      return;
    case BK_CLI_KIND_DOUBLE:
      append(buf, cap, "a number ");
      append_double_range(buf, cap, o);
      return;
    case BK_CLI_KIND_CHOICE:
      append(buf, cap, "one of ");
      append_choices(buf, cap, o->choices, " or ");
      return;
    case BK_CLI_KIND_CHOICE_LIST:
      append(buf, cap, "a comma-separated list of ");
      append_choices(buf, cap, o->choices, ", ");
      return;
    case BK_CLI_KIND_DOUBLE_LIST:
      append(buf, cap, "a comma-separated list of up to %zu numbers ",
             o->max_items);
      append_double_range(buf, cap, o);
      return;
    case BK_CLI_KIND_STRING:
    case BK_CLI_KIND_CUSTOM:
      append(buf, cap, "%s", o->allowed ? o->allowed : "a non-empty text");
      return;
  }
}

/* The default as --help shows it; false when there is none to show. */
static bool describe_default(const bk_cli_opt *o, char *buf, size_t cap) {
  if (o->default_text) {
    snprintf(buf, cap, "%s", o->default_text);
    return true;
  }
  switch (o->kind) {
    case BK_CLI_KIND_FLAG:
      return false;
    case BK_CLI_KIND_U64:
    case BK_CLI_KIND_UNSIGNED:
      snprintf(buf, cap, "%" PRIu64, o->u_def);
      return true;
    case BK_CLI_KIND_I64:
      snprintf(buf, cap, "%" PRId64, o->i_def);
      return true;
    case BK_CLI_KIND_DOUBLE:
      format_double(o->d_def, buf, cap);
      return true;
    default:
      if (!o->s_def) return false;
      snprintf(buf, cap, "%s", o->s_def);
      return true;
  }
}

/* ---- errors -------------------------------------------------------------- */

/* err == NULL: say nothing (a built-in default being checked). */
static void vreport(FILE *err, const char *prog, const char *fmt, va_list ap) {
  if (!err) return;
  fprintf(err, "%s: ", prog);
  vfprintf(err, fmt, ap);
  fprintf(err, "\ntry '%s --help'\n", prog);
}

int bk_cli_usage_error(FILE *err, const char *prog, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(err, prog, fmt, ap);
  va_end(ap);
  return BK_CLI_USAGE;
}

int bk_cli_parse_options(const char *prog, const char *description,
                         bk_cli_opt *opts, size_t n_opts, int argc,
                         char **argv) {
  const bk_cli_command cmd = {
      .prog = prog,
      .description = description,
      .opts = opts,
      .n_opts = n_opts,
  };
  return bk_cli_parse(&cmd, argc, argv, stdout, stderr);
}

int bk_cli_flush_output(const char *prog, int status, FILE *out, FILE *err) {
  if (fflush(out) != 0 || ferror(out)) {
    fprintf(err, "%s: error writing standard output\n", prog);
    return 1;
  }
  return status;
}

/* "<prog>: --name: '<given>' <problem>; expected <allowed>". */
static int value_error(FILE *err, const char *prog, const bk_cli_opt *o,
                       const char *given, const char *problem) {
  char allowed[TEXT_CAP];
  describe_allowed(o, allowed, sizeof allowed);
  return bk_cli_usage_error(err, prog, "--%s: '%s' %s; expected %s", o->name,
                            given, problem, allowed);
}

/* ---- values -------------------------------------------------------------- */

typedef enum value_status {
  VALUE_OK,
  VALUE_EMPTY,
  VALUE_NOT_INTEGER,
  VALUE_NOT_NUMBER,
  VALUE_OUT_OF_RANGE,
  VALUE_NOT_A_CHOICE,
  VALUE_TOO_MANY,
  VALUE_INVALID,
} value_status;

static const char *const value_problems[] = {
    [VALUE_OK] = "is fine",
    [VALUE_EMPTY] = "is empty",
    [VALUE_NOT_INTEGER] = "is not an integer",
    [VALUE_NOT_NUMBER] = "is not a number",
    [VALUE_OUT_OF_RANGE] = "is out of range",
    [VALUE_NOT_A_CHOICE] = "is not one of the choices",
    [VALUE_TOO_MANY] = "has too many items",
    [VALUE_INVALID] = "is not valid",
};

static const char *value_problem(value_status s) {
  return value_problems[s];
}

/* A decimal integer, the whole text, with an optional sign, into the
 * option's type: int64_t for I64, else uint64_t (the caller narrows
 * UNSIGNED). A '-' on an unsigned option is out of range, not "not an
 * integer": the user did type one. */
static value_status parse_integer(const bk_cli_opt *o, const char *text,
                                  void *out) {
  bool negative = *text == '-';
  if (*text == '+' || *text == '-') text++;
  if (!*text) return VALUE_NOT_INTEGER;
  uint64_t magnitude = 0;
  bool overflow = false;
  for (; *text; text++) {
    if (*text < '0' || *text > '9') return VALUE_NOT_INTEGER;
    unsigned digit = (unsigned)(*text - '0');
    overflow = overflow || magnitude > (UINT64_MAX - digit) / 10;
    magnitude = magnitude * 10 + digit; /* meaningless once overflowed */
  }
  if (overflow) return VALUE_OUT_OF_RANGE;
  if (o->kind != BK_CLI_KIND_I64) {
    if ((negative && magnitude != 0) || magnitude < o->u_min ||
        magnitude > o->u_max)
      return VALUE_OUT_OF_RANGE;
    *(uint64_t *)out = magnitude;
    return VALUE_OK;
  }
  /* -(INT64_MIN) does not fit an int64_t: negate in unsigned arithmetic. */
  uint64_t limit = (uint64_t)INT64_MAX + (negative ? 1u : 0u);
  if (magnitude > limit) return VALUE_OUT_OF_RANGE;
  int64_t v = negative ? (int64_t)(0u - magnitude) : (int64_t)magnitude;
  if (v < o->i_min || v > o->i_max) return VALUE_OUT_OF_RANGE;
  *(int64_t *)out = v;
  return VALUE_OK;
}

/* A number filling [text, end) (end: a ',' or the terminating NUL). */
static value_status parse_double_span(const bk_cli_opt *o, const char *text,
                                      const char *end, double *out) {
  if (text == end) return VALUE_EMPTY;
  /* strtod would skip leading blanks; a value is the number alone. */
  if (isspace((unsigned char)*text)) return VALUE_NOT_NUMBER;
  errno = 0;
  char *stop;
  double v = strtod(text, &stop);
  int range_errno = errno;
  if (stop != end || isnan(v)) return VALUE_NOT_NUMBER;
  /* Overflow ("1e400") and infinities are numbers, just too large; an
   * underflow ("1e-400") reads as the nearest double and is range-checked
   * like any other value. */
  if (isinf(v) || (range_errno == ERANGE && fabs(v) > 1.0))
    return VALUE_OUT_OF_RANGE;
  bool low = (o->d_open & BK_CLI_OPEN_MIN) ? !(v > o->d_min) : v < o->d_min;
  bool high = (o->d_open & BK_CLI_OPEN_MAX) ? !(v < o->d_max) : v > o->d_max;
  if (low || high) return VALUE_OUT_OF_RANGE;
  *out = v;
  return VALUE_OK;
}

static bool choice_index(const bk_cli_opt *o, const char *text, size_t len,
                         unsigned *out) {
  for (unsigned i = 0; o->choices[i]; i++)
    if (strlen(o->choices[i]) == len &&
        strncmp(o->choices[i], text, len) == 0) {
      *out = i;
      return true;
    }
  return false;
}

/* A comma-list into dest; on a bad item, *bad and *bad_len name it. */
static value_status parse_list(const bk_cli_opt *o, const char *text,
                               const char **bad, size_t *bad_len) {
  if (!text[0]) return VALUE_EMPTY;
  size_t n = 0;
  for (const char *p = text;;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    *bad = p;
    *bad_len = (size_t)(end - p);
    value_status s = VALUE_OK;
    if (o->kind == BK_CLI_KIND_CHOICE_LIST) {
      unsigned index;
      if (!choice_index(o, p, (size_t)(end - p), &index)) {
        s = p == end ? VALUE_EMPTY : VALUE_NOT_A_CHOICE;
      } else {
        unsigned *dest = o->dest;
        bool seen = false;
        for (size_t i = 0; i < n; i++) seen = seen || dest[i] == index;
        if (!seen && n == o->max_items) s = VALUE_TOO_MANY;
        if (!seen && s == VALUE_OK) dest[n++] = index;
      }
    } else {
      double v;
      s = n == o->max_items ? VALUE_TOO_MANY : parse_double_span(o, p, end, &v);
      if (s == VALUE_OK) ((double *)o->dest)[n++] = v;
    }
    if (s != VALUE_OK) return s;
    if (!*end) break;
    p = end + 1;
  }
  *o->n_items = n;
  return VALUE_OK;
}

/* Parse `text` into o->dest; prints the error (about `text`) itself. */
static int set_value(FILE *err, const char *prog, const bk_cli_opt *o,
                     const char *text) {
  value_status s = VALUE_OK;
  if (!text[0] && o->kind != BK_CLI_KIND_FLAG)
    return value_error(err, prog, o, text, value_problem(VALUE_EMPTY));
  switch (o->kind) {
    case BK_CLI_KIND_FLAG:
      *(bool *)o->dest = true;
      break;
    case BK_CLI_KIND_U64:
    case BK_CLI_KIND_I64:
      s = parse_integer(o, text, o->dest);
      break;
    case BK_CLI_KIND_UNSIGNED: {
      uint64_t v;
      s = parse_integer(o, text, &v);
      if (s == VALUE_OK) *(unsigned *)o->dest = (unsigned)v; /* <= u_max */
      break;
    }
    case BK_CLI_KIND_DOUBLE:
      s = parse_double_span(o, text, text + strlen(text), o->dest);
      break;
    case BK_CLI_KIND_STRING:
      *(const char **)o->dest = text;
      break;
    case BK_CLI_KIND_CHOICE:
      if (!choice_index(o, text, strlen(text), o->dest)) s = VALUE_NOT_A_CHOICE;
      break;
    case BK_CLI_KIND_CHOICE_LIST:
    case BK_CLI_KIND_DOUBLE_LIST: {
      const char *bad = text;
      size_t bad_len = 0;
      s = parse_list(o, text, &bad, &bad_len);
      if (s == VALUE_TOO_MANY) {
        char problem[64];
        snprintf(problem, sizeof problem, "has more than %zu items",
                 o->max_items);
        return value_error(err, prog, o, text, problem);
      }
      if (s != VALUE_OK) {
        char allowed[TEXT_CAP];
        describe_allowed(o, allowed, sizeof allowed);
        return bk_cli_usage_error(err, prog,
                                  "--%s: '%s': item '%.*s' %s; "
                                  "expected %s",
                                  o->name, text, (int)bad_len, bad,
                                  value_problem(s), allowed);
      }
      break;
    }
    case BK_CLI_KIND_CUSTOM:
      if (!o->parse(text, o->dest)) s = VALUE_INVALID;
      break;
  }
  if (s != VALUE_OK) return value_error(err, prog, o, text, value_problem(s));
  return 0;
}

static int set_default(FILE *err, const char *prog, const bk_cli_opt *o) {
  switch (o->kind) {
    case BK_CLI_KIND_FLAG:
      *(bool *)o->dest = false;
      return 0;
    case BK_CLI_KIND_U64:
      *(uint64_t *)o->dest = o->u_def;
      return 0;
    case BK_CLI_KIND_UNSIGNED:
      *(unsigned *)o->dest = (unsigned)o->u_def;
      return 0;
    case BK_CLI_KIND_I64:
      *(int64_t *)o->dest = o->i_def;
      return 0;
    case BK_CLI_KIND_DOUBLE:
      *(double *)o->dest = o->d_def;
      return 0;
    case BK_CLI_KIND_STRING:
      *(const char **)o->dest = o->s_def;
      return 0;
    default:
      if (o->kind != BK_CLI_KIND_CHOICE && o->kind != BK_CLI_KIND_CUSTOM)
        *o->n_items = 0;
      /* A bad default is a bug in the table, not the user's doing. */
      if (o->s_def && set_value(NULL, prog, o, o->s_def))
        return bk_cli_usage_error(err, prog,
                                  "the built-in default of --%s, '%s', is not "
                                  "valid (a bug)",
                                  o->name, o->s_def);
      return 0;
  }
}

/* ---- suggestions --------------------------------------------------------- */

/* Levenshtein distance of two short strings (each < SUGGEST_MAX). */
static size_t edit_distance(const char *a, size_t la, const char *b,
                            size_t lb) {
  size_t row[SUGGEST_MAX + 1];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t above = row[j];
      size_t best = diagonal + (a[i - 1] != b[j - 1]);
      if (above + 1 < best) best = above + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diagonal = above;
    }
  }
  return row[lb];
}

/* The option `name` most likely meant: the only one it is a prefix of, else
 * the nearest within 2 edits; NULL if none. */
static const char *suggest(const bk_cli_command *cmd, const char *name,
                           size_t len) {
  if (len == 0 || len >= SUGGEST_MAX) return NULL;
  const char *prefix_of = NULL;
  size_t n_prefix = 0;
  const char *nearest = NULL;
  size_t nearest_distance = 3;
  for (size_t i = 0; i < cmd->n_opts; i++) {
    const char *candidate = cmd->opts[i].name;
    size_t lc = strlen(candidate);
    if (lc >= SUGGEST_MAX) continue;
    if (lc > len && strncmp(candidate, name, len) == 0) {
      prefix_of = candidate;
      n_prefix++;
    }
    size_t d = edit_distance(name, len, candidate, lc);
    if (d < nearest_distance) {
      nearest_distance = d;
      nearest = candidate;
    }
  }
  return n_prefix == 1 ? prefix_of : nearest;
}

/* ---- parsing ------------------------------------------------------------- */

static const bk_cli_opt *find_option(const bk_cli_command *cmd,
                                     const char *name, size_t len) {
  for (size_t i = 0; i < cmd->n_opts; i++)
    if (strlen(cmd->opts[i].name) == len &&
        strncmp(cmd->opts[i].name, name, len) == 0)
      return &cmd->opts[i];
  return NULL;
}

static int unknown_option(FILE *err, const bk_cli_command *cmd,
                          const char *arg) {
  if (strncmp(arg, "--", 2) != 0)
    return bk_cli_usage_error(err, cmd->prog, "unknown option '%s'", arg);
  const char *name = arg + 2;
  size_t len = strcspn(name, "=");
  const char *guess = suggest(cmd, name, len);
  if (guess)
    return bk_cli_usage_error(err, cmd->prog,
                              "unknown option '%.*s' (did you mean --%s?)",
                              (int)(len + 2), arg, guess);
  return bk_cli_usage_error(err, cmd->prog, "unknown option '%.*s'",
                            (int)(len + 2), arg);
}

int bk_cli_parse(const bk_cli_command *cmd, int argc, char **argv, FILE *out,
                 FILE *err) {
  for (size_t i = 0; i < cmd->n_opts; i++) {
    if (cmd->opts[i].given) *cmd->opts[i].given = false;
    if (set_default(err, cmd->prog, &cmd->opts[i])) return BK_CLI_USAGE;
  }
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      bk_cli_help(cmd, out);
      return 0;
    }
    if (arg[0] != '-' || arg[1] == '\0')
      return bk_cli_usage_error(err, cmd->prog,
                                "unexpected argument '%s' (options start "
                                "with --)",
                                arg);
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    const bk_cli_opt *o =
        strncmp(arg, "--", 2) == 0 ? find_option(cmd, name, len) : NULL;
    if (!o) return unknown_option(err, cmd, arg);
    if (o->given) *o->given = true;
    const char *value = name[len] == '=' ? name + len + 1 : NULL;
    if (o->kind == BK_CLI_KIND_FLAG) {
      if (value)
        return bk_cli_usage_error(
            err, cmd->prog, "--%s takes no value, got '%s'", o->name, value);
      *(bool *)o->dest = true;
      continue;
    }
    if (!value) {
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) {
        char allowed[TEXT_CAP];
        describe_allowed(o, allowed, sizeof allowed);
        return bk_cli_usage_error(err, cmd->prog, "--%s needs a value: %s",
                                  o->name, allowed);
      }
      value = argv[++i];
    }
    if (set_value(err, cmd->prog, o, value)) return BK_CLI_USAGE;
  }
  return BK_CLI_CONTINUE;
}

/* ---- help ---------------------------------------------------------------- */

/* Print `text` word-wrapped from column `column` (the cursor is there). */
static void print_wrapped(FILE *out, const char *text, size_t column) {
  size_t at = column;
  bool first = true;
  for (const char *p = text; *p;) {
    while (*p == ' ') p++;
    size_t word = strcspn(p, " ");
    if (word == 0) break;
    if (!first && at + 1 + word > HELP_WIDTH) {
      fprintf(out, "\n%*s", (int)column, "");
      at = column;
      first = true;
    }
    fprintf(out, "%s%.*s", first ? "" : " ", (int)word, p);
    at += word + (first ? 0 : 1);
    first = false;
    p += word;
  }
  fputc('\n', out);
}

void bk_cli_help(const bk_cli_command *cmd, FILE *out) {
  fprintf(out, "usage: %s%s%s [options]\n", cmd->prog, cmd->args ? " " : "",
          cmd->args ? cmd->args : "");
  if (cmd->description) fprintf(out, "\n%s", cmd->description);
  if (cmd->n_opts == 0) fprintf(out, "\noptions:\n");
  for (size_t i = 0; i < cmd->n_opts; i++) {
    const bk_cli_opt *o = &cmd->opts[i];
    if (o->section)
      fprintf(out, "\n%s:\n", o->section);
    else if (i == 0)
      fprintf(out, "\noptions:\n");
    char head[128], text[3 * TEXT_CAP], allowed[TEXT_CAP], def[TEXT_CAP];
    int head_len =
        snprintf(head, sizeof head, "  --%s%s%s", o->name,
                 o->metavar ? " " : "", o->metavar ? o->metavar : "");
    snprintf(text, sizeof text, "%s", o->help);
    if (o->kind != BK_CLI_KIND_FLAG) {
      describe_allowed(o, allowed, sizeof allowed);
      if (describe_default(o, def, sizeof def))
        append(text, sizeof text, " (default %s; %s)", def, allowed);
      else
        append(text, sizeof text, " (%s)", allowed);
    }
    if (head_len + 1 >= HELP_COLUMN)
      fprintf(out, "%s\n%*s", head, HELP_COLUMN, "");
    else
      fprintf(out, "%-*s", HELP_COLUMN, head);
    print_wrapped(out, text, HELP_COLUMN);
  }
  fprintf(out, "%-*s", HELP_COLUMN, "  -h, --help");
  print_wrapped(out, "this text", HELP_COLUMN);
  if (cmd->epilog) fprintf(out, "\n%s", cmd->epilog);
}

/* ---- subcommands --------------------------------------------------------- */

static void dispatch_usage(const bk_cli_dispatcher *d, FILE *out) {
  fprintf(out, "usage: %s <%s> [options]\n       %s <%s> --help\n", d->prog,
          d->noun, d->prog, d->noun);
  if (d->extra_usage) fprintf(out, "       %s\n", d->extra_usage);
  fprintf(out, "\n%ss:\n", d->noun);
  size_t width = 0;
  for (size_t i = 0; i < d->n_subs; i++)
    if (strlen(d->subs[i].name) > width) width = strlen(d->subs[i].name);
  for (size_t i = 0; i < d->n_subs; i++) {
    fprintf(out, "  %-*s  ", (int)width, d->subs[i].name);
    print_wrapped(out, d->subs[i].summary, width + 4);
  }
}

int bk_cli_dispatch(const bk_cli_dispatcher *d, int argc, char **argv) {
  if (argc < 2) {
    dispatch_usage(d, stderr);
    return BK_CLI_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
      strcmp(name, "help") == 0) {
    dispatch_usage(d, stdout);
    return 0;
  }
  for (size_t i = 0; i < d->n_subs; i++)
    if (strcmp(name, d->subs[i].name) == 0)
      return d->subs[i].run(argc - 1, argv + 1);
  fprintf(stderr, "%s: unknown %s '%s'\n\n", d->prog, d->noun, name);
  dispatch_usage(d, stderr);
  return BK_CLI_USAGE;
}
