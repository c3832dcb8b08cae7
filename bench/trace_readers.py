#!/usr/bin/env python3
"""The binary trace engine against the text reader it replaced, on the same
buffers: `rtlab trace-readers` records a flight-recorder instance (overwrite
mode, the recorder's events, every CPU) while one of its threads naps and
wakes, then reads each CPU's buffer as the kernel's text (per_cpu/cpuN/trace,
parsed into events: what the recorder read before) and as binary pages
(trace_pipe_raw, decoded by the format files), timing both and comparing
every event. Round 1 is cold (the binary reader's buffers are new); the
flight recorder and the stream keep theirs, as the later rounds do.

Run as root:  python3 bench/trace_readers.py [--rounds 6] [--buffer-kb 2048]
                [--baseline OTHER_RTLAB]

With --baseline, another rtlab binary (an older commit's) reads its own
buffers in the same run, round for round, alternating with this one: the
cost of a change to either reader, side by side.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--buffer-kb", type=int, default=2048)
    p.add_argument("--record-ms", type=int, default=1500)
    p.add_argument("--baseline", help="another rtlab binary, run round for round beside this one")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (rtlab makes a tracefs instance)")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    exe = os.path.join(REPO, "target", "release", "rtlab")
    binaries = [("this", exe)] + ([("baseline", a.baseline)] if a.baseline else [])
    rows = {name: [] for name, _ in binaries}
    for rnd in range(a.rounds):
        for name, path in binaries:
            # Two rounds, the second kept: warm, as the recorder's reads are
            # (the first of each process decodes into new buffers).
            first = rnd == 0
            out = subprocess.run([path, "trace-readers", "--buffer-kb", str(a.buffer_kb), "--record-ms",
                                  str(a.record_ms), "--rounds", "1" if first else "2"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{path} trace-readers failed ({out.returncode}): {out.stderr}{out.stdout}")
            for r in json.loads(out.stdout):
                if first or r["round"] == 1:
                    r["round"] = rnd
                    rows[name].append(r)
    for name, _ in binaries:
        report(name, rows[name], a)


def report(name, rows, a):
    # The full buffers: the CPU the napping thread ran on.
    full = [r for r in rows if r["raw_bytes"] >= a.buffer_kb * 1024 * 0.9]
    uname = platform.uname()
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"Machine: {model}, {os.cpu_count()} CPUs, kernel {uname.release} {uname.version}")
    print(f"rtlab: {name}")
    print(f"Buffers: {a.buffer_kb} KiB per CPU, {a.rounds} rounds; every event compared: "
          f"{sum(r['compared_fields'] for r in rows)} fields, "
          f"{sum(len(r['differences']) for r in rows)} differences")
    print()
    print("| round | CPU | events | text bytes | text read+parse (ms) | pages bytes | pages read (ms) | "
          "pages read+decode (ms) | text/pages |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in full:
        print(f"| {r['round'] + 1} | {r['cpu']} | {r['raw_events']} | {r['text_bytes']} | {r['text_ns'] / 1e6:.1f} | "
              f"{r['raw_bytes']} | {r['raw_read_ns'] / 1e6:.1f} | {r['raw_ns'] / 1e6:.1f} | "
              f"{r['text_ns'] / max(1, r['raw_ns']):.1f} |")
    warm = [r for r in full if r["round"] > 0]
    if warm:
        t = statistics.median(r["text_ns"] for r in warm) / 1e6
        b = statistics.median(r["raw_ns"] for r in warm) / 1e6
        print(f"\nFull buffers after the first round, medians: text {t:.1f} ms, pages {b:.1f} ms: "
              f"{t / b:.1f} times faster\n")


if __name__ == "__main__":
    main()
