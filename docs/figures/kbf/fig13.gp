# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig13.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 13: false negatives after JOIN'
set xlabel 'rho of each kBF'
set ylabel 'false negative ratio'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set yrange [0:*]
plot 'docs/figures/kbf/fig13.csv' using (column('rho')):((column('join_fn'))) axes x1y1 with linespoints lw 2 pt 1 title 'JOIN'
