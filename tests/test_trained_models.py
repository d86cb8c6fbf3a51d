"""Trained models on the leaderboard: ``make_policy("sb3:PATH.zip")`` / ``("torch:PATH.pt")``.

The models are made here, untrained but with weights drawn wide (std 1, a seed whose greedy
actions vary from one observation to the next): every test checks that more than one action was
taken, so an agreement is not that of two constant policies. What is checked: the NumPy forward
takes ``model.predict(deterministic=True)``'s action at every decision of an episode, and playing
the model in the two-agent env with the options found gives the very episode of the env it was
trained on (same metrics); the options come from the spaces (``hss/Placement-v0``) or the card;
what cannot be played is refused, naming what is wrong; a bench run records the file's sha256.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import hss_gym  # noqa: F401  (registers the envs)
from _envs import random_observations
from _extras import requires
from hss_gym.agents import make_env, make_policy, run_episode, save_model_card

N = 1_500
pytestmark = [requires("torch", "stable_baselines3"),
              pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")]


def widen(module: Any, greedy: Callable[[np.ndarray], int], observations: list[np.ndarray]) -> None:
    """Redraw every weight from N(0, 1), with the first seed whose greedy actions on
    ``observations`` take each action at least 20% of the time."""
    import torch
    for seed in range(50):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
        counts = np.bincount([greedy(o) for o in observations])
        if len(counts) > 1 and counts.min() >= 0.2 * len(observations):
            return
    raise AssertionError("no seed gives varied actions")


def sb3_model(algo: str, env: gym.Env, path: Path, **kwargs: Any) -> Any:
    import stable_baselines3 as sb3
    import torch
    torch.set_num_threads(1)
    cls = {"ppo": sb3.PPO, "dqn": sb3.DQN, "a2c": sb3.A2C}[algo]
    extra = {"n_steps": 64, "batch_size": 64} if algo == "ppo" else {"learning_starts": 10} if algo == "dqn" else {}
    model = cls("MlpPolicy", env, device="cpu", seed=0, **extra, **kwargs)
    widen(model.policy, lambda o: int(model.predict(o, deterministic=True)[0]), random_observations(env, 300))
    model.save(path)
    return model


def play_single(env: gym.Env, act: Callable[[np.ndarray], int], seed: int = 0) -> tuple[dict[str, Any], list[int]]:
    """One episode of a single-agent env: its final metrics and the actions taken."""
    obs, _ = env.reset(seed=seed)
    actions, done = [], False
    while not done:
        a = act(obs)
        actions.append(a)
        obs, _, term, trunc, info = env.step(a)
        done = term or trunc
    return info["metrics"], actions


def check_agreement(model: Any, env: gym.Env, policy: Any, agent: str) -> None:
    """The policy's action is the model's deterministic one at every decision of an episode."""
    net = policy.greedy[agent]
    disagree = []

    def both(obs: np.ndarray) -> int:
        a = int(model.predict(obs, deterministic=True)[0])
        if net(obs) != a:
            disagree.append(obs)
        return a

    metrics, actions = play_single(env, both)
    assert len(set(actions)) > 1, "the model took one action only: the check cannot tell policies apart"
    assert not disagree, f"{len(disagree)} of {len(actions)} decisions differ from model.predict"
    return metrics


@pytest.mark.parametrize("algo,kwargs", [("ppo", {}), ("dqn", {}), ("a2c", {}),
                                         ("ppo", {"policy_kwargs": {"net_arch": [16], "activation_fn": "relu"}})],
                         ids=["ppo", "dqn", "a2c", "ppo-relu-16"])
def test_sb3_placement_model_plays_as_in_its_env(tmp_path: Path, algo: str, kwargs: dict[str, Any]) -> None:
    import torch
    if "policy_kwargs" in kwargs:
        kwargs = {"policy_kwargs": {**kwargs["policy_kwargs"], "activation_fn": torch.nn.ReLU}}
    env = gym.make("hss/Placement-v0", config="cost_opt", workload="ycsb-a", n_requests=N)
    model = sb3_model(algo, env, tmp_path / "m.zip", **kwargs)
    policy = make_policy(f"sb3:{tmp_path / 'm.zip'}")
    assert policy.env_options == {"features": "sibyl", "raw_bins": False, "migration": False}
    assert policy.agents == ("placement",)
    expected = check_agreement(model, env, policy, "placement")
    res = run_episode(policy, make_env(policy, "cost_opt", "ycsb-a", n_requests=N), seed=0)
    assert res.metrics.to_dict() == expected  # the two-agent env with these options is Placement-v0


def test_sb3_raw_bins_model_one_hot(tmp_path: Path) -> None:
    """A MultiDiscrete observation (raw_bins=True) is one-hot encoded per feature, as SB3 does."""
    env = gym.make("hss/Placement-v0", config="cost_opt", workload="ycsb-a", n_requests=N, raw_bins=True)
    model = sb3_model("ppo", env, tmp_path / "m.zip")
    policy = make_policy(f"sb3:{tmp_path / 'm.zip'}")
    assert policy.env_options["raw_bins"] is True
    check_agreement(model, env, policy, "placement")


def test_sb3_migration_model_needs_its_card(tmp_path: Path) -> None:
    env = gym.make("hss/Migration-v0", config="perf_opt", workload="ycsb-a", n_requests=N, placement_policy="slow")
    model = sb3_model("dqn", env, tmp_path / "mig.zip")
    spec = f"sb3:{tmp_path / 'mig.zip'}"
    with pytest.raises(ValueError, match="save_model_card"):
        make_policy(spec)  # Harmonia's features: Migration-v0 or a Harmonia-feature placement agent
    card = save_model_card(tmp_path / "mig.zip", env)
    assert card == tmp_path / "mig.zip.json"
    assert json.loads(card.read_text())["placement_policy"] == "slow"
    policy = make_policy(spec)
    assert policy.agents == ("placement", "migration")
    expected = check_agreement(model, env, policy, "migration")
    res = run_episode(policy, make_env(policy, "perf_opt", "ycsb-a", n_requests=N), seed=0)
    assert res.metrics.to_dict() == expected


def test_torch_state_dict_and_torchscript(tmp_path: Path) -> None:
    """CleanRL's layouts (``network`` + ReLU: DQN; ``actor`` + Tanh beside a ``critic``: PPO) and a
    TorchScript module play the argmax of the network's output."""
    import torch
    import torch.nn as nn
    torch.set_num_threads(1)
    env = gym.make("hss/Placement-v0", config="cost_opt", workload="ycsb-a", n_requests=N)
    nets = {
        "dqn.pt": ("network", nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2))),
        "ppo.pt": ("actor", nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))),
    }
    sample = random_observations(env, 300)
    for name, (prefix, seq) in nets.items():

        def greedy(obs: np.ndarray, seq: nn.Module = seq) -> int:
            with torch.no_grad():
                return int(seq(torch.as_tensor(obs)[None]).argmax())

        widen(seq, greedy, sample)
        holder = nn.Module()
        holder.add_module(prefix, seq)
        if prefix == "actor":
            holder.add_module("critic", nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1)))
        torch.save(holder.state_dict(), tmp_path / name)
        torch.jit.save(torch.jit.script(seq), tmp_path / f"scripted-{name}")
        expected, actions = play_single(env, greedy)
        assert len(set(actions)) > 1
        for spec in (f"torch:{tmp_path / name}", f"torch:{tmp_path / f'scripted-{name}'}"):
            policy = make_policy(spec)
            res = run_episode(policy, make_env(policy, "cost_opt", "ycsb-a", n_requests=N), seed=0)
            assert res.metrics.to_dict() == expected, spec


def test_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    import torch
    with pytest.raises(ValueError, match="not found"):
        make_policy(f"sb3:{tmp_path / 'nope.zip'}")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a Stable-Baselines3 model"):
        make_policy(f"sb3:{tmp_path / 'junk.zip'}")
    # a state_dict with layers under several unknown prefixes: which is the policy?
    torch.save({"a.0.weight": torch.zeros(2, 6), "b.0.weight": torch.zeros(2, 6)}, tmp_path / "two.pt")
    with pytest.raises(ValueError, match=r"prefixes \['a', 'b'\]"):
        make_policy(f"torch:{tmp_path / 'two.pt'}")
    # a model of 2 devices on a 3-device configuration
    env = gym.make("hss/Placement-v0", config="perf_opt", workload="ycsb-a", n_requests=300)
    sb3_model("ppo", env, tmp_path / "two-devices.zip")
    policy = make_policy(f"sb3:{tmp_path / 'two-devices.zip'}")
    with pytest.raises(ValueError, match="3 devices"):
        run_episode(policy, make_env(policy, "tri", "ycsb-a", n_requests=300), seed=0)
    # a card that is not one
    (tmp_path / "two-devices.zip.json").write_text(json.dumps({"format": "x"}))
    with pytest.raises(ValueError, match="'format' must be"):
        make_policy(f"sb3:{tmp_path / 'two-devices.zip'}")


def test_bench_records_the_weights_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from hss_gym import cli
    from hss_gym.benchmarks.results import read_results
    from hss_gym.benchmarks.validate import named_code
    env = gym.make("hss/Placement-v0", config="perf_opt", workload="ycsb-b", n_requests=300)
    sb3_model("ppo", env, tmp_path / "ppo.zip")
    monkeypatch.chdir(tmp_path)
    argv = ["bench", "--suite", "quick", "--policies", "sb3:ppo.zip", "--no-oracle", "--workloads", "ycsb-b",
            "--configs", "perf_opt", "--n", "2000", "--jobs", "1", "--seeds", "0", "--quiet", "--no-report",
            "--out", "out"]
    assert cli.main(argv) == 0
    rec = next(r for r in read_results(tmp_path / "out" / "results.jsonl") if r["policy"] == "sb3:ppo.zip")
    assert rec["status"] == "ok", rec.get("error")
    model = rec["provenance"]["model"]
    assert model["sha256"] == hashlib.sha256((tmp_path / "ppo.zip").read_bytes()).hexdigest()
    assert model["env_id"] == "hss/Placement-v0" and model["format"] == "sb3"
    assert named_code(rec) == []  # weights are data: validate re-runs it without --allow
    assert cli.main(["validate", "out", "--all", "--quiet"]) == 0
    (tmp_path / "ppo.zip").write_bytes((tmp_path / "ppo.zip").read_bytes() + b"\0")  # other bytes, same weights
    assert cli.main(["validate", "out", "--all", "--quiet"]) == 1  # the recorded sha256 no longer matches
    assert "provenance model" in capsys.readouterr().out
    assert cli.main([*argv[:4], "sb3:missing.zip", *argv[5:]]) == 2
    assert "model file missing.zip not found" in capsys.readouterr().err
