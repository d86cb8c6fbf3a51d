"""The training examples in ``examples/`` run end to end, with tiny budgets.

The fast tests check that each example runs with the library it demonstrates and returns sane
numbers; ``test_sb3_placement_learns`` (slow) checks that SB3 actually learns something.
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

from _extras import requires

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    """Import ``examples/<name>.py`` as a module (``examples`` is not a package)."""
    spec = importlib.util.spec_from_file_location(f"hss_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- SB3 placement
def test_sb3_placement_tiny_budget(tmp_path):
    pytest.importorskip("stable_baselines3")
    from hss_gym.agents import make_env, make_policy, run_episode
    sb3 = load_example("sb3_placement")
    out = sb3.main(["--timesteps", "256", "--n-requests", "300", "--quiet", "--save", str(tmp_path / "ppo")])
    # the saved model plays on the leaderboard's env: its held-out episode again, same latency
    policy = make_policy(f"sb3:{tmp_path / 'ppo.zip'}")
    assert (tmp_path / "ppo.zip.json").is_file()
    res = run_episode(policy, make_env(policy, "cost_opt", "lun0", n_requests=300), seed=0)  # --eval-seed
    assert res.metrics.mean_latency_us == out["results"]["trained"]["mean_latency_us"]
    res = out["results"]
    assert set(res) == {"trained", "untrained", "random", "always_fast", "always_slow"}
    decisions = {r["decisions"] for r in res.values()}
    assert len(decisions) == 1 and decisions.pop() > 0  # every policy saw the same held-out trace
    for name, r in res.items():
        assert math.isfinite(r["mean_latency_us"]) and r["mean_latency_us"] > 0, name
        assert r["p99_latency_us"] >= r["mean_latency_us"] * 0.5, name
        assert math.isfinite(r["total_reward"]) and r["total_reward"] >= 0, name
    # The two fixed policies place differently, so the held-out trace tells them apart.
    assert res["always_fast"]["mean_latency_us"] != res["always_slow"]["mean_latency_us"]
    assert out["train_seconds"] > 0


@pytest.mark.slow
def test_sb3_placement_learns():
    """PPO learns to place on cost_opt/ssd-02 and beats random placement on a held-out trace.

    On this setting the best fixed device (slow, the HDD: 0.69x random's mean latency, since every
    fast placement evicts on the critical path once the Optane is full) beats random clearly and
    the other (fast: 1.36x random) does not, so a constant policy passes only if it is the right
    one. With seed 1 the untrained network answers "fast": the test checks that first, so a pass
    is due to training, not to the initialisation (measured: trained 4.71 ms, random 7.38 ms).
    """
    pytest.importorskip("stable_baselines3")
    sb3 = load_example("sb3_placement")
    out = sb3.main(["--config", "cost_opt", "--workload", "ssd-02", "--n-requests", "2000",
                    "--timesteps", "20000", "--seed", "1", "--eval-seed", "1000", "--quiet"])
    lat = {k: v["mean_latency_us"] for k, v in out["results"].items()}
    # Preconditions: random is clearly worse than the best fixed device, not worse than both.
    assert lat["always_slow"] < 0.8 * lat["random"] < lat["always_fast"]
    assert lat["untrained"] > 0.95 * lat["random"], "untrained policy already good: pick another seed"
    # Learning: a clear margin over random and over the untrained network.
    assert lat["trained"] < 0.8 * lat["random"], lat
    assert lat["trained"] < 0.8 * lat["untrained"], lat


# ---------------------------------------------------------------- CleanRL-style DQN
@requires("torch")
def test_cleanrl_dqn_tiny_budget_stores_no_autoreset_step(tmp_path):
    """Episodes of 100 requests end many times in 800 steps; with Gymnasium's next-step autoreset
    the step after an episode's end is not a transition (its reward is 0, its observation the
    old episode's last): none may be in the replay buffer, and every placement's reward is > 0."""
    from hss_gym.agents import make_env, make_policy, run_episode
    dqn = load_example("cleanrl_dqn")
    out = dqn.main(["--timesteps", "800", "--n-requests", "100", "--learning-starts", "200", "--quiet",
                    "--save", str(tmp_path / "dqn.pt")])
    # the saved state_dict plays as torch:PATH (CleanRL's layout needs no card): the same episode
    policy = make_policy(f"torch:{tmp_path / 'dqn.pt'}")
    res = run_episode(policy, make_env(policy, "cost_opt", "ssd-02", n_requests=100), seed=1_000)
    assert res.metrics.mean_latency_us == out["results"]["trained"]["mean_latency_us"]
    rb = out["replay"]
    stored = rb.size if rb.full else rb.pos
    assert 600 < stored < 800  # some steps were resets
    assert (rb.rewards[:stored] > 0).all()
    assert set(out["results"]) == {"untrained", "trained", "random", "always_fast", "always_slow"}
    assert all(math.isfinite(r["mean_latency_us"]) and r["mean_latency_us"] > 0 for r in out["results"].values())


def test_cleanrl_ppo_vector_same_training_as_sync():
    """The PPO example on the native vector env trains exactly as on SyncVectorEnv (same envs,
    same numbers, same seed), across episode ends (100-request episodes), and reports its speed."""
    pytest.importorskip("torch")
    ppo = load_example("cleanrl_ppo_vector")
    argv = ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "128", "--n-requests", "100",
            "--no-cuda", "--update-epochs", "1"]
    native, sync = ppo.main(argv), ppo.main(argv + ["--vectorization-mode", "sync"])
    assert native["episodes"] == sync["episodes"] > 4
    assert native["mean_latency_us"] == sync["mean_latency_us"]
    assert 0 < native["env_share"] < 1 and native["steps_per_s"] > 0


@pytest.mark.slow
def test_cleanrl_dqn_learns():
    """On cost_opt/ssd-02 the best fixed device (slow) beats random clearly; the untrained network
    (seed 0) answers "fast", the worst. Measured: trained 4,630 us, always-slow 5,117, random 7,385
    (seeds 1-3: 4,654-4,858)."""
    dqn = load_example("cleanrl_dqn")
    out = dqn.main(["--config", "cost_opt", "--workload", "ssd-02", "--timesteps", "20000", "--seed", "0",
                    "--quiet"])
    lat = {k: v["mean_latency_us"] for k, v in out["results"].items()}
    assert lat["always_slow"] < 0.8 * lat["random"] < lat["always_fast"]
    assert lat["untrained"] > 0.95 * lat["random"], "untrained policy already good: pick another seed"
    assert lat["trained"] < lat["always_slow"], lat  # better than the best constant policy


# ---------------------------------------------------------------- TorchRL
def test_torchrl_pettingzoo_rollout():
    pytest.importorskip("torchrl")
    import torch

    trl = load_example("torchrl_pettingzoo")
    # Rollout longer than the episode: it must stop at the trace's end (n_requests steps).
    out = trl.main(["--n-requests", "60", "--steps", "100", "--seed", "3", "--quiet"])
    assert out["steps"] == 60
    assert out["group_map"] == {"placement": ["placement"], "migration": ["migration"]}
    for agent in ("placement", "migration"):
        for key in ("observation", "action", "action_mask", "mask"):
            assert str((agent, key)) in out["keys"]
        assert str(("next", agent, "reward")) in out["keys"]
        assert math.isfinite(out["total_rewards"][agent])
    assert out["total_rewards"]["placement"] > 0  # placement earns L_ref / latency > 0 when it acts
    assert 0 < out["decisions"]["placement"] <= 60
    assert math.isfinite(out["mean_latency_us"]) and out["mean_latency_us"] > 0
    # run to the episode's end and evaluated beside the baselines on the same trace and seed
    assert out["episode_done"]
    ev = out["evaluation"]
    assert set(ev) == {"torchrl random (masked)", "slow_only", "fit_first"}
    assert ev["torchrl random (masked)"]["mean_latency_us"] == out["mean_latency_us"]
    assert ev["fit_first"]["mean_latency_us"] < ev["slow_only"]["mean_latency_us"]

    # The TensorDict itself: shapes, masks and the episode end.
    env, base = trl.make_env("lun2", "perf_opt", 40, seed=0)
    td = env.rollout(100, break_when_any_done=True)
    assert td.batch_size == torch.Size([40])
    assert td.get(("placement", "action_mask")).shape == (40, 1, 2)
    assert bool(td.get(("next", "done"))[-1].all()) and not bool(td.get(("next", "done"))[:-1].any())
    assert torch.isfinite(td.get(("next", "placement", "reward"))).all()
    # Rewards come only where the agent acted.
    acting = td.get(("placement", "info", "acting")).bool().squeeze(-1)
    reward = td.get(("next", "placement", "reward")).squeeze(-1)
    assert (reward[~acting] == 0).all() and (reward[acting] > 0).all()
    env.close()


# ---------------------------------------------------------------- RLlib
def test_rllib_adapter_episode():
    """The MultiAgentEnv adapter: both agents every step, __all__ flags, episode length."""
    pytest.importorskip("ray.rllib")
    import numpy as np

    rl = load_example("rllib_multiagent")
    env = rl.HSSMultiAgentEnv({"config": "perf_opt", "workload": "lun2", "n_requests": 50})
    obs, infos = env.reset(seed=0)
    assert set(obs) == set(infos) == {"placement", "migration"}
    steps, total = 0, {"placement": 0.0, "migration": 0.0}
    while True:
        acts = {a: env.action_spaces[a].sample() for a in obs}
        obs, rew, terms, truncs, infos = env.step(acts)
        steps += 1
        for a in total:
            assert np.isfinite(rew[a])
            total[a] += rew[a]
        assert set(terms) == set(truncs) == {"placement", "migration", "__all__"}
        if truncs["__all__"]:
            break
    assert steps == 50 and env.agents == []
    assert total["placement"] > 0
    assert infos["placement"]["metrics"]["mean_latency_us"] > 0


def test_rllib_multiagent_one_iteration():  # ~7 s (Ray start-up included)
    pytest.importorskip("ray.rllib")
    rl = load_example("rllib_multiagent")
    out = rl.main(["--n-requests", "200", "--batch-size", "256", "--minibatch-size", "64",
                   "--iterations", "1", "--eval-seeds", "1000", "--eval-requests", "500", "--quiet"])
    (row,) = out["history"]
    assert row["env_steps"] == 256
    assert set(row["policy_loss"]) == {"placement", "migration"}
    assert all(math.isfinite(v) for v in row["policy_loss"].values())
    # 256 steps of 200-request episodes: at least one episode finished, with a finite return.
    assert row["episode_return_mean"] is not None and math.isfinite(row["episode_return_mean"])
    # the greedy modules played a whole held-out episode, evaluated beside the baselines
    ev = out["evaluation"]
    assert set(ev) == {"rllib greedy", "slow_only", "fit_first"}
    assert all(math.isfinite(m["mean_latency_us"]) and m["mean_latency_us"] > 0 for m in ev.values())
    assert ev["fit_first"]["mean_latency_us"] < ev["slow_only"]["mean_latency_us"]


# ---------------------------------------------------------------- command line
@pytest.mark.parametrize("name", ["sb3_placement", "cleanrl_dqn", "torchrl_pettingzoo", "rllib_multiagent"])
def test_example_help(name):
    if name == "rllib_multiagent":
        pytest.importorskip("ray.rllib")
    pytest.importorskip("torch", reason="the example needs PyTorch: pip install 'hss-gym[agents]'")
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:") and "--workload" in proc.stdout and "--config" in proc.stdout


def test_sb3_placement_dqn_tiny_budget():
    pytest.importorskip("stable_baselines3")
    out = load_example("sb3_placement").main(["--algo", "dqn", "--timesteps", "300", "--n-requests", "300",
                                              "--quiet"])
    assert out["algo"] == "dqn"
    assert all(math.isfinite(r["mean_latency_us"]) for r in out["results"].values())


# ---------------------------------------------------------------- RLlib on FleetIO
@pytest.mark.slow  # a Ray session and one PPO iteration: ~1.5 min on the shared 2-core machine
def test_rllib_fleetio_adapter_and_one_iteration(tmp_path):
    pytest.importorskip("ray.rllib")
    rl = load_example("rllib_fleetio")
    env = rl.FleetIOMultiAgentEnv({"windows": 3, "mixes": ["train2a"]})
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"vssd_0", "vssd_1"}
    while env.agents:
        obs, rew, terms, truncs, _ = env.step({a: env.action_spaces[a].sample() for a in env.agents})
    assert truncs["__all__"]
    out = rl.main(["--iterations", "1", "--windows", "4", "--batch-size", "64", "--minibatch-size", "32",
                   "--epochs", "1", "--quiet", "--out", str(tmp_path / "rllib.npz")])
    assert len(out["history"]) == 1 and out["history"][0]["env_steps"] >= 64
    # the exported actor drives the NumPy PPOPolicy (the suite's format)
    from hss_gym.agents.fleetio import PPOPolicy

    pol = PPOPolicy.load(tmp_path / "rllib.npz")
    obs, infos = env.reset(seed=1)
    acts = pol.act(obs, infos)
    assert all(env.action_spaces[a].contains(v) for a, v in acts.items())


def test_rllib_fleetio_export_matches_the_rl_module():
    """export_actor reads the actor of RLlib's default PPO module: PPOPolicy's logits equal the
    module's action-distribution inputs."""
    pytest.importorskip("ray.rllib")
    import numpy as np
    import torch
    from gymnasium import spaces
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from hss_gym.agents.fleetio import PPOPolicy

    rl = load_example("rllib_fleetio")
    module = RLModuleSpec(module_class=DefaultPPOTorchRLModule, observation_space=spaces.Box(0, 1, (33,), np.float32),
                          action_space=spaces.MultiDiscrete([17, 17, 3]),
                          model_config={"fcnet_hiddens": [50, 50], "fcnet_activation": "tanh"}).build()
    x = np.random.default_rng(0).random((6, 33)).astype(np.float32)
    with torch.no_grad():
        ref = module.forward_inference({Columns.OBS: torch.as_tensor(x)})[Columns.ACTION_DIST_INPUTS].numpy()
    ours = np.concatenate(PPOPolicy(rl.export_actor(module)).logits(x.astype(np.float64)), axis=1)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- threads, CleanRL flags, paths
TORCH_EXAMPLES = ["sb3_placement", "sb3_lqoco", "cleanrl_dqn", "cleanrl_ppo_vector", "torchrl_pettingzoo",
                  "rllib_multiagent", "rllib_fleetio", "ippo_hss"]


@pytest.mark.parametrize("name", TORCH_EXAMPLES)
def test_torch_examples_default_to_one_thread(name):
    """PyTorch's default (a thread per core) makes these small networks 14-20x slower on a busy
    machine: every torch example asks for one intra-op thread unless --threads says otherwise."""
    main = (EXAMPLES / f"{name}.py").read_text()
    assert "torch.set_num_threads(args.threads)" in main.split("def main(", 1)[1]
    if name.startswith("rllib"):
        pytest.importorskip("ray.rllib")  # the module imports Ray at the top
    pytest.importorskip("torch", reason="the example needs PyTorch: pip install 'hss-gym[agents]'")
    ex = load_example(name)
    assert ex.parse_args([]).threads == 1
    assert ex.parse_args(["--threads", "3"]).threads == 3


def test_cleanrl_dqn_sets_threads_and_cleanrl_flags(monkeypatch):
    torch = pytest.importorskip("torch", reason="the example needs PyTorch: pip install 'hss-gym[agents]'")

    dqn = load_example("cleanrl_dqn")
    a = dqn.parse_args([])
    assert (a.cuda, a.track, a.seed, a.torch_deterministic, a.exp_name) == (True, False, 0, True, "cleanrl_dqn")
    assert dqn.parse_args(["--no-cuda"]).cuda is False
    asked: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", asked.append)
    out = dqn.main(["--timesteps", "40", "--n-requests", "60", "--learning-starts", "1000", "--quiet",
                    "--threads", "2", "--no-cuda"])
    assert asked == [2] and set(out["results"]) >= {"trained", "random"}


def test_cleanrl_dqn_track_without_wandb_says_how():
    pytest.importorskip("torch")
    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed: --track would start a real run")
    with pytest.raises(SystemExit, match="pip install wandb"):
        load_example("cleanrl_dqn").main(["--track", "--timesteps", "8", "--quiet"])


def test_lqoco_report_reads_what_the_bench_writes(tmp_path, monkeypatch):
    """``hss-gym bench --suite lqoco-v1`` writes results/lqoco-v1/results.jsonl: the report reads
    it by default, and from the directory or the file when given."""
    monkeypatch.chdir(tmp_path)
    rep = load_example("lqoco_report")
    with pytest.raises(SystemExit, match="hss-gym bench --suite lqoco-v1"):
        rep.main([])
    out = tmp_path / "results" / "lqoco-v1"
    out.mkdir(parents=True)
    (out / "results.jsonl").write_text('{"status": "error"}\n')
    for argv in ([], [str(out)], [str(out / "results.jsonl")]):
        with pytest.raises(SystemExit, match=r"lqoco-v1/results.jsonl: no ok run of workload 'S-8'"):
            rep.main(argv)


# ---------------------------------------------------------------- IPPO on the two-agent env
@pytest.mark.slow
@requires("torch")
def test_ippo_trains_both_agents_to_a_leaderboard_row(tmp_path):
    """A tiny budget: both agents learn (the migration agent after the placement-first part), the
    actors are saved with their card and played on the quick suite as ``torch:PATH`` next to
    Slow-Only; the example's table is the leaderboard's (mean latency / Fast-Only per track)."""
    from hss_gym.agents import make_policy
    from hss_gym.benchmarks.results import read_results
    ippo = load_example("ippo_hss")
    out = ippo.main(["--total-requests", "2000", "--rollout", "500", "--n-requests", "500", "--out", str(tmp_path),
                     "--eval-workloads", "lun2", "--eval-n", "2000", "--eval-seeds", "0", "--quiet"])
    log = out["log"]
    assert [r["requests"] for r in log] == [500, 1000, 1500, 2000]
    assert log[0]["migration_decisions"] == 0 and log[-1]["migration_decisions"] > 0  # placement first
    assert all(math.isfinite(r["placement_loss"]) for r in log)
    policy = make_policy(f"torch:{out['model']}")
    assert policy.agents == ("placement", "migration")
    assert policy.env_options == {"features": "harmonia", "raw_bins": False, "room_feature": "fits", "migration": True}
    spec = f"torch:{out['model']}"
    assert set(out["leaderboard"]) == {"perf_opt", "cost_opt"}
    recs = [r for r in read_results(tmp_path / "quick" / "results.jsonl") if r["policy"] == spec]
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    for track, row in out["leaderboard"].items():
        fo = next(r for r in read_results(tmp_path / "quick" / "results.jsonl")
                  if r["policy"] == "fast_only" and r["track"] == track)["metrics"]["mean_latency_us"]
        mine = next(r for r in recs if r["track"] == track)["metrics"]["mean_latency_us"]
        assert row[spec] == pytest.approx(mine / fo)
