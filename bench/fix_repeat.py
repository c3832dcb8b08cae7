#!/usr/bin/env python3
"""Does `rtlab fix` decide the same twice? N runs against two known culprits.

The culprits, on the measured CPU (the last online one):
  - a FIFO 95 `rtlab hog --burst 1500us --every 15ms` (above the FIFO 90
    timer thread);
  - a normal-priority process whose page faults hold the CPU in the kernel:
    by default bench/page_faulter.py (1 GiB of fresh memory filled in one
    read, in a loop, one PID); `--faulter stress-ng` takes a stress-ng mmap
    worker instead (`--mmap 1 --mmap-bytes 64M`), whose harm on this VM is
    about the size of the margin (docs/benchmarks.md).
Each run: `rtlab fix exp.cfg` (3 s runs by default, `--seconds`, FIFO 90 timer thread at 1 kHz,
trace.threshold 100 us, default --rounds), its decisions on the two
culprits reduced to what they act on (class, target without PIDs, verdict;
a decision on a process of the machine's own is shown apart), rtlab's own verification
(baseline against final state: over a run, p99.9 over every sample of the rounds), then `rtlab restore`, with
every file a remedy may touch compared before and after. The culprits are
started again for each run.

    python3 bench/fix_repeat.py [--runs 5] [--seconds 3] [--rounds N]
                                [--faulter page-faulter|stress-ng]

Run as root. Needs chrt/taskset (util-linux), and stress-ng for
`--faulter stress-ng`. Builds rtlab in release mode.
"""

import argparse
import glob
import json
import os
import platform
import re
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def online_cpus():
    text = open("/sys/devices/system/cpu/online").read().strip()
    cpus = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        cpus.extend(range(int(a), int(b or a) + 1))
    return cpus


def settings():
    """Every file a remedy of these culprits may touch, as it reads now."""
    files = glob.glob("/sys/devices/system/cpu/cpu*/cpuidle/state*/disable")
    files += glob.glob("/proc/irq/*/smp_affinity_list")
    files += ["/sys/devices/virtual/workqueue/cpumask", "/proc/sys/kernel/sched_rt_runtime_us"]
    out = {}
    for f in files:
        try:
            out[f] = open(f).read()
        except OSError:
            pass
    return out


def inject(rtlab, m, faulter):
    hog = subprocess.Popen(["chrt", "-f", "95", "taskset", "-c", str(m), rtlab, "hog",
                            "--burst", "1500us", "--every", "15ms", "--duration", "3600s"],
                           stdout=subprocess.DEVNULL)
    if faulter == "stress-ng":
        command = ["stress-ng", "--mmap", "1", "--mmap-bytes", "64M", "--timeout", "3600s",
                   "--quiet"]
    else:
        command = ["python3", os.path.join(HERE, "page_faulter.py")]
    faults = subprocess.Popen(["taskset", "-c", str(m), *command],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    return [hog, faults]


def stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
    subprocess.run(["pkill", "-f", "stress-ng --mmap"], stdout=subprocess.DEVNULL)


# The injected culprits, by name in the proposals.
CULPRITS = ("rtlab-hog", "page-faulter", "stress-ng")


def decision(d):
    """What a decision acts on, without PIDs, and its verdict."""
    change = re.sub(r"\b(pid|tid|TID|PID) \d+", r"\1 N", d["proposal"]["change"])
    change = re.sub(r"stress-ng[-\w]*", "stress-ng", change)
    return f'{d["verdict"]:8} {d["proposal"]["class"]:6} {change}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3,
                    help="each measuring run's length (a longer run's p99.9 is set by more "
                         "samples than a host stall makes late)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rtlab fix --rounds (default: rtlab's own)")
    ap.add_argument("--faulter", choices=("page-faulter", "stress-ng"), default="page-faulter",
                    help="the normal-priority culprit")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
    rtlab = os.path.join(REPO, "target/release/rtlab")
    cpus = online_cpus()
    m, l = cpus[-1], cpus[0]
    results = []
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "exp.cfg"), "w") as f:
            f.write(f"main\n{{\n  cpu_affinity {l}\n  trace.threshold 100 us\n}}\n"
                    f"timer_thread[0]\n{{\n  cpu_affinity {m}\n  sched.policy FIFO\n"
                    f"  sched.priority 90\n  timer.period 1 ms\n  lifetime.duration {args.seconds} s\n}}\n")
        for run in range(args.runs):
            before = settings()
            procs = inject(rtlab, m, args.faulter)
            start = time.monotonic()
            try:
                rounds = ["--rounds", str(args.rounds)] if args.rounds else []
                subprocess.run([rtlab, "fix", "exp.cfg", "--json", "fix.json", *rounds], cwd=d,
                               stdout=subprocess.DEVNULL, env=dict(os.environ,
                               RTLAB_JOURNAL_DIR=os.path.join(d, "journal")))
                wall = time.monotonic() - start
                fx = json.load(open(os.path.join(d, "fix.json")))
            finally:
                stop(procs)
                subprocess.run([rtlab, "restore"], stdout=subprocess.DEVNULL,
                               env=dict(os.environ, RTLAB_JOURNAL_DIR=os.path.join(d, "journal")))
            after = settings()
            changed = [f for f in before if before[f] != after.get(f)]
            ver = fx.get("verification") or {}
            mean = lambda rs, k: sum(r[k] for r in rs) / max(len(rs), 1)
            figures = None
            if ver:
                # The count a run; the p99.9 over every sample of the rounds, as rtlab
                # shows it (the means of the rounds' p99.9 in brackets).
                figures = (mean(ver["baseline"], "over"), mean(ver["fixed"], "over"),
                           ver["baseline_all"]["p999_ns"] / 1000,
                           ver["fixed_all"]["p999_ns"] / 1000, ver["undone"],
                           mean(ver["baseline"], "p999_ns") / 1000,
                           mean(ver["fixed"], "p999_ns") / 1000)
            tried = [x for x in fx["decisions"] if x["verdict"] != "not_applied"]
            ours = [x for x in tried if any(c in x["proposal"]["change"] for c in CULPRITS)]
            decisions = sorted(decision(x) for x in ours)
            others = sorted(decision(x) for x in tried if x not in ours)
            whys = [x["why"][:300] for x in ours]
            results.append((wall, decisions, figures, changed, others, whys))
            print(f"run {run + 1}: {wall:.0f} s", flush=True)
    print(f"machine: {platform.node()} {platform.machine()} kernel {platform.release()}, "
          f"{len(cpus)} CPUs, measured CPU {m}, runs of {args.seconds} s, "
          f"--rounds {args.rounds or 'default'}, normal culprit {args.faulter}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    first = results[0][1]
    for i, (wall, decisions, figures, changed, others, whys) in enumerate(results):
        same = "same decisions as run 1" if decisions == first else "OTHER DECISIONS"
        print(f"run {i + 1}: {wall:.0f} s, {same} on the two culprits")
        for line in decisions:
            print(f"    {line}")
        for line in whys:
            print(f"      why: {line}")
        for line in others:
            print(f"    (the machine's own) {line}")
        if figures:
            b_over, f_over, b_p, f_p, undone, b_m, f_m = figures
            print(f"  verification: over {b_over:.1f} -> {f_over:.1f} a run, p99.9 of all "
                  f"samples {b_p:.1f} -> {f_p:.1f} us (the rounds' mean {b_m:.1f} -> {f_m:.1f})"
                  f"{' (all undone: worse)' if undone else ''}")
        print(f"  after rtlab restore: {'every setting as before' if not changed else changed}")
    same = sum(r[1] == first for r in results)
    print(f"same decisions on the two culprits in {same} of {len(results)} runs")


if __name__ == "__main__":
    main()
