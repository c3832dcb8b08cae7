#!/usr/bin/env python3
"""`rtlab fix` checked by the real cyclictest, and what it costs.

Injects three known culprits on the measured CPU (the last online one):
  - a FIFO 95 `rtlab hog --burst 2ms --every 20ms` (above the FIFO 90 timer);
  - a normal-priority perl reading /proc/kallsyms in a loop (kernel work
    without a preemption point on a kernel that is not fully preemptible);
  - three `ping -f -s 8000` floods on another CPU whose packets lo's RPS mask steers to
    the measured CPU (skipped where the mask cannot be written).
Then:
  1. `rtlab fix` on a 3 s experiment (FIFO 90 timer thread, 500 µs, 50 µs
     threshold): its wall time, its measuring runs, its verdicts, and its
     own verification (baseline against the final state);
  2. the real cyclictest (`-m -p90 -i500 -D Ns --histogram`) in interleaved
     rounds: with the kept state, and after `rtlab restore`: the count over
     50 µs and p99.9 from cyclictest's own histogram. This is the peer's
     view of rtlab's claim.
Everything is put back at the end. Run as root:
  python3 bench/fix.py [--rounds 3] [--duration 5]
Needs: cyclictest (rt-tests), perl, ping. Builds rtlab in release mode.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RPS = "/sys/class/net/lo/queues/rx-0/rps_cpus"


def online_cpus():
    text = open("/sys/devices/system/cpu/online").read().strip()
    cpus = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        cpus.extend(range(int(a), int(b or a) + 1))
    return cpus


def inject(rtlab, m, l):
    procs = [
        subprocess.Popen(["chrt", "-f", "95", "taskset", "-c", str(m), rtlab, "hog",
                          "--burst", "2ms", "--every", "20ms", "--duration", "3600s"],
                         stdout=subprocess.DEVNULL),
        subprocess.Popen(["taskset", "-c", str(m), "perl", "-e",
                          "while(1){open(F,'<','/proc/kallsyms');while(<F>){}close F}"]),
    ]
    old = open(RPS).read().strip()
    try:
        with open(RPS, "w") as f:
            f.write("%x" % (1 << m))
        for _ in range(3):
            procs.append(subprocess.Popen(["taskset", "-c", str(l), "ping", "-f", "-q", "-s", "8000",
                                           "127.0.0.1"], stdout=subprocess.DEVNULL))
    except OSError:
        old = None
    time.sleep(0.5)
    return procs, old


def cyclictest(m, l, duration, threshold_us):
    """Count over the threshold and p99.9 (µs) from cyclictest's histogram."""
    out = subprocess.run(["taskset", "-c", str(l), "cyclictest", "-m", "-q", "-t1", f"-a{m}",
                          "-p90", "-i500", f"-D{duration}s", "--histogram=20000"],
                         capture_output=True, text=True, check=True).stdout
    hist = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            hist.append((int(parts[0]), int(parts[1])))
    total = sum(c for _, c in hist)
    over = sum(c for us, c in hist if us >= threshold_us)
    overflow = re.search(r"# Histogram Overflows: (\d+)", out)
    over += int(overflow.group(1)) if overflow else 0
    total += int(overflow.group(1)) if overflow else 0
    rank, seen, p999 = total * 0.999, 0, None
    for us, c in hist:
        seen += c
        if seen >= rank:
            p999 = us
            break
    return over, p999 if p999 is not None else 20000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
    rtlab = os.path.join(REPO, "target/release/rtlab")
    cpus = online_cpus()
    m, l = cpus[-1], cpus[0]
    procs, old_rps = inject(rtlab, m, l)
    try:
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "exp.cfg"), "w") as f:
                f.write(f"main\n{{\n  cpu_affinity {l}\n  trace.threshold 50 us\n}}\n"
                        f"timer_thread[0]\n{{\n  cpu_affinity {m}\n  sched.policy FIFO\n"
                        f"  sched.priority 90\n  timer.period 500 us\n  lifetime.duration 3 s\n}}\n")
            start = time.monotonic()
            subprocess.run([rtlab, "fix", "exp.cfg", "--json", "fix.json"], cwd=d, check=True,
                           stdout=subprocess.DEVNULL)
            wall = time.monotonic() - start
            fx = json.load(open(os.path.join(d, "fix.json")))
        verdicts = [(x["verdict"], x["proposal"]["change"]) for x in fx["decisions"]
                    if x["verdict"] != "not_applied"]
        ver = fx.get("verification") or {}
        mean = lambda rs, k: sum(r[k] for r in rs) / max(len(rs), 1)
        made = [c for d_ in fx["decisions"] for c in d_.get("made", [])]

        def put(which):
            """Sets every kept change to its `new` or `old` value by hand."""
            for c in made:
                if c["undo"] == "write":
                    try:
                        open("/" + c["file"], "w").write(c[which])
                    except OSError:
                        pass
                else:
                    subprocess.run(["taskset", "-p", "-c", c[which], str(c["tid"])],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # The kept changes are in rtlab's journal (fix-kept-PID.journal);
        # between rounds the test sets them by hand, and `rtlab restore`
        # puts the files back at the end.
        rows = []
        for r in range(args.rounds):
            put("new")
            rows.append(("kept",) + cyclictest(m, l, args.duration, 50))
            put("old")
            rows.append(("restored",) + cyclictest(m, l, args.duration, 50))
        put("new")
    finally:
        for p in procs:
            p.kill()
        # rtlab's journal first (it puts back the state the fix found, the
        # injected mask included), then the mask as it was before the bench.
        subprocess.run([rtlab, "restore"], stdout=subprocess.DEVNULL)
        if old_rps is not None:
            open(RPS, "w").write(old_rps)
    print(f"machine: {platform.node()} {platform.machine()} kernel {platform.release()}, "
          f"{len(cpus)} CPUs, measured CPU {m}")
    print(f"rtlab fix: {wall:.0f} s wall, {len(fx['rounds_run'])} measuring runs + "
          f"{len(fx['diagnoses'])} diagnoses")
    for v, c in verdicts:
        print(f"  {v:8} {c}")
    if ver:
        print(f"rtlab's verification: over {mean(ver['baseline'], 'over'):.1f} -> "
              f"{mean(ver['fixed'], 'over'):.1f}, p99.9 {mean(ver['baseline'], 'p999_ns')/1000:.1f} -> "
              f"{mean(ver['fixed'], 'p999_ns')/1000:.1f} us")
    print("cyclictest, interleaved (state, over 50 us, p99.9 us):")
    for row in rows:
        print(f"  {row[0]:9} {row[1]:6} {row[2]:6}")


if __name__ == "__main__":
    main()
