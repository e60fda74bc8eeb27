# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig16.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 16: memory for the pairs a full memcached holds'
set xlabel 'memcached -m'
set ylabel 'MiB'
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
plot 'docs/figures/kbf_fig16.csv' using (column('server_mib')):xtic(strcol('limit')) title 'memcached stats bytes', \
     'docs/figures/kbf_fig16.csv' using (column('kbf_cells_mib')):xtic(strcol('limit')) title 'kBF main cells', \
     'docs/figures/kbf_fig16.csv' using (column('kbf_skbf_mib')):xtic(strcol('limit')) title 'kBF secondary (s-kBF)', \
     'docs/figures/kbf_fig16.csv' using (column('kbf_values_mib')):xtic(strcol('limit')) title 'kBF value table'
