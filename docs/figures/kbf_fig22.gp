# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig22.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 22: rho before and after balancing, per setting'
set xlabel 'initial setting (--show index)'
set ylabel 'rho'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
plot 'docs/figures/kbf_fig22.csv' using (column('setting')):((column('rho_before'))) axes x1y1 with linespoints lw 2 pt 1 title 'before', \
     'docs/figures/kbf_fig22.csv' using (column('setting')):((column('rho_after'))) axes x1y1 with linespoints lw 2 pt 2 title 'after'
