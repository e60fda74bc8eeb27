# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig20.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 20: k-v pairs per server before and after balancing'
set xlabel ''
set ylabel 'k-v pairs (millions)'
set grid
set datafile missing NaN
set key outside top center horizontal Left reverse box opaque noenhanced
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by 25 right noenhanced nomirror
set grid noxtics
set yrange [0:*]
plot 'docs/figures/kbf_fig20.csv' using (column('before')):xtic(strcol('server')) title 'before', \
     'docs/figures/kbf_fig20.csv' using (column('after')):xtic(strcol('server')) title 'after Algorithm 8'
