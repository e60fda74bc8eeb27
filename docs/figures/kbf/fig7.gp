# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig7.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 7: false negative ratio as m shrinks'
set xlabel 'kBF size / size for p at n'
set ylabel 'false negative ratio'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
set yrange [0:*]
plot 'docs/figures/kbf/fig7.csv' using (column('size_factor')):((column('p1e-3'))) axes x1y1 with linespoints lw 2 pt 1 title 'p = 1e-3', \
     'docs/figures/kbf/fig7.csv' using (column('size_factor')):((column('p1e-4'))) axes x1y1 with linespoints lw 2 pt 2 title 'p = 1e-4', \
     'docs/figures/kbf/fig7.csv' using (column('size_factor')):((column('p1e-5'))) axes x1y1 with linespoints lw 2 pt 3 title 'p = 1e-5', \
     'docs/figures/kbf/fig7.csv' using (column('size_factor')):((column('p1e-6'))) axes x1y1 with linespoints lw 2 pt 4 title 'p = 1e-6'
