# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig21.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 21: imbalance rho at each step of Algorithm 8'
set xlabel 'exchanges made'
set ylabel 'rho = sd / mean of the servers'' pairs'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
set yrange [0:*]
set xtics 1
plot 'docs/figures/kbf_fig21.csv' using (column('step')):((column('rho'))) axes x1y1 with linespoints lw 2 pt 1 title 'rho'
