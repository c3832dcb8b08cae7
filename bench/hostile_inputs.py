#!/usr/bin/env python3
"""Time and peak memory of rtlab on small hostile files (docs/hardening.md).

Builds the same pathological experiment and result files as
tests/hardening.rs (about 1-3 MB each), runs the release binary on each
(`rtlab check FILE` or `rtlab compare FILE`), and prints, per file, the exit
status, the wall time and the peak resident memory of the process (from
wait4's rusage), then the same for a real experiment and a real result as a
baseline.

    cargo build --release && python3 bench/hostile_inputs.py [target/release/rtlab]

Give another binary (an older rtlab) to compare; a process still running
after 30 s is killed (exit -9), and the address space is limited to 4 GiB
so that a memory bomb fails instead of swapping the machine.
"""

import os
import resource
import subprocess
import sys
import tempfile
import time

MB = 1 << 20
TIMEOUT_S = 30


def fill(unit, size):
    return unit * (size // len(unit))


def experiments():
    return {
        "garbage.cfg": fill("nonsense line\n", MB - 100),
        "stanzas.cfg": fill("timer_thread[0]\n{\n}\n", MB - 100),
        "mains.cfg": fill("main\n{\n}\n", MB - 100),
        "props.cfg": "main\n{\n" + fill("  threads.sched *a*a*a*a*a*a*a*a*a*a*a*b FIFO 2\n", MB - 200) + "}\n",
        "cpulist.cfg": "main\n{\n  cpu_affinity " + fill("0-1023,", MB - 100) + "0\n}\n",
        "irqs.cfg": "main\n{\n  irq.affinity 0 " + fill("4294967295 ", MB - 100) + "\n}\n",
        "longkey.cfg": "main\n{\n  " + fill("k", MB - 100) + " 1\n}\n",
        "toobig.cfg": fill("# comment\n", 3 * MB),
    }

def results():
    return {
        "nested.json": "[" * MB + "]" * MB,
        "deep-rtlab.json": '{"rtlab_version": ' + '{"a":' * (MB // 6),
        "columns.hist": "# Histogram\n0 " + fill("1 ", 3 * MB) + "\n",
        "rows.hist": "# Histogram\n" + "".join(f"{i} 1\n" for i in range(300_000)),
        "tlines.hist": "".join(
            f"T:{i} ( 1) P:80 I:1000 C: 9 Min: 1 Act: 2 Avg: 3 Max: 4\n" for i in range(100_000)
        ),
        "threads.json": '{"thread": {' + "".join(f'"{i}": {{}},' for i in range(200_000)) + '"x": 0}}',
        "huge.hist": fill("9", 3 * MB),
    }


def windows():
    """Windows files (`rtlab monitor --windows`) as the audit crafted them,
    each under 64 MiB (the readers' file limit): read under a 256 MiB
    address space, as the audit did (`ulimit -v 262144`)."""
    head = '{"schema":"rtlab-windows/1","bounds_ns":[2000]}\n'
    line = '{"start":"2026-11-22T05:00:00Z","seconds":1.0,"thread":"T0","cpu":0,"samples":1,"max_ns":1500,"counts":[1,0]}\n'
    return {
        "windows-many.jsonl": head + line * ((60 * MB) // len(line)),
        "windows-longline.jsonl": head + '{"start":"' + fill("x", 60 * MB) + '"}\n',
        "windows-threads.jsonl": head + "".join(
            line.replace('"T0"', f'"T{i}"') for i in range(2000)
        ),
        "windows-counts.jsonl": '{"schema":"rtlab-windows/1","bounds_ns":[' + ",".join(
            str(i) for i in range(1, 200_000)) + ']}\n' + line,
        "windows-spaced.jsonl": '{"schema": "rtlab-windows/1", "bounds_ns": [2000]}\n' + line * 1000,
    }


def own_rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def run(binary, args, cwd, limit=4 << 30):
    start = time.monotonic()
    proc = subprocess.Popen(
        [binary] + args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
        env=dict(os.environ, RTLAB_JOURNAL_DIR=os.path.join(cwd, "journal")),
    )
    # A hang detector: the process is killed after TIMEOUT_S (exit -9).
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > TIMEOUT_S:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.001)
    wall = time.monotonic() - start
    return os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss


EXPERIMENT_NAMES = ["garbage.cfg", "stanzas.cfg", "mains.cfg", "props.cfg", "cpulist.cfg",
                    "irqs.cfg", "longkey.cfg", "toobig.cfg"]
RESULT_NAMES = ["nested.json", "deep-rtlab.json", "columns.hist", "rows.hist", "tlines.hist",
                "threads.json", "huge.hist"]

WINDOWS_NAMES = ["windows-many.jsonl", "windows-longline.jsonl", "windows-threads.jsonl",
                 "windows-counts.jsonl", "windows-spaced.jsonl"]


def write_files(d):
    for name, body in {**experiments(), **results(), **windows()}.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(body)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/release/rtlab"))
    with tempfile.TemporaryDirectory() as d:
        # The files are made by another process: a child inherits its
        # parent's resident size as the start of its own peak (fork, then
        # exec), so the measuring process must stay small.
        pid = os.fork()
        if pid == 0:
            write_files(d)
            os._exit(0)
        os.waitpid(pid, 0)
        rows = [("(this script, for reference)", 0, 0, 0.0, own_rss())]
        for name in EXPERIMENT_NAMES:
            rows.append((name, os.path.getsize(os.path.join(d, name)), *run(binary, ["check", name], d)))
        for name in RESULT_NAMES:
            rows.append((name, os.path.getsize(os.path.join(d, name)), *run(binary, ["compare", name], d)))
        rows.append(("/dev/zero", 0, *run(binary, ["compare", "/dev/zero"], d)))
        # Windows files under 256 MiB of address space, whole and FILE@1.
        for name in WINDOWS_NAMES:
            size = os.path.getsize(os.path.join(d, name))
            rows.append((name + " (AS 256M)", size, *run(binary, ["compare", name], d, 256 << 20)))
        rows.append(("windows-many.jsonl@1 (AS 256M)", os.path.getsize(os.path.join(d, "windows-many.jsonl")),
                     *run(binary, ["compare", "windows-many.jsonl@1"], d, 256 << 20)))
        # Baselines: a real experiment and a real result.
        rows.append(("examples/host2.cfg", os.path.getsize(os.path.join(root, "examples/host2.cfg")),
                     *run(binary, ["check", os.path.join(root, "examples/host2.cfg")], d)))
        seed = os.path.join(root, "tests/seeds/rtlab-result.json")
        rows.append(("tests/seeds/rtlab-result.json", os.path.getsize(seed), *run(binary, ["compare", seed], d)))
        print(f"{'file':32} {'bytes':>9} {'exit':>4} {'wall ms':>8} {'max RSS kB':>10}")
        for name, size, code, wall, rss in rows:
            print(f"{name:32} {size:9d} {code:4d} {wall * 1000:8.1f} {rss:10d}")


if __name__ == "__main__":
    main()
