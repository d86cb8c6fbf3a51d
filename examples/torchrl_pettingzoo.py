"""Run the two-agent ``hss/Harmonia-v0`` environment through TorchRL's ``PettingZooWrapper``.

TorchRL turns a PettingZoo ``ParallelEnv`` into an ``EnvBase`` whose data is a ``TensorDict`` with
one group per agent (``placement`` and ``migration``), each holding ``observation``,
``action_mask`` (taken from ``infos[agent]["action_mask"]`` when ``use_mask=True``), ``action``,
``reward``, ``done`` and the per-step ``info`` entries.

TorchRL stores every info entry as a fixed-shape tensor whose spec it infers at reset, so the env's
variable-length or final-step-only infos (the migration agent's ``credit`` list and the ``metrics``
dict of the last step) cannot go through it. :class:`TensorInfos` keeps only the tensor-friendly
entries (``acting``, ``action_mask``, ``step``, placement's ``latency_us``); the run's metrics stay
available from the underlying env's :meth:`metrics`.

The rollout runs to the episode's end (``--steps`` caps it) and is evaluated like a leaderboard
run: its mean and p99 latency beside Slow-Only's and the fit-first rule's on the same trace and
seed (:func:`hss_gym.agents.run_episode`).

    python examples/torchrl_pettingzoo.py --workload lun2 --config perf_opt
"""

from __future__ import annotations

import argparse
from typing import Any

from pettingzoo import ParallelEnv

import hss_gym

KEEP_INFOS = {"acting", "action_mask", "step", "latency_us"}


class TensorInfos(ParallelEnv):
    """Pass-through ParallelEnv keeping only fixed-shape numeric entries of ``infos``."""

    def __init__(self, env: ParallelEnv) -> None:
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = getattr(env, "metadata", {})
        self.render_mode = getattr(env, "render_mode", None)

    @property
    def agents(self) -> list[str]:
        return self.env.agents

    def observation_space(self, agent: str):
        return self.env.observation_space(agent)

    def action_space(self, agent: str):
        return self.env.action_space(agent)

    @staticmethod
    def _filter(infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        # The env shares one read-only action_mask array; torch tensors want writable memory.
        return {a: {k: (v.copy() if k == "action_mask" else v) for k, v in info.items() if k in KEEP_INFOS}
                for a, info in infos.items()}

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return obs, self._filter(infos)

    def step(self, actions):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        return obs, rewards, terms, truncs, self._filter(infos)

    def state(self):
        return self.env.state()

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def make_env(workload: str, config: str, n_requests: int, seed: int):
    """The hss-gym parallel env as a TorchRL env (one group per agent, action masks on)."""
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.libs.pettingzoo import MarlGroupMapType

    base = hss_gym.parallel_env(config=config, workload=workload, n_requests=n_requests)
    return PettingZooWrapper(TensorInfos(base), use_mask=True, seed=seed,
                             group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT), base


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workload", default="lun2", help="workload name or trace path")
    p.add_argument("--config", default="perf_opt", help="HSS configuration")
    p.add_argument("--n-requests", type=int, default=500, help="requests in the trace (= episode length)")
    p.add_argument("--steps", type=int, default=100_000, help="rollout length at most (it stops at the episode's end)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch intra-op threads (torch.set_num_threads): 1 suits these small networks, "
                        "PyTorch's default (all cores) is 14-20x slower on a busy 2-core machine")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    env, base = make_env(args.workload, args.config, args.n_requests, args.seed)
    # A random policy that respects the action masks (env.rand_action samples from the masked spec).
    rollout = env.rollout(args.steps, break_when_any_done=True)
    totals = {g: float(rollout.get(("next", g, "reward")).sum()) for g in env.group_map}
    acting = {g: int(rollout.get((g, "info", "acting")).sum()) for g in env.group_map}
    metrics = base.metrics()
    out = {"steps": int(rollout.batch_size[0]), "keys": sorted(map(str, rollout.keys(True, True))),
           "total_rewards": totals, "decisions": acting, "group_map": dict(env.group_map),
           "mean_latency_us": float(metrics.mean_latency_us), "episode_done": not base.agents,
           "evaluation": {"torchrl random (masked)": metrics.to_dict(), **baselines(args)}}
    if not args.quiet:
        print(rollout)
        print("keys:", *out["keys"], sep="\n  ")
        print(f"{out['steps']} steps ({'the whole episode' if out['episode_done'] else 'capped by --steps'}); "
              f"total rewards {totals}; decisions {acting}")
        print(f"{'policy':<26} {'mean latency (us)':>18} {'p99 (us)':>10}")
        for name, m in out["evaluation"].items():
            print(f"{name:<26} {m['mean_latency_us']:>18.1f} {m['p99_latency_us']:>10.1f}")
    env.close()
    return out


def baselines(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Slow-Only's and fit-first's metrics on the rollout's trace and seed (the leaderboard's loop)."""
    from hss_gym.agents import make_env as make_hss_env, make_policy, run_episode
    out = {}
    for name in ("slow_only", "fit_first"):
        policy = make_policy(name)
        env = make_hss_env(policy, args.config, args.workload, n_requests=args.n_requests)
        out[name] = run_episode(policy, env, seed=args.seed).metrics.to_dict()
    return out


if __name__ == "__main__":
    main()
