#!/usr/bin/env python3
"""What a kernel stack walk (`trace.stacks switch`) costs the wake-up it
lands in: rtlab runs a timer thread on the last CPU with a FIFO 50 shell
writing /proc/sys/vm/compact_memory there (the thread it preempts), and
each saved window gives, for every stack, the time from the switch that
triggered it to its record. Root; prints a Markdown row for
docs/benchmarks.md. Usage: sudo bench/stack_walks.py [RTLAB] [SECONDS]"""
import glob, json, os, re, statistics, subprocess, sys, tempfile

rtlab = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/rtlab")
seconds = sys.argv[2] if len(sys.argv) > 2 else "6"
cpus = open("/sys/devices/system/cpu/online").read().strip()
last = re.split("[-,]", cpus)[-1]
with tempfile.TemporaryDirectory() as d:
    hog = os.path.join(d, "compact.sh")
    with open(hog, "w") as f:
        f.write("#!/bin/sh\nwhile :; do echo 1 > /proc/sys/vm/compact_memory; done\n")
    os.chmod(hog, 0o755)
    cfg = os.path.join(d, "b.cfg")
    with open(cfg, "w") as f:
        f.write(f"""main {{
 trace.threshold 40 us
 trace.stacks switch
 trace.max_spikes 1000
}}
program[0] {{
 cmdline {hog}
 cpu_affinity {last}
 sched.policy FIFO
 sched.priority 50
}}
timer_thread[0] {{
 cpu_affinity {last}
 sched.policy FIFO
 sched.priority 99
 timer.period 1 ms
 lifetime.duration {seconds} s
}}
""")
    subprocess.run([rtlab, "run", cfg, "--json", "r.json"], cwd=d, check=True,
                   stdout=subprocess.DEVNULL)
    walks = []
    for w in glob.glob(os.path.join(d, "rtlab-spikes", "rtlab-spike-*.trace.txt")):
        switch = None
        for line in open(w):
            m = re.search(r" (\d+\.\d+): (sched_switch|<stack trace>)", line)
            if not m:
                continue
            ts = float(m.group(1))
            if m.group(2) == "sched_switch":
                switch = ts if "next_comm=rtlab-timer0" in line else None
            elif switch is not None:
                walks.append((ts - switch) * 1e6)
                switch = None
    walks.sort()
    if not walks:
        sys.exit("no stack recorded: nothing preempted the timer thread's CPU")
    q = lambda p: walks[min(len(walks) - 1, int(p * len(walks)))]
    print(f"| stack walks | {len(walks)} | {walks[0]:.1f} | {statistics.median(walks):.1f} "
          f"| {q(0.9):.1f} | {q(0.99):.1f} | {walks[-1]:.1f} |")
