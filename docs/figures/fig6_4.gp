# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_4.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.4: FPP falls as the refresh period falls (N=1, m=25000, k=5)'
set xlabel 'time (s); the rate doubles every 5 s, from 2 to 630 ops/s'
set ylabel 'false positive probability'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/fig6_4.csv' using (column('time_s')):((column('fpp_t5'))) axes x1y1 with linespoints lw 2 pt 1 title 't = 5 s', \
     'docs/figures/fig6_4.csv' using (column('time_s')):((column('fpp_t3'))) axes x1y1 with linespoints lw 2 pt 2 title 't = 3 s', \
     'docs/figures/fig6_4.csv' using (column('time_s')):((column('fpp_t2'))) axes x1y1 with linespoints lw 2 pt 3 title 't = 2 s', \
     'docs/figures/fig6_4.csv' using (column('time_s')):((column('fpp_t1'))) axes x1y1 with linespoints lw 2 pt 4 title 't = 1 s'
