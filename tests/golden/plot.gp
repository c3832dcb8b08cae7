# rtlab plot --gnuplot: latency histograms of 3 run(s), log count axis.
# Show it:          gnuplot -p THIS_FILE
# Write a picture:  gnuplot -e "out='latency.png'" THIS_FILE   (or .svg)
#
# idle: rtlab JSON, board, Linux 6.18.0-rt, PREEMPT_RT, 2026-11-21T10:00:00Z, 60 s, 5000 samples, load: ping -f localhost  (DIR/idle.json)
# loaded: rtlab JSON, board, Linux 6.18.0-rt, PREEMPT_RT, 2026-11-21T10:00:00Z, 60 s, 10000 samples, load: ping -f localhost  (DIR/loaded.json)
# old: cyclictest histogram, 2001 samples  (DIR/old.hist)

$run0_t0 << EOD
10 253
11 271
12 248
13 264
14 231
15 250
16 242
17 232
18 280
19 253
20 247
21 232
22 247
23 262
24 253
25 235
26 257
27 255
28 225
29 253
244 1
259 1
690 1
1269 1
1648 1
2021 1
2316 1
2467 1
2635 1
2646 1
EOD

$run1_t0 << EOD
20 127
21 134
22 121
23 110
24 121
25 124
26 147
27 116
28 124
29 133
30 116
31 131
32 131
33 139
34 122
35 115
36 136
37 122
38 130
39 133
40 129
41 136
42 122
43 119
44 129
45 105
46 126
47 123
48 107
49 125
50 122
51 114
52 126
53 131
54 111
55 125
56 129
57 107
58 143
59 129
2203 1
2248 1
2795 1
2897 1
2912 1
3168 1
3416 1
3477 1
5681 1
5935 1
EOD

$run1_t1 << EOD
30 82
31 80
32 104
33 84
34 85
35 94
36 81
37 90
38 98
39 93
40 87
41 67
42 68
43 61
44 73
45 102
46 79
47 79
48 78
49 77
50 88
51 72
52 75
53 76
54 71
55 82
56 103
57 75
58 98
59 79
60 94
61 74
62 96
63 66
64 76
65 80
66 60
67 89
68 92
69 73
70 91
71 94
72 88
73 80
74 93
75 103
76 86
77 86
78 97
79 77
80 95
81 80
82 71
83 95
84 82
85 69
86 78
87 80
88 69
89 95
837 1
1727 1
1827 1
5017 1
5267 1
6135 1
6852 1
7364 1
8142 1
8298 1
EOD

$run2_t0 << EOD
1 812
2 188
EOD

$run2_t1 << EOD
1 790
2 209
7 1
EOD

if (exists("out")) {
    if (strstrt(out, ".svg") > 0) { set terminal svg size 1200,700 dynamic background rgb "white" } else { set terminal pngcairo size 1200,700 }
    set output out
}
set title "Idle vs \"loaded\""
set xlabel "latency (us)"
set ylabel "samples"
set logscale y
set yrange [0.8:*]
set xrange [0:*]
set grid
set key top right
plot $run0_t0 using 1:2 with steps linewidth 2 title "idle: max 2646.4 us", \
     $run1_t0 using 1:2 with steps linewidth 2 title "loaded T0: max 5938.5 us", \
     $run1_t1 using 1:2 with steps linewidth 2 title "loaded T1: max 8300.4 us", \
     $run2_t0 using 1:2 with steps linewidth 2 title "old T0: max 2.0 us", \
     $run2_t1 using 1:2 with steps linewidth 2 title "old T1: max 12.0 us"
