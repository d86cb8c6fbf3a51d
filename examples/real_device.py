"""Run the two-agent environment on real storage: a tmpfs file (fast) + a disk file (slow).

Why: the same experiment as on the simulator, with latencies *measured* by the io_uring backend
(``backend="uring"``). The HSS core still decides where every page lives; the backend executes
each request's I/O on the files and the migrations as real page copies at idle I/O priority.
With ``--verify`` every written page carries a stamp and the run ends by reading every page back.

    python examples/real_device.py [--n-requests 3000] [--workload ycsb-b] [--verify]
        [--fast /dev/shm/hss_fast.img] [--slow /var/tmp/hss_slow.img] [--timed]

The files are created (and preallocated) here and removed at the end; existing non-empty files
are refused unless --overwrite. The home (slow) file spans the trace's address space (4 GiB for
ycsb-b; preallocation is instant on ext4/xfs). Prints the measured and the simulated mean latency.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

import numpy as np

import hss_gym
from hss_gym.backends.real import UringUnavailable, unavailable_reason


def run(env: Any, seed: int) -> dict[str, Any]:
    """One episode with random actions; returns the final metrics."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    infos: dict[str, Any] = {}
    while env.agents:
        actions = {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}
        _, _, _, _, infos = env.step(actions)
    return infos["placement"]["metrics"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="ycsb-b")
    ap.add_argument("--config", default="perf_opt")
    ap.add_argument("--n-requests", type=int, default=3000)
    ap.add_argument("--fast", default=None, help="fast device file (default: a new file in /dev/shm)")
    ap.add_argument("--slow", default=None, help="slow device file (default: a new file in /var/tmp)")
    ap.add_argument("--verify", action="store_true", help="stamp every page and read all back at the end")
    ap.add_argument("--timed", action="store_true", help="honour the trace's arrival times")
    ap.add_argument("--overwrite", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    why = unavailable_reason()
    if why and "not built" in why:
        raise UringUnavailable(why)
    tmp = []
    for given, where, name in ((args.fast, "/dev/shm", "fast"), (args.slow, "/var/tmp", "slow")):
        if given is None:
            d = where if os.path.isdir(where) else tempfile.gettempdir()
            given = os.path.join(d, f"hss_example_{name}_{os.getpid()}.img")
            tmp.append(given)
        else:
            tmp.append(None)
    paths = [args.fast or tmp[0], args.slow or tmp[1]]
    options = {"verify": args.verify, "timed": args.timed, "overwrite": args.overwrite}
    if why:  # io_uring disabled here: pread/pwrite still exercise the backend
        print(f"io_uring unavailable ({why}); using the psync engine")
        options["engine"] = "psync"
    env = hss_gym.parallel_env(config=args.config, workload=args.workload, backend="uring", paths=paths,
                               n_requests=args.n_requests, backend_options=options)
    try:
        real = run(env, args.seed)
        stats = env._real.engine_stats()
        check = env._real.verify_all(env._hss.core) if args.verify else None
    finally:
        env.close()
    sim_env = hss_gym.parallel_env(config=args.config, workload=args.workload, n_requests=args.n_requests)
    sim = run(sim_env, args.seed)
    print(f"{args.workload} on {args.config}: {args.n_requests} requests, random policies")
    for d in stats["devices"]:
        print(f"  {d['path']}: {d['size'] >> 20} MiB, {d['note']}")
    print(f"  measured mean latency {real['mean_latency_us']:.1f} us (simulated: {sim['mean_latency_us']:.1f} us)")
    print(f"  migrated pages {stats['migrated_pages']} (background copies {stats['copies_background']}, "
          f"forced by a dependent request {stats['copies_forced']})")
    if check is not None:
        print(f"  verify: {check['checked']} pages read back, {check['lost']} lost, {check['corrupt']} corrupt")
    return {"real": real, "sim": sim, "stats": stats, "verify": check}


if __name__ == "__main__":
    out = main()
    sys.exit(1 if out["verify"] and (out["verify"]["lost"] or out["verify"]["corrupt"]) else 0)
