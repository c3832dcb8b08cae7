#!/usr/bin/env python3
"""What the /metrics endpoint costs, and what its attackers cost it.

Four `rtlab monitor` runs side by side in one script (release build), each
--seconds long (default 60), with one SCHED_FIFO 99 timer thread on the
last CPU at 100 us, refreshing every 1 s:

  none     --listen none (the baseline)
  idle     the endpoint on 127.0.0.1, no client
  scraped  a GET /metrics every 100 ms (ten times a fast Prometheus)
  attacked 600 idle and half-sent connections held, one client pipelining
           requests and never reading, one header line sent without end

For each: the process's largest RSS, the endpoint thread's CPU time
(`rtlab-metrics` in /proc/PID/task), the run's p99 and max latency and
sample count (its JSON result), and how many scrapes were answered. Run as
root, on loopback only:

    cargo build --release && sudo python3 bench/endpoint.py [--seconds 60]
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def endpoint_cpu_s(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != "rtlab-metrics":
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / TICKS
        except OSError:
            continue
    return 0.0


def scrape(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def attack(port, stop, held):
    """The audit's clients, bounded: 600 connections, one pipeliner, one
    endless header, until `stop` is set."""
    addr = ("127.0.0.1", port)
    pipeliner = socket.create_connection(addr)
    pipeliner.setblocking(False)
    header = socket.create_connection(addr)
    header.sendall(b"GET /metrics HTTP/1.1\r\nX: ")
    header.setblocking(False)
    for i in range(600):
        try:
            s = socket.create_connection(addr, timeout=0.2)
            if i % 2:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: ")
            held.append(s)
        except OSError:
            pass
    while not stop.is_set():
        for s, data in ((pipeliner, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 50),
                        (header, b"a" * 65536)):
            try:
                s.send(data)
            except OSError:
                pass
        time.sleep(0.05)
    for s in held + [pipeliner, header]:
        s.close()


def one_run(exe, work, mode, seconds, cpu):
    cfg = os.path.join(work, "m.cfg")
    with open(cfg, "w") as f:
        f.write("main\n{\n  cpu_affinity 0\n}\n"
                f"timer_thread[0]\n{{\n  cpu_affinity {cpu}\n  sched.policy FIFO\n"
                "  sched.priority 99\n  timer.period 100 us\n}\n")
    port = free_port()
    listen = "none" if mode == "none" else f"127.0.0.1:{port}"
    result = os.path.join(work, f"{mode}.json")
    proc = subprocess.Popen(
        [exe, "monitor", cfg, "--listen", listen, "--windows", "none", "--json", result],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, RTLAB_JOURNAL_DIR=os.path.join(work, "journal")))
    time.sleep(1)
    stop, held, scrapes, answered = threading.Event(), [], 0, 0
    attacker = None
    if mode == "attacked":
        attacker = threading.Thread(target=attack, args=(port, stop, held))
        attacker.start()
    largest, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        largest = max(largest, rss_kib(proc.pid))
        if mode in ("scraped", "attacked"):
            scrapes += 1
            answered += scrape(port)
        time.sleep(0.1)
    cpu_s = endpoint_cpu_s(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    stop_s = time.monotonic() - t0
    stop.set()
    if attacker:
        attacker.join()
    with open(result) as f:
        r = json.load(f)
    s = r["timers"][0]["summary"]
    p99 = next(p["value_ns"] for p in s["percentiles"] if p["name"] == "p99")
    return dict(mode=mode, rss=largest, cpu=cpu_s, p99=p99 / 1000, max=s["max_ns"] / 1000,
                samples=s["samples"], scrapes=f"{answered}/{scrapes}", stop=stop_s,
                held=len(held))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("exe", nargs="?", default=os.path.join(REPO, "target/release/rtlab"))
    a = p.parse_args()
    cpu = os.cpu_count() - 1
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for mode in ("none", "idle", "scraped", "attacked"):
            rows.append(one_run(a.exe, work, mode, a.seconds, cpu))
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}, kernel {os.uname().release}, "
          f"{os.cpu_count()} CPUs; FIFO 99 timer at 100 us on CPU {cpu}, {a.seconds:.0f} s each")
    print(f"{'mode':9} {'max RSS KiB':>11} {'endpoint CPU s':>14} {'p99 us':>7} {'max us':>8} "
          f"{'samples':>8} {'scrapes ok':>10} {'held':>5} {'stop s':>6}")
    for r in rows:
        print(f"{r['mode']:9} {r['rss']:11d} {r['cpu']:14.2f} {r['p99']:7.1f} {r['max']:8.1f} "
              f"{r['samples']:8d} {r['scrapes']:>10} {r['held']:5d} {r['stop']:6.2f}")


if __name__ == "__main__":
    main()
