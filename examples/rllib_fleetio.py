"""Multi-agent PPO with Ray RLlib (new API stack, CPU) on ``hss/FleetIO-v1`` — the paper's stack.

One shared policy (``"vssd"``) for every vSSD agent, as FleetIO deploys its pre-trained model in
each vSSD; Table 3's hyper-parameters: hidden [50, 50], lr 1e-4, gamma 0.9, minibatch 32, train
batch 256, and RLlib's default of 30 epochs per batch (the paper's run: 2,000 iterations; the
single-file trainer uses lr 1e-3 for its much smaller budget, docs/fleetio.md). Episodes cycle over the *training* mixes (never the Table 5 evaluation mixes). The
trained actor is exported in :class:`hss_gym.agents.fleetio.policy.PPOPolicy`'s NumPy format
with ``--out``.

    python examples/rllib_fleetio.py --iterations 200 --out fleetio_rllib.npz

The readable single-file alternative that produced the shipped weights is
``python -m hss_gym.agents.fleetio.ppo``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from hss_gym.envs.fleetio.env import FleetIOEnv

TRAIN_MIXES = ("train2a", "train2b", "train4", "train8")


class FleetIOMultiAgentEnv(MultiAgentEnv):
    """``FleetIOEnv`` as an RLlib ``MultiAgentEnv``; one env per training mix, cycled per episode.
    ``config``: ``mixes`` (list), ``windows`` and any other FleetIOEnv keyword. The agent set is
    the largest mix's (``vssd_0..vssd_7``); a smaller mix's episode has only its own agents."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        cfg = dict(config or {})
        mixes = list(cfg.pop("mixes", TRAIN_MIXES))
        self.envs = [FleetIOEnv(m, **cfg) for m in mixes]
        self.possible_agents = max((e.possible_agents for e in self.envs), key=len)
        self.agents = []
        e0 = self.envs[0]
        self.observation_spaces = {a: e0.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: e0.action_space(a) for a in self.possible_agents}
        self._k = 0
        self.env = self.envs[0]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.env = self.envs[self._k % len(self.envs)]
        self._k += 1
        obs, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.env.possible_agents)
        return obs, infos

    def step(self, action_dict: dict[str, Any]):
        obs, rew, terms, truncs, infos = self.env.step({a: np.asarray(action_dict[a]) for a in self.agents})
        terms["__all__"] = all(terms.values())
        truncs["__all__"] = all(truncs.values())
        if terms["__all__"] or truncs["__all__"]:
            self.agents = []
        return obs, rew, terms, truncs, {a: {k: v for k, v in i.items() if k != "admission"}
                                         for a, i in infos.items()}


def build_config(args: argparse.Namespace):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(FleetIOMultiAgentEnv, env_config={"windows": args.windows})
        .framework("torch")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1, rollout_fragment_length=args.batch_size)
        .learners(num_learners=0, num_gpus_per_learner=0)
        .multi_agent(policies={"vssd"}, policy_mapping_fn=lambda agent_id, episode, **kw: "vssd")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "vssd": RLModuleSpec(model_config={"fcnet_hiddens": [50, 50], "fcnet_activation": "tanh"})}))
        .training(train_batch_size_per_learner=args.batch_size, minibatch_size=args.minibatch_size,
                  num_epochs=args.epochs, lr=args.lr, gamma=0.9)
        .debugging(seed=args.seed)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--iterations", type=int, default=1, help="training iterations")
    p.add_argument("--windows", type=int, default=30, help="decision windows per episode")
    p.add_argument("--batch-size", type=int, default=256, help="agent steps per iteration")
    p.add_argument("--minibatch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=30, help="SGD epochs per batch (RLlib's default)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the actor as PPOPolicy NumPy weights (.npz)")
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch intra-op threads (torch.set_num_threads): 1 suits these small networks, "
                        "PyTorch's default (all cores) is 14-20x slower on a busy 2-core machine")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def export_actor(module: Any) -> dict[str, np.ndarray]:
    """The [50, 50] tanh actor of an RLlib default PPO torch module as PPOPolicy arrays."""
    lin = [m for m in module.pi.modules() if m.__class__.__name__ == "Linear"]
    enc = ([m for m in module.encoder.modules() if m.__class__.__name__ == "Linear"]
           if hasattr(module, "encoder") else [])
    layers = (enc + lin)[-3:]
    if len(layers) != 3:
        raise RuntimeError(f"unexpected RLModule layout: {len(enc + lin)} linear layers")
    f = lambda t: t.detach().cpu().numpy().astype(np.float32)  # noqa: E731
    return {"w0": f(layers[0].weight.T), "b0": f(layers[0].bias), "w1": f(layers[1].weight.T),
            "b1": f(layers[1].bias), "wa": f(layers[2].weight.T), "ba": f(layers[2].bias)}


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
            ret = result.get("env_runners", {}).get("episode_return_mean")
            row = {"iteration": i + 1, "episode_return_mean": ret,
                   "env_steps": result.get("env_runners", {}).get("num_env_steps_sampled_lifetime")}
            history.append(row)
            if not args.quiet:
                print(row)
        if args.out:
            np.savez_compressed(args.out, **export_actor(algo.get_module("vssd")))
    finally:
        algo.stop()
        ray.shutdown()
    if not args.quiet:
        ret = history[-1]["episode_return_mean"]
        print(f"{len(history)} iteration(s); last episode_return_mean = "
              f"{'n/a' if ret is None or math.isnan(ret) else ret}")
    return {"history": history}


if __name__ == "__main__":
    main()
