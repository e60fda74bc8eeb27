# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_5.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.5: FPP falls as filters are added (t=5 s, m=6250, k=5)'
set xlabel 'operations per second (rising linearly)'
set ylabel 'false positive probability'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/fig6_5.csv' using (column('ops_per_s')):((column('fpp_3'))) axes x1y1 with linespoints lw 2 pt 1 title '3 filters (N=1)', \
     'docs/figures/fig6_5.csv' using (column('ops_per_s')):((column('fpp_6'))) axes x1y1 with linespoints lw 2 pt 2 title '6 filters (N=4)', \
     'docs/figures/fig6_5.csv' using (column('ops_per_s')):((column('fpp_12'))) axes x1y1 with linespoints lw 2 pt 3 title '12 filters (N=10)', \
     'docs/figures/fig6_5.csv' using (column('ops_per_s')):((column('fpp_24'))) axes x1y1 with linespoints lw 2 pt 4 title '24 filters (N=22)'
