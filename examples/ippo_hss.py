"""CleanRL-style IPPO on the two-agent ``hss_v0.parallel_env``, trained to a row of the ``quick`` leaderboard.

Both agents learn, each with its own actor and critic (independent PPO, after CleanRL's
``ppo.py``): the placement agent chooses the device of each write and first touch, the migration
agent judges the scanner's candidate page (its current device = stay). The env is PettingZoo's
parallel API in plain PyTorch; no RL library. What is particular to this env:

* **Decisions, not steps.** An agent acts only on the steps where ``infos[agent]["acting"]``; its
  transitions run from one of its decisions to its next one, and everything earned in between
  is its reward (as ``hss/Placement-v0`` does for one agent).
* **A team reward aligned with the leaderboard.** Both agents are paid ``-latency / L_ref`` for
  every request served (``infos["placement"]["latency_us"]``; ``L_ref`` the fast device's 4 KiB
  read time): the leaderboard ranks mean latency. The env's own migration reward (Harmonia eq. 3)
  pays for moves and nothing for staying, so an agent trained on it learns to move everything.
* **Placement first.** For the first 60% of the training (``--placement-first``) the migration
  agent stays and only the placement agent learns: random early moves keep the fast device full,
  which teaches placement that the fast device is never worth it.
* **Room in the observation.** ``room_feature="fits"``: the free-space feature's bin 0 says that
  the request does not fit on the fast device, so placing there would evict on the critical path.

Training uses the ``quick`` suite's workloads and configurations on trace seeds 1000 and above,
never the leaderboard's seeds (0-2). The actors are then saved as one ``state_dict``
(``placement.actor.*``, ``migration.actor.*``) with its model card, and played on the leaderboard
as ``torch:PATH`` (:mod:`hss_gym.agents.models`): the example runs
``hss-gym bench --suite quick --policies torch:PATH,slow_only`` and prints each track's mean
latency normalised to Fast-Only against Slow-Only's.

    python examples/ippo_hss.py --out results/ippo          # ~2 min of training, then the bench

``main(argv)`` returns the numbers as a dict.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from hss_gym import hss_v0

AGENTS = ("placement", "migration")
WORKLOADS = ("ycsb-b", "lun2", "ssd-02", "mix3")  # the quick suite's
CONFIGS = ("perf_opt", "cost_opt")
ENV_OPTIONS = {"features": "harmonia", "room_feature": "fits"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--total-requests", type=int, default=40_000, help="requests served in training, all episodes")
    p.add_argument("--n-requests", type=int, default=2_000, help="requests per training episode")
    p.add_argument("--rollout", type=int, default=2_000, help="requests per PPO rollout")
    p.add_argument("--epochs", type=int, default=10, help="PPO epochs per rollout")
    p.add_argument("--minibatch", type=int, default=128, help="decisions per minibatch")
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--gamma", type=float, default=0.5, help="discount per decision")
    p.add_argument("--gae-lambda", type=float, default=0.8)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--placement-first", type=float, default=0.6,
                   help="fraction of the training during which only the placement agent learns (the migration "
                        "agent stays): a curriculum, so that its early random moves do not teach placement that "
                        "the fast device is always full")
    p.add_argument("--seed", type=int, default=0, help="torch seed; training traces use seeds 1000 + episode")
    p.add_argument("--threads", type=int, default=1, help="PyTorch intra-op threads")
    p.add_argument("--out", default="results/ippo", help="where the model (ippo.pt + card) and the bench go")
    p.add_argument("--eval-workloads", default=",".join(WORKLOADS), help="the leaderboard's workloads to run")
    p.add_argument("--eval-n", type=int, default=None, help="requests per leaderboard run (default: the suite's)")
    p.add_argument("--eval-seeds", default="0,1,2", help="the leaderboard's seeds to run")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    return p.parse_args(argv)


def mlp(n_in: int, n_out: int, std: float) -> nn.Sequential:
    def layer(a: int, b: int, s: float) -> nn.Linear:
        lin = nn.Linear(a, b)
        nn.init.orthogonal_(lin.weight, s)
        nn.init.constant_(lin.bias, 0.0)
        return lin
    return nn.Sequential(layer(n_in, 64, 2 ** 0.5), nn.Tanh(), layer(64, 64, 2 ** 0.5), nn.Tanh(), layer(64, n_out, std))


class Agent(nn.Module):
    """CleanRL's PPO ``Agent``: an actor (logits) and a critic, Tanh MLPs."""

    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.actor = mlp(n_obs, n_actions, 0.01)
        self.critic = mlp(n_obs, 1, 1.0)


class Rollout:
    """One agent's decisions of a rollout: observation, action, log-probability, value, and the
    team reward earned until its next decision (``done``: the episode ended before it)."""

    def __init__(self) -> None:
        self.obs: list[np.ndarray] = []
        self.act: list[int] = []
        self.logp: list[float] = []
        self.val: list[float] = []
        self.rew: list[float] = []
        self.done: list[bool] = []

    def add(self, obs: np.ndarray, act: int, logp: float, val: float) -> None:
        self.obs.append(obs)
        self.act.append(act)
        self.logp.append(logp)
        self.val.append(val)
        self.rew.append(0.0)
        self.done.append(False)


def advantages(r: Rollout, last_value: float, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE over the agent's decision sequence (CleanRL's loop); returns advantages and returns."""
    n = len(r.rew)
    adv = np.zeros(n, np.float32)
    gae = 0.0
    for t in reversed(range(n)):
        nxt = last_value if t == n - 1 else r.val[t + 1]
        live = 0.0 if r.done[t] else 1.0
        delta = r.rew[t] + gamma * nxt * live - r.val[t]
        gae = delta + gamma * lam * live * gae
        adv[t] = gae
    return adv, adv + np.asarray(r.val, np.float32)


def ppo_update(agent: Agent, opt: torch.optim.Optimizer, r: Rollout, last_value: float,
               args: argparse.Namespace, rng: np.random.Generator) -> float:
    """CleanRL's clipped PPO update on one agent's rollout; returns the last policy loss."""
    if len(r.act) < 2:
        return float("nan")
    adv, ret = advantages(r, last_value, args.gamma, args.gae_lambda)
    obs = torch.as_tensor(np.stack(r.obs))
    act = torch.as_tensor(r.act)
    old_logp = torch.as_tensor(r.logp, dtype=torch.float32)
    adv_t, ret_t = torch.as_tensor(adv), torch.as_tensor(ret)
    loss_pi = float("nan")
    for _ in range(args.epochs):
        for idx in np.array_split(rng.permutation(len(act)), max(1, len(act) // args.minibatch)):
            i = torch.as_tensor(idx)
            dist = torch.distributions.Categorical(logits=agent.actor(obs[i]))
            ratio = (dist.log_prob(act[i]) - old_logp[i]).exp()
            a = adv_t[i]
            a = (a - a.mean()) / (a.std() + 1e-8) if len(i) > 1 else a
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
            v = ((agent.critic(obs[i]).squeeze(-1) - ret_t[i]) ** 2).mean()
            loss = pg + 0.5 * v - args.ent_coef * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            opt.step()
            loss_pi = pg.item()
    return loss_pi


def train(args: argparse.Namespace) -> tuple[dict[str, Agent], list[dict[str, Any]]]:
    """Train both agents over episodes cycling through the quick suite's workloads and
    configurations (trace seeds 1000 + episode); returns the agents and a log per rollout."""
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    probe = hss_v0.parallel_env(CONFIGS[0], WORKLOADS[0], n_requests=args.n_requests, **ENV_OPTIONS)
    n_obs, n_act = probe.observation_space("placement").shape[0], int(probe.action_space("placement").n)
    agents = {a: Agent(n_obs, n_act) for a in AGENTS}
    opts = {a: torch.optim.Adam(agents[a].parameters(), lr=args.learning_rate, eps=1e-5) for a in AGENTS}
    log: list[dict[str, Any]] = []
    served, episode = 0, 0
    env, obs, infos = None, None, None
    while served < args.total_requests:
        learning = AGENTS if served >= args.placement_first * args.total_requests else AGENTS[:1]
        rolls = {a: Rollout() for a in AGENTS}
        latencies: list[float] = []
        fast = moves = 0
        for _ in range(args.rollout):
            if env is None or not env.agents:
                config, workload = CONFIGS[episode % len(CONFIGS)], WORKLOADS[(episode // len(CONFIGS)) % len(WORKLOADS)]
                env = hss_v0.parallel_env(config, workload, n_requests=args.n_requests, **ENV_OPTIONS)
                obs, infos = env.reset(seed=1000 + episode)
                episode += 1
            actions = {"placement": 0, "migration": max(infos["migration"]["device"], 0)}  # not acting: ignored
            for a in learning:
                if infos[a]["acting"]:
                    x = torch.as_tensor(obs[a])[None]
                    with torch.no_grad():
                        dist = torch.distributions.Categorical(logits=agents[a].actor(x))
                        act = dist.sample()
                        val = float(agents[a].critic(x))
                    rolls[a].add(obs[a], int(act), float(dist.log_prob(act)), val)
                    actions[a] = int(act)
            fast += infos["placement"]["acting"] and actions["placement"] == 0
            moves += infos["migration"]["acting"] and actions["migration"] != infos["migration"]["device"]
            obs, _, _, trunc, infos = env.step(actions)
            latency = infos["placement"]["latency_us"]
            latencies.append(latency)
            team = -latency / env.reward_ref_us / 100.0  # mean latency, in hundreds of L_ref
            for a in AGENTS:
                if rolls[a].rew:
                    rolls[a].rew[-1] += team
                    if trunc[a]:
                        rolls[a].done[-1] = True
            served += 1
        row: dict[str, Any] = {"requests": served, "mean_latency_us": float(np.mean(latencies)),
                               "placement_fast": fast / max(len(rolls["placement"].act), 1),
                               "migration_moves": moves / max(len(rolls["migration"].act), 1)}
        for a in AGENTS:
            last = 0.0
            if env.agents and rolls[a].obs and not rolls[a].done[-1]:
                with torch.no_grad():
                    last = float(agents[a].critic(torch.as_tensor(obs[a])[None]))
            row[f"{a}_decisions"] = len(rolls[a].act)
            row[f"{a}_loss"] = ppo_update(agents[a], opts[a], rolls[a], last, args, rng)
        log.append(row)
        if not args.quiet:
            print(f"  {served:>8,} requests: mean latency {row['mean_latency_us']:9.1f} us, placement fast "
                  f"{row['placement_fast']:.2f}, migration moves {row['migration_moves']:.2f}")
    return agents, log


def save(agents: dict[str, Agent], out: Path) -> Path:
    """The actors as one state_dict (``placement.actor.*``, ``migration.actor.*``) and its card."""
    from hss_gym.agents import save_model_card
    out.mkdir(parents=True, exist_ok=True)
    path = out / "ippo.pt"
    torch.save({f"{a}.{k}": v for a in AGENTS for k, v in agents[a].state_dict().items() if k.startswith("actor.")},
               path)
    env = hss_v0.parallel_env(CONFIGS[0], WORKLOADS[0], n_requests=100, **ENV_OPTIONS)
    save_model_card(path, env, networks={a: {"prefix": f"{a}.actor", "activation": "tanh"} for a in AGENTS})
    return path


def leaderboard(spec: str, args: argparse.Namespace, out: Path) -> dict[str, dict[str, float]]:
    """``hss-gym bench --suite quick --policies SPEC,slow_only``; per track, each policy's mean
    latency / Fast-Only's, averaged over the track's runs (the leaderboard's first column)."""
    from hss_gym import cli
    from hss_gym.benchmarks.results import read_results
    argv = ["bench", "--suite", "quick", "--policies", f"{spec},slow_only", "--no-oracle", "--workloads",
            args.eval_workloads, "--seeds", args.eval_seeds, "--out", str(out / "quick"), "--quiet"]
    if args.eval_n:
        argv += ["--n", str(args.eval_n)]
    if cli.main(argv) != 0:
        raise RuntimeError(f"hss-gym {' '.join(argv)} failed")
    runs: dict[tuple[str, str, int], dict[str, float]] = {}
    for r in read_results(out / "quick" / "results.jsonl"):
        if r["status"] == "ok":
            runs.setdefault((r["track"], r["workload"], r["seed"]), {})[r["policy"]] = r["metrics"]["mean_latency_us"]
    table: dict[str, dict[str, float]] = {}
    for (track, _, _), cell in runs.items():
        for p in (spec, "slow_only"):
            table.setdefault(track, {}).setdefault(p, 0.0)
            table[track][p] += cell[p] / cell["fast_only"] / sum(1 for k in runs if k[0] == track)
    return table


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    t0 = time.perf_counter()
    agents, log = train(args)
    train_s = time.perf_counter() - t0
    path = save(agents, out)
    spec = f"torch:{path}"
    table = leaderboard(spec, args, out)
    if not args.quiet:
        print(f"IPPO, both agents: {args.total_requests:,} training requests in {train_s:.0f} s; saved {path}")
        print(f"quick leaderboard (mean latency / Fast-Only, lower is better; {out / 'quick' / 'report.md'}):")
        print(f"{'track':<10} {spec:>30} {'slow_only':>10}")
        for track, row in table.items():
            print(f"{track:<10} {row[spec]:>30.3f} {row['slow_only']:>10.3f}")
    result = {"model": str(path), "train_seconds": train_s, "log": log, "leaderboard": table}
    (out / "ippo_summary.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
