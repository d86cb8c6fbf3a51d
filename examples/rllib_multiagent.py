"""Multi-agent PPO with Ray RLlib (new API stack) on the two-agent ``hss/Harmonia-v0`` env.

One policy (RLModule) per agent: ``placement`` picks the device of each write / first touch,
``migration`` the target device of the scanner's candidate page. CPU only, sampling in the driver
(``num_env_runners=0``).

RLlib's stock ``ParallelPettingZooEnv`` resets the env in its constructor and reorders the agents,
so the example uses :class:`HSSMultiAgentEnv`, a thin ``MultiAgentEnv`` adapter: both agents
observe every step (an agent with no decision has ``infos[agent]["acting"] == False`` and its
action is ignored by the env, earning reward 0); the episode ends with ``truncateds["__all__"]``
after the last request.

Episodes are short (``--n-requests``, 200) so that every iteration's batch ends some: RLlib
reports ``episode_return_mean`` only over finished episodes. After training, the greedy modules
(``forward_inference``, argmax) play whole episodes on held-out trace seeds (``--eval-seeds``) and
are evaluated like leaderboard runs: mean and p99 latency beside Slow-Only's and the fit-first
rule's on the same traces.

    python examples/rllib_multiagent.py --workload lun2 --config perf_opt --iterations 2
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ray.rllib.env.multi_agent_env import MultiAgentEnv

import hss_gym


class HSSMultiAgentEnv(MultiAgentEnv):
    """``hss_gym.parallel_env`` as an RLlib ``MultiAgentEnv``; ``config`` = its keyword arguments."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.env = hss_gym.parallel_env(**dict(config or {}))
        self.possible_agents = list(self.env.possible_agents)  # ["placement", "migration"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: self.env.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: self.env.action_space(a) for a in self.possible_agents}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        return obs, self._infos(infos)

    def step(self, action_dict: dict[str, Any]):
        # The env needs an action for both agents; one missing (never here) means "no decision".
        actions = {a: int(action_dict.get(a, 0)) for a in self.possible_agents}
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        terms["__all__"] = all(terms.values())
        truncs["__all__"] = all(truncs.values())
        if terms["__all__"] or truncs["__all__"]:
            self.agents = []
        return obs, rewards, terms, truncs, self._infos(infos)

    @staticmethod
    def _infos(infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        # Drop the per-step arrays RLlib does not need; keep metrics, acting, latency, credit.
        return {a: {k: v for k, v in info.items() if k != "action_mask"} for a, info in infos.items()}

    def render(self) -> str | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def build_config(args: argparse.Namespace):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    env_config = {"config": args.config, "workload": args.workload, "n_requests": args.n_requests}
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(HSSMultiAgentEnv, env_config=env_config)
        .framework("torch")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1,
                     rollout_fragment_length=args.batch_size)
        .learners(num_learners=0, num_gpus_per_learner=0)
        .multi_agent(policies={"placement", "migration"},
                     policy_mapping_fn=lambda agent_id, episode, **kw: agent_id)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "placement": RLModuleSpec(model_config={"fcnet_hiddens": [64, 64]}),
            "migration": RLModuleSpec(model_config={"fcnet_hiddens": [64, 64]}),
        }))
        .training(train_batch_size_per_learner=args.batch_size, minibatch_size=args.minibatch_size,
                  num_epochs=args.epochs, lr=3e-4, gamma=0.9)
        .debugging(seed=args.seed)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workload", default="lun2", help="workload name or trace path")
    p.add_argument("--config", default="perf_opt", help="HSS configuration")
    p.add_argument("--n-requests", type=int, default=200, help="requests per episode (shorter than a batch)")
    p.add_argument("--iterations", type=int, default=2, help="training iterations")
    p.add_argument("--eval-seeds", default="1000,1001", help="trace seeds of the greedy evaluation episodes")
    p.add_argument("--eval-requests", type=int, default=2_000, help="requests per evaluation episode")
    p.add_argument("--batch-size", type=int, default=256, help="env steps per iteration")
    p.add_argument("--minibatch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch intra-op threads (torch.set_num_threads): 1 suits these small networks, "
                        "PyTorch's default (all cores) is 14-20x slower on a busy 2-core machine")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def _find(result: dict, key: str) -> Any:
    """First value stored under ``key`` anywhere in a nested result dict (or None)."""
    if key in result:
        return result[key]
    for v in result.values():
        if isinstance(v, dict) and (found := _find(v, key)) is not None:
            return found
    return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import ray

    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)  # the learner runs in this process (num_learners=0)
    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    algo = build_config(args).build_algo()
    history = []
    try:
        for i in range(args.iterations):
            result = algo.train()
            learners = result.get("learners", {})
            row = {
                "iteration": i + 1,
                "env_steps": _find(result, "num_env_steps_sampled_lifetime"),
                "policy_loss": {p: float(learners[p]["policy_loss"]) for p in ("placement", "migration")
                                if p in learners and "policy_loss" in learners[p]},
                "episode_return_mean": _find(result, "episode_return_mean"),
            }
            history.append(row)
            if not args.quiet:
                print(row)
        modules = {p: algo.get_module(p) for p in ("placement", "migration")}
        evaluation = evaluate(modules, args)
    finally:
        algo.stop()
        ray.shutdown()
    out = {"history": history, "evaluation": evaluation}
    if not args.quiet:
        ret = history[-1]["episode_return_mean"]
        print(f"{len(history)} iteration(s); last episode_return_mean = "
              f"{'n/a (no episode finished yet)' if ret is None or math.isnan(ret) else ret}")
        print(f"greedy evaluation, {args.config} / {args.workload}, {args.eval_requests:,} requests, trace seeds "
              f"{args.eval_seeds} (mean over them):")
        print(f"{'policy':<14} {'mean latency (us)':>18} {'p99 (us)':>10}")
        for name, m in evaluation.items():
            print(f"{name:<14} {m['mean_latency_us']:>18.1f} {m['p99_latency_us']:>10.1f}")
    return out


def evaluate(modules: dict[str, Any], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Whole episodes of the trained modules' greedy actions (RLlib's ``forward_inference``,
    argmax), and of Slow-Only and fit-first on the same traces; mean and p99 latency averaged over
    the seeds."""
    import numpy as np
    import torch

    from hss_gym.agents import make_env, make_policy, run_episode

    seeds = [int(s) for s in args.eval_seeds.split(",")]
    runs: dict[str, list[dict[str, float]]] = {"rllib greedy": [], "slow_only": [], "fit_first": []}
    for seed in seeds:
        env = hss_gym.parallel_env(args.config, args.workload, n_requests=args.eval_requests)
        obs, infos = env.reset(seed=seed)
        while env.agents:
            actions = {"placement": 0, "migration": max(infos["migration"]["device"], 0)}
            for a, module in modules.items():
                if infos[a]["acting"]:
                    with torch.no_grad():
                        logits = module.forward_inference({"obs": torch.as_tensor(obs[a][None])})["action_dist_inputs"]
                    actions[a] = int(logits.argmax(-1)[0])
            obs, _, _, _, infos = env.step(actions)
        runs["rllib greedy"].append(env.metrics().to_dict())
        for name in ("slow_only", "fit_first"):
            policy = make_policy(name)
            res = run_episode(policy, make_env(policy, args.config, args.workload, n_requests=args.eval_requests),
                              seed=seed)
            runs[name].append(res.metrics.to_dict())
    return {name: {k: float(np.mean([m[k] for m in ms])) for k in ("mean_latency_us", "p99_latency_us")}
            for name, ms in runs.items()}


if __name__ == "__main__":
    main()
