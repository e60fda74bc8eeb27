/* SPDX-License-Identifier: MIT */
/*
 * Private to the `bloomkit` command: the pictures of an experiment, drawn by
 * gnuplot (Debian's gnuplot-nox) from the CSV files the experiment writes.
 *
 * A figure is described, not scripted: its CSV file, the x column, the y
 * columns (each with a legend title, on the left or the right axis), the
 * labels and which axes are logarithmic. bk_plot_draw writes DIR/NAME.gp
 * (the gnuplot script, kept so a reader can restyle the figure) and runs
 * `gnuplot DIR/NAME.gp` (found on PATH, no shell involved) to make
 * DIR/NAME.png. Columns are named by the CSV's header line; '#' lines are
 * comments to gnuplot as to us.
 */
#ifndef BLOOMKIT_SRC_CLI_PLOT_H
#define BLOOMKIT_SRC_CLI_PLOT_H

#include <stdbool.h>
#include <stdio.h>

#define BK_PLOT_MAX_SERIES 8

typedef struct bk_plot_series {
  const char *column; /* the CSV header's name of the y column */
  const char *title;  /* legend entry */
  bool right;         /* on the right-hand y axis (y2) */
  /* Only the rows whose column filter_column holds filter_value (a CSV in
   * long form: one row per (x, strategy)); NULL: every row. */
  const char *filter_column, *filter_value;
  bool absolute; /* plot |y| (a log axis of signed errors) */
} bk_plot_series;

typedef struct bk_plot_figure {
  const char *name;  /* DIR/name.png and DIR/name.gp */
  const char *csv;   /* the data file (a path, any characters) */
  const char *title; /* the figure's title (its caption's first words) */
  const char *x;     /* the x column */
  const char *xlabel, *ylabel;
  const char *y2label; /* NULL unless a series is on the right */
  bool logx, logy, logy2;
  /* A log y axis: a y of 0 (none among the probes) is drawn at zero_at,
   * on a dashed line labelled zero_label; 0: such points are left out
   * (a log axis has no 0), and a series of zeros draws nothing. */
  double zero_at;
  const char *zero_label;
  /* A linear y axis starts at 0 (ratios, counts): otherwise a series of
   * zeros is centred in [-1, 1]. */
  bool y_from_zero;
  double xtics;      /* > 0: a tic every xtics on x (counts: 1) */
  const char *style; /* gnuplot's `with`: NULL is linespoints */
  /* Clustered bars, one cluster per row, labelled by the x column (text);
   * rows with an empty y are a missing bar. */
  bool histogram;
  /* A histogram's cluster label: a gnuplot string expression over the row,
   * e.g. sprintf("%s\n%g", strcol('name'), column('v')); NULL: the x
   * column's text. A log y axis on a histogram starts where the data
   * does (bars rise from its bottom). */
  const char *histogram_label;
  const char *key;        /* legend placement (gnuplot words), NULL: top left */
  const char *yformat;    /* y tic format; NULL: 10^{n} on a log axis */
  unsigned width, height; /* pixels; 0: 960 x 600 */
  /* gnuplot commands written just before `plot`, one a line, for what
   * the fields above do not say (margins, tic angles); NULL: none. */
  const char *settings;
  unsigned n_series;
  bk_plot_series series[BK_PLOT_MAX_SERIES];
} bk_plot_figure;

/** Whether a `gnuplot` is on PATH (the figures are skipped, with a note,
 * when it is not). */
bool bk_plot_available(void);

/** Draw one figure into dir (which must exist). Returns 0, or 1 after
 * saying on err what failed (the script could not be written, gnuplot
 * failed: its messages are passed on, or no PNG came out). */
int bk_plot_draw(const char *dir, const bk_plot_figure *fig, FILE *err);

/** Make dir (and no parents) unless it exists as a directory. Returns 0,
 * or 1 after saying why on err. `prog` prefixes the message. */
int bk_plot_make_dir(const char *prog, const char *dir, FILE *err);

/** What a command does first with `--plot DIR`: check that gnuplot is
 * there and make DIR. Returns 0, or 1 after saying on err what is missing
 * (gnuplot: which Debian package has it) or why DIR cannot be made. */
int bk_plot_prepare(const char *prog, const char *dir, FILE *err);

/** Open DIR/NAME.csv for writing, a figure's data. Returns the stream
 * with *path the file's path (malloc'd: the caller frees it), or NULL
 * after saying on err why (`prog` prefixes the message), *path then NULL
 * or unset when the path itself could not be allocated. */
FILE *bk_plot_open_csv(const char *prog, const char *dir, const char *name,
                       char **path, FILE *err);

/** The end of a figure's data: close f (bk_plot_open_csv's stream, path
 * its path) and, when it was written whole, draw each of the n_figs
 * figures from it into dir (their csv set to path). Frees path. Returns
 * 0, or 1 after saying on err what failed (`prog` prefixes the message
 * when the data file could not be written). */
int bk_plot_close_and_draw(const char *prog, const char *dir, FILE *f,
                           char *path, bk_plot_figure *figs, size_t n_figs,
                           FILE *err);

#endif
