#!/usr/bin/env python3
"""rtlab's noise threads against oslat, side by side, in interleaved rounds.

Each round runs, on the same CPU for the same duration, alternating which
goes first:
  - oslat -c CPU -C MAIN -D Ds              (rt-tests: SCHED_OTHER poller)
  - rtlab noise CPU --duration Ds --no-attribute
  - rtlab noise CPU --duration Ds           (with the trace's attribution)

Reported per tool and round:
  - loop iterations per second: oslat's bucket counts summed over its
    measured duration; rtlab's `summary.reads` over `summary.runtime_ns`
    (oslat counts one sample per loop turn, as rtlab counts one gap);
  - the smallest gap it resolved: oslat's `Minimum` (whole µs, as it
    rounds), rtlab's `summary.min_gap_ns`;
  - peak resident memory (VmHWM from /proc/PID/status, read just before
    the process exits: polled every 50 ms);
  - CPU time of the whole process (user + system, from wait4's rusage), and
    what the attribution adds to rtlab's (its trace stream read on the main
    thread, off the measured CPU) and to the measured CPU's noise.

Then the medians and the ratios rtlab / oslat. Run as root:
  python3 bench/noise.py [--rounds 5] [--duration 10] [--cpu N]
Needs: oslat (Debian package rt-tests). Builds rtlab in release mode.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
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


def watch_hwm(proc, out):
    """Keeps the last VmHWM (kB) of `proc` in out[0] until it exits."""
    path = f"/proc/{proc.pid}/status"
    while proc.poll() is None:
        try:
            for line in open(path):
                if line.startswith("VmHWM:"):
                    out[0] = int(line.split()[1])
        except OSError:
            pass
        time.sleep(0.05)


def run(cmd, cwd):
    """Runs cmd; (stdout, peak RSS kB, user+sys s)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hwm = [0]
    t = threading.Thread(target=watch_hwm, args=(proc, hwm))
    t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = proc.stdout.read()
    err = proc.stderr.read()
    t.join()
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({proc.returncode}): {err}")
    return out, hwm[0], usage.ru_utime + usage.ru_stime


def oslat_round(cpu, main, duration, cwd):
    out, hwm, cpu_s = run(["oslat", "-c", str(cpu), "-C", str(main), "-D", f"{duration}s"], cwd)
    counts = [int(m.group(1)) for m in re.finditer(r"^\s*\d+ \(us\):\s+(\d+)", out, re.M)]
    secs = float(re.search(r"Duration:\s+([\d.]+)", out).group(1))
    minimum = int(re.search(r"Minimum:\s+(\d+)", out).group(1))
    maximum = int(re.search(r"Maximum:\s+(\d+)", out).group(1))
    return {
        "loops_per_s": sum(counts) / secs,
        "min_gap_ns": minimum * 1000,
        "max_gap_us": maximum,
        "rss_kb": hwm,
        "cpu_s": cpu_s,
        "noise_ms": None,
    }


def rtlab_round(rtlab, cpu, duration, cwd, attribute):
    cmd = [rtlab, "noise", str(cpu), "--duration", f"{duration}s", "--json", "n.json"]
    if not attribute:
        cmd.append("--no-attribute")
    _, hwm, cpu_s = run(cmd, cwd)
    n = json.load(open(os.path.join(cwd, "n.json")))["noise"][0]
    s = n["summary"]
    return {
        "loops_per_s": s["reads"] / (s["runtime_ns"] / 1e9),
        "min_gap_ns": s["min_gap_ns"],
        "max_gap_us": s["max_single_ns"] / 1000,
        "rss_kb": hwm,
        "cpu_s": cpu_s,
        "noise_ms": s["noise_ns"] / 1e6,
        "attributed": "attribution" in n,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--cpu", type=int)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (the attribution reads the kernel's tracepoints)")
    cpus = online_cpus()
    cpu = args.cpu if args.cpu is not None else cpus[-1]
    main_cpu = next((c for c in cpus if c != cpu), cpu)
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
    rtlab = os.path.join(REPO, "target", "release", "rtlab")
    tools = {
        "oslat": lambda d: oslat_round(cpu, main_cpu, args.duration, d),
        "rtlab": lambda d: rtlab_round(rtlab, cpu, args.duration, d, False),
        "rtlab+attribution": lambda d: rtlab_round(rtlab, cpu, args.duration, d, True),
    }
    rows = {name: [] for name in tools}
    order = list(tools)
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            names = order if r % 2 == 0 else list(reversed(order))
            for name in names:
                rows[name].append(tools[name](d))
                m = rows[name][-1]
                print(f"round {r + 1} {name}: {m['loops_per_s'] / 1e6:.2f} M loops/s, "
                      f"min gap {m['min_gap_ns']} ns, max {m['max_gap_us']:.1f} µs, "
                      f"RSS {m['rss_kb']} kB, CPU {m['cpu_s']:.2f} s"
                      + (f", noise {m['noise_ms']:.2f} ms" if m["noise_ms"] is not None else ""),
                      flush=True)
    med = lambda name, key: statistics.median(x[key] for x in rows[name])
    print(f"\n{platform.node()} {platform.release()}, CPU {cpu} (main {main_cpu}), "
          f"{args.rounds} rounds of {args.duration} s, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| tool | loops/s (median) | smallest gap | peak RSS (kB) | CPU time (s) | noise (ms) |")
    print("|---|---|---|---|---|---|")
    for name in tools:
        noise = "-" if rows[name][0]["noise_ms"] is None else f"{med(name, 'noise_ms'):.2f}"
        print(f"| {name} | {med(name, 'loops_per_s') / 1e6:.2f} M | {med(name, 'min_gap_ns'):.0f} ns "
              f"| {med(name, 'rss_kb'):.0f} | {med(name, 'cpu_s'):.2f} | {noise} |")
    ratio = lambda key: med("rtlab", key) / med("oslat", key)
    print(f"\nrtlab / oslat: loops/s {ratio('loops_per_s'):.3f}, peak RSS {ratio('rss_kb'):.3f}, "
          f"CPU time {ratio('cpu_s'):.3f}")
    extra_cpu = med("rtlab+attribution", "cpu_s") - med("rtlab", "cpu_s")
    extra_noise = med("rtlab+attribution", "noise_ms") - med("rtlab", "noise_ms")
    print(f"the attribution adds {extra_cpu:.3f} s of CPU time per {args.duration} s run "
          f"({100 * extra_cpu / args.duration:.2f}% of one CPU, off the measured one) and "
          f"{extra_noise:+.2f} ms of noise on the measured CPU (median of medians)")


if __name__ == "__main__":
    main()
