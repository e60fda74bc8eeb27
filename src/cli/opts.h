/* SPDX-License-Identifier: MIT */
/*
 * Private to the `bloomkit` command: one option parser for every subcommand.
 * A subcommand lists its options in a table (name, kind, default, range,
 * help, where the value goes); bk_cli_parse writes the defaults, parses argv
 * into the destinations and prints the errors; bk_cli_help prints --help from
 * the same table, so the text, the defaults and the ranges cannot drift
 * apart. bk_cli_dispatch does the same for a level of subcommands
 * (`bloomkit <subcommand>`, `bloomkit sim <simulation>`).
 *
 * Syntax: `--name value` or `--name=value`; flags take no value; `-h` and
 * `--help` print the help; later occurrences of an option replace earlier
 * ones. A value given as a separate argument may not start with "--" (that
 * is the next option: the value is missing); `--name=--x` passes it anyway.
 * Usage errors go to the error stream as one line naming the option and the
 * value given, and what is allowed, then `try '<prog> --help'`; the exit
 * status of a usage error is 2 (BK_CLI_USAGE).
 */
#ifndef BLOOMKIT_SRC_CLI_OPTS_H
#define BLOOMKIT_SRC_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* bk_cli_parse's result when the command should go on and run. */
#define BK_CLI_CONTINUE (-1)
/* The exit status of a usage error. */
#define BK_CLI_USAGE 2

typedef enum bk_cli_kind {
  BK_CLI_KIND_FLAG,        /* bool; no value; default false */
  BK_CLI_KIND_U64,         /* uint64_t in [u_min, u_max], decimal */
  BK_CLI_KIND_UNSIGNED,    /* unsigned in [u_min, u_max <= UINT_MAX] */
  BK_CLI_KIND_I64,         /* int64_t in [i_min, i_max], decimal, signed */
  BK_CLI_KIND_DOUBLE,      /* finite double in [d_min, d_max] (see d_open) */
  BK_CLI_KIND_STRING,      /* const char * into argv; not empty */
  BK_CLI_KIND_CHOICE,      /* unsigned: the index of one of `choices` */
  BK_CLI_KIND_CHOICE_LIST, /* unsigned[]: indices of a comma-list of choices */
  BK_CLI_KIND_DOUBLE_LIST, /* double[]: a comma-list of numbers in range */
  BK_CLI_KIND_CUSTOM,      /* parsed by `parse` */
} bk_cli_kind;

/* d_open bits: the bound itself is excluded. */
#define BK_CLI_OPEN_MIN 1u
#define BK_CLI_OPEN_MAX 2u

/*
 * One option. Declare tables with the BK_CLI_* macros below rather than by
 * hand. Defaults are written to `dest` before parsing and need not be in
 * range: a default outside it stands for "not given" (0 for "automatic"),
 * and `default_text` then says what it means in --help.
 */
typedef struct bk_cli_opt {
  const char *name; /* without the leading "--" */
  bk_cli_kind kind;
  void *dest;          /* the type the kind says */
  const char *metavar; /* the value's placeholder in --help ("N") */
  const char *help;    /* one sentence, no trailing period */
  uint64_t u_min, u_max, u_def;
  int64_t i_min, i_max, i_def;
  double d_min, d_max, d_def; /* DOUBLE_LIST: each item's range */
  unsigned d_open;            /* BK_CLI_OPEN_* */
  /* STRING, CHOICE, the lists and CUSTOM: the default as it would be typed
   * (parsed like a given value; NULL: no default, dest left alone). */
  const char *s_def;
  const char *const *choices; /* CHOICE*: NULL-terminated names */
  size_t *n_items;            /* lists: number of items stored in dest */
  size_t max_items;           /* lists: capacity of dest */
  /* CUSTOM: parse `text` into dest; false when it is not valid. */
  bool (*parse)(const char *text, void *dest);
  const char *allowed;      /* STRING, CUSTOM: what a value must be */
  const char *default_text; /* replaces the printed default */
  const char *section;      /* a --help heading printed before this option */
  bool *given;              /* optional: set true when the option is given */
} bk_cli_opt;

/*
 * The declaration macros. The last argument is the help text, optionally
 * followed by more designated initializers for the optional fields, e.g.
 * `BK_CLI_U64("ops", &o.ops, 1000, 1, MAX, "N", "ops", .given = &set_ops)`.
 * The cast-free `1 ? (dest) : (T *)0` makes the compiler check the type of
 * the destination.
 */
#define BK_CLI_DEST_(type, dest) ((void *)(1 ? (dest) : (type *)0))

#define BK_CLI_FLAG(name_, dest_, ...)                     \
  {                                                        \
    .name = (name_), .kind = BK_CLI_KIND_FLAG,             \
    .dest = BK_CLI_DEST_(bool, dest_), .help = __VA_ARGS__ \
  }

/* BK_CLI_U64 and BK_CLI_UNSIGNED (name, dest, default, min, max, metavar,
 * help...): uint64_t and unsigned destinations, the same fields. */
#define BK_CLI_UINT_(kind_, type_, name_, dest_, def_, min_, max_, metavar_,  \
                     ...)                                                     \
  {                                                                           \
    .name = (name_), .kind = (kind_), .dest = BK_CLI_DEST_(type_, dest_),     \
    .u_def = (def_), .u_min = (min_), .u_max = (max_), .metavar = (metavar_), \
    .help = __VA_ARGS__                                                       \
  }
#define BK_CLI_U64(...) BK_CLI_UINT_(BK_CLI_KIND_U64, uint64_t, __VA_ARGS__)
#define BK_CLI_UNSIGNED(...) \
  BK_CLI_UINT_(BK_CLI_KIND_UNSIGNED, unsigned, __VA_ARGS__)

#define BK_CLI_I64(name_, dest_, def_, min_, max_, metavar_, ...)           \
  {                                                                         \
    .name = (name_), .kind = BK_CLI_KIND_I64,                               \
    .dest = BK_CLI_DEST_(int64_t, dest_), .i_def = (def_), .i_min = (min_), \
    .i_max = (max_), .metavar = (metavar_), .help = __VA_ARGS__             \
  }

/* Closed range [min, max]; add `.d_open = BK_CLI_OPEN_MIN` etc. to exclude
 * a bound. */
#define BK_CLI_DOUBLE(name_, dest_, def_, min_, max_, metavar_, ...)       \
  {                                                                        \
    .name = (name_), .kind = BK_CLI_KIND_DOUBLE,                           \
    .dest = BK_CLI_DEST_(double, dest_), .d_def = (def_), .d_min = (min_), \
    .d_max = (max_), .metavar = (metavar_), .help = __VA_ARGS__            \
  }

#define BK_CLI_STRING(name_, dest_, def_, allowed_, metavar_, ...)    \
  {                                                                   \
    .name = (name_), .kind = BK_CLI_KIND_STRING,                      \
    .dest = BK_CLI_DEST_(const char *, dest_), .s_def = (def_),       \
    .allowed = (allowed_), .metavar = (metavar_), .help = __VA_ARGS__ \
  }

#define BK_CLI_CHOICE(name_, dest_, def_, choices_, metavar_, ...)    \
  {                                                                   \
    .name = (name_), .kind = BK_CLI_KIND_CHOICE,                      \
    .dest = BK_CLI_DEST_(unsigned, dest_), .s_def = (def_),           \
    .choices = (choices_), .metavar = (metavar_), .help = __VA_ARGS__ \
  }

/* dest_: an unsigned array of max_ entries; *n_: how many were given. An
 * item listed twice counts once (the first place stays). */
#define BK_CLI_CHOICE_LIST(name_, dest_, n_, max_, def_, choices_, metavar_, \
                           ...)                                              \
  {                                                                          \
    .name = (name_), .kind = BK_CLI_KIND_CHOICE_LIST,                        \
    .dest = BK_CLI_DEST_(unsigned, dest_), .n_items = (n_),                  \
    .max_items = (max_), .s_def = (def_), .choices = (choices_),             \
    .metavar = (metavar_), .help = __VA_ARGS__                               \
  }

/* dest_: a double array of max_ entries, each item in [min_, max_]. */
#define BK_CLI_DOUBLE_LIST(name_, dest_, n_, max_items_, def_, min_, max_, \
                           metavar_, ...)                                  \
  {                                                                        \
    .name = (name_), .kind = BK_CLI_KIND_DOUBLE_LIST,                      \
    .dest = BK_CLI_DEST_(double, dest_), .n_items = (n_),                  \
    .max_items = (max_items_), .s_def = (def_), .d_min = (min_),           \
    .d_max = (max_), .metavar = (metavar_), .help = __VA_ARGS__            \
  }

/* parse_(text, dest) -> bool; allowed_ says what is valid (for errors). */
#define BK_CLI_CUSTOM(name_, dest_, def_, parse_, allowed_, metavar_, ...) \
  {                                                                        \
    .name = (name_), .kind = BK_CLI_KIND_CUSTOM, .dest = (dest_),          \
    .s_def = (def_), .parse = (parse_), .allowed = (allowed_),             \
    .metavar = (metavar_), .help = __VA_ARGS__                             \
  }

/* A command's options and its --help text around them. */
typedef struct bk_cli_command {
  const char *prog;        /* "bloomkit sim counters": messages, usage */
  const char *description; /* paragraph after the usage line, or NULL */
  const char *epilog;      /* text after the options, or NULL */
  bk_cli_opt *opts;
  size_t n_opts;
  const char *args; /* positional arguments for the usage line ("FILE
                       [KEY...]"), or NULL */
} bk_cli_command;

/*
 * Write every option's default to its destination, then parse
 * argv[1..argc-1] into the destinations. Returns BK_CLI_CONTINUE when the
 * command should run; 0 after printing the help to `out` (-h, --help);
 * BK_CLI_USAGE after printing a usage error to `err`. Destinations may hold
 * a mix of defaults and given values after an error. Strings point into
 * argv. Cost: O(argc * n_opts).
 */
int bk_cli_parse(const bk_cli_command *cmd, int argc, char **argv, FILE *out,
                 FILE *err);

/* bk_cli_parse for a command that needs no epilog: its name, description
 * and option table, on stdout and stderr. */
int bk_cli_parse_options(const char *prog, const char *description,
                         bk_cli_opt *opts, size_t n_opts, int argc,
                         char **argv);

/* Print the usage line, the description, one line per option (help,
 * default, what is allowed; wrapped at 80 columns) and the epilog. */
void bk_cli_help(const bk_cli_command *cmd, FILE *out);

/* A check the table cannot express (a combination of options): print
 * "<prog>: <message>" and the --help hint to `err`; returns BK_CLI_USAGE. */
int bk_cli_usage_error(FILE *err, const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The end of a subcommand: flush `out` (stdout) and check it for an
 * earlier write error; on either, print "<prog>: error writing standard
 * output" to `err` and return 1, else return `status` unchanged. */
int bk_cli_flush_output(const char *prog, int status, FILE *out, FILE *err);

/* One level of subcommands. */
typedef struct bk_cli_subcommand {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* argv[0] = name; returns exit status */
} bk_cli_subcommand;

typedef struct bk_cli_dispatcher {
  const char *prog;        /* "bloomkit sim" */
  const char *noun;        /* "simulation": usage and errors */
  const char *extra_usage; /* one more usage line, or NULL */
  const bk_cli_subcommand *subs;
  size_t n_subs;
} bk_cli_dispatcher;

/* Run the subcommand argv[1] names with argv + 1, or print the usage (to
 * stdout for -h, --help and help: 0; else to stderr: BK_CLI_USAGE). */
int bk_cli_dispatch(const bk_cli_dispatcher *d, int argc, char **argv);

#endif
