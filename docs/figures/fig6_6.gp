# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_6.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.6: adaptive FBF (Algorithm 3) keeps the FPP near its target'
set xlabel 'time (s)'
set ylabel 'false positive probability'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
set y2label 'filters / refresh period (s)'
set y2tics
set ytics nomirror
plot 'docs/figures/fig6_6.csv' using (column('time_s')):((column('fpp_empirical'))) axes x1y1 with linespoints lw 2 pt 1 title 'FPP, empirical', \
     'docs/figures/fig6_6.csv' using (column('time_s')):((column('fpp_estimate'))) axes x1y1 with linespoints lw 2 pt 2 title 'FPP, bloomkit estimate', \
     'docs/figures/fig6_6.csv' using (column('time_s')):((column('target_fpp'))) axes x1y1 with linespoints lw 2 pt 3 title 'target FPP', \
     'docs/figures/fig6_6.csv' using (column('time_s')):((column('n_filters'))) axes x1y2 with linespoints lw 2 pt 4 title 'filters (right axis)', \
     'docs/figures/fig6_6.csv' using (column('time_s')):((column('refresh_period_s'))) axes x1y2 with linespoints lw 2 pt 5 title 'refresh period, s (right axis)'
