# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig2.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 2: bits per encoding against the number of values'
set xlabel 'values n'
set ylabel 'bits P'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale x
plot 'docs/figures/kbf/fig2.csv' using (column('n')):((column('bound'))) axes x1y1 with linespoints lw 2 pt 1 title 'bound 2^P >= n(n+1)/2', \
     'docs/figures/kbf/fig2.csv' using (column('n')):((column('cubes'))) axes x1y1 with linespoints lw 2 pt 2 title 'bloomkit: cubes in GF(2^t)', \
     'docs/figures/kbf/fig2.csv' using (column('n')):((column('greedy_exact'))) axes x1y1 with linespoints lw 2 pt 3 title 'greedy (Algorithm 1), exact', \
     'docs/figures/kbf/fig2.csv' using (column('n')):((column('greedy_bloom'))) axes x1y1 with linespoints lw 2 pt 4 title 'greedy with its Bloom filter'
