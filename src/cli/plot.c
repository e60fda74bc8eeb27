/* SPDX-License-Identifier: MIT */
/* Figures through gnuplot: see plot.h. */
#define _POSIX_C_SOURCE 200809L

#include "cli/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool bk_plot_available(void) {
  const char *path = getenv("PATH");
  if (!path || !*path) return false;
  char *copy = strdup(path);
  if (!copy) return false;
  bool found = false;
  char *save = NULL;
  for (char *d = strtok_r(copy, ":", &save); d && !found;
       d = strtok_r(NULL, ":", &save)) {
    size_t len = strlen(d) + sizeof "/gnuplot";
    char *exe = malloc(len);
    if (!exe) break;
    snprintf(exe, len, "%s/gnuplot", d);
    found = access(exe, X_OK) == 0;
    free(exe);
  }
  free(copy);
  return found;
}

int bk_plot_make_dir(const char *prog, const char *dir, FILE *err) {
  if (mkdir(dir, 0777) == 0) return 0;
  int e = errno;
  struct stat st;
  if (e == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  fprintf(err, "%s: cannot create directory %s: %s\n", prog, dir,
          strerror(e == EEXIST ? ENOTDIR : e));
  return 1;
}

FILE *bk_plot_open_csv(const char *prog, const char *dir, const char *name,
                       char **path, FILE *err) {
  size_t len = strlen(dir) + 1 + strlen(name) + sizeof ".csv";
  *path = malloc(len);
  if (!*path) {
    fprintf(err, "%s: out of memory\n", prog);
    return NULL;
  }
  snprintf(*path, len, "%s/%s.csv", dir, name);
  FILE *f = fopen(*path, "w");
  if (!f) {
    fprintf(err, "%s: cannot write %s: %s\n", prog, *path, strerror(errno));
    free(*path);
    *path = NULL;
  }
  return f;
}

int bk_plot_close_and_draw(const char *prog, const char *dir, FILE *f,
                           char *path, bk_plot_figure *figs, size_t n_figs,
                           FILE *err) {
  int status = 0;
  if (fclose(f) != 0) {
    fprintf(err, "%s: cannot write %s\n", prog, path);
    status = 1;
  }
  for (size_t i = 0; i < n_figs && !status; i++) {
    figs[i].csv = path;
    status = bk_plot_draw(dir, &figs[i], err);
  }
  free(path);
  return status;
}

int bk_plot_prepare(const char *prog, const char *dir, FILE *err) {
  if (!bk_plot_available()) {
    fprintf(err,
            "%s: --plot needs gnuplot (Debian: gnuplot-nox; "
            "scripts/bootstrap.sh installs it)\n",
            prog);
    return 1;
  }
  return bk_plot_make_dir(prog, dir, err);
}

/* A gnuplot single-quoted string: nothing is special in it but the quote,
 * written twice. Paths and titles go through here. */
static void put_quoted(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', f);
    /* A line break would end the command; none of ours has one, a path
     * might. */
    fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
  }
  fputc('\'', f);
}

static char *join(const char *dir, const char *name, const char *ext) {
  size_t len = strlen(dir) + 1 + strlen(name) + strlen(ext) + 1;
  char *p = malloc(len);
  if (p) snprintf(p, len, "%s/%s%s", dir, name, ext);
  return p;
}

static int write_script(FILE *f, const bk_plot_figure *fig, const char *png) {
  fputs("# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.\n", f);
  fprintf(f, "set terminal pngcairo size %u,%u enhanced font 'sans,11'\n",
          fig->width ? fig->width : 960, fig->height ? fig->height : 600);
  fputs("set output ", f);
  put_quoted(f, png);
  fputs("\nset datafile separator ','\nset datafile commentschars '#'\n", f);
  fputs("set title noenhanced\nset title ", f);
  put_quoted(f, fig->title);
  fputs("\nset xlabel ", f);
  put_quoted(f, fig->xlabel);
  fputs("\nset ylabel ", f);
  put_quoted(f, fig->ylabel);
  /* A filtered series' other rows are NaN: as missing data they do not
   * break its line. */
  fputs("\nset grid\nset datafile missing NaN\n", f);
  fprintf(f, "set key %s Left reverse box opaque noenhanced\n",
          fig->key ? fig->key : "top left");
  if (fig->logx) fputs("set logscale x\n", f);
  if (fig->logy) fputs("set logscale y\n", f);
  if (fig->yformat || fig->logy) {
    fputs("set format y ", f);
    put_quoted(f, fig->yformat ? fig->yformat : "10^{%L}");
    fputc('\n', f);
  }
  bool zero_at = fig->logy && fig->zero_at > 0.0;
  if (zero_at) {
    fprintf(f,
            "set yrange [%.6g:*]\n"
            "set arrow from graph 0, first %.6g to graph 1, first %.6g "
            "nohead dt 2 lc rgb 'gray40'\n"
            "set label ",
            fig->zero_at / 2.0, fig->zero_at, fig->zero_at);
    put_quoted(f, fig->zero_label ? fig->zero_label : "0 measured");
    fprintf(f, " at graph 0.01, first %.6g font ',9' noenhanced\n",
            fig->zero_at * 1.35);
  } else if (fig->y_from_zero && !fig->logy) {
    fputs("set yrange [0:*]\n", f);
  }
  if (fig->xtics > 0.0 && !fig->histogram)
    fprintf(f, "set xtics %.6g\n", fig->xtics);
  bool right = false;
  for (unsigned i = 0; i < fig->n_series; i++) right |= fig->series[i].right;
  if (right) {
    fputs("set y2label ", f);
    put_quoted(f, fig->y2label ? fig->y2label : "");
    fputs("\nset y2tics\nset ytics nomirror\n", f);
    if (fig->logy2) fputs("set logscale y2\n", f);
  }
  const char *style = fig->style ? fig->style : "linespoints";
  if (fig->histogram) {
    fputs(
        "set style data histogram\nset style histogram clustered gap 1\n"
        "set style fill solid 0.85 border -1\nset boxwidth 0.9\n"
        "set xtics rotate by 25 right noenhanced nomirror\nset grid noxtics\n",
        f);
    if (!fig->logy) fputs("set yrange [0:*]\n", f);
    if (fig->settings) fprintf(f, "%s\n", fig->settings);
    fputs("plot ", f);
    for (unsigned i = 0; i < fig->n_series; i++) {
      if (i) fputs(", \\\n     ", f);
      put_quoted(f, fig->csv);
      fputs(" using (column(", f);
      put_quoted(f, fig->series[i].column);
      fputs(")):xtic(", f);
      if (fig->histogram_label) {
        fputs(fig->histogram_label, f);
      } else {
        fputs("strcol(", f);
        put_quoted(f, fig->x);
        fputc(')', f);
      }
      fputs(") title ", f);
      put_quoted(f, fig->series[i].title);
    }
    fputc('\n', f);
    return ferror(f) ? 1 : 0;
  }
  if (fig->settings) fprintf(f, "%s\n", fig->settings);
  fputs("plot ", f);
  for (unsigned i = 0; i < fig->n_series; i++) {
    const bk_plot_series *s = &fig->series[i];
    if (i) fputs(", \\\n     ", f);
    put_quoted(f, fig->csv);
    fputs(" using ", f);
    /* Columns by name: gnuplot's column("name") reads the header line. */
    fputs("(column(", f);
    put_quoted(f, fig->x);
    fputs(")):(", f);
    if (s->filter_column) {
      fputs("strcol(", f);
      put_quoted(f, s->filter_column);
      fputs(") eq ", f);
      put_quoted(f, s->filter_value);
      fputs(" ? ", f);
    }
    if (zero_at && !s->right) {
      /* column(c) == 0 ? zero_at : column(c) */
      fputs("(column(", f);
      put_quoted(f, s->column);
      fprintf(f, ") == 0 ? %.6g : ", fig->zero_at);
    }
    fputs(s->absolute ? "abs(column(" : "(column(", f);
    put_quoted(f, s->column);
    fputs("))", f);
    if (zero_at && !s->right) fputs(")", f);
    if (s->filter_column) fputs(" : NaN", f);
    fprintf(f, ") axes x1%s with %s lw 2 pt %u title ", s->right ? "y2" : "y1",
            style, (i % 7) + 1);
    put_quoted(f, s->title);
  }
  fputc('\n', f);
  return ferror(f) ? 1 : 0;
}

/* Run gnuplot on the script, its stderr into a log file shown on failure. */
static int run_gnuplot(const char *script, const char *log, FILE *err) {
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(err, "plot: cannot start gnuplot: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
    }
    if (lf >= 0) dup2(lf, 2);
    execlp("gnuplot", "gnuplot", script, (char *)NULL);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  fprintf(err, "plot: gnuplot %s failed (%s %d)\n", script,
          WIFEXITED(status) ? "exit status" : "signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  FILE *lf = fopen(log, "r");
  if (lf) {
    char line[512];
    while (fgets(line, sizeof line, lf)) fprintf(err, "  %s", line);
    fclose(lf);
  }
  return 1;
}

int bk_plot_draw(const char *dir, const bk_plot_figure *fig, FILE *err) {
  char *gp = join(dir, fig->name, ".gp");
  char *png = join(dir, fig->name, ".png");
  char *log = join(dir, fig->name, ".gnuplot.log");
  int rc = 1;
  if (!gp || !png || !log) {
    fprintf(err, "plot: out of memory\n");
    goto done;
  }
  FILE *f = fopen(gp, "w");
  if (!f) {
    fprintf(err, "plot: cannot write %s: %s\n", gp, strerror(errno));
    goto done;
  }
  int w = write_script(f, fig, png);
  if (fclose(f) != 0 || w) {
    fprintf(err, "plot: cannot write %s\n", gp);
    goto done;
  }
  (void)unlink(png);
  if (run_gnuplot(gp, log, err)) goto done;
  struct stat st;
  if (stat(png, &st) != 0 || st.st_size == 0) {
    fprintf(err, "plot: gnuplot made no %s\n", png);
    goto done;
  }
  (void)unlink(log);
  rc = 0;
done:
  free(gp);
  free(png);
  free(log);
  return rc;
}
