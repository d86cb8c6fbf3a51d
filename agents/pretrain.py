"""Pretrain a learned agent on training workloads, evaluate it on held-out ones (FleetIO/RLAlloc protocol).

Online learning from scratch stays the default of every agent; this is the other option: one agent
learns across a sequence of training episodes (one per training workload, in order), its weights are
saved, and a copy loaded from them runs each held-out workload (still learning online, without the
random warm-up) beside a fresh agent and Slow-Only. Shipped weights (package data,
``hss_gym/agents/weights/harmonia_paper-<config>.npz``) were made with::

    python -m hss_gym.agents.pretrain --policy harmonia_paper --config perf_opt \\
        --out agents/weights/harmonia_paper-perf_opt.npz
    python -m hss_gym.agents.pretrain --policy harmonia_paper --config cost_opt \\
        --out agents/weights/harmonia_paper-cost_opt.npz

and load with ``make_policy("harmonia_paper", weights=shipped_weights("harmonia_paper", "perf_opt"))``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hss_gym.agents.base import Policy, make_env, make_policy, run_episode

TRAIN = ("ycsb-a", "ycsb-c", "lun1", "ssd-01", "learn-hot-scan", "learn-write-once")
HELD_OUT = ("ycsb-b", "lun2", "ssd-02", "learn-phase")
WEIGHTS = Path(__file__).resolve().parent / "weights"


def shipped_weights(policy: str, config: str) -> Path:
    """Path of the pretrained weights shipped for ``policy`` on ``config``."""
    path = WEIGHTS / f"{policy}-{config}.npz"
    if not path.is_file():
        have = sorted(p.stem for p in WEIGHTS.glob("*.npz"))
        raise FileNotFoundError(f"no shipped weights for {policy!r} on {config!r}; shipped: {have}")
    return path


def mean_latency(policy: Policy, config: str, workload: str, n: int, seed: int) -> float:
    return run_episode(policy, make_env(policy, config, workload, n_requests=n), seed=seed).metrics.mean_latency_us


def pretrain(policy: str, config: str, train: tuple[str, ...], n: int, seed: int, out: Path) -> Policy:
    """One agent through the training workloads in order; saves its weights to ``out`` (without
    the training loss curves, which would be most of the file)."""
    agent = make_policy(policy, seed=seed)
    for w in train:
        print(f"train {w:18s} {mean_latency(agent, config, w, n, seed):10.1f} us", flush=True)
    for part in (agent.placement, agent.migration):
        part.agent.loss_curve = []
    out.parent.mkdir(parents=True, exist_ok=True)
    agent.save(out)
    return agent


def evaluate(policy: str, config: str, weights: Path, held_out: tuple[str, ...], n: int, seeds: int) -> None:
    print(f"{'held-out':18s} {'slow_only':>10s} {'scratch':>10s} {'pretrained':>11s}   (mean latency, us; {seeds} seeds)")
    for w in held_out:
        cols = [np.mean([mean_latency(make_policy("slow_only"), config, w, n, s) for s in range(seeds)])]
        for kw in ({}, {"weights": str(weights)}):
            cols.append(np.mean([mean_latency(make_policy(policy, seed=s, **kw), config, w, n, s)
                                 for s in range(seeds)]))
        print(f"{w:18s} {cols[0]:10.1f} {cols[1]:10.1f} {cols[2]:11.1f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="harmonia", choices=["harmonia", "harmonia_paper"],
                    help="the reference agent, or the published one (the shipped weights' policy)")
    ap.add_argument("--config", default="perf_opt")
    ap.add_argument("--train-workloads", default=",".join(TRAIN), help="comma-separated, in training order")
    ap.add_argument("--eval-workloads", default=",".join(HELD_OUT), help="comma-separated held-out workloads")
    ap.add_argument("--requests", type=int, default=20_000, help="requests per episode")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    train = tuple(w for w in args.train_workloads.split(",") if w)
    held = tuple(w for w in args.eval_workloads.split(",") if w)
    overlap = set(train) & set(held)
    if overlap:
        raise SystemExit(f"--eval-workloads must be held out: {sorted(overlap)} are also training workloads")
    pretrain(args.policy, args.config, train, args.requests, args.seed, args.out)
    evaluate(args.policy, args.config, args.out, held, args.requests, args.eval_seeds)


if __name__ == "__main__":
    main()
