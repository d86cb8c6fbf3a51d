"""Calibration: measure a real device and write a simulator device profile.

Why: so one experiment can be compared on the simulator and on real storage on the same machine
(SPEC §6): ``hss-gym calibrate --device /dev/shm/fast.img --out fast.json`` then use
``fast.json`` wherever a device name is accepted (``config=["fast.json", "slow.json"]``).

What: through the real-device engine (``hss_gym.backends._uring``), on a file (created,
preallocated, filled, removed afterwards) or an explicitly allowed block device, random reads and
writes at several block sizes and queue depths: latency (mean, p50, p99), IOPS and bandwidth.
The profile takes the 4 KiB QD1 mean latencies, the best 4 KiB IOPS over the queue depths, and the
best bandwidth of large sequential transfers; every measured point is listed in its ``sources``
(and in ``--measurements`` as JSON). The result loads with
:func:`hss_gym.backends.sim.load_profile`.

The CLI entry points :func:`add_calibrate_arguments` and :func:`run_calibrate` are wired into
``hss-gym calibrate``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hss_gym.backends.real import RealBackend
from hss_gym.backends.sim import load_profile

PAGE = 4096


def measure(eng: Any, write: bool, bs: int, qd: int, seconds: float, seq: bool = False,
            seed: int = 1) -> dict[str, float]:
    """One point: about ``seconds`` of I/O of ``bs`` bytes at queue depth ``qd``."""
    n = 64
    el = eng.bench(0, write, bs, qd, n, seq, seed)
    n = int(min(2_000_000, max(64, seconds * 1e9 / max(el, 1) * n)))
    lat = np.empty(n, dtype=np.int64)
    el = eng.bench(0, write, bs, qd, n, seq, seed + 1, lat)
    iops = n / el * 1e9
    return {"op": "write" if write else "read", "pattern": "seq" if seq else "rand", "bs": bs, "qd": qd,
            "ios": n, "iops": iops, "mbps": iops * bs / 1e6, "lat_mean_us": float(lat.mean()) / 1e3,
            "lat_p50_us": float(np.percentile(lat, 50)) / 1e3, "lat_p99_us": float(np.percentile(lat, 99)) / 1e3}


def calibrate(device: str, *, size: int = 256 << 20, block_sizes: Sequence[int] = (4096, 16384, 65536, 131072),
              queue_depths: Sequence[int] = (1, 4, 32), seconds: float = 0.5, engine: str = "auto",
              direct: bool | None = None, allow_block_device: bool = False, force: bool = False,
              overwrite: bool = False, profile_id: str = "CAL", name: str | None = None, kind: str = "ssd",
              capacity_gb: float | None = None, rpm: float = 7200.0,
              log: Any = None) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """Measure ``device``; returns (profile dict, measured points)."""
    if kind not in ("ssd", "hdd"):
        raise ValueError(f"kind must be 'ssd' or 'hdd', got {kind!r}")
    if size <= 0 or size % (128 << 10):
        raise ValueError(f"size must be a positive multiple of 128 KiB, got {size}")
    if any(b % PAGE or b <= 0 or b > 128 << 10 for b in block_sizes):
        raise ValueError("block sizes must be multiples of 4096 up to 131072")
    points: list[dict[str, float]] = []
    with RealBackend([device], [size], queue_depth=max(queue_depths), engine=engine, direct=direct,
                     allow_block_device=allow_block_device, force=force, overwrite=overwrite) as b:
        eng = b.engine
        dev = b.stats()[0]
        eng.bench(0, True, 128 << 10, 8, size // (128 << 10), True, 0)  # fill: reads then hit data
        for write in (False, True):
            for bs in block_sizes:
                for qd in queue_depths:
                    pt = measure(eng, write, bs, qd, seconds)
                    points.append(pt)
                    if log:
                        print(f"  {pt['op']:<5} {bs // 1024:>4} KiB QD{qd:<3} {pt['iops']:>11,.0f} IOPS "
                              f"{pt['mbps']:>8,.1f} MB/s  mean {pt['lat_mean_us']:>8.1f} us  p99 "
                              f"{pt['lat_p99_us']:>8.1f} us", file=log)
            for qd in sorted({min(queue_depths), max(queue_depths)}):
                points.append(measure(eng, write, max(block_sizes), qd, seconds, seq=True))
    def pick(op: str, key: str, **cond: Any) -> list[float]:
        return [p[key] for p in points if p["op"] == op and all(p[k] == v for k, v in cond.items())]
    qd_min = min(queue_depths)
    rlat = pick("read", "lat_mean_us", bs=PAGE, qd=qd_min, pattern="rand")
    wlat = pick("write", "lat_mean_us", bs=PAGE, qd=qd_min, pattern="rand")
    if not rlat:
        raise ValueError("block_sizes must include 4096 (the profile's latencies are 4 KiB ones)")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    prof: dict[str, Any] = {
        "id": profile_id,
        "name": name or f"calibrated {device}",
        "kind": kind,
        "capacity_gb": capacity_gb if capacity_gb else size / 1e9,
        "read_bandwidth_mbps": round(max(pick("read", "mbps")), 1),
        "write_bandwidth_mbps": round(max(pick("write", "mbps")), 1),
    }
    if kind == "ssd":
        prof.update(read_latency_us=round(rlat[0], 3), write_latency_us=round(wlat[0], 3),
                    read_iops=round(max(pick("read", "iops", bs=PAGE, pattern="rand"))),
                    write_iops=round(max(pick("write", "iops", bs=PAGE, pattern="rand"))))
    else:
        rot_ms = 30e3 / rpm  # mean rotational delay: half a turn
        prof.update(rpm=rpm, seek_avg_ms=round(max(0.1, rlat[0] / 1e3 - rot_ms), 3), seek_min_ms=0.1)
    prof["sources"] = [
        f"measured by hss-gym calibrate on {socket.gethostname()} at {when}: {device}, {size >> 20} MiB, "
        f"{dev['engine']} engine, {dev['note']}",
        "latencies: 4 KiB random QD1 means; IOPS: best 4 KiB random over queue depths; bandwidth: best "
        "large transfer",
    ] + [f"{p['pattern']} {p['op']} {p['bs'] // 1024} KiB QD{p['qd']}: {p['iops']:.0f} IOPS, {p['mbps']:.1f} MB/s, "
         f"mean {p['lat_mean_us']:.2f} us, p99 {p['lat_p99_us']:.2f} us" for p in points]
    load_profile(prof)  # validated like any profile
    return prof, points


def add_calibrate_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Options of ``hss-gym calibrate``."""
    parser.add_argument("--device", required=True, help="file to create (or an allowed block device)")
    parser.add_argument("--out", required=True, help="profile JSON to write")
    parser.add_argument("--id", default="CAL", help="profile id (default CAL)")
    parser.add_argument("--name", default=None)
    parser.add_argument("--kind", choices=["ssd", "hdd"], default="ssd")
    parser.add_argument("--size-mb", type=_int_arg(1), default=256, help="bytes of the device to use (MiB, >= 1)")
    parser.add_argument("--capacity-gb", type=_real_arg(), default=None,
                        help="capacity to state in the profile (default: the measured size)")
    parser.add_argument("--block-sizes", type=_int_list, default="4,16,64,128", help="KiB, comma-separated (>= 1)")
    parser.add_argument("--queue-depths", type=_int_list, default="1,4,32", help="comma-separated (>= 1)")
    parser.add_argument("--seconds", type=_real_arg(), default=0.5, help="per measured point (> 0)")
    parser.add_argument("--engine", choices=["auto", "uring", "psync"], default="auto")
    parser.add_argument("--buffered", action="store_true", help="no O_DIRECT")
    parser.add_argument("--rpm", type=_real_arg(), default=7200.0, help="hdd only (> 0)")
    parser.add_argument("--measurements", default=None, help="also write every point as JSON here")
    parser.add_argument("--allow-block-device", action="store_true")
    parser.add_argument("--force", action="store_true", help="even a block device with a signature")
    parser.add_argument("--overwrite", action="store_true", help="an existing non-empty file")
    return parser


def _int_arg(low: int) -> Any:
    """argparse ``type``: an integer >= low (checked before anything is measured)."""
    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {v}")
        return v
    return parse


def _real_arg() -> Any:
    """argparse ``type``: a finite number > 0."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}") from None
        if not (v > 0 and v != float("inf")):
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
        return v
    return parse


def _int_list(text: str) -> str:
    """argparse ``type``: comma-separated integers >= 1 (kept as the text run_calibrate splits)."""
    parts = [x.strip() for x in text.split(",")]
    if not parts or not all(x.isdigit() and int(x) >= 1 for x in parts):
        raise argparse.ArgumentTypeError(f"must be comma-separated integers >= 1, got {text!r}")
    return text


def run_calibrate(args: argparse.Namespace) -> int:
    """``hss-gym calibrate``: measure, write the profile, print a summary. Returns the exit code."""
    for opt, path in (("--out", args.out), ("--measurements", args.measurements)):
        if path and (Path(path).is_dir() or not Path(path).resolve().parent.is_dir()):
            print(f"hss-gym calibrate: error: {opt} {path}: need a file path in an existing directory", file=sys.stderr)
            return 2
    try:
        prof, points = calibrate(
            args.device, size=args.size_mb << 20,
            block_sizes=[int(x) * 1024 for x in str(args.block_sizes).split(",")],
            queue_depths=[int(x) for x in str(args.queue_depths).split(",")], seconds=args.seconds,
            engine=args.engine, direct=False if args.buffered else None,
            allow_block_device=args.allow_block_device, force=args.force, overwrite=args.overwrite,
            profile_id=args.id, name=args.name, kind=args.kind, capacity_gb=args.capacity_gb, rpm=args.rpm,
            log=sys.stdout)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"hss-gym calibrate: {e}", file=sys.stderr)
        return 1
    Path(args.out).write_text(json.dumps(prof, indent=2) + "\n")
    if args.measurements:
        Path(args.measurements).write_text(json.dumps(points, indent=2) + "\n")
    keys = [k for k in ("read_latency_us", "write_latency_us", "read_iops", "write_iops",
                        "read_bandwidth_mbps", "write_bandwidth_mbps", "seek_avg_ms") if k in prof]
    print(f"wrote {args.out}: " + ", ".join(f"{k}={prof[k]}" for k in keys))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = add_calibrate_arguments(argparse.ArgumentParser(prog="hss-gym calibrate", description=__doc__.split("\n")[0]))
    return run_calibrate(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
