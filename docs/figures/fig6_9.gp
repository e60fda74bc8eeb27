# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_9.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.9: counter error as retries grow (|error| %)'
set xlabel 'retries per op (from the share of lost acks)'
set ylabel '|counter error| (%)'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/fig6_9.csv' using (column('retries_per_op')):(strcol('strategy') eq 'RBF' ? abs(column('error_pct')) : NaN) axes x1y1 with linespoints lw 2 pt 1 title 'RBF', \
     'docs/figures/fig6_9.csv' using (column('retries_per_op')):(strcol('strategy') eq 'FBF' ? abs(column('error_pct')) : NaN) axes x1y1 with linespoints lw 2 pt 2 title 'FBF'
