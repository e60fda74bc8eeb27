# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/fig6_1.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 6.1: optimized vs simple membership check (N=1, m=6250, k=5, t=5 s)'
set xlabel 'elements inserted'
set ylabel 'false positive probability'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/fig6_1.csv' using (column('elements')):((column('fpp_optimized'))) axes x1y1 with linespoints lw 2 pt 1 title 'optimized check (Sec. 3.4)', \
     'docs/figures/fig6_1.csv' using (column('elements')):((column('fpp_simple'))) axes x1y1 with linespoints lw 2 pt 2 title 'simple check, all filters (Sec. 3.1)'
