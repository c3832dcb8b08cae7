#!/usr/bin/env python3
"""What the BPF source (`rtlab monitor --rt-tasks`) costs at a context-switch load.

Interleaved rounds of `hackbench -p` (rt-tests' pipe ping-pong: every
message a wake-up and a context switch) under five states:
  none       no rtlab;
  monitor    `rtlab monitor` without --rt-tasks (one SCHED_OTHER timer
             thread at 100 ms: the monitor's own cost, next to nothing);
  counting   the same with --rt-tasks --rt-late 0 (the programs run at
             every sched_waking and sched_switch; only real-time tasks
             counted; no explanations);
  rt-tasks   --rt-tasks as it comes (the explanations on: each switch,
             interrupt handler and softirq also logged in its CPU's ring);
  all-tasks  the same with --rt-tasks --all-tasks (every wake-up counted:
             hackbench's too).
For each round: hackbench's own time, the monitor's CPU time (utime +
stime of the process, /proc/PID/stat) its RSS and peak RSS (VmRSS, VmHWM), and for
each BPF program the kernel's own statistics, read from the monitor's
program descriptors (/proc/PID/fdinfo: run_time_ns, run_cnt,
recursion_misses; `kernel.bpf_stats_enabled` is set to 1 for the
bench and put back after).

    sudo python3 bench/bpf_cost.py [--rounds 5] [--groups 8] [--loops 3000]
        [--fifo PRIO] [--states counting,rt-tasks] [--rtlab PATH]

`--fifo PRIO` runs hackbench at SCHED_FIFO PRIO (chrt): every wake-up is
then a real-time task's, counted by the programs (the worst case of the
default mode). `--rtlab PATH` measures that build instead of building
(the BPF program is the same in a debug build: clang compiles it alike);
`--states` picks the states. `--pipe CPU` replaces hackbench by `perf
bench sched pipe -l LOOPS` pinned to that CPU (two tasks ping-ponging: a
steadier load whose time is all context switches).

Run as root. Needs rt-tests' hackbench. Builds rtlab in release mode.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STATES = ("none", "monitor", "counting", "rt-tasks", "all-tasks")
EXPERIMENT = ("main\n{\n  stats.period 1 s\n}\ntimer_thread[0]\n{\n  sched.policy OTHER\n"
              "  timer.period 100 ms\n}\n")


FIFO = []


PIPE = []


def hackbench(groups, loops):
    """The load's own time (s): hackbench's, or with --pipe CPU `perf bench
    sched pipe`'s two tasks ping-ponging on one CPU (a context switch per
    message, nothing else)."""
    if PIPE:
        out = subprocess.run([*FIFO, "taskset", "-c", PIPE[0], "perf", "bench", "sched", "pipe",
                              "-l", str(loops)], capture_output=True, text=True, check=True).stdout
        return float(re.search(r"Total time:\s*([\d.]+)", out).group(1))
    out = subprocess.run([*FIFO, "hackbench", "-p", "-g", str(groups), "-l", str(loops)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Time:\s*([\d.]+)", out).group(1))


def cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid):
    """VmRSS and VmHWM (KiB)."""
    got = {}
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(("VmRSS:", "VmHWM:")):
            got[line.split(":")[0]] = int(line.split()[1])
    return got.get("VmRSS", 0), got.get("VmHWM", 0)


def programs(pid):
    """Each BPF program the process holds, by the tracepoint its link attaches
    it to: name -> (run_time_ns, run_cnt, recursion_misses)."""
    infos = []
    fd_dir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fd_dir):
        try:
            infos.append(open(os.path.join(fd_dir, fd)).read())
        except OSError:
            continue
    field = lambda info, k: (re.search(rf"^{k}:\s*(\S+)", info, re.M) or [None, None])[1]
    names = {field(i, "prog_id"): field(i, "tp_name") for i in infos if field(i, "tp_name")}
    out = {}
    for info in infos:
        if field(info, "run_cnt") is None:
            continue
        name = names.get(field(info, "prog_id"), field(info, "prog_tag"))
        out[name] = tuple(int(field(info, k) or 0)
                          for k in ("run_time_ns", "run_cnt", "recursion_misses"))
    return out


def round_of(state, rtlab, cfg, groups, loops):
    if state == "none":
        return hackbench(groups, loops), None
    flags = {"monitor": [], "counting": ["--rt-tasks", "--rt-late", "0"],
             "rt-tasks": ["--rt-tasks"],
             "all-tasks": ["--rt-tasks", "--all-tasks"]}[state]
    mon = subprocess.Popen([rtlab, "monitor", cfg, "--listen", "none", "--windows", "none",
                            *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           cwd=os.path.dirname(cfg))
    time.sleep(1.5)
    cpu0, progs0 = cpu_s(mon.pid), programs(mon.pid)
    wall0 = time.monotonic()
    took = hackbench(groups, loops)
    wall = time.monotonic() - wall0
    cpu1, progs1, mem = cpu_s(mon.pid), programs(mon.pid), memory_kib(mon.pid)
    mon.terminate()
    mon.wait(timeout=30)
    runs = {t: tuple(b - a for a, b in zip(progs0.get(t, (0, 0, 0)), v))
            for t, v in progs1.items()}
    return took, (100 * (cpu1 - cpu0) / wall, mem, runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--loops", type=int, default=3000)
    ap.add_argument("--fifo", type=int, default=0)
    ap.add_argument("--pipe", default=None, metavar="CPU")
    ap.add_argument("--states", default=",".join(STATES))
    ap.add_argument("--rtlab", default=None)
    ap.add_argument("--no-stats", action="store_true",
                    help="leave kernel.bpf_stats_enabled off: the load's own time without the "
                         "statistics' two clock reads a program run (no ns per run then)")
    args = ap.parse_args()
    states = tuple(s for s in STATES if s in args.states.split(","))
    if args.fifo:
        FIFO.extend(["chrt", "-f", str(args.fifo)])
    if args.pipe is not None:
        PIPE.append(args.pipe)
    rtlab = args.rtlab
    if rtlab is None:
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
        rtlab = os.path.join(REPO, "target/release/rtlab")
    stats_file = "/proc/sys/kernel/bpf_stats_enabled"
    before = open(stats_file).read().strip()
    results = {s: [] for s in states}
    try:
        open(stats_file, "w").write("0" if args.no_stats else "1")
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "exp.cfg")
            open(cfg, "w").write(EXPERIMENT)
            for r in range(args.rounds):
                order = states if r % 2 == 0 else tuple(reversed(states))
                for state in order:
                    results[state].append(round_of(state, rtlab, cfg, args.groups, args.loops))
                print(f"round {r + 1} done", flush=True)
    finally:
        open(stats_file, "w").write(before)
    print(f"machine: {platform.node()} {platform.machine()} kernel {platform.release()}, "
          f"{os.cpu_count()} CPUs; {' '.join(FIFO)} "
          f"{f'perf bench sched pipe on CPU {PIPE[0]}' if PIPE else f'hackbench -p -g {args.groups}'}"
          f" -l {args.loops}, "
          f"{args.rounds} interleaved rounds; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"rtlab: {rtlab}")
    base_state = "none" if "none" in results else states[0]
    base = statistics.median(t for t, _ in results[base_state])
    print(f"| state | load's time s (median, range) | throughput vs {base_state} | monitor CPU % of one CPU "
          "| monitor VmRSS / VmHWM KiB | BPF ns per run (runs per round) |")
    print("|---|---|---|---|---|---|")
    for state in states:
        times = [t for t, _ in results[state]]
        med = statistics.median(times)
        extra = [x for _, x in results[state] if x]
        cpu = f"{statistics.median(e[0] for e in extra):.2f}" if extra else "-"
        hwm = (f"{max(e[1][0] for e in extra)} / {max(e[1][1] for e in extra)}"
               if extra else "-")
        per_prog = {}
        for e in extra:
            for tag, (ns, cnt, miss) in e[2].items():
                p = per_prog.setdefault(tag, [0, 0, 0, 0])
                p[0] += ns
                p[1] += cnt
                p[2] += miss
                p[3] += 1
        bpf = "; ".join(f"{tag}: {ns / cnt:.0f} ns ({cnt // n}, misses {miss})"
                        for tag, (ns, cnt, miss, n) in sorted(per_prog.items()) if cnt) or "-"
        print(f"| {state} | {med:.3f} ({min(times):.3f}-{max(times):.3f}) | "
              f"{100 * base / med:.1f}% | {cpu} | {hwm} | {bpf} |")


if __name__ == "__main__":
    main()
