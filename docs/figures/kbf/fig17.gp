# Written by bloomkit; run `gnuplot THIS_FILE` to redraw.
set terminal pngcairo size 960,600 enhanced font 'sans,11'
set output 'docs/figures/kbf/fig17.png'
set datafile separator ','
set datafile commentschars '#'
set title noenhanced
set title 'Fig. 17: the two decoding options, size m/2'
set xlabel 'preset p'
set ylabel 'false negative ratio'
set grid
set datafile missing NaN
set key top right Left reverse box opaque noenhanced
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by 25 right noenhanced nomirror
set grid noxtics
set yrange [0:*]
plot 'docs/figures/kbf/fig17.csv' using (column('option1_decode22')):xtic(strcol('p')) title 'option 1: decode22', \
     'docs/figures/kbf/fig17.csv' using (column('option2_decode23')):xtic(strcol('p')) title 'option 2: decode22 + decode23'
