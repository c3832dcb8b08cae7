#!/usr/bin/env python3
"""`rtlab cyclictest ARGS` against `cyclictest ARGS`: one command line, both tools.

The command line is OSADL's latency-plot line by default (`-m -Sp90 -i200
-h400 -q`, with -l for a bounded run). Rounds are interleaved and alternate
which tool goes first. From each run's stdout (the histogram block, read as
rteval and OSADL's scripts read it) the script takes, per thread, the
median and p99 of the 1-µs buckets, the overflows and the `# Max
Latencies:` value; from the kernel, the whole process's CPU time and its peak
RSS (wait4's rusage of that child). Printed: the median over rounds of each figure
for each tool, and the ratio rtlab / cyclictest.

Run as root:  python3 bench/cyclictest_front.py [--rounds 6] [--loops 25000] [-- ARGS...]
Needs: cyclictest (rt-tests). Builds rtlab in release mode.
"""

import argparse
import os
import platform
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def histogram(stdout):
    """Per thread: {bucket: count}, overflows and max, as rteval reads it."""
    rows, over, maxima = [], [], []
    for line in stdout.splitlines():
        if line.startswith("# Histogram Overflows:"):
            over = [int(v) for v in line.split(":")[1].split()]
        elif line.startswith("# Max Latencies:"):
            maxima = [int(v) for v in line.split(":")[1].split()]
        elif line and not line.startswith("#"):
            vals = line.split()
            if vals and vals[0].isdigit():
                rows.append([int(v) for v in vals])
    threads = len(maxima)
    per = [{r[0]: r[i + 1] for r in rows if r[i + 1]} for i in range(threads)]
    return per, over, maxima


def quantile(counts, q):
    total = sum(counts.values())
    if total == 0:
        return 0
    rank, seen = q * total, 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            return bucket
    return max(counts)


def run(cmd):
    """One run; its CPU time and peak RSS from wait4 (this child alone)."""
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if child.returncode != 0:
        raise SystemExit(f"{cmd}: exit {child.returncode}")
    cpu = usage.ru_utime + usage.ru_stime
    per, over, maxima = histogram(out)
    return {
        "p50": max(quantile(c, 0.5) for c in per),
        "p99": max(quantile(c, 0.99) for c in per),
        "max": max(maxima),
        "overflows": sum(over),
        "cpu_ms": cpu * 1000,
        "wall_s": wall,
        "maxrss_mb": usage.ru_maxrss / 1024,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--loops", type=int, default=25000)
    p.add_argument("args", nargs="*", help="cyclictest's options (default: OSADL's line)")
    a = p.parse_args()
    args = a.args or ["-m", "-Sp90", "-i200", "-h400", "-q"]
    args = args + [f"-l{a.loops}"]
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    rtlab = [os.path.join(ROOT, "target/release/rtlab"), "cyclictest"]
    tools = {"cyclictest": ["cyclictest"], "rtlab cyclictest": rtlab}
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()} {platform.release()} "
          f"{os.cpu_count()} CPUs; cyclictest {' '.join(args)}; {a.rounds} rounds")
    results = {name: [] for name in tools}
    for r in range(a.rounds):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for name in order:
            results[name].append(run(tools[name] + args))
    keys = ["p50", "p99", "max", "overflows", "cpu_ms", "wall_s", "maxrss_mb"]
    print(f"{'median over rounds':<20}" + "".join(f"{k:>11}" for k in keys))
    med = {}
    for name in tools:
        med[name] = {k: statistics.median(x[k] for x in results[name]) for k in keys}
        print(f"{name:<20}" + "".join(f"{med[name][k]:>11.1f}" for k in keys))
    ratio = {k: med["rtlab cyclictest"][k] / med["cyclictest"][k] if med["cyclictest"][k] else float("nan")
             for k in keys}
    print(f"{'rtlab / cyclictest':<20}" + "".join(f"{ratio[k]:>11.2f}" for k in keys))
    for name in tools:
        print(f"{name} max per round: {[x['max'] for x in results[name]]}")


if __name__ == "__main__":
    main()
