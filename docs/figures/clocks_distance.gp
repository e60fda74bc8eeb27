# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/clocks_distance.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Bloom clock: positives against the distance from y to z'
set xlabel 'events z has seen that y has not (bucket upper end)'
set ylabel 'probability (0 not drawn)'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set logscale x
set logscale y
set format y '10^{%L}'
plot 'docs/figures/clocks_distance.csv' using (column('distance_hi')):((column('conc_positive_rate'))) axes x1y1 with linespoints lw 2 pt 1 title 'measured: B_z >= B_y among concurrent pairs', \
     'docs/figures/clocks_distance.csv' using (column('distance_hi')):((column('mean_pr_p_concurrent'))) axes x1y1 with linespoints lw 2 pt 2 title 'slides'' pr_p, concurrent pairs (mean)', \
     'docs/figures/clocks_distance.csv' using (column('distance_hi')):((column('fp_share_measured'))) axes x1y1 with linespoints lw 2 pt 3 title 'measured: false positives among all pairs', \
     'docs/figures/clocks_distance.csv' using (column('distance_hi')):((column('mean_pr_fp_formula'))) axes x1y1 with linespoints lw 2 pt 4 title 'slides'' pr_fp = (1 - pr_p) pr_p (mean)', \
     'docs/figures/clocks_distance.csv' using (column('distance_hi')):((column('model_one_event'))) axes x1y1 with linespoints lw 2 pt 5 title 'params model, y one event ahead (worst case)', \
     'docs/figures/clocks_distance.csv' using (column('distance_hi')):((column('model_u_events'))) axes x1y1 with linespoints lw 2 pt 6 title 'Bloom-filter model, y u events ahead'
