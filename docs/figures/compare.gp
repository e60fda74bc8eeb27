# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/compare.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'bloomkit compare: ns per key by operation'
set xlabel ''
set ylabel 'ns per key'
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
plot 'docs/figures/compare.csv' using (column('add_ns')):xtic(strcol('structure')) title 'add', \
     'docs/figures/compare.csv' using (column('add_batch_ns')):xtic(strcol('structure')) title 'add, batch', \
     'docs/figures/compare.csv' using (column('remove_ns')):xtic(strcol('structure')) title 'remove', \
     'docs/figures/compare.csv' using (column('remove_batch_ns')):xtic(strcol('structure')) title 'remove, batch', \
     'docs/figures/compare.csv' using (column('contains_ns')):xtic(strcol('structure')) title 'contains', \
     'docs/figures/compare.csv' using (column('contains_batch_ns')):xtic(strcol('structure')) title 'contains, batch'
