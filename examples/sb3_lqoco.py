"""Train a Stable-Baselines3 agent (DQN or PPO) on ``hss/LQoCo-v0`` (cache-overload control).

The agent sees the paper's 36 discrete states (W, P, B) and picks one of the five bandwidth
adjustments each one-second control period; the reward is eq. 8. After training, the policy
(greedy) runs one episode on a **held-out** workload seed next to "no control" (no token limit)
and "keep" (the initial rate, never changed), and the paper's measurements are compared:
throughput, jitter, p99.9 latency and cache-full time.

    python examples/sb3_lqoco.py --algo dqn --workload S-14 --timesteps 30000 --save dqn.zip
    hss-gym bench --suite lqoco-v1 --policies coto,sb3:dqn.zip    # the saved model on the leaderboard

``main(argv)`` returns the numbers as a dict, so tests can call it directly.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any, Callable

import gymnasium as gym

import hss_gym  # noqa: F401  (registers hss/LQoCo-v0)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--algo", default="dqn", choices=("dqn", "ppo"), help="SB3 algorithm")
    p.add_argument("--config", default="oceanstor", help="oceanstor (DRAM + SSD tier) or linux (SSD + HDD tier)")
    p.add_argument("--workload", default="S-14", help="Table-4 workload (S-1..S-19, R-A..R-E) or 'adapt'")
    p.add_argument("--periods", type=int, default=1500, help="control periods per episode")
    p.add_argument("--timesteps", type=int, default=30_000, help="training periods")
    p.add_argument("--seed", type=int, default=0, help="training seed")
    p.add_argument("--eval-seed", type=int, default=1_000, help="held-out seed of the evaluation episode")
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch intra-op threads (torch.set_num_threads): 1 suits these small networks, "
                        "PyTorch's default (all cores) is 14-20x slower on a busy 2-core machine")
    p.add_argument("--save", metavar="PATH.zip", default=None,
                   help="save the trained model there, with its model card beside it (PATH.zip.json), for "
                        "hss-gym bench --suite lqoco-v1 --policies sb3:PATH.zip")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    return p.parse_args(argv)


def make_env(args: argparse.Namespace) -> gym.Env:
    return gym.make("hss/LQoCo-v0", config=args.config, workload=args.workload, periods=args.periods)


def make_model(args: argparse.Namespace, env: gym.Env):
    from stable_baselines3 import DQN, PPO

    if args.algo == "ppo":
        n_steps = 64 * max(1, min(16, args.timesteps // 256))
        return PPO("MlpPolicy", env, n_steps=n_steps, batch_size=64, gamma=0.9, seed=args.seed,
                   device="cpu", verbose=0)
    return DQN("MlpPolicy", env, learning_starts=min(1_000, args.timesteps // 10), buffer_size=50_000,
               train_freq=4, target_update_interval=500, exploration_fraction=0.3, gamma=0.9,
               seed=args.seed, device="cpu", verbose=0)


def evaluate(env: gym.Env, policy: Callable[[Any], "int | float"], seed: int) -> dict[str, float]:
    """One episode with ``policy`` (int = a Discrete(5) action, float = a rate in MB/s)."""
    obs, info = env.reset(seed=seed)
    done, total = False, 0.0
    raw = env.unwrapped
    while not done:
        a = policy(obs)
        step = raw.step_rate if isinstance(a, float) else env.step
        obs, reward, terminated, truncated, info = step(a)
        total += reward
        done = terminated or truncated
    return {**raw.metrics(), "total_reward": total}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    import torch  # installed with stable-baselines3

    torch.set_num_threads(args.threads)
    env = make_env(args)
    model = make_model(args, env)
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - t0
    if args.save:
        from hss_gym.agents import save_model_card
        model.save(args.save)
        save_model_card(args.save, env)
    results = {
        "trained": evaluate(env, lambda o: int(model.predict(o, deterministic=True)[0]), args.eval_seed),
        "no_control": evaluate(env, lambda o: math.inf, args.eval_seed),
        "keep": evaluate(env, lambda o: 2, args.eval_seed),
    }
    if not args.quiet:
        print(f"{args.algo.upper()} on {args.config}/{args.workload}, {args.timesteps} periods "
              f"({train_s:.1f} s); held-out seed {args.eval_seed}:")
        for name, m in results.items():
            print(f"  {name:10s} throughput {m['throughput_mbps']:8.1f} MB/s  jitter {m['jitter']:.3f}  "
                  f"p99.9 {m['p999_latency_ms']:8.1f} ms  cache full {m['cache_full_s']:6.1f} s  "
                  f"reward {m['total_reward']:8.1f}")
    return {"results": results, "train_seconds": train_s}


if __name__ == "__main__":
    main()
