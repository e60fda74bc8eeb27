# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf_fig15.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 15: time to insert and query n pairs, memcached vs kBF'
set xlabel 'k-v pairs'
set ylabel 'seconds'
set grid
set datafile missing NaN
set key outside top center horizontal Left reverse box opaque noenhanced
set logscale x
set logscale y
set format y '10^{%L}'
plot 'docs/figures/kbf_fig15.csv' using (column('pairs')):(strcol('system') eq 'memcached-1by1' ? (column('insert_s')) : NaN) axes x1y1 with linespoints lw 2 pt 1 title 'memcached insert, one at a time', \
     'docs/figures/kbf_fig15.csv' using (column('pairs')):(strcol('system') eq 'memcached-pipelined' ? (column('insert_s')) : NaN) axes x1y1 with linespoints lw 2 pt 2 title 'memcached insert, pipelined', \
     'docs/figures/kbf_fig15.csv' using (column('pairs')):(strcol('system') eq 'kbf' ? (column('insert_s')) : NaN) axes x1y1 with linespoints lw 2 pt 3 title 'kBF insert', \
     'docs/figures/kbf_fig15.csv' using (column('pairs')):(strcol('system') eq 'memcached-1by1' ? (column('query_s')) : NaN) axes x1y1 with linespoints lw 2 pt 4 title 'memcached query, one at a time', \
     'docs/figures/kbf_fig15.csv' using (column('pairs')):(strcol('system') eq 'memcached-pipelined' ? (column('query_s')) : NaN) axes x1y1 with linespoints lw 2 pt 5 title 'memcached multi-get', \
     'docs/figures/kbf_fig15.csv' using (column('pairs')):(strcol('system') eq 'kbf' ? (column('query_s')) : NaN) axes x1y1 with linespoints lw 2 pt 6 title 'kBF query'
