# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 1280,820 enhanced font 'sans,11'
set output 'docs/figures/compare.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'bloomkit compare: ns per key by operation (log scale); each name with its bits per key and measured fpp'
set xlabel ''
set ylabel 'ns per key'
set grid
set datafile missing NaN
set key outside top center horizontal Left reverse box opaque noenhanced
set logscale y
set format y '%g'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by 25 right noenhanced nomirror
set grid noxtics
set xtics rotate by 45 right
set lmargin 22
set bmargin 17
plot 'docs/figures/compare.csv' using (column('add_ns')):xtic(sprintf("%s: %.1f bits/key, fpp %.3g", strcol('structure'), column('bits_per_key'), column('fpr'))) title 'add', \
     'docs/figures/compare.csv' using (column('add_batch_ns')):xtic(sprintf("%s: %.1f bits/key, fpp %.3g", strcol('structure'), column('bits_per_key'), column('fpr'))) title 'add, batch', \
     'docs/figures/compare.csv' using (column('remove_ns')):xtic(sprintf("%s: %.1f bits/key, fpp %.3g", strcol('structure'), column('bits_per_key'), column('fpr'))) title 'remove', \
     'docs/figures/compare.csv' using (column('remove_batch_ns')):xtic(sprintf("%s: %.1f bits/key, fpp %.3g", strcol('structure'), column('bits_per_key'), column('fpr'))) title 'remove, batch', \
     'docs/figures/compare.csv' using (column('contains_ns')):xtic(sprintf("%s: %.1f bits/key, fpp %.3g", strcol('structure'), column('bits_per_key'), column('fpr'))) title 'contains', \
     'docs/figures/compare.csv' using (column('contains_batch_ns')):xtic(sprintf("%s: %.1f bits/key, fpp %.3g", strcol('structure'), column('bits_per_key'), column('fpr'))) title 'contains, batch'
