"""``make_policy("rllib:DIR")``: an RLlib (new API stack) checkpoint's policy network, played in NumPy.

Without Ray: a checkpoint folder laid out as RLlib writes one (``class_and_ctor_args.pkl``,
``module_state.pkl`` of NumPy arrays under RLlib's state-dict names) is read without importing anything
it names, and a state file that names other code is refused. With Ray (the ``rllib`` extra): the
modules RLlib builds and saves play exactly the argmax of their own ``forward_inference``.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import hss_gym  # noqa: F401  (registers the envs)
from hss_gym.agents import make_env, make_policy, run_episode, save_model_card
from hss_gym.agents.models import RLLIB_MODULES

N = 1_500


class FakeModule:
    """Stands for an RLModule class in a constructor-arguments pickle: the reader must never import it."""


def write_module(folder: Path, layers: list[tuple[np.ndarray, np.ndarray]], activation: str | None,
                 encoder: str = "encoder.actor_encoder.net.mlp", head: str = "pi.net.mlp") -> None:
    """An RLModule folder as ``save_to_path`` writes one: every layer but the last is the encoder's
    (an activation after each, Sequential indices 0, 2, ...), the last is the head's."""
    folder.mkdir(parents=True)
    state = {}
    for i, (w, b) in enumerate(layers[:-1]):
        state[f"{encoder}.{2 * i}.weight"], state[f"{encoder}.{2 * i}.bias"] = w, b
    state[f"{head}.0.weight"], state[f"{head}.0.bias"] = layers[-1]
    state["vf.net.mlp.0.weight"] = np.zeros((1, layers[0][0].shape[1]), np.float32)  # the critic: ignored
    (folder / "module_state.pkl").write_bytes(pickle.dumps(state))
    config = {} if activation is None else {"fcnet_activation": activation, "fcnet_hiddens": [len(b) for _, b in layers[:-1]]}
    (folder / "class_and_ctor_args.pkl").write_bytes(pickle.dumps(
        {"class": FakeModule, "ctor_args_and_kwargs": ((), {"model_config": config, "inference_only": False})}))


def random_layers(rng: np.random.Generator, sizes: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(rng.normal(size=(b, a)).astype(np.float32), rng.normal(size=b).astype(np.float32))
            for a, b in zip(sizes, sizes[1:])]


def greedy(layers: list[tuple[np.ndarray, np.ndarray]], act, obs: np.ndarray) -> int:
    x = np.asarray(obs, np.float64)
    for i, (w, b) in enumerate(layers):
        x = w.astype(np.float64) @ x + b
        if i < len(layers) - 1:
            x = act(x)
    return int(np.argmax(x))


@pytest.mark.parametrize("activation, act", [("relu", lambda x: np.maximum(x, 0)), (None, np.tanh)])
def test_an_rllib_checkpoint_plays_its_greedy_action_without_ray(tmp_path: Path, activation, act) -> None:
    """An Algorithm checkpoint's module (the model_config's activation; Ray's default, tanh, when it
    names none) plays the argmax of encoder + head; the critic is ignored."""
    layers = random_layers(np.random.default_rng(1), [6, 16, 16, 2])
    modules = tmp_path / "ckpt" / RLLIB_MODULES
    write_module(modules / "default_policy", layers, activation)
    for name, data in (("module_state.pkl", {}), ("class_and_ctor_args.pkl", {"class": FakeModule})):  # the MultiRLModule
        (modules / name).write_bytes(pickle.dumps(data))
    policy = make_policy(f"rllib:{tmp_path / 'ckpt'}")
    assert policy.card.env_id == "hss/Placement-v0" and policy.provenance["format"] == "rllib"
    env = make_env(policy, "cost_opt", "ycsb-a", n_requests=N)
    chosen: list[int] = []
    obs, infos = env.reset(seed=0)
    policy.reset(env, seed=0)
    while env.agents:
        if infos["placement"]["acting"]:
            want = greedy(layers, act, obs["placement"])
            assert policy.act(obs, infos)["placement"] == want
            chosen.append(want)
        obs, _, _, _, infos = env.step({"placement": chosen[-1] if infos["placement"]["acting"] else 0,
                                        "migration": infos["migration"]["device"]})
    assert len(set(chosen)) == 2, "the network took one action only: the check cannot tell policies apart"


def test_rllib_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="checkpoint folder some/dir not found"):
        make_policy("rllib:some/dir")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no RLModule in it"):
        make_policy(f"rllib:{tmp_path / 'empty'}")
    layers = random_layers(np.random.default_rng(2), [6, 8, 2])
    evil = tmp_path / "evil" / "default_policy"
    write_module(evil, layers, "relu")
    (evil / "module_state.pkl").write_bytes(pickle.dumps({"w": os.system}))
    with pytest.raises(ValueError, match=r"names posix\.system; a module state holds NumPy arrays only"):
        make_policy(f"rllib:{tmp_path / 'evil'}")
    odd = tmp_path / "odd" / "default_policy"
    write_module(odd, layers, "relu", encoder="encoder.net.conv")
    with pytest.raises(ValueError, match="no MLP encoder and action head"):
        make_policy(f"rllib:{tmp_path / 'odd'}")
    two = tmp_path / "two"
    for agent in ("placement", "migration"):
        write_module(two / agent, layers, "relu")
    with pytest.raises(ValueError, match=r"the two-agent env's: write its card"):
        make_policy(f"rllib:{two}")
    env = hss_gym.parallel_env("cost_opt", "ycsb-a", n_requests=300, features="sibyl")
    save_model_card(two, env, networks={"placement": {"prefix": "placement"}, "migration": {"prefix": "migration"}})
    policy = make_policy(f"rllib:{two}")
    assert set(policy.greedy) == {"placement", "migration"} and policy.card.env_id == "hss_v0"
    assert run_episode(policy, make_env(policy, "cost_opt", "ycsb-a", n_requests=300), seed=0).metrics.requests == 300


def test_rllib_modules_play_as_ray_plays_them(tmp_path: Path) -> None:
    """With Ray: RLlib's own PPO and DQN modules, saved by ``save_to_path``, play the argmax of
    their ``forward_inference`` at every decision of an episode."""
    pytest.importorskip("ray.rllib", reason="needs ray: pip install 'hss-gym[rllib]'")
    import torch
    from ray.rllib.algorithms.dqn.dqn_catalog import DQNCatalog
    from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
    from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    env = gym.make("hss/Placement-v0", config="cost_opt", workload="ycsb-a", n_requests=N)
    obs, _ = env.reset(seed=0)
    sample = [obs] + [env.step(i % 2)[0] for i in range(300)]
    kinds = {"ppo": (DefaultPPOTorchRLModule, PPOCatalog, {"fcnet_hiddens": [32, 32], "fcnet_activation": "relu",
                                                           "vf_share_layers": False}),
             "ppo-shared": (DefaultPPOTorchRLModule, PPOCatalog, {"fcnet_hiddens": [16], "vf_share_layers": True,
                                                                  "head_fcnet_hiddens": [8]}),
             "dqn": (DefaultDQNTorchRLModule, DQNCatalog, {"fcnet_hiddens": [32], "double_q": True, "dueling": True,
                                                            "num_atoms": 1, "v_min": -10.0, "v_max": 10.0,
                                                            "epsilon": [(0, 1.0), (10000, 0.05)]})}
    for name, (cls, catalog, config) in kinds.items():
        module = RLModuleSpec(module_class=cls, catalog_class=catalog, observation_space=env.observation_space,
                              action_space=env.action_space, model_config=config).build()

        def ray_action(obs: np.ndarray) -> int:
            with torch.no_grad():
                out = module.forward_inference({"obs": torch.as_tensor(obs[None], dtype=torch.float32)})
            return int(out["actions"][0]) if "actions" in out else int(out["action_dist_inputs"].argmax())  # DQN: argmax Q

        for seed in range(50):  # N(0, 1) weights whose greedy action varies over the episode's observations
            torch.manual_seed(seed)
            with torch.no_grad():
                for p in module.parameters():
                    p.normal_()
            if min(np.bincount([ray_action(o) for o in sample], minlength=2)) >= 0.2 * len(sample):
                break
        module.save_to_path(tmp_path / name)
        policy = make_policy(f"rllib:{tmp_path / name}")
        decided = []

        def ray_greedy(obs: np.ndarray) -> int:
            a = ray_action(obs)
            decided.append(policy.greedy["placement"](obs) == a)
            return a

        obs, _ = env.reset(seed=0)
        actions, done = [], False
        while not done:
            actions.append(ray_greedy(obs))
            obs, _, term, trunc, _ = env.step(actions[-1])
            done = term or trunc
        assert len(set(actions)) > 1, f"{name}: one action only"
        assert all(decided), f"{name}: {decided.count(False)} of {len(decided)} decisions differ from Ray's"
