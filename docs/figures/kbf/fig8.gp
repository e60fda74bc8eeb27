# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig8.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 8: false positive ratio as m shrinks'
set xlabel 'kBF size / size for p at n'
set ylabel 'false positive ratio'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
set logscale y
set format y '10^{%L}'
set yrange [1.5e-06:*]
set arrow from graph 0, first 3e-06 to graph 1, first 3e-06 nohead dt 2 lc rgb 'gray40'
set label '0: none among the probes (drawn here)' at graph 0.01, first 4.05e-06 font ',9' noenhanced
plot 'docs/figures/kbf/fig8.csv' using (column('size_factor')):((column('p1e-3') == 0 ? 3e-06 : (column('p1e-3')))) axes x1y1 with linespoints lw 2 pt 1 title 'bloomkit, p = 1e-3', \
     'docs/figures/kbf/fig8.csv' using (column('size_factor')):((column('p1e-4') == 0 ? 3e-06 : (column('p1e-4')))) axes x1y1 with linespoints lw 2 pt 2 title 'bloomkit, p = 1e-4', \
     'docs/figures/kbf/fig8.csv' using (column('size_factor')):((column('paper_rule_p1e-3') == 0 ? 3e-06 : (column('paper_rule_p1e-3')))) axes x1y1 with linespoints lw 2 pt 3 title 'Algorithm 6 rule, p = 1e-3', \
     'docs/figures/kbf/fig8.csv' using (column('size_factor')):((column('paper_rule_p1e-4') == 0 ? 3e-06 : (column('paper_rule_p1e-4')))) axes x1y1 with linespoints lw 2 pt 4 title 'Algorithm 6 rule, p = 1e-4', \
     'docs/figures/kbf/fig8.csv' using (column('size_factor')):((column('paper_rule_p1e-5') == 0 ? 3e-06 : (column('paper_rule_p1e-5')))) axes x1y1 with linespoints lw 2 pt 5 title 'Algorithm 6 rule, p = 1e-5', \
     'docs/figures/kbf/fig8.csv' using (column('size_factor')):((column('paper_rule_p1e-6') == 0 ? 3e-06 : (column('paper_rule_p1e-6')))) axes x1y1 with linespoints lw 2 pt 6 title 'Algorithm 6 rule, p = 1e-6'
