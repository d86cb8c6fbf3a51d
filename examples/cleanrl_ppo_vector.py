"""CleanRL-style PPO on the native vector env of ``hss/Placement-v0``, in one file (after CleanRL's ``ppo.py``).

``gym.make_vec("hss/Placement-v0", num_envs=N)`` steps all N simulators in one C call
(hss_gym/envs/hss/vector.py), so with many envs the learner, not the environment, sets the pace. The
script prints its steps/s and the share of the wall time spent in ``envs.step``, and
``--vectorization-mode sync`` runs the same training on Gymnasium's SyncVectorEnv to compare
(the envs give the same numbers either way; only the time differs).

Gymnasium >= 1.0's next-step autoreset: the step after an episode ends ignores its action and
returns the first observation of a new episode; that step is not a transition, so it is left out
of the loss (``valid`` below), and an ended episode is not bootstrapped.

    python examples/cleanrl_ppo_vector.py --num-envs 64 --total-timesteps 200000

CleanRL's flags: ``--seed``, ``--exp-name``, ``--torch-deterministic``, ``--cuda`` / ``--no-cuda``,
plus ``--threads`` (PyTorch intra-op threads, default 1) and ``--env-threads`` (threads stepping
the batch). ``main(argv)`` returns the numbers as a dict.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import hss_gym  # noqa: F401  (registers hss/Placement-v0 and its vector entry point)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--exp-name", default="cleanrl_ppo_vector")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-deterministic", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--cuda", action=argparse.BooleanOptionalAction, default=True,
                   help="train on CUDA when available (--no-cuda: always the CPU)")
    p.add_argument("--threads", type=int, default=1, help="PyTorch intra-op threads (torch.set_num_threads)")
    p.add_argument("--vectorization-mode", default="vector_entry_point", choices=["vector_entry_point", "sync"],
                   help="the native vector env, or Gymnasium's SyncVectorEnv of the same envs")
    p.add_argument("--env-threads", type=int, default=1, help="threads stepping the native batch")
    p.add_argument("--workload", default="ycsb-b")
    p.add_argument("--config", default="cost_opt")
    p.add_argument("--n-requests", type=int, default=20_000, help="requests per episode")
    p.add_argument("--total-timesteps", type=int, default=200_000, help="env steps, summed over the envs")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--num-steps", type=int, default=128, help="steps per env per rollout")
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    return p.parse_args(argv)


class Agent(nn.Module):
    def __init__(self, n_obs: int, n_act: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                                   nn.Linear(64, n_act))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    extra = {"threads": args.env_threads} if args.vectorization_mode == "vector_entry_point" else {}
    envs = gym.make_vec("hss/Placement-v0", num_envs=args.num_envs, vectorization_mode=args.vectorization_mode,
                        config=args.config, workload=args.workload, n_requests=args.n_requests, **extra)
    n_obs, n_act = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    agent = Agent(n_obs, n_act).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    T, N = args.num_steps, args.num_envs
    obs = torch.zeros((T, N, n_obs), device=device)
    actions = torch.zeros((T, N), dtype=torch.long, device=device)
    logprobs, rewards, dones, values = (torch.zeros((T, N), device=device) for _ in range(4))
    valid = torch.zeros((T, N), dtype=torch.bool, device=device)

    start = time.perf_counter()
    env_time = 0.0
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs, device=device)
    next_done = torch.zeros(N, device=device)
    autoreset = np.zeros(N, dtype=bool)  # this step only resets (Gymnasium's next-step autoreset)
    global_step, episodes, latencies = 0, 0, []
    iterations = max(1, args.total_timesteps // (T * N))
    for _ in range(iterations):
        for step in range(T):
            global_step += N
            obs[step], dones[step] = next_obs, next_done
            valid[step] = torch.as_tensor(~autoreset, device=device)
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            t0 = time.perf_counter()
            o, r, term, trunc, infos = envs.step(action.cpu().numpy())
            env_time += time.perf_counter() - t0
            autoreset = term | trunc
            rewards[step] = torch.as_tensor(r, device=device, dtype=torch.float32)
            next_obs = torch.as_tensor(o, device=device)  # copies the shared array
            next_done = torch.as_tensor(autoreset, device=device, dtype=torch.float32)
            if "metrics" in infos:
                ended = infos["_metrics"]
                episodes += int(ended.sum())
                latencies += list(infos["metrics"]["mean_latency_us"][ended])

        with torch.no_grad():  # GAE; an ended episode is not bootstrapped
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(T)):
                nextnonterminal = 1.0 - (next_done if t == T - 1 else dones[t + 1])
                nextvalues = next_value if t == T - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        keep = valid.reshape(-1)
        b_obs, b_actions = obs.reshape(-1, n_obs)[keep], actions.reshape(-1)[keep]
        b_logprobs, b_adv = logprobs.reshape(-1)[keep], advantages.reshape(-1)[keep]
        b_returns = returns.reshape(-1)[keep]
        size = b_obs.shape[0]
        mb = max(1, size // args.num_minibatches)
        for _ in range(args.update_epochs):
            order = torch.randperm(size, device=device)
            for s in range(0, size, mb):
                idx = order[s:s + mb]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[idx], b_actions[idx])
                ratio = (newlogprob - b_logprobs[idx]).exp()
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(idx) > 1 else adv
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[idx]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

    wall = time.perf_counter() - start
    envs.close()
    out = {"steps": global_step, "wall_s": wall, "steps_per_s": global_step / wall, "env_share": env_time / wall,
           "env_steps_per_s": global_step / env_time, "episodes": episodes,
           "mean_latency_us": float(np.mean(latencies)) if latencies else float("nan"), "device": str(device)}
    print(f"{args.vectorization_mode} x{N} on {device}: {out['steps_per_s']:,.0f} steps/s, env.step "
          f"{100 * out['env_share']:.0f}% of the wall time ({out['env_steps_per_s']:,.0f} env-steps/s inside it), "
          f"{global_step:,} steps in {wall:.1f} s, {episodes} episodes ended"
          + (f" (mean latency {out['mean_latency_us']:.0f} us)" if latencies else ""))
    return out


if __name__ == "__main__":
    main()
