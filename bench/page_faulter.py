#!/usr/bin/env python3
"""A known normal-priority culprit: page faults that hold the CPU in the kernel.

One long-lived process (its comm `page-faulter`) maps 1 GiB of fresh anonymous
memory, fills it from /dev/zero in one read (the kernel takes every page
fault inside that read, as `dd bs=1G` does), unmaps it and starts again. On a
VM that returns free memory to its host (`page_reporting`), each round's
pages are faulted in again through the host, with the vCPU held there.
Unlike a `dd` loop, its PID stays the same, so a remedy that moves it holds.

    taskset -c CPU python3 bench/page_faulter.py [--bytes 1073741824]
"""

import argparse
import mmap
import os


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=1 << 30)
    args = ap.parse_args()
    with open("/proc/self/comm", "w") as f:
        f.write("page-faulter")
    zero = os.open("/dev/zero", os.O_RDONLY)
    while True:
        region = mmap.mmap(-1, args.bytes)
        os.readv(zero, [region])
        region.close()


if __name__ == "__main__":
    main()
