#!/usr/bin/env python3
"""How lean rtlab's measuring core is, side by side with cyclictest.

In one run of this script, both tools measure one SCHED_FIFO 90 thread on
the last CPU:

1. Resident and locked memory (VmRSS, and Locked of smaps_rollup, read
   from /proc 3 s into a 6 s run at 1 ms), with and without locked memory
   (rtlab's `memlock`, cyclictest's `-m`), for each rtlab binary: the host
   build (glibc, dynamic) and the static musl release binary
   (docs/boards.md).
2. User-space instructions per sample of the measuring thread: callgrind
   (`--separate-threads=yes`) on runs of 1,000 and 11,000 loops at 100 µs;
   the measuring thread is the one whose count grows with the loops, and
   the difference over 10,000 samples is the cost of one sample.
3. valgrind memcheck's error count on a short rtlab run.

Run as root:  python3 bench/lean.py [--rtlab PATH]...
Needs: cyclictest (rt-tests), valgrind. Builds rtlab's two release binaries
unless --rtlab names binaries (instructions and memcheck: the first).
"""

import argparse
import glob
import os
import platform
import re
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def last_cpu():
    with open("/sys/devices/system/cpu/online") as f:
        return int(f.read().strip().replace("-", ",").split(",")[-1])


def experiment(cpu, period_us, loops=None, seconds=None, memlock=False):
    main = "main\n{\n  memlock\n}\n" if memlock else ""
    life = f"  lifetime.loops {loops}\n" if loops else f"  lifetime.duration {seconds} s\n"
    return (
        f"{main}timer_thread[0]\n{{\n  sched.policy FIFO\n  sched.priority 90\n"
        f"  cpu_affinity {cpu}\n  timer.period {period_us} us\n{life}}}\n"
    )


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def locked_kb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Locked:"):
                return int(line.split()[1])
    return None


def rss_of(cmd, cwd):
    """(VmRSS, Locked) in KiB, 3 s into the run."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    kb = (rss_kb(p.pid), locked_kb(p.pid))
    p.wait()
    return kb


def memory(rtlabs, cpu, tmp):
    out = {}
    for memlock in (False, True):
        cfg = os.path.join(tmp, f"rss-{memlock}.cfg")
        with open(cfg, "w") as f:
            f.write(experiment(cpu, 1000, seconds=6, memlock=memlock))
        for name, rtlab in rtlabs:
            out[(name, memlock)] = rss_of([rtlab, "run", cfg], tmp)
        ct = ["cyclictest", "-q", "-t1", "-p90", f"-a{cpu}", "-i1000", "-D6"]
        out[("cyclictest", memlock)] = rss_of(ct + (["-m"] if memlock else []), tmp)
    return out


def callgrind_threads(cmd, cwd, tag):
    d = os.path.join(cwd, tag)
    os.makedirs(d, exist_ok=True)
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--separate-threads=yes",
         f"--callgrind-out-file={d}/cg.%p"] + cmd,
        cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )
    counts = {}
    for path in glob.glob(f"{d}/cg.*-*"):
        thread = path.rsplit("-", 1)[1]
        with open(path) as f:
            for line in f:
                if line.startswith("summary:"):
                    counts[thread] = int(line.split()[1])
    return counts


def per_sample(tool_cmd, cwd, tag):
    few = callgrind_threads(tool_cmd(1000), cwd, f"{tag}-1000")
    many = callgrind_threads(tool_cmd(11000), cwd, f"{tag}-11000")
    growth = {t: many[t] - few.get(t, 0) for t in many}
    return max(growth.values()) / 10000


def instructions(rtlab, cpu, tmp):
    def rt(loops):
        cfg = os.path.join(tmp, f"cg-{loops}.cfg")
        with open(cfg, "w") as f:
            f.write(experiment(cpu, 100, loops=loops))
        return [rtlab, "run", cfg]

    def ct(loops):
        return ["cyclictest", "-q", "-t1", "-p90", f"-a{cpu}", "-i100", f"-l{loops}"]

    return per_sample(rt, tmp, "rtlab"), per_sample(ct, tmp, "cyclictest")


def memcheck(rtlab, cpu, tmp):
    cfg = os.path.join(tmp, "mc.cfg")
    with open(cfg, "w") as f:
        f.write(experiment(cpu, 1000, loops=500))
    p = subprocess.run(["valgrind", "--error-exitcode=9", rtlab, "run", cfg],
                       cwd=tmp, capture_output=True, text=True)
    m = re.search(r"ERROR SUMMARY: (\d+) errors", p.stderr)
    return (int(m.group(1)) if m else None), p.returncode


def release_binaries():
    """The host release build and the static musl one, built now."""
    musl = f"{platform.machine()}-unknown-linux-musl"
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "--target", musl], cwd=ROOT, check=True)
    return [("rtlab (glibc)", os.path.join(ROOT, "target/release/rtlab")),
            ("rtlab (static musl)", os.path.join(ROOT, f"target/{musl}/release/rtlab"))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtlab", action="append", help="an rtlab binary (default: build both)")
    args = ap.parse_args()
    if args.rtlab:
        rtlabs = [(f"rtlab {os.path.basename(p)}", os.path.abspath(p)) for p in args.rtlab]
    else:
        rtlabs = release_binaries()
    cpu = last_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = ", ".join(f"{n} {os.path.getsize(p) / 1e6:.1f} MB" for n, p in rtlabs)
        print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()} {platform.release()} "
              f"{os.cpu_count()} CPUs; binaries: {sizes}; CPU {cpu}")
        mem = memory(rtlabs, cpu, tmp)
        for memlock in (False, True):
            label = "memlock / -m" if memlock else "no lock"
            c = mem[("cyclictest", memlock)]
            print(f"{label}: cyclictest RSS {c[0] / 1024:.1f} MB, locked {c[1] / 1024:.1f} MB")
            for name, _ in rtlabs:
                r = mem[(name, memlock)]
                print(f"{label}: {name} RSS {r[0] / 1024:.1f} MB, locked {r[1] / 1024:.1f} MB; "
                      f"RSS difference {(r[0] - c[0]) / 1024:+.1f} MB")
        rtlab = rtlabs[0][1]
        rt, ct = instructions(rtlab, cpu, tmp)
        print(f"user-space instructions per sample: {rtlabs[0][0]} {rt:.0f}, cyclictest {ct:.0f}")
        errors, status = memcheck(rtlab, cpu, tmp)
        print(f"valgrind memcheck: {errors} errors (exit {status})")


if __name__ == "__main__":
    main()
