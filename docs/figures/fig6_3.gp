# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_3.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.3: FPP analysis vs empirical as m varies (300 elements, N=1, k=5, t=5 s)'
set xlabel 'bits per constituent filter (m)'
set ylabel 'false positive probability'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/fig6_3.csv' using (column('m_bits')):((column('fpp_empirical'))) axes x1y1 with linespoints lw 2 pt 1 title 'empirical', \
     'docs/figures/fig6_3.csv' using (column('m_bits')):((column('fpp_eq43'))) axes x1y1 with linespoints lw 2 pt 2 title 'thesis Eq. 4.3', \
     'docs/figures/fig6_3.csv' using (column('m_bits')):((column('fpp_estimate'))) axes x1y1 with linespoints lw 2 pt 3 title 'bloomkit estimate (shared inserts)'
