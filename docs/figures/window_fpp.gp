# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,680 enhanced font 'sans,11'
set output 'docs/figures/window_fpp.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Sliding window: false positive rate on new ids against bits per window item'
set xlabel 'bits per item of the window (memory held)'
set ylabel 'false positive rate (new ids)'
set grid
set datafile missing NaN
set key below Left reverse box opaque noenhanced
set logscale x
set logscale y
set format y '10^{%L}'
set xrange [6:200]
set xtics (6, 8, 10, 12, 16, 20, 24, 32, 40, 64, 100, 160)
set key maxrows 3 width -8
set bmargin 8
plot 'docs/figures/window_fpp.csv' using (column('bits_per_item')):(strcol('structure') eq 'fbf' ? (column('fp_new')) : NaN) axes x1y1 with linespoints lw 2 pt 1 title 'fbf (N = 5, t = window / 6)', \
     'docs/figures/window_fpp.csv' using (column('bits_per_item')):(strcol('structure') eq 'fbf-adaptive' ? (column('fp_new')) : NaN) axes x1y1 with linespoints lw 2 pt 2 title 'fbf adaptive (lanes for 4x the filters)', \
     'docs/figures/window_fpp.csv' using (column('bits_per_item')):(strcol('structure') eq 'rbf' ? (column('fp_new')) : NaN) axes x1y1 with linespoints lw 2 pt 3 title 'rbf (forgets all at each recycle: false negatives)', \
     'docs/figures/window_fpp.csv' using (column('bits_per_item')):(strcol('structure') eq 'apbf' ? (column('fp_new')) : NaN) axes x1y1 with linespoints lw 2 pt 4 title 'apbf count-based', \
     'docs/figures/window_fpp.csv' using (column('bits_per_item')):(strcol('structure') eq 'apbf-time' ? (column('fp_new')) : NaN) axes x1y1 with linespoints lw 2 pt 5 title 'apbf time-based'
