"""Train a Stable-Baselines3 agent on ``hss/Placement-v0`` (Sibyl's data-placement problem).

The agent decides, for every write and first touch of a page, which device receives it (device 0 =
fastest). Reward = ``L_ref / latency`` of the placed request (``--reward latency``: minus the
latencies over ``L_ref``). After training, the policy is
evaluated on a **held-out trace**: the synthetic workload generated with a different seed
(``--eval-seed``), next to three baselines on the same trace:

* ``random``      -- uniform random device,
* ``always_fast`` -- device 0 (fast until full, then LRU eviction to the next device),
* ``always_slow`` -- the last (home) device.

The comparison is the episode's mean request latency, ``info["metrics"]["mean_latency_us"]`` on
the final step (lower is better).

    python examples/sb3_placement.py --workload lun0 --config cost_opt --timesteps 20000 --save ppo.zip
    hss-gym bench --suite quick --policies sb3:ppo.zip     # the trained model on the leaderboard

``main(argv)`` returns the numbers as a dict, so tests and notebooks can call it directly.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import hss_gym  # noqa: F401  (registers hss/Placement-v0)

ALGOS = ("ppo", "dqn")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workload", default="lun0", help="workload name (hss_gym.workloads.list_workloads()) or trace path")
    p.add_argument("--config", default="cost_opt", help="HSS configuration: perf_opt, cost_opt, pmem, tri, quad")
    p.add_argument("--algo", default="ppo", choices=ALGOS, help="SB3 algorithm")
    p.add_argument("--timesteps", type=int, default=20_000, help="training decisions")
    p.add_argument("--reward", default="ratio", choices=("ratio", "latency"),
                   help="the env's reward: Harmonia's L_ref / latency, or minus the latency over L_ref (docs/hss.md)")
    p.add_argument("--n-requests", type=int, default=2_000, help="requests per episode (trace length)")
    p.add_argument("--seed", type=int, default=1_000, help="training seed (the first training episode's; each reset after it "
                   "draws a new one); the package's training split starts at 1000 (docs/workloads.md)")
    p.add_argument("--eval-seed", type=int, default=0, help="held-out trace seed for evaluation (the leaderboards "
                   "evaluate seeds 0-2)")
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch intra-op threads (torch.set_num_threads): 1 suits these small networks, "
                        "PyTorch's default (all cores) is 14-20x slower on a busy 2-core machine")
    p.add_argument("--save", metavar="PATH.zip", help="save the trained model and its card (PATH.zip.json): "
                   "hss-gym bench --policies sb3:PATH.zip plays it")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    return p.parse_args(argv)


def make_env(args: argparse.Namespace) -> gym.Env:
    return gym.make("hss/Placement-v0", workload=args.workload, config=args.config,
                    n_requests=args.n_requests, reward=args.reward)


def make_model(args: argparse.Namespace, env: gym.Env):
    from stable_baselines3 import DQN, PPO

    if args.algo == "ppo":
        # Short rollouts so that even a tiny --timesteps budget does a few updates.
        n_steps = 64 * max(1, min(16, args.timesteps // 256))
        return PPO("MlpPolicy", env, n_steps=n_steps, batch_size=64, learning_rate=3e-4,
                   gamma=0.9, seed=args.seed, device="cpu", verbose=0)
    return DQN("MlpPolicy", env, learning_starts=min(1_000, args.timesteps // 10), buffer_size=50_000,
               train_freq=4, target_update_interval=500, exploration_fraction=0.3, gamma=0.9,
               seed=args.seed, device="cpu", verbose=0)


def evaluate(env: gym.Env, policy: Callable[[np.ndarray], int], seed: int) -> dict[str, float]:
    """Run one full episode on the trace of ``seed``; return its metrics."""
    obs, info = env.reset(seed=seed)
    done, steps, total_reward = False, 0, 0.0
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        total_reward += reward
        steps += 1
        done = terminated or truncated
    m = info["metrics"]
    return {"mean_latency_us": float(m["mean_latency_us"]), "p99_latency_us": float(m["p99_latency_us"]),
            "total_reward": float(total_reward), "decisions": steps}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    import torch  # installed with stable-baselines3

    torch.set_num_threads(args.threads)
    env = make_env(args)
    model = make_model(args, env)
    eval_env = make_env(args)
    greedy = lambda obs: int(model.predict(obs, deterministic=True)[0])  # noqa: E731
    # The freshly initialised network, for comparison: what did training change?
    untrained = evaluate(eval_env, greedy, args.eval_seed)

    t0 = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - t0

    n_devices = env.action_space.n
    rng = np.random.default_rng(args.eval_seed)
    policies: dict[str, Callable[[np.ndarray], int]] = {
        "trained": greedy,
        "random": lambda obs: int(rng.integers(n_devices)),
        "always_fast": lambda obs: 0,
        "always_slow": lambda obs: n_devices - 1,
    }
    results = {name: evaluate(eval_env, pol, args.eval_seed) for name, pol in policies.items()}
    results["untrained"] = untrained
    if args.save:
        from hss_gym.agents import save_model_card
        path = args.save if args.save.endswith(".zip") else f"{args.save}.zip"  # SB3 adds .zip
        model.save(path)
        save_model_card(path, env)
    env.close()
    eval_env.close()

    out = {"workload": args.workload, "config": args.config, "algo": args.algo, "reward": args.reward,
           "timesteps": args.timesteps,
           "train_seconds": train_s, "eval_seed": args.eval_seed, "results": results}
    if not args.quiet:
        print(f"{args.algo.upper()} on hss/Placement-v0 ({args.config}, {args.workload}): "
              f"{args.timesteps} steps in {train_s:.1f} s; held-out trace seed {args.eval_seed}")
        print(f"{'policy':<12} {'mean latency (us)':>18} {'p99 (us)':>12} {'total reward':>13}")
        for name, r in results.items():
            print(f"{name:<12} {r['mean_latency_us']:>18.1f} {r['p99_latency_us']:>12.1f} {r['total_reward']:>13.2f}")
    return out


if __name__ == "__main__":
    main()
