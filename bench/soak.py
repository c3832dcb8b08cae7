#!/usr/bin/env python3
"""Soak: rtlab monitor for a long time at a high rate; memory and CPU over time.

Runs `rtlab monitor` (release build) with one SCHED_FIFO 99 timer thread on
the last CPU at --period (default 100 us), refreshes every 1 s, the textfile
and the windows file written (--window, default 1 min), for --duration
(default 24 h). Every --every (default 60 s) it samples the process's RSS
(/proc/PID/status) and the main thread's CPU time (/proc/PID/task/PID/stat
utime+stime). At the end it prints RSS at start (after the first minute)
and end, the largest, and the main thread's CPU seconds per hour, and the
sizes of the files. Run as root:

    sudo python3 bench/soak.py --duration 24h     # the documented soak
    sudo python3 bench/soak.py --duration 10min   # a short one
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def seconds(text):
    units = {"s": 1, "min": 60, "h": 3600}
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            return float(text[: -len(u)]) * units[u]
    return float(text)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main_cpu_s(pid):
    with open(f"/proc/{pid}/task/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--duration", default="24h")
    p.add_argument("--period", type=int, default=100, help="timer period (µs)")
    p.add_argument("--window", default="1min")
    p.add_argument("--every", type=float, default=60.0, help="sampling interval (s)")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (SCHED_FIFO)")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    exe = os.path.join(REPO, "target", "release", "rtlab")
    cpu = os.cpu_count() - 1
    with tempfile.TemporaryDirectory() as work:
        cfg = os.path.join(work, "soak.cfg")
        with open(cfg, "w") as f:
            f.write(
                "main\n{\n  cpu_affinity 0\n}\n"
                f"timer_thread[0]\n{{\n  cpu_affinity {cpu}\n  sched.policy FIFO\n"
                f"  sched.priority 99\n  timer.period {a.period} us\n}}\n"
            )
        proc = subprocess.Popen(
            [exe, "monitor", cfg, "--listen", "none", "--textfile", "soak.prom",
             "--windows", "w.jsonl", "--window", a.window, "--json", "soak.json"],
            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = seconds(a.duration)
        start = time.monotonic()
        samples = []
        try:
            while time.monotonic() - start < total:
                time.sleep(min(a.every, max(0.0, total - (time.monotonic() - start))))
                t = time.monotonic() - start
                samples.append((t, rss_kib(proc.pid), main_cpu_s(proc.pid)))
                print(f"{t:8.0f} s  RSS {samples[-1][1]} KiB  main thread CPU {samples[-1][2]:.2f} s",
                      flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        prom = os.path.getsize(os.path.join(work, "soak.prom"))
        windows = os.path.getsize(os.path.join(work, "w.jsonl"))
    first = samples[0]
    last = samples[-1]
    hours = (last[0] - first[0]) / 3600 or float("nan")
    print()
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}, kernel {os.uname().release}, {os.cpu_count()} CPUs")
    print(f"Setup: FIFO 99 timer at {a.period} us on CPU {cpu}, refresh 1 s, window {a.window}, {a.duration}")
    print(f"RSS: {first[1]} KiB at {first[0]:.0f} s, {last[1]} KiB at {last[0]:.0f} s, "
          f"max {max(s[1] for s in samples)} KiB")
    print(f"Main thread CPU: {(last[2] - first[2]) / hours:.2f} s per hour")
    print(f"Files: textfile {prom} B, windows file {windows} B")


if __name__ == "__main__":
    main()
