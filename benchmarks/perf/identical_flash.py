"""Check that a speed change of the flash SSD model changed no result, bit for bit.

Hashes, for each case, every end-to-end and device latency (in completion order), the stream
counters at several points of the run (``run_until``'s windows), the totals, write amplification,
suspension and data-cache counters; ``fl_check`` (mapping, partner counts, ready masks) runs after
each model run. The cases:

* ``tpccx3``: MQSim's tpcc-small relayed 3 times (the callgrind workload of docs/performance.md) in
  all 16 suspension (none, program, erase, both) x data cache (off, write, read, both) settings;
* ``pre``: preconditioned one- and four-stream runs (queue depth 32) of the mqsim-default, rlalloc
  and fleetio profiles, cache off and write, suspension none and both;
* ``gc4``: four streams with heavy GC (small blocks, 85% preconditioned) in 8 suspension x cache
  settings; ``geom``: 1 or 4 planes a die and 1, 2 or 4 dies a chip;
* ``edge``: 64 and 80 chips a channel (the ready mask's widest case and the loop beyond it), 3 and 4
  planes a die, 6 KiB and 40 KiB pages, and a CWDP sequence of 8,192 steps (longer than the table);
* ``x30``: every per-request latency of ``bench_flash.py``'s tpcc-small x30 (suspension on and off,
  cache off and write);
* ``rlalloc`` and ``fleetio``: the metrics of RLAlloc episodes (static, dynamic, demand) and FleetIO
  episodes (mixes 1 and 4; hardware_isolation, ssdkeeper, fleetio_ppo).

Run ``record`` before the change and ``check`` after; ``check`` names every case that differs.
``--so`` loads another build of the extension (``hss_gym.backends._flash``) instead of the installed
one, so that two builds can be compared without reinstalling. Needs MQSim's source (its traces and
ssdconfig.xml; see ``hss_gym.backends.flash.mqsim_anchor``); about a minute.

    python benchmarks/perf/identical_flash.py record before.json [--so OTHER.so] [--only tpccx3,x30]
    python benchmarks/perf/identical_flash.py check before.json
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

GROUPS = ("tpccx3", "pre", "gc4", "geom", "edge", "x30", "rlalloc", "fleetio")


def _rec(w) -> str:
    return repr(dataclasses.asdict(w)) if dataclasses.is_dataclass(w) else repr(vars(w))


def _summary(ssd, windows: list[str]) -> str:
    ssd._sim.check()
    h = hashlib.sha256("".join(windows).encode())
    h.update(_rec(ssd.totals()).encode())
    for a in (ssd.latencies(), ssd.device_latencies()):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(repr((ssd.write_amplification(), ssd.suspensions(), ssd.cache_stats())).encode())
    return f"{h.hexdigest()[:20]} n={len(ssd.latencies())}"


def _drain(ssd, end: float) -> None:
    while ssd.run_until(end := end + 1e6).backlog.sum():
        pass


def cases(groups: set[str]):
    """(name, hash) of each case of the groups, as they run."""
    from hss_gym.backends.flash import FlashSSD, load_profile, submit_trace
    from hss_gym.backends.flash.mqsim_anchor import mqsim_source, ssdconfig_text
    from hss_gym.backends.flash.mqsim_xml import load_ssdconfig
    from hss_gym.workloads import load_trace
    from hss_gym.workloads.trace import Trace

    src = mqsim_source()
    base = load_trace(src / "traces" / "tpcc-small.trace", format="mqsim")

    def relayed(n: int) -> Trace:
        t = base.time_us - base.time_us[0]
        span = float(t[-1])
        return Trace(np.concatenate([t + i * span for i in range(n)]), np.tile(base.op, n),
                     np.tile(base.offset, n), np.tile(base.size, n), name=f"x{n}")

    with tempfile.TemporaryDirectory(prefix="hss-identical-flash-") as tmp:
        def mqsim_profile(susp: str, cache: str):
            p = Path(tmp) / f"{susp}.xml"
            p.write_text(ssdconfig_text(src / "ssdconfig.xml", Ideal_Mapping_Table="true", CMD_Suspension_Support=susp))
            return load_ssdconfig(p, caching_mode=cache)

        if "tpccx3" in groups:
            tr = relayed(3)
            for susp in ("NONE", "PROGRAM", "ERASE", "PROGRAM_ERASE"):
                for cache in ("TURNED_OFF", "WRITE_CACHE", "READ_CACHE", "WRITE_READ_CACHE"):
                    ssd = FlashSSD(mqsim_profile(susp, cache), n_streams=1, queue_depth=65535, precondition=None,
                                   map_unwritten_reads=True)
                    submit_trace(ssd, tr, fit="wrap")
                    end = float(tr.time_us[-1])
                    ws = [_rec(ssd.run_until(end * (k + 1) / 4)) for k in range(4)]
                    _drain(ssd, end)
                    yield f"tpccx3 {susp} {cache}", _summary(ssd, ws)
                    ssd.close()
        if "pre" in groups:
            for prof_name in ("mqsim-default", "rlalloc", "fleetio"):
                for cache in ("off", "write"):
                    for susp in ("none", "program_erase"):
                        prof = dataclasses.replace(load_profile(prof_name), cache_mode=cache, suspension=susp)
                        for ns, pre in ((1, 0.7), (4, 0.9)):
                            ssd = FlashSSD(prof, n_streams=ns, queue_depth=32, precondition=pre,
                                           map_unwritten_reads=(ns == 1))
                            submit_trace(ssd, base, fit="wrap",
                                         **({} if ns == 1 else {"streams": {k: k % ns for k in range(256)}}))
                            end = float(base.time_us[-1])
                            ws = [_rec(ssd.run_until(end * (k + 1) / 4)) for k in range(4)]
                            _drain(ssd, end)
                            yield f"pre {prof_name} {cache} {susp} {ns}", _summary(ssd, ws)
                            ssd.close()
        if "gc4" in groups:
            for susp in ("none", "program", "erase", "program_erase"):
                for cache in ("off", "write"):
                    p = dataclasses.replace(load_profile("mqsim-default"), blocks_per_plane=64, pages_per_block=32,
                                            suspension=susp, cache_mode=cache)
                    ssd = FlashSSD(p, n_streams=4, queue_depth=[16, 8, 32, 4], precondition=0.85, seed=5)
                    rng = np.random.default_rng(3)
                    n = 40000
                    ssd.submit(np.sort(rng.uniform(0, 2e6, n)), rng.integers(0, 4, n).astype(np.int32),
                               rng.integers(0, p.logical_pages - 4, n) * p.page_size + rng.integers(0, 8, n) * 512,
                               rng.integers(1, 32, n) * 512, rng.random(n) < 0.7)
                    ws = [_rec(ssd.run_until(t)) for t in np.arange(1, 21) * 1e6] + [_rec(ssd.run_until(1e9))]
                    yield f"gc4 {susp} {cache}", _summary(ssd, ws) + f" gc={ssd.totals().gc_runs_total}"
                    ssd.close()
        if "geom" in groups:
            for (D, P) in ((1, 1), (2, 1), (1, 4), (4, 4)):
                for susp in ("none", "program_erase"):
                    p = dataclasses.replace(load_profile("mqsim-default"), n_channels=2, chips_per_channel=2,
                                            dies_per_chip=D, planes_per_die=P, blocks_per_plane=64, pages_per_block=32,
                                            suspension=susp)
                    ssd = FlashSSD(p, n_streams=2, queue_depth=[16, 4], precondition=0.8, seed=3)
                    rng = np.random.default_rng(7)
                    n = 6000
                    ssd.submit(np.sort(rng.uniform(0, 1e6, n)), rng.integers(0, 2, n).astype(np.int32),
                               rng.integers(0, p.logical_pages - 4, n) * p.page_size, rng.integers(1, 40, n) * 512,
                               rng.random(n) < 0.6)
                    ws = [_rec(ssd.run_until(t)) for t in np.arange(1, 11) * 2e5] + [_rec(ssd.run_until(1e9))]
                    yield f"geom {D} {P} {susp}", _summary(ssd, ws) + f" gc={ssd.totals().gc_runs_total}"
                    ssd.close()
        if "edge" in groups:
            for (C, W, D, P, ps, B, G) in ((1, 64, 2, 2, 8192, 32, 32), (2, 80, 1, 2, 8192, 32, 32),
                                           (2, 4, 2, 3, 6144, 32, 32), (2, 3, 2, 2, 40960, 32, 32),
                                           (3, 5, 3, 4, 8192, 32, 32), (16, 64, 2, 4, 8192, 8, 16)):
                for susp in ("none", "program_erase"):
                    for cache in ("off", "write"):
                        if cache == "write" and ps > 32768:
                            continue
                        p = dataclasses.replace(load_profile("mqsim-default"), n_channels=C, chips_per_channel=W,
                                                dies_per_chip=D, planes_per_die=P, blocks_per_plane=B,
                                                pages_per_block=G, page_size=ps, suspension=susp, cache_mode=cache)
                        ssd = FlashSSD(p, n_streams=2, queue_depth=[32, 8], precondition=0.8, seed=3)
                        rng = np.random.default_rng(11)
                        n = 5000
                        ssd.submit(np.sort(rng.uniform(0, 5e5, n)), rng.integers(0, 2, n).astype(np.int32),
                                   rng.integers(0, p.logical_pages - 8, n) * ps + rng.integers(0, 16, n) * 512,
                                   rng.integers(1, 64, n) * 512, rng.random(n) < 0.6)
                        ws = [_rec(ssd.run_until(t)) for t in np.arange(1, 6) * 1e5] + [_rec(ssd.run_until(1e9))]
                        yield f"edge {C}x{W}x{D}x{P} {ps} {susp} {cache}", _summary(ssd, ws)
                        ssd.close()
        if "x30" in groups:
            tr = relayed(30)
            for susp, cache in (("PROGRAM_ERASE", "TURNED_OFF"), ("NONE", "TURNED_OFF"),
                                ("PROGRAM_ERASE", "WRITE_CACHE"), ("NONE", "WRITE_CACHE")):
                ssd = FlashSSD(mqsim_profile(susp, cache), n_streams=1, queue_depth=65535, precondition=None,
                               map_unwritten_reads=True)
                submit_trace(ssd, tr, fit="wrap")
                _drain(ssd, float(tr.time_us[-1]))
                yield f"x30 {susp} {cache}", _summary(ssd, [])
                ssd.close()
    if "rlalloc" in groups:
        from hss_gym.agents.rlalloc import make_policy, run_episode
        from hss_gym.envs.rlalloc.env import RLAllocEnv
        for name in ("static", "dynamic", "demand"):
            m = run_episode(make_policy(name), RLAllocEnv(episode_periods=20), seed=0).metrics
            yield f"rlalloc {name}", hashlib.sha256(repr(sorted(m.items())).encode()).hexdigest()[:20]
    if "fleetio" in groups:
        from hss_gym.agents.fleetio import make_policy
        from hss_gym.envs.fleetio.env import FleetIOEnv
        for mix in ("mix1", "mix4"):
            for name in ("hardware_isolation", "ssdkeeper", "fleetio_ppo"):
                pol = make_policy(name)
                env = FleetIOEnv(mix, windows=10, **pol.env_options)
                obs, infos = env.reset(seed=0)
                while env.agents:
                    obs, _, _, _, infos = env.step(pol.act(obs, infos))
                yield f"fleetio {mix} {name}", hashlib.sha256(repr(sorted(env.episode_metrics().items())).encode()).hexdigest()[:20]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["record", "check"])
    ap.add_argument("path")
    ap.add_argument("--so", help="a build of hss_gym.backends._flash to load instead of the installed one")
    ap.add_argument("--only", help="comma-separated groups: " + ",".join(GROUPS))
    args = ap.parse_args()
    if args.so:
        spec = importlib.util.spec_from_file_location("hss_gym.backends._flash", args.so)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["hss_gym.backends._flash"] = mod
    groups = set(args.only.split(",")) if args.only else set(GROUPS)
    if groups - set(GROUPS):
        ap.error(f"unknown groups {sorted(groups - set(GROUPS))}")
    before = json.loads(Path(args.path).read_text()) if args.mode == "check" else {}
    got, differ = {}, []
    for name, h in cases(groups):
        got[name] = h
        mark = ""
        if args.mode == "check":
            mark = "  same" if before.get(name) == h else f"  DIFFERS (recorded {before.get(name)})"
            if before.get(name) != h:
                differ.append(name)
        print(f"{name}: {h}{mark}", flush=True)
    if args.mode == "record":
        Path(args.path).write_text(json.dumps(got, indent=1) + "\n")
        print(f"recorded {len(got)} cases in {args.path}")
        return 0
    missing = [k for k in before if k not in got and k.split()[0] in groups]
    print(f"{len(got) - len(differ)} of {len(got)} cases identical" + (f"; differ: {differ}" if differ else "")
          + (f"; not run: {len(missing)}" if missing else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
