"""Speed of ``hss/FleetIO-v0`` on the flash SSD model: decision windows per second, per mix and
baseline, against the >= 20 windows/s requirement for mix4 at the default scale (FleetIO issue),
measured with random actions (all agents act every window).

Usage: python benchmarks/perf/bench_fleetio.py [--windows 60]; exits 1 if mix4 < 20 windows/s.
The cost of a window is the flash model's page transactions (the tenants' offered load: ~25k for
mix4's 2 s window), so it grows with the number of vSSDs (mix5 = 8), their load and ``window_s``;
``scale`` (blocks per plane) changes capacity and memory, not the cost of a window.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from hss_gym import fleetio_v0


def windows_per_s(mix: str, n: int, isolation: str = "fleetio", **kw: float) -> float:
    env = fleetio_v0.parallel_env(mix=mix, windows=n, isolation=isolation, **kw)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    while env.agents:
        env.step({a: rng.integers([0, 0, 0], [17, 17, 3]) for a in env.agents})
    return n / (time.perf_counter() - t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=60)
    a = ap.parse_args()
    res = {}
    for mix in ("mix1", "mix4", "mix5"):
        res[mix] = windows_per_s(mix, a.windows)
        print(f"{mix} (fleetio, random actions)  {res[mix]:7.1f} windows/s  "
              f"({res[mix] * 2:.0f}x real time at 2 s windows)")
    for iso in ("hardware", "software"):
        print(f"mix4 ({iso})                  {windows_per_s('mix4', a.windows, iso):7.1f} windows/s")
    for scale in (1 / 64, 1 / 4):
        print(f"mix4 (fleetio, scale=1/{1 / scale:.0f})       {windows_per_s('mix4', a.windows, scale=scale):7.1f} windows/s")
    ok = res["mix4"] >= 20
    print(f"mix4 requirement >= 20 windows/s: {'PASS' if ok else 'FAIL'} ({res['mix4'] / 20:.1f}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
