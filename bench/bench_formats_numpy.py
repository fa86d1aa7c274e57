"""The peer of bench_formats: the same file into GPU memory with numpy + CuPy (np.load / np.fromfile, then
cupy.asarray), median of N warm runs after one more. usage: python3 bench_formats_numpy.py FILE [--raw DTYPE OFFSET]"""
import sys
import time

import numpy as np

try:
    import cupy as cp
except ImportError:
    print("| numpy + CuPy | skipped: cupy not importable |")
    sys.exit(0)


def once(path, raw):
    t0 = time.perf_counter()
    if raw:
        host = np.fromfile(path, dtype=raw[0], offset=raw[1])
    else:
        host = np.load(path)
    dev = cp.asarray(host)
    cp.cuda.runtime.deviceSynchronize()
    t = time.perf_counter() - t0
    del dev, host
    cp.get_default_memory_pool().free_all_blocks()
    return t


def main():
    path = sys.argv[1]
    raw = (sys.argv[3], int(sys.argv[4])) if len(sys.argv) > 4 and sys.argv[2] == "--raw" else None
    import os
    gb = os.path.getsize(path) / 1e9
    once(path, raw)
    times = sorted(once(path, raw) for _ in range(3))
    t = times[len(times) // 2]
    how = f"np.fromfile({raw[0]})" if raw else "np.load"
    print(f"| {os.path.basename(path)} | {how} + cupy.asarray | {gb:.2f} GB | {t * 1e3:.1f} ms ({gb / t:.1f} GB/s) |")


main()
