# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig25.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 25: total error ratio of the TCP state machine'
set xlabel 'target false positive probability p'
set ylabel 'errors per query (FN + FP + wrong state + unknown)'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale x
set logscale y
set format y '10^{%L}'
plot 'docs/figures/kbf_fig24_25.csv' using (column('p')):(strcol('structure') eq 'sbf' ? (column('total_ratio')) : NaN) axes x1y1 with linespoints lw 2 pt 1 title 'sBF', \
     'docs/figures/kbf_fig24_25.csv' using (column('p')):(strcol('structure') eq 'kbf' ? (column('total_ratio')) : NaN) axes x1y1 with linespoints lw 2 pt 2 title 'kBF'
