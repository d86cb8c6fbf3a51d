"""CleanRL-style DQN on ``hss/Placement-v0``, in one readable file (after CleanRL's ``dqn.py``).

What CleanRL users would write themselves: a Gymnasium vector env (``SyncVectorEnv`` of
``hss/Placement-v0``, each copy on its own trace seed), a small Q-network in PyTorch, a replay
buffer, a linearly decaying epsilon, a target network, and a TD(0) loss. The one thing to get
right with Gymnasium >= 1.0 is its *next-step* autoreset: after an episode ends, the next
``step()`` ignores its actions and returns the first observation of a new episode, so that step
is not a transition and is not stored (``autoreset`` below).

After training, the greedy policy is evaluated on a **held-out trace** (the workload generated
with ``--eval-seed``) next to random placement, always-fast and always-slow; the comparison is the
episode's mean request latency (``info["metrics"]["mean_latency_us"]`` on the final step).

    python examples/cleanrl_dqn.py --config cost_opt --workload ssd-02 --timesteps 20000 --save dqn.pt
    hss-gym bench --suite quick --policies torch:dqn.pt    # its state_dict on the leaderboard

CleanRL's command-line conventions: ``--exp-name``, ``--seed``, ``--torch-deterministic``,
``--cuda`` / ``--no-cuda`` (CUDA when available, the default), ``--track`` (log to Weights & Biases:
optional, needs ``pip install wandb``; ``--wandb-project-name``, ``--wandb-entity``), plus
``--threads`` (PyTorch intra-op threads, default 1: this 64-64 network trains 14-20x slower with
PyTorch's default of one thread per core on a busy 2-core machine).

``main(argv)`` returns the numbers as a dict (and the replay buffer, under ``"replay"``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import hss_gym  # noqa: F401  (registers hss/Placement-v0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--exp-name", default="cleanrl_dqn", help="name of this experiment (the W&B run name's prefix)")
    p.add_argument("--torch-deterministic", action=argparse.BooleanOptionalAction, default=True,
                   help="torch.backends.cudnn.deterministic")
    p.add_argument("--cuda", action=argparse.BooleanOptionalAction, default=True,
                   help="train on CUDA when available (--no-cuda: always the CPU)")
    p.add_argument("--track", action="store_true", help="log to Weights & Biases (pip install wandb)")
    p.add_argument("--wandb-project-name", default="hss-gym", help="W&B project")
    p.add_argument("--wandb-entity", default=None, help="W&B entity (team); default: your user")
    p.add_argument("--threads", type=int, default=1, help="PyTorch intra-op threads (torch.set_num_threads)")
    p.add_argument("--workload", default="ssd-02", help="workload name or trace path")
    p.add_argument("--config", default="cost_opt", help="HSS configuration: perf_opt, cost_opt, pmem, tri, quad")
    p.add_argument("--timesteps", type=int, default=20_000, help="environment steps, summed over the envs")
    p.add_argument("--num-envs", type=int, default=4, help="environments in the SyncVectorEnv")
    p.add_argument("--n-requests", type=int, default=2_000, help="requests per episode (trace length)")
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--buffer-size", type=int, default=20_000)
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--start-e", type=float, default=1.0, help="epsilon at the start")
    p.add_argument("--end-e", type=float, default=0.05, help="epsilon after --exploration-fraction")
    p.add_argument("--exploration-fraction", type=float, default=0.3)
    p.add_argument("--learning-starts", type=int, default=1_000, help="steps before the first update")
    p.add_argument("--train-frequency", type=int, default=4, help="vector steps between updates")
    p.add_argument("--target-network-frequency", type=int, default=250, help="vector steps between target syncs")
    p.add_argument("--seed", type=int, default=0, help="training seed (env i trains on trace seed + i)")
    p.add_argument("--eval-seed", type=int, default=1_000, help="held-out trace seed for evaluation")
    p.add_argument("--save", metavar="PATH.pt", help="save the Q-network's state_dict (CleanRL's way): "
                   "hss-gym bench --policies torch:PATH.pt plays it")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    return p.parse_args(argv)


class QNetwork(nn.Module):
    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.network = nn.Sequential(nn.Linear(n_obs, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                     nn.Linear(64, n_actions))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


class ReplayBuffer:
    """A ring of (obs, action, reward, next_obs, done) transitions."""

    def __init__(self, size: int, n_obs: int) -> None:
        self.obs = np.zeros((size, n_obs), np.float32)
        self.next_obs = np.zeros((size, n_obs), np.float32)
        self.actions = np.zeros(size, np.int64)
        self.rewards = np.zeros(size, np.float32)
        self.dones = np.zeros(size, np.float32)
        self.size, self.pos, self.full = size, 0, False

    def add(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, next_obs: np.ndarray,
            dones: np.ndarray) -> None:
        for i in range(len(obs)):
            j = self.pos
            self.obs[j], self.actions[j], self.rewards[j] = obs[i], actions[i], rewards[i]
            self.next_obs[j], self.dones[j] = next_obs[i], dones[i]
            self.pos = (j + 1) % self.size
            self.full = self.full or self.pos == 0

    def sample(self, n: int, rng: np.random.Generator, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
        idx = rng.integers(self.size if self.full else self.pos, size=n)
        return tuple(torch.from_numpy(a[idx]).to(device) for a in
                     (self.obs, self.actions, self.rewards, self.next_obs, self.dones))


def make_env(args: argparse.Namespace) -> gym.Env:
    return gym.make("hss/Placement-v0", workload=args.workload, config=args.config, n_requests=args.n_requests)


def linear_schedule(start: float, end: float, duration: float, t: int) -> float:
    return max(end, start + (end - start) * t / max(duration, 1.0))


def evaluate(env: gym.Env, policy: Callable[[np.ndarray], int], seed: int) -> dict[str, float]:
    """One full episode on the trace of ``seed``: its mean and p99 latency."""
    obs, info = env.reset(seed=seed)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy(obs))
        done = terminated or truncated
    return {"mean_latency_us": float(info["metrics"]["mean_latency_us"]),
            "p99_latency_us": float(info["metrics"]["p99_latency_us"])}


def start_tracking(args: argparse.Namespace, run_name: str) -> Any:
    """The W&B run of ``--track`` (None without it); wandb is imported only then."""
    if not args.track:
        return None
    try:
        import wandb
    except ImportError as e:
        raise SystemExit("--track logs to Weights & Biases: pip install wandb (or drop --track)") from e
    return wandb.init(project=args.wandb_project_name, entity=args.wandb_entity, name=run_name,
                      config=vars(args), save_code=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    run_name = f"hss/Placement-v0__{args.exp_name}__{args.seed}__{int(time.time())}"
    run = start_tracking(args, run_name)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    envs = gym.vector.SyncVectorEnv([lambda: make_env(args) for _ in range(args.num_envs)])
    n_obs, n_actions = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    q_network = QNetwork(n_obs, n_actions).to(device)
    optimizer = torch.optim.Adam(q_network.parameters(), lr=args.learning_rate)
    target_network = QNetwork(n_obs, n_actions).to(device)
    target_network.load_state_dict(q_network.state_dict())
    rb = ReplayBuffer(args.buffer_size, n_obs)

    def greedy(obs: np.ndarray) -> int:
        with torch.no_grad():
            return int(q_network(torch.as_tensor(obs, dtype=torch.float32, device=device)[None]).argmax())

    eval_env = make_env(args)
    untrained = evaluate(eval_env, greedy, args.eval_seed)

    start = time.perf_counter()
    obs, _ = envs.reset(seed=[args.seed + i for i in range(args.num_envs)])
    autoreset = np.zeros(args.num_envs, bool)  # the next step of these envs starts a new episode
    iterations = args.timesteps // args.num_envs
    for it in range(iterations):
        epsilon = linear_schedule(args.start_e, args.end_e, args.exploration_fraction * iterations, it)
        if rng.random() < epsilon:
            actions = rng.integers(n_actions, size=args.num_envs)
        else:
            with torch.no_grad():
                actions = q_network(torch.as_tensor(obs, device=device)).argmax(dim=1).cpu().numpy()
        next_obs, rewards, terminations, truncations, _ = envs.step(actions)
        # A truncated episode (the trace ran out) is not a terminal state: bootstrap through it.
        keep = ~autoreset
        rb.add(obs[keep], actions[keep], rewards[keep], next_obs[keep], terminations[keep])
        autoreset = terminations | truncations
        obs = next_obs

        if it * args.num_envs >= args.learning_starts and it % args.train_frequency == 0:
            b_obs, b_act, b_rew, b_next, b_done = rb.sample(args.batch_size, rng, device)
            with torch.no_grad():
                td_target = b_rew + args.gamma * target_network(b_next).max(dim=1).values * (1 - b_done)
            old_val = q_network(b_obs).gather(1, b_act[:, None]).squeeze(1)
            loss = F.mse_loss(td_target, old_val)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if run is not None and it % 100 == 0:
                run.log({"losses/td_loss": loss.item(), "charts/epsilon": epsilon}, step=it * args.num_envs)
        if it % args.target_network_frequency == 0:
            target_network.load_state_dict(q_network.state_dict())
    train_s = time.perf_counter() - start
    envs.close()

    results = {"untrained": untrained, "trained": evaluate(eval_env, greedy, args.eval_seed)}
    eval_rng = np.random.default_rng(args.eval_seed)
    baselines: dict[str, Callable[[np.ndarray], int]] = {
        "random": lambda o: int(eval_rng.integers(n_actions)),
        "always_fast": lambda o: 0,
        "always_slow": lambda o: n_actions - 1,
    }
    results.update({name: evaluate(eval_env, pol, args.eval_seed) for name, pol in baselines.items()})
    if args.save:
        torch.save(q_network.state_dict(), args.save)  # keys network.0.weight ...: read as torch:PATH
    eval_env.close()
    if run is not None:
        run.summary.update({f"eval/{k}_mean_latency_us": r["mean_latency_us"] for k, r in results.items()})
        run.finish()
    if not args.quiet:
        print(f"DQN on hss/Placement-v0 ({args.config}, {args.workload}): {iterations * args.num_envs} steps "
              f"in {train_s:.1f} s on {device} ({torch.get_num_threads()} thread(s)); held-out trace seed "
              f"{args.eval_seed}")
        print(f"{'policy':<12} {'mean latency (us)':>18} {'p99 (us)':>12}")
        for name, r in results.items():
            print(f"{name:<12} {r['mean_latency_us']:>18.1f} {r['p99_latency_us']:>12.1f}")
    return {"workload": args.workload, "config": args.config, "train_seconds": train_s, "results": results,
            "replay": rb}


if __name__ == "__main__":
    main()
