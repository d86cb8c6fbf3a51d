"""Trained models of ``hss/RLAlloc-v0`` and ``hss/LQoCo-v0`` in their problems: ``rlalloc/sb3:PATH``
and ``lqoco/sb3:PATH`` (and ``--suite rlalloc-v1 / lqoco-v1 --policies sb3:PATH``).

A tiny SB3 model is trained on each env here (a few hundred steps); when its greedy action is
still one action only, its weights are redrawn wide (:func:`test_trained_models.widen`), so that an
agreement is not that of two constant policies. What is checked: the NumPy forward takes
``model.predict(deterministic=True)``'s action at every period of an episode; a card's env options
(L-QoCo's ``observation="raw"``) reach the bench's env; bench records the file's sha256 and
validate re-runs the run; what cannot be played is refused, naming what is wrong.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import hss_gym  # noqa: F401  (registers the envs)
from _envs import random_observations
from _extras import requires
from hss_gym.agents import make_policy, save_model_card

pytestmark = requires("torch", "stable_baselines3")

RLALLOC = {"n_streams": 2, "episode_periods": 40}  # stg0-x2's streams: the sweep track's first workload
LQOCO_PERIODS = 80


def trained(algo: str, env: gym.Env, path: Path, steps: int) -> Any:
    """An SB3 model trained ``steps`` steps on ``env``, saved at ``path``; its weights redrawn wide
    when its greedy action on an episode is one action only."""
    import stable_baselines3 as sb3
    import torch
    from test_trained_models import widen
    torch.set_num_threads(1)
    extra = {"n_steps": 64, "batch_size": 64} if algo == "ppo" else {"learning_starts": 32}
    model = {"ppo": sb3.PPO, "dqn": sb3.DQN}[algo]("MlpPolicy", env, device="cpu", seed=0, **extra)
    model.learn(steps)
    sample = random_observations(env, 200)
    greedy = lambda o: int(model.predict(o, deterministic=True)[0])  # noqa: E731
    if len({greedy(o) for o in sample}) < 2:
        widen(model.policy, greedy, sample)
    model.save(path)
    return model


def check_agreement(model: Any, env: gym.Env, policy: Any) -> list[int]:
    """The policy (reset on ``env``) takes ``model.predict(deterministic=True)``'s action at every
    period of a seed-0 episode; the actions taken."""
    obs, info = env.reset(seed=0)
    policy.reset(env.unwrapped, 0)
    actions, disagree, done = [], 0, False
    while not done:
        a = policy.act(obs, info)
        disagree += a != int(model.predict(obs, deterministic=True)[0])
        actions.append(a)
        obs, _, term, trunc, info = env.step(a)
        done = term or trunc
    assert len(set(actions)) > 1, "the model took one action only: the check cannot tell policies apart"
    assert disagree == 0, f"{disagree} of {len(actions)} periods differ from model.predict"
    return actions


@pytest.fixture(scope="module")
def rlalloc_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    path = tmp_path_factory.mktemp("rlalloc") / "ppo.zip"
    env = gym.make("hss/RLAlloc-v0", **RLALLOC)
    return trained("ppo", env, path, 128), path


@pytest.fixture(scope="module")
def lqoco_raw_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """A DQN of L-QoCo's raw observation (a Box of W, P, B): its card says observation='raw'."""
    path = tmp_path_factory.mktemp("lqoco") / "dqn.zip"
    env = gym.make("hss/LQoCo-v0", observation="raw", periods=LQOCO_PERIODS)
    model = trained("dqn", env, path, 256)
    save_model_card(path, env)
    return model, path


def test_rlalloc_model_plays_model_predict(rlalloc_model: tuple[Any, Path]) -> None:
    model, path = rlalloc_model
    policy = make_policy(f"rlalloc/sb3:{path}")  # the same as hss_gym.agents.rlalloc.make_policy("sb3:...")
    assert type(policy).__name__ == "ModelAllocPolicy" and policy.name == f"sb3:{path}"
    assert policy.provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert policy.provenance["env_id"] == "hss/RLAlloc-v0" and policy.env_options == {}
    check_agreement(model, gym.make("hss/RLAlloc-v0", **RLALLOC), policy)
    with pytest.raises(ValueError, match="as many streams"):  # 8 streams: other spaces
        policy.reset(gym.make("hss/RLAlloc-v0", n_streams=8, episode_periods=5).unwrapped, 0)


def test_lqoco_model_plays_model_predict(tmp_path: Path, lqoco_raw_model: tuple[Any, Path]) -> None:
    from hss_gym.agents.lqoco import make_policy as lqoco_policy
    # the discrete states (the env's default): one-hot encoded, as SB3 does; no card needed
    env = gym.make("hss/LQoCo-v0", periods=LQOCO_PERIODS)
    model = trained("ppo", env, tmp_path / "ppo.zip", 128)
    policy = lqoco_policy(f"sb3:{tmp_path / 'ppo.zip'}")
    assert policy.env_options == {} and policy.provenance["card_sha256"] is None
    check_agreement(model, env, policy)
    # the raw observation, from its card
    model, path = lqoco_raw_model
    policy = make_policy(f"lqoco/sb3:{path}")
    assert policy.env_options["observation"] == "raw"
    check_agreement(model, gym.make("hss/LQoCo-v0", periods=LQOCO_PERIODS, **policy.env_options), policy)
    with pytest.raises(ValueError, match="36 states"):  # the card's options not applied: other spaces
        policy.reset(gym.make("hss/LQoCo-v0", periods=5), 0)


def test_refusals_name_the_problem(tmp_path: Path, rlalloc_model: tuple[Any, Path],
                                   lqoco_raw_model: tuple[Any, Path]) -> None:
    from hss_gym.benchmarks.problems import get_problem
    _, ra = rlalloc_model
    _, lq = lqoco_raw_model
    with pytest.raises(ValueError, match=r"'rlalloc/<spec>'"):  # no card: an HSS spec says where it plays
        make_policy(f"sb3:{ra}")
    with pytest.raises(ValueError, match="the lqoco problem's env: play it there"):
        make_policy(f"sb3:{lq}")
    with pytest.raises(ValueError, match="the rlalloc problem plays hss/RLAlloc-v0 models"):
        make_policy(f"rlalloc/sb3:{lq}")
    with pytest.raises(ValueError, match="not found"):
        make_policy(f"lqoco/torch:{tmp_path / 'nope.pt'}")
    with pytest.raises(ValueError, match="model file .*nope.zip not found"):
        get_problem("rlalloc").check_policy(f"sb3:{tmp_path / 'nope.zip'}")
    with pytest.raises(ValueError, match="fleetio problem plays no trained model"):
        get_problem("fleetio").check_policy(f"sb3:{ra}")


def test_torch_state_dict_plays_in_rlalloc(tmp_path: Path) -> None:
    """A CleanRL-style state_dict (``network`` + ReLU) plays the argmax of its output."""
    import torch
    import torch.nn as nn
    from test_trained_models import widen
    torch.set_num_threads(1)
    env = gym.make("hss/RLAlloc-v0", **RLALLOC)
    dim, n = env.observation_space.shape[0], env.action_space.n
    seq = nn.Sequential(nn.Linear(dim, 16), nn.ReLU(), nn.Linear(16, n))

    def greedy(obs: np.ndarray) -> int:
        with torch.no_grad():
            return int(seq(torch.as_tensor(obs)[None]).argmax())

    widen(seq, greedy, random_observations(env, 200))
    holder = nn.Module()
    holder.add_module("network", seq)
    torch.save(holder.state_dict(), tmp_path / "q.pt")
    policy = make_policy(f"rlalloc/torch:{tmp_path / 'q.pt'}")

    class Predict:  # model.predict's shape, for check_agreement
        def predict(self, obs: np.ndarray, deterministic: bool) -> tuple[int, None]:
            return greedy(obs), None

    check_agreement(Predict(), env, policy)


@pytest.mark.parametrize("problem", ["rlalloc", "lqoco"])
def test_bench_records_the_weights_sha256(problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest) -> None:
    from hss_gym import cli
    from hss_gym.benchmarks.results import read_results
    from hss_gym.benchmarks.validate import named_code
    model, path = request.getfixturevalue("rlalloc_model" if problem == "rlalloc" else "lqoco_raw_model")
    (tmp_path / path.name).write_bytes(path.read_bytes())
    card = Path(f"{path}.json")
    if card.is_file():
        (tmp_path / card.name).write_bytes(card.read_bytes())
    monkeypatch.chdir(tmp_path)
    spec = f"sb3:{path.name}"
    where = (["--tracks", "sweep", "--workloads", "stg0-x2"] if problem == "rlalloc" else
             ["--tracks", "table5-oceanstor", "--workloads", "S-13"])
    argv = ["bench", "--suite", f"{problem}-v1", "--policies", spec, *where, "--seeds", "0", "--jobs", "1",
            "--quiet", "--no-report", "--out", "out"]
    assert cli.main(argv) == 0, capsys.readouterr()
    rec = next(r for r in read_results(tmp_path / "out" / "results.jsonl") if r["policy"] == spec)
    assert rec["status"] == "ok", rec.get("error")
    prov = rec["provenance"]["model"]
    assert prov["sha256"] == hashlib.sha256((tmp_path / path.name).read_bytes()).hexdigest()
    assert prov["format"] == "sb3" and prov["env_id"] == f"hss/{'RLAlloc' if problem == 'rlalloc' else 'LQoCo'}-v0"
    assert named_code(rec) == []  # weights are data: validate re-runs it without --allow
    if problem == "lqoco":  # the card's observation reached the bench's env
        assert rec["provenance"]["env_options"]["observation"] == "raw"
        assert prov["card_sha256"] == hashlib.sha256(card.read_bytes()).hexdigest()
    assert cli.main(["validate", "out", "--all", "--quiet"]) == 0
    (tmp_path / path.name).write_bytes(path.read_bytes() + b"\0")  # other bytes, same weights
    assert cli.main(["validate", "out", "--all", "--quiet"]) == 1  # the recorded sha256 no longer matches
    assert "provenance model" in capsys.readouterr().out
    assert cli.main([*argv[:4], "sb3:missing.zip", *argv[5:]]) == 2
    assert "model file missing.zip not found" in capsys.readouterr().err


def test_sb3_lqoco_example_saves_a_model_that_plays(tmp_path: Path) -> None:
    """``examples/sb3_lqoco.py --save PATH`` writes the model and its card, played as lqoco/sb3:PATH."""
    import importlib.util
    from hss_gym.agents.lqoco import run_episode
    where = Path(__file__).resolve().parents[1] / "examples" / "sb3_lqoco.py"
    spec = importlib.util.spec_from_file_location("sb3_lqoco_example", where)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    ex.main(["--algo", "ppo", "--periods", "50", "--timesteps", "64", "--quiet", "--save", str(tmp_path / "m.zip")])
    assert (tmp_path / "m.zip.json").is_file()
    policy = make_policy(f"lqoco/sb3:{tmp_path / 'm.zip'}")
    assert policy.env_options["observation"] == "discrete"
    assert run_episode(policy, gym.make("hss/LQoCo-v0", periods=50), seed=0).steps == 50


def test_rllib_module_of_the_lqoco_states_without_ray(tmp_path: Path) -> None:
    """An RLlib module of L-QoCo's 36 states (a network of the one-hot state, as RLlib feeds a
    Discrete observation) plays the argmax of its output, read without Ray; its sha256 is of the
    files read."""
    from test_rllib_models import greedy, random_layers, write_module
    layers = random_layers(np.random.default_rng(3), [36, 16, 5])
    write_module(tmp_path / "module", layers, "relu")
    policy = make_policy(f"lqoco/rllib:{tmp_path / 'module'}")
    assert policy.provenance["format"] == "rllib" and len(policy.provenance["sha256"]) == 64
    env = gym.make("hss/LQoCo-v0", periods=LQOCO_PERIODS)

    class Predict:  # the module's greedy action, in model.predict's shape
        def predict(self, obs: Any, deterministic: bool) -> tuple[int, None]:
            return greedy(layers, lambda x: np.maximum(x, 0), np.eye(36)[int(obs)]), None

    check_agreement(Predict(), env, policy)
