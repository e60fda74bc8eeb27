# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_7.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.7: counter value over time, with and without duplicate filtering'
set xlabel 'time (s)'
set ylabel 'sum of the counters'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
plot 'docs/figures/fig6_7.csv' using (column('time_s')):((column('expected'))) axes x1y1 with lines lw 2 pt 1 title 'expected (each op once)', \
     'docs/figures/fig6_7.csv' using (column('time_s')):((column('NONE'))) axes x1y1 with lines lw 2 pt 2 title 'NONE', \
     'docs/figures/fig6_7.csv' using (column('time_s')):((column('RBF'))) axes x1y1 with lines lw 2 pt 3 title 'RBF', \
     'docs/figures/fig6_7.csv' using (column('time_s')):((column('FBF'))) axes x1y1 with lines lw 2 pt 4 title 'FBF', \
     'docs/figures/fig6_7.csv' using (column('time_s')):((column('FBF_ADAPTIVE'))) axes x1y1 with lines lw 2 pt 5 title 'FBF_ADAPTIVE', \
     'docs/figures/fig6_7.csv' using (column('time_s')):((column('WINDOW'))) axes x1y1 with lines lw 2 pt 6 title 'WINDOW', \
     'docs/figures/fig6_7.csv' using (column('time_s')):((column('HYBRID'))) axes x1y1 with lines lw 2 pt 7 title 'HYBRID'
