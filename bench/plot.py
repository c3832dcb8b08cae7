#!/usr/bin/env python3
"""Drawing time: rtlab's own renderer against gnuplot, on the same runs.

For the given result files (rtlab JSON, cyclictest histogram text or JSON,
systress files), each round times, as whole processes (reading the inputs
included):

- rtlab plot --panel histogram -o x.png   (1200x700, the histograms only)
- gnuplot drawing the same histograms from rtlab's --gnuplot script to a
  1200x700 pngcairo PNG (the peer: what systress users run today)
- rtlab plot -o x.png                      (1200x1500, all three panels)
- rtlab plot -o x.svg                      (all three panels)
- rtlab report -o x.html                   (tables + three inline SVG plots)
- rtlab compare                            (the table)

and prints the median and the min over rounds, in ms.

Run:  python3 bench/plot.py [--rounds 10] [--rtlab target/release/rtlab] RESULT...
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, cwd):
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000.0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--rtlab", default="target/release/rtlab")
    p.add_argument("results", nargs="+")
    a = p.parse_args()
    rtlab = os.path.abspath(a.rtlab)
    inputs = [os.path.abspath(r) for r in a.results]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([rtlab, "plot", *inputs, "--gnuplot", "h.gp"], cwd=d, check=True,
                       stdout=subprocess.DEVNULL)
        cases = {
            "rtlab plot, histogram PNG 1200x700": [rtlab, "plot", *inputs, "--panel", "histogram", "-o", "h.png"],
            "gnuplot, same histograms, pngcairo 1200x700": ["gnuplot", "-e", "out='g.png'", "h.gp"],
            "rtlab plot, 3 panels PNG 1200x1500": [rtlab, "plot", *inputs, "-o", "all.png"],
            "rtlab plot, 3 panels SVG": [rtlab, "plot", *inputs, "-o", "all.svg"],
            "rtlab report, HTML": [rtlab, "report", *inputs, "-o", "r.html"],
            "rtlab compare, table": [rtlab, "compare", *inputs],
        }
        times = {name: [] for name in cases}
        for _ in range(a.rounds):
            for name, cmd in cases.items():
                times[name].append(timed(cmd, d))
        sizes = {f: os.path.getsize(os.path.join(d, f)) for f in ["h.png", "g.png", "all.png", "all.svg", "r.html"]}
    print(f"{len(inputs)} inputs, {a.rounds} rounds; wall time per command (ms)")
    print(f"{'command':<46} {'median':>8} {'min':>8}")
    for name, t in times.items():
        print(f"{name:<46} {statistics.median(t):8.1f} {min(t):8.1f}")
    print("output sizes (bytes): " + ", ".join(f"{k} {v}" for k, v in sizes.items()))


if __name__ == "__main__":
    sys.exit(main())
