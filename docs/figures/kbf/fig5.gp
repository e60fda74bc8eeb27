# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig5.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 5: stored keys not decodable (option 1) against rho'
set xlabel 'capacity coefficient rho'
set ylabel 'share not decodable'
set grid
set datafile missing NaN
set key bottom right Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
plot 'docs/figures/kbf/fig5.csv' using (column('rho')):((column('simulated_k10'))) axes x1y1 with linespoints lw 2 pt 1 title 'simulated, k = 10', \
     'docs/figures/kbf/fig5.csv' using (column('rho')):((column('paper_k10'))) axes x1y1 with linespoints lw 2 pt 2 title 'paper''s formula, k = 10', \
     'docs/figures/kbf/fig5.csv' using (column('rho')):((column('own_cell_k10'))) axes x1y1 with linespoints lw 2 pt 3 title 'own-cell formula, k = 10'
