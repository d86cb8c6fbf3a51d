"""Does eq. 1-2's reward rank a well-isolating FleetIO policy above the trained PPO? (diagnostic)

A class-aware hand policy within the paper's action set — latency-sensitive vSSDs offer
``--offer`` channels (Make_Harvestable), never harvest, high priority; bandwidth-intensive vSSDs
Harvest(4) at low priority — is run beside Hardware Isolation and the shipped PPO agent; printed
per policy: the mean eq. 2 reward per agent and window, utilisation and LS P99 relative to
Hardware Isolation, SLO violations, and the PPO agents' actions: the number of distinct actions
and the mean requested harvest (channels) of the latency-sensitive and of the bandwidth-intensive
vSSDs (a state-independent policy takes one action everywhere, so both classes request the same).
If the hand policy isolates better *and* earns more reward, the reward is not what keeps the
trained agent's P99 high.

    python -m hss_gym.agents.fleetio.reward_check --mix mix4 --windows 20 --seeds 2
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from hss_gym.agents.fleetio.registry import make_policy
from hss_gym.envs.fleetio.env import FleetIOEnv


def hand_actions(env: FleetIOEnv, offer: int) -> dict[str, np.ndarray]:
    return {a: (np.array([0, offer, 2]) if env.categories[i] == "latency" else np.array([4, 0, 0]))
            for i, a in enumerate(env.possible_agents)}


def run(name: str, mix: str, windows: int, seeds: int, offer: int) -> dict[str, Any]:
    pol = None if name == "hand" else make_policy(name)
    opts = pol.env_options if pol is not None else {"isolation": "fleetio"}
    rew, mets, acts = [], [], set()
    harvest: dict[str, list[int]] = {"latency": [], "bandwidth": []}
    for seed in range(seeds):
        env = FleetIOEnv(mix, windows=windows, **opts)
        obs, infos = env.reset(seed=seed)
        tot = np.zeros(len(env.possible_agents))
        while env.agents:
            act = hand_actions(env, offer) if pol is None else pol.act(obs, infos)
            acts.update(tuple(int(v) for v in a) for a in act.values())
            for i, a in enumerate(env.possible_agents):
                harvest.setdefault(env.categories[i], []).append(int(act[a][0]))
            obs, r, _, _, infos = env.step(act)
            tot += [r[a] for a in env.possible_agents]
        rew.append(tot / windows)
        mets.append(env.episode_metrics())
    return {"reward": np.mean(rew, axis=0), "actions": sorted(acts),
            "harvest_ls": float(np.mean(harvest["latency"] or [np.nan])),
            "harvest_bw": float(np.mean(harvest["bandwidth"] or [np.nan])),
            **{k: float(np.mean([m[k] for m in mets])) for k in mets[0]}}


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mix", default="mix4")
    ap.add_argument("--windows", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--offer", type=int, default=2, help="channels the LS vSSDs offer (hand policy)")
    a = ap.parse_args(argv)
    names = ("hardware_isolation", "fleetio_ppo", "fleetio_ppo_local", "hand")
    res = {n: run(n, a.mix, a.windows, a.seeds, a.offer) for n in names}
    hw = res["hardware_isolation"]
    for n, r in res.items():
        print(f"{a.mix} {n:18s} reward/agent/window {r['reward'].mean():6.3f} {np.round(r['reward'], 3)}  "
              f"util {r['utilization'] / hw['utilization']:.2f}x  LS P99 {r['p99_ls_us'] / hw['p99_ls_us']:.2f}x  "
              f"SLO vio {r['slo_violation_pct']:.1f}%  distinct actions {len(r['actions'])}"
              + (f"  harvest LS {r['harvest_ls']:.1f} BW {r['harvest_bw']:.1f}" if n.startswith("fleetio_ppo") else ""))
    return res


if __name__ == "__main__":
    main()
