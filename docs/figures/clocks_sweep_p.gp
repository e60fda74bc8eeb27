# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/clocks_sweep_p.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Bloom clock against p, (m, k) from bk_bloomclock_params for fpr 0.01: sampled pairs'
set xlabel 'p (processes)'
set ylabel 'rate'
set grid
set datafile missing NaN
set key bottom left Left reverse box opaque noenhanced
set logscale x
set logscale y
set format y '10^{%L}'
plot 'docs/figures/clocks_sweep_p.csv' using (column('p')):((column('fpr'))) axes x1y1 with linespoints lw 2 pt 1 title 'measured fpr', \
     'docs/figures/clocks_sweep_p.csv' using (column('p')):((column('est_fpr'))) axes x1y1 with linespoints lw 2 pt 2 title 'slides'' estimate fpr^', \
     'docs/figures/clocks_sweep_p.csv' using (column('p')):((column('one_minus_precision'))) axes x1y1 with linespoints lw 2 pt 3 title 'measured 1 - precision'
