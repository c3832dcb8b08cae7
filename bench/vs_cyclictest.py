#!/usr/bin/env python3
"""rtlab against cyclictest, side by side, in interleaved rounds.

Both tools measure on the same CPU with the same policy, priority and
interval, with their main thread on another CPU and /dev/cpu_dma_latency held
at 0 (both tools' default). Each round runs both, alternating which goes
first. Reported per tool: median, p99 and max latency (µs, from each tool's
own 1-µs histogram and max), and CPU time per sample of the measurement
thread (from /proc/PID/task/TID/schedstat, between 2 s into the run and 1 s
before its end) and of the whole process (rusage). Then the ratios
rtlab / cyclictest: 1.0 or lower means rtlab adds no latency or cost.

With --load, a SCHED_OTHER busy loop runs on every online CPU during the
rounds. With --partition, `rtlab partition create CPU` isolates the measured
CPU first (and `rtlab partition undo` ends it): the load then lands on nrt,
and both tools run entirely inside rt (rtlab with `cpuset rt` for main and
timer, cyclictest under `rtlab partition run rt --`, its main thread on the
measured CPU since nothing else is allowed there).

With --trace-threshold US, a third variant runs in the same rounds: rtlab
with its flight recorder on (`trace.threshold US us`: tracefs instance on the
measured CPU, wake-ups over US explained while the run goes on), and the
table adds the ratios rtlab+trace / rtlab: what the recorder costs.

With --audit, two more variants run in the same rounds: rtlab auditing the
measured CPU (`audit.cpus CPU`: its trace stream on every CPU, read while
the run goes on) with the binary trace reader (rtlab+audit) and with the
text reader it replaced (rtlab+audit-text, RTLAB_TRACE_READER=text), and
the table adds their ratios to rtlab.

With --irq-latency, one more variant: rtlab with `irq_latency` (its trace
stream follows each sleep's timer: the IRQ side of every wake-up), its
ratios to rtlab (what following the IRQ side costs the measured thread) and
the IRQ side's own median, p99 and max beside the thread's.

Run as root:  python3 bench/vs_cyclictest.py [--rounds 5] [--duration 10] [--load] [--partition] [--trace-threshold 1000] [--audit] [--irq-latency]
Needs: cyclictest (Debian package rt-tests). Builds rtlab in release mode.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def percentile_from_hist(hist, q):
    """Value (µs) at rank ceil(q*n) of a {µs: count} histogram."""
    n = sum(hist.values())
    if n == 0:
        return 0
    rank = max(1, -(-int(q * n * 1_000_000) // 1_000_000))
    seen = 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= rank:
            return us
    return max(hist)


def thread_cpu_ns(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except OSError:
        return None


def find_thread(pid, want_name, deadline):
    """The measurement thread: by name for rtlab, the non-main thread for cyclictest."""
    while time.time() < deadline:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    comm = f.read().strip()
                if want_name and comm == want_name:
                    return int(tid)
                if not want_name and int(tid) != pid:
                    return int(tid)
        except OSError:
            pass
        time.sleep(0.05)
    return None


def run_tool(argv, thread_name, duration, interval_us):
    """Runs argv; samples the measurement thread's CPU time; returns stats."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    result = {}

    def sampler():
        t0 = time.time()
        tid = find_thread(proc.pid, thread_name, t0 + 5)
        if tid is None:
            return
        time.sleep(max(0.0, t0 + 2.0 - time.time()))
        a, ta = thread_cpu_ns(proc.pid, tid), time.time()
        time.sleep(max(0.0, t0 + duration - 1.0 - time.time()))
        b, tb = thread_cpu_ns(proc.pid, tid), time.time()
        if a is not None and b is not None and tb > ta:
            samples = (tb - ta) * 1e6 / interval_us
            result["thread_cpu_ns_per_sample"] = (b - a) / samples

    t = threading.Thread(target=sampler)
    t.start()
    _, status, rusage = os.wait4(proc.pid, 0)
    t.join()
    err = proc.stderr.read().decode(errors="replace")
    if status != 0:
        sys.exit(f"{argv[0]} failed ({status}): {err}")
    result["process_cpu_s"] = rusage.ru_utime + rusage.ru_stime
    return result


def rtlab_round(exe, work, a, variant="rtlab"):
    cfg = os.path.join(work, "bench.cfg")
    main = "  cpuset rt\n" if a.partition else f"  cpu_affinity {a.main_cpu}\n"
    if variant == "rtlab+trace":
        main += f"  trace.threshold {a.trace_threshold} us\n"
    if variant.startswith("rtlab+audit"):
        main += f"  audit.cpus {a.cpu}\n"
    if variant == "rtlab+irq":
        main += "  irq_latency\n"
    timer_cpuset = "  cpuset rt\n" if a.partition else ""
    with open(cfg, "w") as f:
        f.write(
            f"main\n{{\n{main}}}\n"
            f"timer_thread[0]\n{{\n{timer_cpuset}  cpu_affinity {a.cpu}\n  sched.policy FIFO\n"
            f"  sched.priority {a.prio}\n  timer.period {a.interval} us\n"
            f"  lifetime.duration {a.duration} s\n  stats.histo_size {a.histo} us\n}}\n"
        )
    out = os.path.join(work, "rtlab.json")
    if variant == "rtlab+audit-text":
        os.environ["RTLAB_TRACE_READER"] = "text"
    try:
        r = run_tool([exe, "run", cfg, "--json", out, "--outdir", work], "rtlab-timer0", a.duration, a.interval)
    finally:
        os.environ.pop("RTLAB_TRACE_READER", None)
    with open(out) as f:
        doc = json.load(f)
    t = doc["timers"][0]
    trace = doc.get("trace") or {}
    if variant == "rtlab+trace":
        r["trace"] = {k: trace.get(k, 0) for k in ("over_threshold", "not_explained", "reads", "read_ns")}
        r["trace"]["explained"] = len(trace.get("explanations", []))
    cost = (doc.get("audit") or {}).get("stream_cost")
    if variant.startswith("rtlab+audit") and cost:
        r["stream"] = dict(cost, elapsed_ns=doc["elapsed_ns"])
    if variant == "rtlab+irq" and doc.get("timer_irq"):
        irq = doc["timer_irq"][0]["latency"]
        pct = {p["name"]: p["value_ns"] for p in irq["percentiles"]}
        r["irq"] = dict(samples=irq["samples"], median=pct["p50"] / 1000, p99=pct["p99"] / 1000,
                        max=irq["max_ns"] / 1000)
    hist = {us: c for us, c in t["histogram_us"]}
    s = t["summary"]
    r.update(samples=s["samples"], median=percentile_from_hist(hist, 0.5),
             p99=percentile_from_hist(hist, 0.99), max=s["max_ns"] // 1000)
    r["process_cpu_ns_per_sample"] = r["process_cpu_s"] * 1e9 / max(1, s["samples"])
    return r


def cyclictest_round(exe, work, a):
    out = os.path.join(work, "cyclictest.json")
    argv = ["cyclictest", "-q", "-t1", f"-a{a.cpu}", f"-p{a.prio}", f"-i{a.interval}",
            f"-D{a.duration}", f"-h{a.histo}", f"--json={out}"]
    if a.partition:
        argv = [exe, "partition", "run", "rt", "--"] + argv
    else:
        argv.append(f"--mainaffinity={a.main_cpu}")
    r = run_tool(argv, None, a.duration, a.interval)
    with open(out) as f:
        t = json.load(f)["thread"]["0"]
    hist = {int(k): v for k, v in t.get("histogram", {}).items()}
    r.update(samples=t["cycles"], median=percentile_from_hist(hist, 0.5),
             p99=percentile_from_hist(hist, 0.99), max=t["max"])
    r["process_cpu_ns_per_sample"] = r["process_cpu_s"] * 1e9 / max(1, t["cycles"])
    return r


METRICS = [("median", "median latency (µs)"), ("p99", "p99 latency (µs)"), ("max", "max latency (µs)"),
           ("thread_cpu_ns_per_sample", "measurement thread CPU per sample (ns)"),
           ("process_cpu_ns_per_sample", "whole process CPU per sample (ns)")]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10, help="seconds per run")
    p.add_argument("--cpu", type=int, default=1, help="measured CPU")
    p.add_argument("--main-cpu", type=int, default=0, help="CPU of both tools' main thread")
    p.add_argument("--prio", type=int, default=99)
    p.add_argument("--interval", type=int, default=1000, help="period in µs")
    p.add_argument("--histo", type=int, default=10000, help="histogram size in µs")
    p.add_argument("--load", action="store_true", help="a busy loop on every online CPU")
    p.add_argument("--partition", action="store_true", help="isolate the measured CPU with rtlab partition")
    p.add_argument("--trace-threshold", type=int, default=0,
                   help="also run rtlab with its flight recorder at this threshold (µs)")
    p.add_argument("--audit", action="store_true",
                   help="also run rtlab auditing the measured CPU (audit.cpus)")
    p.add_argument("--irq-latency", action="store_true",
                   help="also run rtlab following each wake-up's IRQ side (irq_latency)")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (both tools need SCHED_FIFO)")
    if not shutil.which("cyclictest"):
        sys.exit("cyclictest not found: apt-get install rt-tests")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    exe = os.path.join(REPO, "target", "release", "rtlab")
    ct_version = subprocess.run(["cyclictest", "--help"], capture_output=True, text=True).stdout.splitlines()
    ct_version = next((l for l in ct_version if "cyclictest V" in l), "cyclictest").strip()
    rt_version = subprocess.run([exe, "-V"], capture_output=True, text=True).stdout.strip()

    rows = {"rtlab": [], "cyclictest": [], "rtlab+trace": [], "rtlab+audit": [], "rtlab+audit-text": [],
            "rtlab+irq": []}
    partition_note = ""
    if a.partition:
        made = subprocess.run([exe, "partition", "create", str(a.cpu)], capture_output=True, text=True)
        if made.returncode != 0:
            sys.exit(f"rtlab partition create failed: {made.stderr}")
        partition_note = next((l.strip() for l in made.stdout.splitlines() if l.startswith("tasks")), "")
    loads = []
    if a.load:
        # Started after the partition: they inherit nrt, as any new task does.
        loads = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count())]
    try:
        rounds(exe, a, rows)
    finally:
        for l in loads:
            l.kill()
            l.wait()
        if a.partition:
            subprocess.run([exe, "partition", "undo"], capture_output=True, check=True)
    report(a, rows, rt_version, ct_version, partition_note)


def rounds(exe, a, rows):
    with tempfile.TemporaryDirectory() as work:
        for i in range(a.rounds):
            tools = (["rtlab", "cyclictest"] + (["rtlab+trace"] if a.trace_threshold else [])
                     + (["rtlab+audit", "rtlab+audit-text"] if a.audit else [])
                     + (["rtlab+irq"] if a.irq_latency else []))
            shift = i % len(tools)
            order = tools[shift:] + tools[:shift]
            for tool in order:
                if tool == "cyclictest":
                    r = cyclictest_round(exe, work, a)
                else:
                    r = rtlab_round(exe, work, a, variant=tool)
                rows[tool].append(r)
                print(f"round {i + 1} {tool:16s} samples {r['samples']:6d} median {r['median']:4d} "
                      f"p99 {r['p99']:5d} max {r['max']:6d} us, thread "
                      f"{r.get('thread_cpu_ns_per_sample', float('nan')):7.0f} ns/sample, process "
                      f"{r['process_cpu_ns_per_sample']:7.0f} ns/sample", flush=True)


def report(a, rows, rt_version, ct_version, partition_note):
    def med(tool, key):
        vals = [r[key] for r in rows[tool] if key in r]
        return statistics.median(vals) if vals else float("nan")

    uname = platform.uname()
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print()
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"Machine: {model}, {os.cpu_count()} CPUs, kernel {uname.release} {uname.version}")
    print(f"Tools: {rt_version} vs {ct_version}")
    print(f"Setup: CPU {a.cpu}, SCHED_FIFO {a.prio}, interval {a.interval} us, {a.duration} s per run, "
          f"{a.rounds} interleaved rounds, "
          + ("both tools entirely in partition rt (`rtlab partition create " + str(a.cpu) + "`: " + partition_note + "), "
             if a.partition else f"main threads on CPU {a.main_cpu}, ")
          + ("a SCHED_OTHER busy loop per online CPU" if a.load else "idle machine")
          + "; figures are medians over rounds")
    print()
    extras = [v for v in ("rtlab+trace", "rtlab+audit", "rtlab+audit-text", "rtlab+irq") if rows[v]]
    irqs = [r["irq"] for r in rows["rtlab+irq"] if "irq" in r]
    if irqs:
        m = lambda k: statistics.median(i[k] for i in irqs)
        print(f"IRQ side (rtlab+irq, timer_irq[]): median {m('median'):.1f} us, p99 {m('p99'):.1f} us, "
              f"max {m('max'):.1f} us; samples per run {m('samples'):.0f} "
              f"(the thread's own in the same runs: median {med('rtlab+irq', 'median'):.0f} us, "
              f"p99 {med('rtlab+irq', 'p99'):.0f} us)")
    if rows["rtlab+trace"]:
        print(f"Flight recorder: trace.threshold {a.trace_threshold} us")
        tot = {k: sum(r["trace"][k] for r in rows["rtlab+trace"])
               for k in ("over_threshold", "explained", "not_explained", "reads", "read_ns")}
        print(f"  over all its rounds: {tot['over_threshold']} wake-ups over the threshold, "
              f"{tot['explained']} explained, {tot['not_explained']} not; {tot['reads']} buffer reads, "
              f"{tot['read_ns'] / 1e6:.0f} ms in all "
              f"({tot['read_ns'] / 1e6 / max(1, tot['reads']):.1f} ms each)")
    if rows["rtlab+audit"]:
        print(f"Audit: audit.cpus {a.cpu}")
        for v in ("rtlab+audit", "rtlab+audit-text"):
            costs = [r["stream"] for r in rows[v] if "stream" in r]
            if costs:
                share = statistics.median(100 * c["read_ns"] / c["elapsed_ns"] for c in costs)
                per_event = statistics.median(c["read_ns"] / max(1, c["events"]) for c in costs)
                start = statistics.median(c["start_ns"] for c in costs) / 1e6
                print(f"  {v}: reader {costs[0]['reader']}, the stream's reads {share:.2f} % of the main "
                      f"thread's CPU ({per_event:.0f} ns per event, {statistics.median(c['events'] for c in costs):.0f} "
                      f"events a run), its start {start:.0f} ms")
    print()
    print("| metric | rtlab | cyclictest | " + "".join(f"{v} | " for v in extras)
          + "rtlab/cyclictest |" + "".join(f" {v}/rtlab |" for v in extras))
    print("|---|---:|---:|" + "---:|" * (2 * len(extras) + 1))
    for key, label in METRICS:
        r, c = med("rtlab", key), med("cyclictest", key)
        ratio = r / c if c else float("nan")
        xs = [med(v, key) for v in extras]
        print(f"| {label} | {r:.0f} | {c:.0f} | " + "".join(f"{x:.0f} | " for x in xs)
              + f"{ratio:.2f} |" + "".join(f" {x / r if r else float('nan'):.2f} |" for x in xs))


if __name__ == "__main__":
    main()
