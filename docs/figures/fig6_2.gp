# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_2.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.2: FPP analysis vs empirical (N=1, m=6250, k=5, t=5 s)'
set xlabel 'elements inserted'
set ylabel 'false positive probability'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/fig6_2.csv' using (column('elements')):((column('fpp_empirical'))) axes x1y1 with linespoints lw 2 pt 1 title 'empirical', \
     'docs/figures/fig6_2.csv' using (column('elements')):((column('fpp_eq43'))) axes x1y1 with linespoints lw 2 pt 2 title 'thesis Eq. 4.3', \
     'docs/figures/fig6_2.csv' using (column('elements')):((column('fpp_estimate'))) axes x1y1 with linespoints lw 2 pt 3 title 'bloomkit estimate (shared inserts)'
