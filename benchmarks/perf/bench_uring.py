"""Raw 4 KiB random read/write IOPS of the real-device engine against fio's io_uring engine.

Requirement: at QD1 and QD32, for a tmpfs file and a disk file, the extension
(``hss_gym.backends._uring``, io_uring engine) reaches >= 0.9x fio ``--ioengine=io_uring`` on the
same file with the same O_DIRECT setting, measured in the same run (each case alternates fio and
the extension ``--reps`` times; the best of each is compared). Also reported: the cost of
measuring every request's latency (two CLOCK_MONOTONIC reads per submit/reap batch), as the
per-I/O difference between runs with and without latency capture, and the psync engine on tmpfs.

Usage: python benchmarks/perf/bench_uring.py [--seconds 2] [--size-mb 256] [--reps 2]
Skips (exit 0) with a message when fio or io_uring is unavailable; exits 1 if a ratio fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from hss_gym.backends.real import unavailable_reason


def fio_iops(path: str, rw: str, qd: int, seconds: float, size: int, direct: bool) -> float:
    cmd = ["fio", "--name=bench", f"--filename={path}", "--ioengine=io_uring", f"--direct={int(direct)}",
           f"--rw={rw}", "--bs=4k", f"--iodepth={qd}", f"--size={size}", f"--runtime={seconds}",
           "--time_based", "--norandommap", "--randrepeat=0", "--output-format=json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    return float(job["read" if rw == "randread" else "write"]["iops"])


def ext_iops(eng, write: bool, qd: int, seconds: float, latencies: bool = False) -> tuple[float, float]:
    """(IOPS, ns per I/O) over about ``seconds``."""
    n = 2000
    el = eng.bench(0, write, 4096, qd, n, False, 1)
    n = max(2000, int(seconds * 1e9 / max(el, 1) * n))
    lat = np.empty(n, dtype=np.int64) if latencies else None
    el = eng.bench(0, write, 4096, qd, n, False, 7, lat)
    return n / el * 1e9, el / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--disk-dir", default="/var/tmp", help="directory on a disk filesystem")
    ap.add_argument("--tmpfs-dir", default="/dev/shm")
    args = ap.parse_args()
    if shutil.which("fio") is None:
        print("bench_uring: SKIP: fio is not installed (apt-get install -y fio)")
        return 0
    why = unavailable_reason()
    if why:
        print(f"bench_uring: SKIP: {why}")
        return 0
    from hss_gym.backends import _uring  # local: the optional io_uring extension, there only when `why` is None
    size = args.size_mb << 20
    ok = True
    print(f"4 KiB random I/O, {args.seconds:g} s per run, best of {args.reps}, {args.size_mb} MiB file")
    print(f"{'file':<6} {'direct':<6} {'op':<6} {'QD':>3} {'fio IOPS':>11} {'ext IOPS':>11} {'ratio':>6}")
    overhead = {}
    for label, where in (("tmpfs", args.tmpfs_dir), ("disk", args.disk_dir)):
        fd, path = tempfile.mkstemp(prefix="hss_bench_", dir=where)
        os.close(fd)
        os.unlink(path)
        try:
            eng = _uring.Engine([path], [size], [_uring.ENGINE_URING], _uring.O_CREATE, 32, False, False)
            direct = eng.stats()["devices"][0]["direct"]
            eng.bench(0, True, 128 << 10, 8, size // (128 << 10), True, 0)  # fill: reads hit real data
            for rw in ("randread", "randwrite"):
                for qd in (1, 32):
                    best_f = best_e = 0.0
                    for _ in range(args.reps):
                        best_f = max(best_f, fio_iops(path, rw, qd, args.seconds, size, direct))
                        best_e = max(best_e, ext_iops(eng, rw == "randwrite", qd, args.seconds)[0])
                    ratio = best_e / best_f
                    ok &= ratio >= 0.9
                    print(f"{label:<6} {str(direct):<6} {rw[4:]:<6} {qd:>3} {best_f:>11,.0f} {best_e:>11,.0f} "
                          f"{ratio:>5.2f}x {'PASS' if ratio >= 0.9 else 'FAIL'}")
            if label == "tmpfs":
                for qd in (1, 32):
                    a = min(ext_iops(eng, False, qd, args.seconds / 2)[1] for _ in range(2))
                    b = min(ext_iops(eng, False, qd, args.seconds / 2, latencies=True)[1] for _ in range(2))
                    overhead[qd] = b - a
            eng.close()
            if label == "tmpfs":
                ps = _uring.Engine([path], [size], [_uring.ENGINE_PSYNC], _uring.O_CREATE | _uring.O_OVERWRITE,
                                   32, False, False)
                print(f"tmpfs psync engine (QD1): read {ext_iops(ps, False, 1, args.seconds)[0]:,.0f} IOPS, "
                      f"write {ext_iops(ps, True, 1, args.seconds)[0]:,.0f} IOPS")
                ps.close()
        finally:
            if os.path.exists(path):
                os.unlink(path)
    print("latency measurement overhead per I/O (tmpfs, with - without capture): "
          + ", ".join(f"QD{q} {v:+.0f} ns" for q, v in overhead.items())
          + " (the engine reads CLOCK_MONOTONIC once per submit batch and once per reap batch)")
    print("overall:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
