# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig18.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 18: memory of the decoding options, size m/2'
set xlabel 'preset p'
set ylabel 'MiB'
set grid
set datafile missing NaN
set key top left Left reverse box opaque noenhanced
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by 25 right noenhanced nomirror
set grid noxtics
set yrange [0:*]
plot 'docs/figures/kbf/fig18.csv' using (column('main_mib')):xtic(strcol('p')) title 'main kBF', \
     'docs/figures/kbf/fig18.csv' using (column('paper_option2_extra_mib')):xtic(strcol('p')) title 'paper''s option 2: B1 + B2', \
     'docs/figures/kbf/fig18.csv' using (column('bloomkit_option2_extra_mib')):xtic(strcol('p')) title 'bloomkit''s option 2 extra'
