#!/usr/bin/env python3
"""What explaining a storm of late wake-ups costs: a 1 kHz FIFO 90 timer
thread on the last CPU, a load there that makes hundreds of its wake-ups
late (by default `dd if=/dev/zero of=/dev/null bs=1G count=1` in a loop:
a gigabyte allocated, zeroed and copied, again and again), and the flight
recorder on (`trace.threshold 100 us`, `trace.max_spikes 1000`,
`trace.stacks switch`). Each round runs, interleaved:

- rtlab with the flight recorder (its result's `trace`: how many wake-ups
  crossed the threshold and how many were explained, the events the reads
  brought, the CPU time of the reads, of the reads with their analyses,
  and of writing the windows at the end);
- the same run without it (`trace.threshold off`);
- with --baseline, another rtlab binary (an older commit's) with it.

The result's own figures are checked against the kernel's count of the
main thread's time on a CPU (`/proc/PID/schedstat`, read until the run
ends): the main thread's time with the recorder, less its time without,
per explained wake-up, is what the recorder cost it whatever rtlab says.

Run as root:  sudo python3 bench/storm.py [--rounds 3] [--seconds 8]
                [--load 'dd if=/dev/zero of=/dev/null bs=1G count=1']
                [--baseline OTHER_RTLAB]
It prints a Markdown table for docs/benchmarks.md.
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
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def config(load, cpu, seconds, traced):
    trace = (" trace.threshold 100 us\n trace.max_spikes 1000\n trace.stacks switch\n"
             if traced else "")
    # The load's own shell loop, quoted for rtlab's cmdline (no shell
    # metacharacter of the user's reaches one unquoted).
    loop = load.replace('"', '\\"')
    return f"""main {{
 cpu_affinity 0
 lifetime.duration {seconds} s
{trace}}}
timer_thread[0] {{
 sched.policy FIFO
 sched.priority 90
 cpu_affinity {cpu}
 timer.period 1 ms
}}
program[0] {{
 cmdline sh -c "while :; do {loop} 2>/dev/null; done"
 cpu_affinity {cpu}
 output.out /dev/null
 output.err /dev/null
}}
"""


def main_thread_ns(pid):
    """The main thread's time on a CPU so far (ns), or None once gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def run(binary, cfg_text, workdir):
    cfg = os.path.join(workdir, "storm.cfg")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    result = os.path.join(workdir, "r.json")
    p = subprocess.Popen([binary, "run", cfg, "--json", result], cwd=workdir,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    last = 0
    while p.poll() is None:
        ns = main_thread_ns(p.pid)
        if ns is not None:
            last = ns
        time.sleep(0.02)
    err = p.stderr.read()
    if p.returncode != 0:
        sys.exit(f"{binary} failed ({p.returncode}): {err}")
    with open(result) as f:
        r = json.load(f)
    return r, last


def figures(r, main_ns, untraced_ns):
    t = r["trace"]
    explained = len(t["explanations"])
    over = t["over_threshold"]
    events = t.get("events_read", 0)
    per = lambda ns: ns / explained / 1000 if explained else float("nan")
    return {
        "over": over,
        "explained": explained,
        "share": 100.0 * explained / over if over else float("nan"),
        "reads": t["reads"],
        "events": events,
        "read_ns_per_event": t["read_ns"] / events if events else float("nan"),
        "analysis_us": per(t["analysis_ns"]),
        "windows_us": per(t.get("windows_ns", 0)),
        "all_us": per(t["analysis_ns"] + t.get("windows_ns", 0)),
        "symbols_ms": t.get("symbols_ns", 0) / 1e6,
        "kernel_us": per(main_ns - untraced_ns),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=8)
    p.add_argument("--load", default="dd if=/dev/zero of=/dev/null bs=1G count=1")
    p.add_argument("--baseline", help="another rtlab binary, run round for round beside this one")
    p.add_argument("--binary", help="this rtlab (default: build target/release/rtlab)")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (the flight recorder makes a tracefs instance)")
    exe = a.binary and os.path.abspath(a.binary)
    if exe is None:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
        exe = os.path.join(REPO, "target", "release", "rtlab")
    cpus = open("/sys/devices/system/cpu/online").read().strip()
    cpu = re.split("[-,]", cpus)[-1]
    binaries = [("this", exe)] + ([("baseline", os.path.abspath(a.baseline))] if a.baseline else [])
    rows = {name: [] for name, _ in binaries}
    with tempfile.TemporaryDirectory() as d:
        for rnd in range(a.rounds):
            _, untraced = run(exe, config(a.load, cpu, a.seconds, False), d)
            for name, binary in binaries:
                r, traced = run(binary, config(a.load, cpu, a.seconds, True), d)
                rows[name].append(figures(r, traced, untraced))
                print(f"round {rnd} {name}: {rows[name][-1]}", file=sys.stderr)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{when}, {platform.node()}, kernel {platform.release()}, load `{a.load}` on CPU {cpu}, "
          f"{a.seconds} s runs, {a.rounds} rounds\n")
    print("| binary | round | over 100 µs | explained | reads | events read | read, ns per event "
          "| reads + analyses, µs per explained | windows written, µs per explained "
          "| in all, µs per explained | symbols read once, ms "
          "| main thread's extra time (kernel), µs per explained |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, _ in binaries:
        for i, f in enumerate(rows[name]):
            print(f"| {name} | {i + 1} | {f['over']} | {f['explained']} ({f['share']:.0f} %) "
                  f"| {f['reads']} | {f['events']} | {f['read_ns_per_event']:.0f} "
                  f"| {f['analysis_us']:.0f} | {f['windows_us']:.0f} | {f['all_us']:.0f} "
                  f"| {f['symbols_ms']:.0f} | {f['kernel_us']:.0f} |")
        med = lambda k: statistics.median(f[k] for f in rows[name])
        print(f"| {name} | median | {med('over'):.0f} | {med('explained'):.0f} ({med('share'):.0f} %) "
              f"| {med('reads'):.0f} | {med('events'):.0f} | {med('read_ns_per_event'):.0f} "
              f"| {med('analysis_us'):.0f} | {med('windows_us'):.0f} | {med('all_us'):.0f} "
              f"| {med('symbols_ms'):.0f} | {med('kernel_us'):.0f} |")


if __name__ == "__main__":
    main()
