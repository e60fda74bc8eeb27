# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig24.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 24: false negative ratio of the TCP state machine'
set xlabel 'target false positive probability p'
set ylabel 'false negatives per query'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale x
set logscale y
set format y '10^{%L}'
plot 'docs/figures/kbf_fig24_25.csv' using (column('p')):(strcol('structure') eq 'sbf' ? (column('fn_ratio')) : NaN) axes x1y1 with linespoints lw 2 pt 1 title 'sBF', \
     'docs/figures/kbf_fig24_25.csv' using (column('p')):(strcol('structure') eq 'kbf' ? (column('fn_ratio')) : NaN) axes x1y1 with linespoints lw 2 pt 2 title 'kBF'
