# bench/plot.gp - chart of the benchmark results (called by bench/run.sh).
#
# Two panels of clustered bars, one cluster per workload and one bar per
# server: peak QPS (median over repeats, at the client count where it was
# highest) and server CPU microseconds per answered query at that point
# (log scale: one slow server must not flatten the others).
# Input: DATADIR/qps.dat and DATADIR/cpu.dat written by `benchtool report`
# (tab-separated, header row = server names, "-" = no result).
# Variables (gnuplot -e): datadir, outfile, ncol (number of servers).

set terminal pngcairo size 1400,1000 font "sans,10"
set output outfile
set datafile separator "\t"
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set key outside right top vertical
set xtics nomirror rotate by -25
set ytics nomirror
set grid ytics lc rgb "#dddddd"
set yrange [0:*]
set linetype 1 lc rgb "#d62728"
set linetype 2 lc rgb "#1f77b4"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#ff7f0e"
set linetype 5 lc rgb "#9467bd"
set linetype 6 lc rgb "#7f7f7f"
set linetype 7 lc rgb "#8c564b"

set multiplot layout 2,1 title "Tern vs peers, one worker on one CPU (dnsperf, median of repeats at peak)\nno bar: an ERROR (see results.md) or not applicable (the echo floor has no TCP)" font ",12"
set ylabel "queries per second"
set format y "%.0f"
set title "Throughput (higher is better)"
plot for [i=2:ncol+1] datadir."/qps.dat" using i:xtic(1) title columnheader(i)
set ylabel "server CPU µs per answered query (log scale)"
set format y "%g"
set logscale y
set yrange [1:*]
set title "CPU cost per query (lower is better)"
plot for [i=2:ncol+1] datadir."/cpu.dat" using i:xtic(1) title columnheader(i)
unset multiplot
