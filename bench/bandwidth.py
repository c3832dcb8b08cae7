#!/usr/bin/env python3
"""The CFS bandwidth experiment, reproduced with rtlab: `rtlab hog` alone,
under a quota of 25%, 50% and 100% of one CPU, and two hogs sharing one
group's 100% and 150% — each as an rtlab experiment with `cpu.quota` keys —
beside the same 25% and two-hog 100% cases made by hand the way the field
does it (mkdir a v1 cpu cgroup, echo the quota, echo the hog's pid into
`tasks`), so that rtlab's groups can be checked against the kernel interface
used directly. While the hogs run, cyclictest (rt-tests) measures on the
last CPU at FIFO 99 in the same rtlab run (as a program) for the rtlab cases:
the quota throttles the hogs, not the real-time thread.

Reported per case: mean loops/s of each hog (from its own summary line), the
rate as a fraction of the solo rate, and the group's nr_throttled and
throttled time (rtlab: from the result's tuning.cpu_bandwidth; by hand: from
cpu.stat), plus cyclictest's max latency.

Run as root:  python3 bench/bandwidth.py [--duration 5] [--rounds 2]
Needs: a v1 cpu cgroup hierarchy for the by-hand cases, cyclictest.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CPU_CG = "/sys/fs/cgroup/cpu"


def rtlab_binary():
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
    return os.path.join(REPO, "target", "release", "rtlab")


def hog_rate(path):
    text = open(path).read()
    m = re.search(r"mean (\d+) loops/s", text)
    return int(m.group(1)) if m else None


def experiment(hogs, quota_ms, duration, last_cpu, with_cyclictest):
    """An experiment file: `hogs` hogs in one group (quota None = no limit)."""
    out = []
    for i in range(hogs):
        out.append(f"program[{i}] {{")
        out.append(f"  cmdline rtlab hog --duration {duration}s")
        if quota_ms is not None:
            out.append("  cpu.group hogs")
            if i == 0:
                out.append(f"  cpu.quota {quota_ms} ms")
                out.append("  cpu.period 100 ms")
        out.append(f"  output.out hog{i}.txt")
        out.append("}")
    if with_cyclictest:
        out.append(f"program[{hogs}] {{")
        out.append(
            f"  cmdline cyclictest -q -m -p 99 -a {last_cpu} -t 1 -i 1000 -D {duration} --json=ct.json"
        )
        out.append("  termination.grace 3 s")
        out.append("}")
    # A timer thread ends the run when the hogs are done.
    out.append("timer_thread[0] {")
    out.append(f"  cpu_affinity {last_cpu}")
    out.append("  sched.policy FIFO\n  sched.priority 98")
    out.append(f"  lifetime.duration {duration + 0.5} s")
    out.append("}")
    return "\n".join(out) + "\n"


def run_rtlab(rtlab, hogs, quota_ms, duration, last_cpu):
    d = tempfile.mkdtemp(prefix="rtlab-bw-")
    cfg = os.path.join(d, "bw.cfg")
    open(cfg, "w").write(experiment(hogs, quota_ms, duration, last_cpu, True))
    subprocess.run([rtlab, "run", cfg, "--json", "r.json"], cwd=d, check=True,
                   stdout=subprocess.DEVNULL)
    r = json.load(open(os.path.join(d, "r.json")))
    rates = [hog_rate(os.path.join(d, f"hog{i}.txt")) for i in range(hogs)]
    groups = r["tuning"]["cpu_bandwidth"]
    ct_max = None
    ct = os.path.join(d, "ct.json")
    if os.path.exists(ct):
        j = json.load(open(ct))
        ct_max = max(t["max"] for t in j["thread"].values())
    shutil.rmtree(d)
    g = groups[0] if groups else {"nr_throttled": 0, "throttled_ms": 0.0}
    return rates, g["nr_throttled"], g["throttled_ms"], ct_max


def run_by_hand(rtlab, hogs, quota_ms, duration):
    cg = os.path.join(CPU_CG, f"bench-bw-{os.getpid()}")
    os.mkdir(cg)
    try:
        open(os.path.join(cg, "cpu.cfs_period_us"), "w").write("100000")
        open(os.path.join(cg, "cpu.cfs_quota_us"), "w").write(str(quota_ms * 1000))
        d = tempfile.mkdtemp(prefix="hand-bw-")
        procs = []
        for i in range(hogs):
            out = open(os.path.join(d, f"hog{i}.txt"), "w")
            procs.append(subprocess.Popen(
                ["sh", "-c", f"echo $$ > {cg}/tasks && exec {rtlab} hog --duration {duration}s"],
                stdout=out))
        for p in procs:
            p.wait()
        rates = [hog_rate(os.path.join(d, f"hog{i}.txt")) for i in range(hogs)]
        stat = dict(line.split() for line in open(os.path.join(cg, "cpu.stat")))
        shutil.rmtree(d)
        return rates, int(stat["nr_throttled"]), int(stat["throttled_time"]) / 1e6, None
    finally:
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rtlab = rtlab_binary()
    online = sorted(os.sched_getaffinity(0))
    last = online[-1]
    cases = [
        ("rtlab", "1 hog, no quota", 1, None),
        ("rtlab", "1 hog, 25%", 1, 25),
        ("by hand", "1 hog, 25%", 1, 25),
        ("rtlab", "1 hog, 50%", 1, 50),
        ("rtlab", "1 hog, 100%", 1, 100),
        ("rtlab", "2 hogs, one group at 100%", 2, 100),
        ("by hand", "2 hogs, one group at 100%", 2, 100),
        ("rtlab", "2 hogs, one group at 150%", 2, 150),
    ]
    results = {c: [] for c in cases}
    for _ in range(args.rounds):
        for c in cases:
            how, _, hogs, quota = c
            if how == "rtlab":
                results[c].append(run_rtlab(rtlab, hogs, quota, args.duration, last))
            else:
                results[c].append(run_by_hand(rtlab, hogs, quota, args.duration))
    solo = statistics.median(r[0][0] for r in results[cases[0]])
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.node()}, {platform.release()}, "
          f"{len(online)} CPUs, {args.rounds} rounds of {args.duration} s, medians")
    print("| how | case | loops/s per hog | fraction of solo | nr_throttled | throttled ms | cyclictest max µs |")
    print("|---|---|---|---|---|---|---|")
    for c in cases:
        rs = results[c]
        hogs = c[2]
        per_hog = [statistics.median(r[0][i] for r in rs) for i in range(hogs)]
        frac = " / ".join(f"{x / solo:.2f}" for x in per_hog)
        thr = statistics.median(r[1] for r in rs)
        thr_ms = statistics.median(r[2] for r in rs)
        ct = [r[3] for r in rs if r[3] is not None]
        print(f"| {c[0]} | {c[1]} | {' / '.join(str(int(x)) for x in per_hog)} | {frac} | "
              f"{thr:.0f} | {thr_ms:.0f} | {statistics.median(ct) if ct else '-'} |")


if __name__ == "__main__":
    main()
