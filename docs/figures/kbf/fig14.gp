# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig14.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 14: false negatives after COMPRESS'
set xlabel 'rho before'
set ylabel 'false negative ratio'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set yrange [0:*]
plot 'docs/figures/kbf/fig14.csv' using (column('rho')):((column('compress_fn'))) axes x1y1 with linespoints lw 2 pt 1 title 'COMPRESS'
