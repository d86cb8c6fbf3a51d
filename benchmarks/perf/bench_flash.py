"""Speed and memory of the flash SSD model, against MQSim on the same machine, same run.

* Speed: MQSim's ``traces/tpcc-small.trace`` relayed 30 times (209,970 requests) on MQSim's
  default ssdconfig.xml, through MQSim (a copy built outside the repository, see
  ``hss_gym.backends.flash.mqsim_anchor``) and through ``FlashSSD`` loaded from the same file.
  Both with an ideal mapping table, the DRAM data cache off (``--cache WRITE_CACHE``: on in both,
  MQSim's workload setting and the model's ``cache_mode="write"``); program and erase suspension on
  in both (``--suspension``, default PROGRAM_ERASE; MQSim: the copy with its suspension bugs fixed,
  ``build_mqsim_suspension_fixed``; NONE: stock MQSim, neither suspends). Requests
  per second of CPU time (user + system, each simulator's set-up included: on a shared machine CPU
  time is what wall time would be unloaded), printed as "N.Nx MQSim" (goal >= 10x); the wall-time
  ratio is printed too.
* Memory: mapping bytes per logical page (l2p, bit-packed reverse map, per-block metadata) at the
  ``rlalloc`` profile's full 128 GB geometry (goal <= 8), with the process's RSS growth as a cross-check.

Usage: python benchmarks/perf/bench_flash.py [--relay 30] [--skip-mqsim] [--suspension NONE|PROGRAM|ERASE|PROGRAM_ERASE]
       [--cache TURNED_OFF|WRITE_CACHE|READ_CACHE|WRITE_READ_CACHE]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hss_gym.backends.flash import FlashSSD, load_profile, submit_trace
from hss_gym.backends.flash.mqsim_anchor import (Flow, build_mqsim, build_mqsim_suspension_fixed, mqsim_source,
                                                 run_mqsim, ssdconfig_text, unavailable_reason, workload_xml)
from hss_gym.backends.flash.mqsim_xml import load_ssdconfig
from hss_gym.workloads import load_trace
from hss_gym.workloads.trace import Trace


def relayed(tr: Trace, n: int) -> Trace:
    """The trace replayed n times back to back (MQSim's Relay_Count: each copy starts where the
    previous one ended)."""
    t = tr.time_us - tr.time_us[0]
    span = float(t[-1]) if len(t) else 0.0
    times = np.concatenate([t + i * span for i in range(n)])
    return Trace(times, np.tile(tr.op, n), np.tile(tr.offset, n), np.tile(tr.size, n), name=f"{tr.name}x{n}")


def ours(cfg_path: Path, tr: Trace, caching_mode: str = "TURNED_OFF") -> tuple[float, float, int]:
    """(wall s, CPU s, requests) of the model on the trace, set-up included."""
    t0, c0 = time.perf_counter(), time.process_time()
    prof = load_ssdconfig(cfg_path, caching_mode=caching_mode)
    ssd = FlashSSD(prof, n_streams=1, queue_depth=65535, precondition=None, map_unwritten_reads=True)
    submit_trace(ssd, tr, fit="wrap")
    end = float(tr.time_us[-1])
    while True:
        end += 1e6
        if ssd.run_until(end).backlog.sum() == 0:
            break
    done = int(ssd.totals().completed.sum())
    ssd.close()
    return time.perf_counter() - t0, time.process_time() - c0, done


def memory() -> None:
    prof = load_profile("rlalloc")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    ssd = FlashSSD(prof, n_streams=8, precondition=0.7)
    t_pre = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    per_page = ssd.mapping_bytes() / prof.logical_pages
    print(f"memory: rlalloc full geometry ({prof.physical_pages * prof.page_size / 2**30:.0f} GiB physical, "
          f"{prof.logical_pages:,} logical pages): mapping {per_page:.2f} bytes per logical page (goal <= 8); "
          f"process RSS growth {(rss1 - rss0) * 1024 / prof.logical_pages:.2f} bytes per logical page; "
          f"construction + preconditioning to 70% valid in {t_pre:.2f} s")
    ssd.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relay", type=int, default=30)
    ap.add_argument("--skip-mqsim", action="store_true")
    ap.add_argument("--suspension", default="PROGRAM_ERASE", choices=["NONE", "PROGRAM", "ERASE", "PROGRAM_ERASE"])
    ap.add_argument("--cache", default="TURNED_OFF", choices=["TURNED_OFF", "WRITE_CACHE", "READ_CACHE", "WRITE_READ_CACHE"])
    args = ap.parse_args()
    memory()
    reason = unavailable_reason()
    if reason:
        print(f"speed: skipped ({reason})")
        return 0
    src = mqsim_source()
    with tempfile.TemporaryDirectory(prefix="hss-bench-flash-") as tmp:
        cfg = ssdconfig_text(src / "ssdconfig.xml", Ideal_Mapping_Table="true", CMD_Suspension_Support=args.suspension)
        cfg_path = Path(tmp) / "ssdconfig.xml"
        cfg_path.write_text(cfg)
        tr = relayed(load_trace(src / "traces" / "tpcc-small.trace", format="mqsim"), args.relay)
        t_ours, c_ours, n_ours = ours(cfg_path, tr, args.cache)
        print(f"suspension: {args.suspension}; data cache: {args.cache}")
        print(f"hss-gym flash model: {n_ours:,} requests in {t_ours:.2f} s wall, {c_ours:.2f} s CPU = "
              f"{n_ours / c_ours / 1e6:.2f} M requests/s")
        if not args.skip_mqsim:
            prof = load_ssdconfig(cfg_path)
            wl = workload_xml([Flow(trace=str(src / "traces" / "tpcc-small.trace"), relay=args.relay,
                                    caching_mode=args.cache)],
                              prof.n_channels, prof.chips_per_channel, prof.dies_per_chip, prof.planes_per_die)
            binary = build_mqsim() if args.suspension == "NONE" else build_mqsim_suspension_fixed()
            res = run_mqsim(binary, cfg.replace("<Enable_ResponseTime_Logging>true", "<Enable_ResponseTime_Logging>false"),
                            wl, Path(tmp) / "mqsim")
            n_mq = int(res.flows[0]["Request_Count"])
            c_mq = res.user_s + res.sys_s
            print(f"MQSim: {n_mq:,} requests in {res.wall_s:.2f} s wall, {c_mq:.2f} s CPU = "
                  f"{n_mq / c_mq / 1e6:.3f} M requests/s")
            print(f"speed: {(n_ours / c_ours) / (n_mq / c_mq):.1f}x MQSim (goal >= 20x; "
                  f"wall-time ratio {(n_ours / t_ours) / (n_mq / res.wall_s):.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
