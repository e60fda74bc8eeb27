# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig4.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 4: cells holding 3 or more encodings at the p-capacity (p = 1e-4)'
set xlabel 'keys n'
set ylabel 'share of cells'
set grid
set datafile missing NaN
set key bottom right Left reverse box opaque noenhanced
set logscale x
plot 'docs/figures/kbf/fig4.csv' using (column('n')):((column('cells_ge3'))) axes x1y1 with linespoints lw 2 pt 1 title 'simulated', \
     'docs/figures/kbf/fig4.csv' using (column('n')):((column('pn_rho'))) axes x1y1 with linespoints lw 2 pt 2 title 'P_n(rho) at the filter''s rho', \
     'docs/figures/kbf/fig4.csv' using (column('n')):((column('pn_1'))) axes x1y1 with linespoints lw 2 pt 3 title 'P_n(1) = 0.0333'
