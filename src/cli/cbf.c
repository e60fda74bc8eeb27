/* SPDX-License-Identifier: MIT */
/*
 * `bloomkit cbf`: a file-backed scalable counting filter (bk_scbf) from the
 * shell. `bloomkit cbf <action> FILE [KEY...] [options]`:
 *
 *   create FILE --capacity N [--error P] [--counter-bits B] ...
 *   add FILE [KEY... --id N]     without KEYs: lines "ID KEY" on stdin
 *   remove FILE [KEY... --id N]  the same; a key not there: exit 1
 *   check FILE [KEY...]          without KEYs: one key per stdin line;
 *                                prints "present<TAB>KEY" or "absent<TAB>KEY";
 *                                exit 0 all present, 1 one absent (as grep)
 *   info FILE                    parameters, fill, saturation, seqnums, fpp,
 *                                whether the counters were verified at open
 *   flush FILE                   msync, checksums, disk_seqnum = mem_seqnum
 *   verify FILE                  counter sums against k times the key count
 *
 * add, remove and check take --flush too. Exit status: 0 success, 1 a
 * failure while running (the file cannot be opened, is damaged, a remove
 * found nothing, a filter is full, check found a key absent, verify found
 * counters inconsistent), 2 a usage error. A file closed cleanly has its
 * counters checked against their checksums when it is opened (damaged:
 * exit 1); one that was not (a crash, or an old file) opens unverified,
 * which every action but info and verify notes on stderr. A key on stdin is
 * the rest of the line after the id and one space or tab (it may hold
 * spaces); the line feed (and a carriage return before it) is not part of
 * it.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "bloomkit/cbf.h"
#include "cli/cli.h"
#include "cli/opts.h"

#define PROG "bloomkit cbf"

/* Options that take no value (everything else does). */
static bool is_flag(const char *arg) {
  return strcmp(arg, "--flush") == 0 || strcmp(arg, "-h") == 0 ||
         strcmp(arg, "--help") == 0;
}

/* Split argv (argv[0] = the action) into options (with their values) and
 * positional arguments. "--" ends the options. */
static void split_args(int argc, char **argv, int *n_opt, char **opt_argv,
                       int *n_pos, char **pos) {
  *n_opt = 1;
  opt_argv[0] = argv[0];
  *n_pos = 0;
  bool options = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (options && strcmp(a, "--") == 0) {
      options = false;
    } else if (options && a[0] == '-' && a[1] != 0) {
      opt_argv[(*n_opt)++] = argv[i];
      if (!is_flag(a) && !strchr(a, '=') && i + 1 < argc)
        opt_argv[(*n_opt)++] = argv[++i];
    } else {
      pos[(*n_pos)++] = argv[i];
    }
  }
}

/* The options of a command on one FILE: split argv, parse the options by
 * cmd and require exactly one positional argument, *file. Returns
 * BK_CLI_CONTINUE, or the exit status of --help or a usage error. */
static int parse_one_file(const bk_cli_command *cmd, int argc, char **argv,
                          const char **file) {
  char *opt_argv[argc + 1], *pos[argc + 1];
  int n_opt, n_pos;
  split_args(argc, argv, &n_opt, opt_argv, &n_pos, pos);
  int status = bk_cli_parse(cmd, n_opt, opt_argv, stdout, stderr);
  if (status != BK_CLI_CONTINUE) return status;
  if (n_pos != 1)
    return bk_cli_usage_error(stderr, cmd->prog,
                              "expected one FILE, got %d arguments", n_pos);
  *file = pos[0];
  return BK_CLI_CONTINUE;
}

/* msync the file and record disk_seqnum; 1 after saying why it failed. */
static int flush_file(bk_scbf *s, const char *path) {
  bk_status st = bk_scbf_flush(s);
  if (st == BK_OK) return 0;
  fprintf(stderr, PROG ": %s: flush: %s\n", path, bk_strerror(st));
  return 1;
}

#define UNVERIFIED "not closed cleanly: counters unverified"

/* Open FILE; 1 after saying why not. `note`: say on stderr when the file
 * was not closed cleanly. */
static int open_file(const char *path, bk_scbf **out, bool note) {
  bk_status st = bk_scbf_open(out, path, NULL);
  bool verified = true;
  if (st == BK_OK && note && bk_scbf_verified(*out, &verified) == BK_OK &&
      !verified)
    fprintf(stderr, PROG ": %s: " UNVERIFIED " (" PROG " verify %s)\n", path,
            path);
  if (st == BK_OK) return 0;
  const char *why = st == BK_ENOTFOUND  ? "no such file"
                    : st == BK_ECORRUPT ? "not a bloomkit cbf file, or damaged"
                    : st == BK_EVERSION ? "written by a newer bloomkit"
                                        : bk_strerror(st);
  fprintf(stderr, PROG ": %s: %s\n", path, why);
  return 1;
}

static const char *const layout_names[] = {"standard", "blocked", NULL};

static int cmd_create(int argc, char **argv) {
  uint64_t capacity = 0, seed = 0;
  double error = 0.01, growth = 2, tightening = 0.5;
  unsigned bits = 4, max_filters = 32, layout = 0;
  bk_cli_opt opts[] = {
      BK_CLI_U64("capacity", &capacity, 0, 1, (uint64_t)1 << 40, "N",
                 "keys of the first filter (required)", .default_text = "none"),
      BK_CLI_DOUBLE("error", &error, 0.01, 1e-12, 0.5, "P",
                    "compound false positive target"),
      BK_CLI_UNSIGNED("counter-bits", &bits, 4, 4, 32, "B",
                      "bits per counter: 4, 8, 16 or 32"),
      BK_CLI_DOUBLE("growth", &growth, 2, 1, 1000, "G",
                    "capacity ratio of each filter to the one before"),
      /* The file stores r in units of 10^-6: outside [1e-6, 1 - 1e-6] it
       * would round to 0 or 1, which the filter refuses. */
      BK_CLI_DOUBLE("tightening", &tightening, 0.5, 1e-6, 0.999999, "R",
                    "error ratio of each filter to the one before"),
      BK_CLI_UNSIGNED("max-filters", &max_filters, 32, 1, BK_SCBF_FILTERS_MAX,
                      "N", "most filters the file holds"),
      BK_CLI_CHOICE("layout", &layout, "standard", layout_names, "L",
                    "counter layout"),
      BK_CLI_U64("seed", &seed, 0, 0, UINT64_MAX, "S", "hash seed"),
  };
  const bk_cli_command cmd = {
      .prog = PROG " create",
      .description = "Create FILE: an empty scalable counting filter.",
      .opts = opts,
      .n_opts = sizeof opts / sizeof opts[0],
      .args = "FILE",
  };
  const char *file;
  int status = parse_one_file(&cmd, argc, argv, &file);
  if (status != BK_CLI_CONTINUE) return status;
  if (capacity == 0)
    return bk_cli_usage_error(stderr, PROG " create", "--capacity is required");
  if (bits != 4 && bits != 8 && bits != 16 && bits != 32)
    return bk_cli_usage_error(stderr, PROG " create",
                              "--counter-bits: '%u' is not 4, 8, 16 or 32",
                              bits);
  /* Made here with O_EXCL, so a file that appears meanwhile is never
   * taken over; bk_scbf_open then writes the empty file's header. */
  int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      fprintf(stderr, PROG ": %s: already exists\n", file);
    else
      fprintf(stderr, PROG ": %s: %s\n", file, strerror(errno));
    return 1;
  }
  close(fd);
  bk_scbf_config cfg = {.capacity = capacity,
                        .fpp = error,
                        .growth = growth,
                        .tightening = tightening,
                        .counter_bits = bits,
                        .layout = (bk_bloom_layout)layout,
                        .seed = seed,
                        .max_filters = max_filters};
  bk_scbf *s = NULL;
  bk_status st = bk_scbf_open(&s, file, &cfg);
  if (st != BK_OK) unlink(file);
  if (st == BK_EINVAL) {
    fprintf(stderr,
            PROG ": %s: --capacity %" PRIu64
                 " at --error %g is "
                 "larger than a filter can be\n",
            file, capacity, error);
    return 1;
  }
  if (st != BK_OK) {
    fprintf(stderr, PROG ": %s: %s\n", file, bk_strerror(st));
    return 1;
  }
  st = bk_scbf_flush(s);
  bk_scbf_destroy(s);
  if (st != BK_OK) {
    fprintf(stderr, PROG ": %s: %s\n", file, bk_strerror(st));
    return 1;
  }
  return 0;
}

enum action { ADD, REMOVE, CHECK };

/*
 * Why a remove found nothing. A key is removed from the one filter whose
 * id range holds the id given (ids only choose the filter: inside it any
 * id of its range will do). So either no filter holds the id (no key was
 * added with an id that high), or that filter lacks the key: it was never
 * added, or only under an id of another filter.
 */
static void explain_not_removed(const bk_scbf *s, const char *key, size_t len,
                                uint64_t id) {
  bk_scbf_info info;
  bk_scbf_filter_info f = {0};
  unsigned holder = UINT_MAX;
  uint64_t top = 0; /* ids below it have a filter */
  if (bk_scbf_info_get(s, &info) == BK_OK) {
    for (unsigned i = 0; i < info.n_filters; i++) {
      bk_scbf_filter_info fi;
      if (bk_scbf_filter_info_get(s, i, &fi) != BK_OK) continue;
      top = fi.has_ids ? fi.last_id + 1 : fi.first_id;
      if (fi.has_ids && id >= fi.first_id && id <= fi.last_id) {
        holder = i;
        f = fi;
      }
    }
  }
  bool present = false;
  (void)bk_scbf_contains(s, key, len, &present);
  if (holder == UINT_MAX && present)
    fprintf(stderr,
            PROG " remove: '%.*s' (id %" PRIu64
                 ") not removed: no filter holds id %" PRIu64
                 " (ids so far: 0-%" PRIu64
                 "); the key is there: give the id it was added with\n",
            (int)len, key, id, id, top ? top - 1 : 0);
  else if (holder == UINT_MAX)
    fprintf(stderr,
            PROG " remove: '%.*s' (id %" PRIu64
                 ") is not there, and no filter holds id %" PRIu64
                 " (ids so far: 0-%" PRIu64 ")\n",
            (int)len, key, id, id, top ? top - 1 : 0);
  else if (present)
    fprintf(stderr,
            PROG " remove: '%.*s' (id %" PRIu64
                 ") not removed: filter %u (ids %" PRIu64 "-%" PRIu64
                 "), which holds id %" PRIu64
                 ", does not have it; it is there under an id of another "
                 "filter\n",
            (int)len, key, id, holder, f.first_id, f.last_id, id);
  else
    fprintf(stderr, PROG " remove: '%.*s' (id %" PRIu64 ") is not there\n",
            (int)len, key, id);
}

/* One key: returns 0, or 1 after a message (remove: not found; check:
 * absent, without a message). */
static int apply(bk_scbf *s, enum action a, const char *key, size_t len,
                 uint64_t id, const char *path) {
  bk_status st = BK_OK;
  if (a == ADD) {
    st = bk_scbf_add(s, key, len, id);
  } else if (a == REMOVE) {
    st = bk_scbf_remove(s, key, len, id);
    if (st == BK_ENOTFOUND) {
      explain_not_removed(s, key, len, id);
      return 1;
    }
  } else {
    bool found = false;
    st = bk_scbf_contains(s, key, len, &found);
    if (st == BK_OK) {
      printf("%s\t%.*s\n", found ? "present" : "absent", (int)len, key);
      if (!found) return 1;
    }
  }
  if (st == BK_EFULL) {
    fprintf(stderr, PROG ": %s: full (every filter it may hold is open)\n",
            path);
    return 1;
  }
  if (st != BK_OK) {
    fprintf(stderr, PROG ": %s: %s\n", path, bk_strerror(st));
    return 1;
  }
  return 0;
}

static int cmd_keys(int argc, char **argv, enum action a) {
  static const char *const names[] = {"add", "remove", "check"};
  char prog[64];
  snprintf(prog, sizeof prog, PROG " %s", names[a]);
  uint64_t id = 0;
  bool id_given = false, flush = false;
  bk_cli_opt opts[] = {
      BK_CLI_U64("id", &id, 0, 0, UINT64_MAX - 1, "N",
                 "the id of the keys given as arguments", .given = &id_given,
                 .default_text = "none"),
      BK_CLI_FLAG("flush", &flush, "flush the file afterwards"),
  };
  const bk_cli_command cmd = {
      .prog = prog,
      .description =
          a == CHECK ? "Check keys (arguments, or one per stdin line).\nExit "
                       "status: 0 every key present, 1 a key absent (or a "
                       "failure),\n2 a usage error."
                     : "Keys given as arguments take --id; without "
                       "arguments, stdin lines are \"ID KEY\".",
      .opts = opts,
      .n_opts = a == CHECK ? 1 : 2,
      .args = "FILE [KEY...]",
  };
  bk_cli_opt check_opts[] = {opts[1]};
  bk_cli_command check_cmd = cmd;
  if (a == CHECK) check_cmd.opts = check_opts;
  char *opt_argv[argc + 1], *pos[argc + 1];
  int n_opt, n_pos;
  split_args(argc, argv, &n_opt, opt_argv, &n_pos, pos);
  int status = bk_cli_parse(&check_cmd, n_opt, opt_argv, stdout, stderr);
  if (status != BK_CLI_CONTINUE) return status;
  if (n_pos < 1) return bk_cli_usage_error(stderr, prog, "FILE is missing");
  if (a != CHECK && n_pos > 1 && !id_given)
    return bk_cli_usage_error(stderr, prog,
                              "keys given as arguments need --id");
  if (a != CHECK && n_pos == 1 && id_given)
    return bk_cli_usage_error(stderr, prog,
                              "--id is for keys given as arguments");
  bk_scbf *s = NULL;
  if (open_file(pos[0], &s, true) != 0) return 1;
  int result = 0;
  if (n_pos > 1) {
    for (int i = 1; i < n_pos && result != 2; i++)
      result |= apply(s, a, pos[i], strlen(pos[i]), id, pos[0]);
  } else {
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned long lineno = 0;
    while ((got = getline(&line, &cap, stdin)) >= 0) {
      lineno++;
      size_t len = (size_t)got;
      if (len && line[len - 1] == '\n') len--;
      if (len && line[len - 1] == '\r') len--;
      const char *key = line;
      uint64_t line_id = 0;
      if (a != CHECK) {
        char *end;
        errno = 0;
        /* Digits only: strtoull alone would skip blanks and take a sign,
         * so "\t-2" would become 2^64 - 2. */
        unsigned long long v =
            isdigit((unsigned char)line[0]) ? strtoull(line, &end, 10) : 0;
        if (!isdigit((unsigned char)line[0]) || end == line || errno ||
            (*end != ' ' && *end != '\t') || v == UINT64_MAX) {
          fprintf(stderr,
                  "%s: stdin line %lu: expected \"ID KEY\" with ID "
                  "an integer from 0 to 18446744073709551614\n",
                  prog, lineno);
          result = 1;
          break;
        }
        line_id = v;
        key = end + 1;
        len -= (size_t)(key - line);
      }
      result |= apply(s, a, key, len, line_id, pos[0]);
    }
    free(line);
  }
  if (flush && flush_file(s, pos[0])) result = 1;
  bk_scbf_destroy(s);
  return result;
}

static int cmd_add(int argc, char **argv) {
  return cmd_keys(argc, argv, ADD);
}
static int cmd_remove(int argc, char **argv) {
  return cmd_keys(argc, argv, REMOVE);
}
static int cmd_check(int argc, char **argv) {
  return cmd_keys(argc, argv, CHECK);
}

/* verify: what bk_scbf_verify found, one line per filter; 0 consistent,
 * 1 not. */
static int verify_file(bk_scbf *s, const char *file) {
  bk_scbf_verify_result r;
  bk_status st = bk_scbf_verify(s, &r);
  if (st != BK_OK && st != BK_ECORRUPT) {
    fprintf(stderr, PROG ": %s: %s\n", file, bk_strerror(st));
    return 1;
  }
  printf("file\t%s\ncounters\t%s\n", file,
         r.verified ? "verified at open (checksums matched)"
                    : UNVERIFIED " (no checksum to check)");
  if (r.interrupted)
    printf(
        "last_write\tinterrupted (mem_seqnum 0): a sum down to k * "
        "(keys - 1) is allowed\n");
  for (unsigned i = 0; i < r.n_filters; i++) {
    const bk_scbf_filter_check *c = &r.filters[i];
    printf("filter %u\tkeys %" PRIu64 " k %u counter_sum %" PRIu64
           " expected %s%" PRIu64 " saturated %" PRIu64 "%s: %s\n",
           i, c->count, c->k, c->sum, c->saturated ? "at most " : "",
           c->expected_sum, c->saturated, c->stray_bits ? " stray_bits" : "",
           c->consistent ? "consistent" : "INCONSISTENT");
  }
  if (r.n_inconsistent == 0) {
    printf("result\tconsistent (%u filter%s)\n", r.n_filters,
           r.n_filters == 1 ? "" : "s");
    return 0;
  }
  printf("result\tdamaged: %u of %u filters inconsistent\n", r.n_inconsistent,
         r.n_filters);
  fprintf(stderr, PROG ": %s: damaged: counters do not match the key count\n",
          file);
  return 1;
}

enum file_action { INFO, FLUSH, VERIFY };

/* info, flush and verify: FILE alone. */
static int cmd_file_only(int argc, char **argv, enum file_action a) {
  static const char *const names[] = {"info", "flush", "verify"};
  static const char *const descriptions[] = {
      "Print FILE's parameters, fill, saturated counters, seqnums, estimated\n"
      "fpp, and whether its counters were verified at open.",
      "msync FILE, store its checksums, then record disk_seqnum.",
      "Check each filter's counters against its key count: they sum to\n"
      "k * keys (at most that with saturated counters), and no bit is set\n"
      "where no write puts one. For a file not closed cleanly (after a\n"
      "crash), whose checksums cannot be checked. Reads every counter.\n"
      "Exit status: 0 consistent, 1 damaged (or a failure), 2 a usage error.",
  };

  char prog[64];
  snprintf(prog, sizeof prog, PROG " %s", names[a]);
  const bk_cli_command cmd = {
      .prog = prog,
      .description = descriptions[a],
      .args = "FILE",
  };
  const char *file;
  int status = parse_one_file(&cmd, argc, argv, &file);
  if (status != BK_CLI_CONTINUE) return status;
  bk_scbf *s = NULL;
  if (open_file(file, &s, a == FLUSH) != 0) return 1;
  int result = 0;
  if (a != INFO) {
    result = a == FLUSH ? flush_file(s, file) : verify_file(s, file);
    bk_scbf_destroy(s);
    return result;
  }
  bool verified = false;
  (void)bk_scbf_verified(s, &verified);
  bk_scbf_info in;
  bk_status st = bk_scbf_info_get(s, &in);
  if (st != BK_OK) {
    fprintf(stderr, PROG ": %s: %s\n", file, bk_strerror(st));
    bk_scbf_destroy(s);
    return 1;
  }
  printf("file\t%s\nfile_size\t%" PRIu64 "\n", file, in.file_size);
  printf("counters\t%s\n", verified ? "verified at open (checksums matched)"
                                    : UNVERIFIED " (" PROG " verify)");
  printf("capacity\t%" PRIu64 "\nerror\t%g\ngrowth\t%g\ntightening\t%g\n",
         in.capacity, in.fpp, in.growth, in.tightening);
  printf("counter_bits\t%u\nlayout\t%s\nhash\t%s\nseed\t%" PRIu64 "\n",
         in.counter_bits, layout_names[in.layout ? 1 : 0],
         bk_hash_alg_name(in.hash_alg), in.seed);
  printf("filters\t%u of %u\nkeys\t%" PRIu64 "\ncounters\t%" PRIu64
         "\nnonzero\t%" PRIu64 "\nsaturated\t%" PRIu64 "\n",
         in.n_filters, in.max_filters, in.count, in.m_counters, in.nonzero,
         in.saturated);
  printf("estimated_fpp\t%.6g\nseqnum\t%" PRIu64 "\nmem_seqnum\t%" PRIu64
         "\ndisk_seqnum\t%" PRIu64 "\n",
         in.estimated_fpp, in.seqnum, in.mem_seqnum, in.disk_seqnum);
  for (unsigned i = 0; i < in.n_filters; i++) {
    bk_scbf_filter_info f;
    if (bk_scbf_filter_info_get(s, i, &f) != BK_OK) continue;
    printf("filter %u\tcapacity %" PRIu64 " keys %" PRIu64 " ids ", i,
           f.capacity, f.count);
    if (f.has_ids)
      printf("%" PRIu64 "-%" PRIu64, f.first_id, f.last_id);
    else
      printf("none (from %" PRIu64 ")", f.first_id);
    printf(" m %" PRIu64 " k %u fpp %.3g fill_fpp %.3g saturated %" PRIu64 "\n",
           f.m_counters, f.k, f.fpp, f.fill_fpp, f.saturated);
  }
  bk_scbf_destroy(s);
  return 0;
}

static int cmd_info(int argc, char **argv) {
  return cmd_file_only(argc, argv, INFO);
}
static int cmd_flush(int argc, char **argv) {
  return cmd_file_only(argc, argv, FLUSH);
}
static int cmd_verify(int argc, char **argv) {
  return cmd_file_only(argc, argv, VERIFY);
}

int bk_cli_cbf(int argc, char **argv) {
  static const bk_cli_subcommand actions[] = {
      {"create", "create a filter file", cmd_create},
      {"add", "add keys with ids", cmd_add},
      {"remove", "remove keys with the ids they were added with", cmd_remove},
      {"check", "check keys", cmd_check},
      {"info", "parameters, fill, saturation, seqnums, fpp", cmd_info},
      {"flush", "make the file durable (msync, checksums)", cmd_flush},
      {"verify", "check the counters against the key counts", cmd_verify},
  };
  const bk_cli_dispatcher d = {
      .prog = PROG,
      .noun = "action",
      .extra_usage = PROG " <action> FILE [KEY...] [options]",
      .subs = actions,
      .n_subs = sizeof actions / sizeof actions[0],
  };
  return bk_cli_dispatch(&d, argc, argv);
}
