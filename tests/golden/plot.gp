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
30 0
243 0
244 1
245 0
258 0
259 1
260 0
689 0
690 1
691 0
1268 0
1269 1
1270 0
1647 0
1648 1
1649 0
2020 0
2021 1
2022 0
2315 0
2316 1
2317 0
2466 0
2467 1
2468 0
2634 0
2635 1
2636 0
2645 0
2646 1
2647 0
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
60 0
2202 0
2203 1
2204 0
2247 0
2248 1
2249 0
2794 0
2795 1
2796 0
2896 0
2897 1
2898 0
2911 0
2912 1
2913 0
3167 0
3168 1
3169 0
3415 0
3416 1
3417 0
3476 0
3477 1
3478 0
5680 0
5681 1
5682 0
5934 0
5935 1
5936 0
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
90 0
836 0
837 1
838 0
1726 0
1727 1
1728 0
1826 0
1827 1
1828 0
5016 0
5017 1
5018 0
5266 0
5267 1
5268 0
6134 0
6135 1
6136 0
6851 0
6852 1
6853 0
7363 0
7364 1
7365 0
8141 0
8142 1
8143 0
8297 0
8298 1
8299 0
EOD

$run2_t0 << EOD
1 812
2 188
3 0
EOD

$run2_t1 << EOD
1 790
2 209
3 0
6 0
7 1
8 0
EOD

if (exists("out")) {
    if (strstrt(out, ".svg") > 0) { set terminal svg size 1200,700 dynamic background rgb "white" } else { set terminal pngcairo size 1200,700 }
    set output out
}
set title 'Idle vs "loaded"' noenhanced
set xlabel "latency (us)"
set ylabel "samples"
set logscale y
set yrange [0.8:*]
set xrange [0:*]
set grid
set key top right
plot $run0_t0 using 1:2 with steps linewidth 2 linecolor 1 title 'idle: max 2646.4 us' noenhanced, \
     $run0_t0 using 1:($2 > 0 ? $2 : 1/0) with points pointtype 7 pointsize 0.6 linecolor 1 notitle, \
     $run1_t0 using 1:2 with steps linewidth 2 linecolor 2 title 'loaded T0: max 5938.5 us' noenhanced, \
     $run1_t0 using 1:($2 > 0 ? $2 : 1/0) with points pointtype 7 pointsize 0.6 linecolor 2 notitle, \
     $run1_t1 using 1:2 with steps linewidth 2 linecolor 3 title 'loaded T1: max 8300.4 us' noenhanced, \
     $run1_t1 using 1:($2 > 0 ? $2 : 1/0) with points pointtype 7 pointsize 0.6 linecolor 3 notitle, \
     $run2_t0 using 1:2 with steps linewidth 2 linecolor 4 title 'old T0: max 2.0 us' noenhanced, \
     $run2_t0 using 1:($2 > 0 ? $2 : 1/0) with points pointtype 7 pointsize 0.6 linecolor 4 notitle, \
     $run2_t1 using 1:2 with steps linewidth 2 linecolor 5 title 'old T1: max 12.0 us' noenhanced, \
     $run2_t1 using 1:($2 > 0 ? $2 : 1/0) with points pointtype 7 pointsize 0.6 linecolor 5 notitle
