#!/usr/bin/env python3
"""How lean rtlab's measuring core is, side by side with cyclictest.

In one run of this script, both tools measure one SCHED_FIFO 90 thread on
the last CPU:

1. Resident and locked memory (VmRSS, and Locked of smaps_rollup, read
   from /proc 3 s into a 6 s run at 1 ms), with and without locked memory
   (rtlab's `memlock`, cyclictest's `-m`), for each rtlab binary: the host
   build (glibc, dynamic) and the static musl release binary
   (docs/boards.md).
2. User-space instructions per sample, for each rtlab binary and
   cyclictest: callgrind (`--separate-threads=yes`) on runs of 20,000 and
   120,000 loops at 100 µs; the difference over 100,000 samples of the
   measuring thread (the one whose count grows most) and of the whole
   process (every thread's count summed). Both runs last past the first
   refresh of rtlab's main thread (1 s), so that what a run does once (its
   first refresh, the start-up pages let go after it) is in both and not
   counted as per-sample work; what the main thread does every refresh is.
   valgrind maps no vDSO (the auxiliary vector has no AT_SYSINFO_EHDR), so
   every tool's clock read is counted as its C library's (or rtlab's)
   syscall path here.
3. valgrind memcheck's error count on a short run of each rtlab binary,
   with bench/lean.supp (musl's allocator, explained there).

Run as root:  python3 bench/lean.py [--rtlab PATH]...
Needs: cyclictest (rt-tests), valgrind, binutils (strip). Builds rtlab's two
release binaries with their symbol table (CARGO_PROFILE_RELEASE_STRIP=false:
the same code, for memcheck's suppressions by name; the sizes printed are
of stripped copies) unless --rtlab names binaries.
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


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "CPU model unknown"


def cyclictest_version():
    p = subprocess.run(["cyclictest", "--help"], capture_output=True, text=True)
    m = re.search(r"cyclictest V (\S+)", p.stdout + p.stderr)
    return f"cyclictest V {m.group(1)}" if m else "cyclictest"


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
    """(VmRSS, Locked) in KiB, 3 s into the run, and the peak RSS of the
    whole run as /usr/bin/time prints it (%M, the kernel's ru_maxrss of its
    one child). Not this script's own wait4: a child forked from Python
    starts with Python's pages, and ru_maxrss keeps that peak across the
    exec (14.8 MB for both tools here)."""
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M"] + cmd, cwd=cwd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
        tool = int(f.read().split()[0])
    kb = (rss_kb(tool), locked_kb(tool))
    err = p.communicate()[1]
    return kb + (int(err.strip().splitlines()[-1]),)


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


def per_sample(tool_cmd, cwd, tag, loops):
    """(measuring thread, whole process) instructions per sample."""
    few_n, many_n = loops
    few = callgrind_threads(tool_cmd(few_n), cwd, f"{tag}-{few_n}")
    many = callgrind_threads(tool_cmd(many_n), cwd, f"{tag}-{many_n}")
    growth = {t: many[t] - few.get(t, 0) for t in many}
    n = many_n - few_n
    return max(growth.values()) / n, (sum(many.values()) - sum(few.values())) / n


def rtlab_cmd(rtlab, cpu, tmp):
    def cmd(loops):
        cfg = os.path.join(tmp, f"cg-{loops}.cfg")
        with open(cfg, "w") as f:
            f.write(experiment(cpu, 100, loops=loops))
        return [rtlab, "run", cfg]
    return cmd


def cyclictest_cmd(cpu):
    def cmd(loops):
        return ["cyclictest", "-q", "-t1", "-p90", f"-a{cpu}", "-i100", f"-l{loops}"]
    return cmd


SUPPRESSIONS = os.path.join(ROOT, "bench", "lean.supp")


def has_symbols(path):
    """Whether an ELF file keeps its symbol table (.symtab)."""
    p = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True)
    return ".symtab" in p.stdout


def is_static(path):
    """Whether an ELF executable has no program interpreter."""
    p = subprocess.run(["readelf", "-l", "-W", path], capture_output=True, text=True)
    return "INTERP" not in p.stdout


def stripped_size(path, tmp):
    """The file size of a stripped copy (what the release profile ships)."""
    copy = os.path.join(tmp, "stripped")
    subprocess.run(["strip", "-o", copy, path], check=True)
    size = os.path.getsize(copy)
    os.unlink(copy)
    return size


def memcheck(rtlab, cpu, tmp):
    """(errors, suppressed, exit status) of memcheck on a 500-loop run."""
    cfg = os.path.join(tmp, "mc.cfg")
    with open(cfg, "w") as f:
        f.write(experiment(cpu, 1000, loops=500))
    p = subprocess.run(["valgrind", "--error-exitcode=9", f"--suppressions={SUPPRESSIONS}",
                        rtlab, "run", cfg],
                       cwd=tmp, capture_output=True, text=True)
    m = re.search(r"ERROR SUMMARY: (\d+) errors .*suppressed: (\d+) from", p.stderr)
    if not m:
        return None, None, p.returncode
    return int(m.group(1)), int(m.group(2)), p.returncode


def release_binaries():
    """The host release build and the static musl one, built now with
    their symbol table."""
    musl = f"{platform.machine()}-unknown-linux-musl"
    env = dict(os.environ, CARGO_PROFILE_RELEASE_STRIP="false")
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, env=env, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "--target", musl],
                   cwd=ROOT, env=env, check=True)
    return [("rtlab (glibc)", os.path.join(ROOT, "target/release/rtlab")),
            ("rtlab (static musl)", os.path.join(ROOT, f"target/{musl}/release/rtlab"))]


def named(paths):
    """Labels for binaries given by path: static or dynamic, and the path."""
    return [(f"rtlab ({'static' if is_static(p) else 'dynamic'}, {p})", os.path.abspath(p))
            for p in paths]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtlab", action="append",
                    help="an rtlab binary, e.g. the static musl one (default: build both)")
    ap.add_argument("--loops", default="20000,120000",
                    help="the two callgrind runs' loops (default 20000,120000)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory step")
    ap.add_argument("--memory-only", action="store_true",
                    help="the memory step alone (no callgrind, no memcheck)")
    args = ap.parse_args()
    loops = tuple(int(x) for x in args.loops.split(","))
    rtlabs = named(args.rtlab) if args.rtlab else release_binaries()
    cpu = last_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = ", ".join(f"{n} {stripped_size(p, tmp) / 1e6:.1f} MB" for n, p in rtlabs)
        print(f"# {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC {platform.node()} "
              f"{platform.release()} {os.cpu_count()} CPUs; binaries: {sizes}; CPU {cpu}")
        print(f"# {subprocess.run(['uname', '-a'], capture_output=True, text=True).stdout.strip()}")
        print(f"# {cpu_model()}; {cyclictest_version()}")
        mem = {} if args.no_memory else memory(rtlabs, cpu, tmp)
        for memlock in (() if args.no_memory else (False, True)):
            label = "memlock / -m" if memlock else "no lock"
            c = mem[("cyclictest", memlock)]
            print(f"{label}: cyclictest RSS {c[0] / 1024:.1f} MB, locked {c[1] / 1024:.1f} MB, "
                  f"peak {c[2] / 1024:.1f} MB")
            for name, _ in rtlabs:
                r = mem[(name, memlock)]
                print(f"{label}: {name} RSS {r[0] / 1024:.1f} MB, locked {r[1] / 1024:.1f} MB; "
                      f"RSS difference {(r[0] - c[0]) / 1024:+.1f} MB; peak {r[2] / 1024:.1f} MB, "
                      f"{(r[2] - c[2]) / 1024:+.1f} MB against cyclictest's")
        if args.memory_only:
            return
        print(f"user-space instructions per sample ({loops[1]} minus {loops[0]} loops at "
              f"100 us): measuring thread, whole process")
        ct = per_sample(cyclictest_cmd(cpu), tmp, "cyclictest", loops)
        print(f"  cyclictest: {ct[0]:.1f}, {ct[1]:.1f}")
        for i, (name, rtlab) in enumerate(rtlabs):
            rt = per_sample(rtlab_cmd(rtlab, cpu, tmp), tmp, f"rtlab{i}", loops)
            print(f"  {name}: {rt[0]:.1f}, {rt[1]:.1f}; whole process "
                  f"{rt[1] - ct[1]:+.1f} against cyclictest")
        for name, rtlab in rtlabs:
            errors, suppressed, status = memcheck(rtlab, cpu, tmp)
            note = "" if has_symbols(rtlab) else " (stripped: lean.supp's names cannot match)"
            print(f"valgrind memcheck, {name}: {errors} errors, {suppressed} suppressed by "
                  f"bench/lean.supp (exit {status}){note}")


if __name__ == "__main__":
    main()
