"""Speed of ``hss/FleetIO-v1`` on the flash SSD model: decision windows per second, per mix and
baseline, against the >= 20 windows/s requirement for mix4 at the default scale,
measured with random actions (all agents act every window).

Usage: python benchmarks/perf/bench_fleetio.py [--windows 60]; exits 1 if mix4 < 20 windows/s.
Rates are windows per second of this process's CPU time (``time.process_time``): on the shared
machine the wall-clock rate depends on the other jobs (it is printed beside, with the CPU share);
on an idle core the two agree.
The cost of a window is the flash model's page transactions (the tenants' offered load: ~25k for
mix4's 2 s window), so it grows with the number of vSSDs (mix5 = 8), their load and ``window_s``;
``scale`` (blocks per plane) changes capacity and memory, not the cost of a window.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from hss_gym import fleetio_v1


def windows_per_s(mix: str, n: int, isolation: str = "fleetio", **kw: float) -> tuple[float, float]:
    """(windows per CPU second, windows per wall second) of an episode of ``n`` windows."""
    env = fleetio_v1.parallel_env(mix=mix, windows=n, isolation=isolation, **kw)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    t, c = time.perf_counter(), time.process_time()
    while env.agents:
        env.step({a: rng.integers([0, 0, 0], [17, 17, 3]) for a in env.agents})
    return n / (time.process_time() - c), n / (time.perf_counter() - t)


def _line(label: str, r: tuple[float, float]) -> str:
    return f"{label:34s} {r[0]:7.1f} windows/s  (wall {r[1]:5.1f}/s, CPU share {r[1] / r[0]:.0%})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=60)
    a = ap.parse_args()
    res = {}
    for mix in ("mix1", "mix4", "mix5"):
        res[mix] = windows_per_s(mix, a.windows)
        print(_line(f"{mix} (fleetio, random actions)", res[mix]))
    for iso in ("hardware", "software"):
        print(_line(f"mix4 ({iso})", windows_per_s("mix4", a.windows, iso)))
    for scale in (1 / 64, 1 / 4):
        print(_line(f"mix4 (fleetio, scale=1/{1 / scale:.0f})", windows_per_s("mix4", a.windows, scale=scale)))
    ok = res["mix4"][0] >= 20
    print(f"mix4 requirement >= 20 windows/s: {'PASS' if ok else 'FAIL'} ({res['mix4'][0] / 20:.1f}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
