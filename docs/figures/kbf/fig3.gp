# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig3.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 3: greedy encodings against their index'
set xlabel 'index'
set ylabel 'encoding'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set yrange [0:*]
plot 'docs/figures/kbf/fig3.csv' using (column('index')):((column('encoding'))) axes x1y1 with linespoints lw 2 pt 1 title 'greedy encodings', \
     'docs/figures/kbf/fig3.csv' using (column('index')):((column('fit'))) axes x1y1 with linespoints lw 2 pt 2 title 'quadratic fit (Sec. 3.6)'
