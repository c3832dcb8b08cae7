#!/usr/bin/env python3
"""The BPF source against the tracefs paths, on the same run.

One FIFO loop of rt-tests' cyclictest (`-t1 -p45 -i1000 -l LOOPS`, pinned
to the last CPU) is watched at once by:
  bpf       `rtlab monitor --rt-tasks` (the BPF program);
  tracefs   the same under `setpriv --bounding-set -bpf,-perfmon,-sys_admin`
            (BPF refused: the trace stream's consumer counts instead);
  task-lat  `rtlab task-latency --pid` (tracefs, one task, its own
            method: switch-ins the kernel does not log are inferred from
            the task's own events);
  task-lat-bpf  the same run's BPF count of that task (`task_latency[0].bpf`,
            over the trace's window).
The truth is cyclictest's own loop count: each of its LOOPS cycles is
one clock_nanosleep, one wake-up (cyclictest -l ends after exactly that
many).

Printed: each watcher's count of the thread's wake-ups and, where it has
them, the median, p99 and max of wake-up to switch-in.

    sudo python3 bench/bpf_vs_tracefs.py [--loops 20000] [--rounds 2]

Run as root; needs cyclictest (rt-tests) and setpriv (util-linux).
"""

import argparse
import json
import os
import platform
import signal
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXPERIMENT = ("main\n{\n  stats.period 1 s\n}\ntimer_thread[0]\n{\n  sched.policy OTHER\n"
              "  timer.period 100 ms\n}\n")


def figure(path):
    r = json.load(open(path))
    return next(f["value"] for f in r.get("figures", []) if f["key"] == "rt_wakeups")


def one_round(rtlab, d, loops, cpu):
    cfg = os.path.join(d, "exp.cfg")
    open(cfg, "w").write(EXPERIMENT)
    mon = lambda name, pre: subprocess.Popen(
        [*pre, rtlab, "monitor", cfg, "--rt-tasks", "--rt-late", "0", "--listen", "none",
         "--windows", "none", "--json", os.path.join(d, f"{name}.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d)
    bpf = mon("bpf", [])
    trace = mon("tracefs", ["setpriv", "--bounding-set", "-bpf,-perfmon,-sys_admin", "--"])
    time.sleep(2)
    ct = subprocess.Popen(["cyclictest", "-q", "-t1", "-p45", "-i1000", "-l", str(loops),
                           "-a", str(cpu), "-m"], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    tid = max(int(t) for t in os.listdir(f"/proc/{ct.pid}/task"))
    tl = subprocess.Popen([rtlab, "task-latency", "--pid", str(ct.pid), "--duration",
                           f"{loops // 1000 + 30}s", "--json", os.path.join(d, "tl.json")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d)
    ct.wait()
    time.sleep(1.5)
    for p in (bpf, trace, tl):
        p.send_signal(signal.SIGINT)
    for p in (bpf, trace, tl):
        p.wait(timeout=60)
    out = {"loops": loops, "tid": tid}
    for name in ("bpf", "tracefs"):
        f = figure(os.path.join(d, f"{name}.json"))
        task = next((t for t in f["tasks"] if t["pid"] == tid), None)
        series = [s for s in f["series"] if s["policy"] == "fifo" and s["priority"] == "45"]
        out[name] = {
            "counted": task["wakeups"] if task else 0,
            "lost": f["lost"],
            "p50_us": series[0]["p50_ns"] / 1000 if series else None,
            "p99_us": series[0]["p99_ns"] / 1000 if series else None,
            "max_us": task["worst_ns"] / 1000 if task else None,
        }
    r = json.load(open(os.path.join(d, "tl.json")))
    th = next((t for m in r.get("task_latency", []) for t in m["threads"] if t["tid"] == tid),
              None)
    if th:
        w = th["wake_to_run"]
        pct = {p["name"]: p["value_ns"] for p in w.get("percentiles", [])}
        out["task-lat"] = {"counted": th["wake_ups"], "inferred": th["switch_ins_inferred"],
                           "p50_us": pct.get("p50", 0) / 1000,
                           "p99_us": pct.get("p99", 0) / 1000,
                           "max_us": w.get("max_ns", 0) / 1000}
    # task-latency's own BPF count of the same thread, over its trace's
    # window (`task_latency[0].bpf`).
    bpf = next((m.get("bpf") for m in r.get("task_latency", [])), None) or {}
    k = next((k for k in bpf.get("threads", []) if k["tid"] == tid), None)
    if k:
        out["task-lat-bpf"] = {"counted": k["wake_ups"], "p50_us": k["p50_ns"] / 1000,
                               "p99_us": k["p99_ns"] / 1000, "max_us": k["max_ns"] / 1000}
    elif bpf.get("refused"):
        out["task-lat-bpf"] = {"refused": bpf["refused"]}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loops", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
    rtlab = os.path.join(REPO, "target/release/rtlab")
    cpu = os.cpu_count() - 1
    print(f"machine: {platform.node()} {platform.machine()} kernel {platform.release()}, "
          f"{os.cpu_count()} CPUs; cyclictest -t1 -p45 -i1000 -l {args.loops} -a {cpu}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            print(json.dumps(one_round(rtlab, d, args.loops, cpu)), flush=True)


if __name__ == "__main__":
    main()
