# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig23.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 23: improvement of rho, sorted'
set xlabel 'setting (sorted by improvement)'
set ylabel 'improvement of rho (%)'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
plot 'docs/figures/kbf_fig23.csv' using (column('rank')):((column('improvement_pct'))) axes x1y1 with linespoints lw 2 pt 1 title '100 (rho_before - rho_after) / rho_before'
