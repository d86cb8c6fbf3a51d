"""Rendering and the RL libraries' front doors.

Every env accepts ``render_mode="rgb_array"`` (an image drawn with NumPy) and ``"ansi"``;
Stable-Baselines3's ``make_vec_env`` (which asks for ``rgb_array``), Gymnasium's ``make_vec`` and
``gym.make("hss_gym:hss/...")`` without a prior ``import hss_gym`` all work.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hss_gym
from hss_gym import render
from hss_gym.render import Canvas

GYM_ENVS: dict[str, dict[str, Any]] = {
    "hss/Placement-v0": {"n_requests": 600, "config": "tri"},
    "hss/Migration-v0": {"n_requests": 600},
    "hss/RLAlloc-v0": {"episode_periods": 6},
    "hss/LQoCo-v0": {"periods": 40, "workload": "S-14"},
}


def _is_image(img: Any) -> bool:
    return (isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3
            and img.shape[2] == 3 and min(img.shape[:2]) >= 32)


@pytest.mark.filterwarnings("ignore:.*not in the possible render_modes")
@pytest.mark.parametrize("env_id", sorted(GYM_ENVS))
def test_gym_env_renders_rgb_array_and_ansi(env_id: str) -> None:
    env = gym.make(env_id, render_mode="rgb_array", **GYM_ENVS[env_id])
    meta = env.unwrapped.metadata
    assert set(meta["render_modes"]) >= {"ansi", "rgb_array"} and meta["render_fps"] > 0
    env.reset(seed=0)
    env.action_space.seed(0)
    first = env.render()
    assert _is_image(first)
    for _ in range(5):
        env.step(env.action_space.sample())
    later = env.render()
    assert _is_image(later) and later.shape == first.shape
    assert not np.array_equal(first, later), "the picture does not follow the state"
    env.close()
    text_env = gym.make(env_id, render_mode="ansi", **GYM_ENVS[env_id])
    text_env.reset(seed=0)
    assert isinstance(text_env.render(), str)
    with pytest.raises(ValueError, match="rgb_array"):
        gym.make(env_id, render_mode="video", **GYM_ENVS[env_id])


@pytest.mark.parametrize("env_id", ["hss/Placement-v0", "hss/LQoCo-v0"])
def test_gymnasium_check_env_with_render(env_id: str) -> None:
    """Gymnasium's checker including its render check (other tests skip it)."""
    for mode in render.RENDER_MODES:
        check_env(gym.make(env_id, render_mode=mode, **GYM_ENVS[env_id]).unwrapped)


def test_hss_picture_shows_fast_device_filling() -> None:
    """Always placing on the fast device fills its occupancy bar: more of device 0's colour."""
    env = hss_gym.parallel_env("tri", "ycsb-b", n_requests=2_000, render_mode="rgb_array")
    assert _is_image(env.render())  # before reset: a message frame, not None
    env.reset(seed=0)

    def fast_pixels() -> int:
        return int(np.all(env.render() == render.color(0), axis=2).sum())

    before = fast_pixels()
    for _ in range(300):
        env.step({"placement": 0, "migration": 0})
    assert fast_pixels() > before + 100


@pytest.mark.parametrize("make", [
    lambda mode: hss_gym.parallel_env("perf_opt", "ycsb-b", n_requests=300, render_mode=mode),
    lambda mode: __import__("hss_gym.fleetio_v1", fromlist=["x"]).parallel_env(windows=3, render_mode=mode),
], ids=["hss", "fleetio"])
def test_pettingzoo_envs_render(make: Callable[[str], Any]) -> None:
    env = make("rgb_array")
    assert set(env.metadata["render_modes"]) >= {"ansi", "rgb_array"} and env.metadata["render_fps"] > 0
    env.reset(seed=0)
    first = env.render()
    assert _is_image(first)
    for _ in range(2):
        env.step({a: env.action_space(a).sample() for a in env.agents})
    assert not np.array_equal(first, env.render())
    text = make("ansi")
    text.reset(seed=0)
    assert isinstance(text.render(), str)
    with pytest.raises(ValueError, match="rgb_array"):
        make("video")


def test_canvas_primitives() -> None:
    cv = Canvas(20, 40)
    cv.hbar(0, 0, 40, 10, 0.5, (255, 0, 0))
    red = np.all(cv.img == (255, 0, 0), axis=2)
    assert red[1:9, 1:19].all() and not red[:, 21:].any()
    end = cv.text(0, 12, "A1", (0, 0, 255), scale=1)
    assert end == Canvas.text_width("A1", scale=1) == 8
    assert np.all(cv.img == (0, 0, 255), axis=2)[12:17].any()
    cv.strip(0, 0, 40, 10, [1.0, 0.0], (0, 255, 0), slots=4)  # 2 of 4 slots: left half only
    green = np.all(cv.img == (0, 255, 0), axis=2)
    assert green[1:9, 1:9].all() and not green[:, 11:].any()


def test_sb3_make_vec_env() -> None:
    """SB3 asks for render_mode='rgb_array' by default: the env must accept it."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env
    venv = make_vec_env("hss/Placement-v0", n_envs=2, seed=0, env_kwargs={"n_requests": 300})
    obs = venv.reset()
    assert obs.shape == (2, 6)
    venv.step(np.zeros(2, dtype=np.int64))
    assert venv.render_mode == "rgb_array"
    assert all(_is_image(img) for img in venv.get_images())
    venv.close()


def test_gymnasium_make_vec() -> None:
    venv = gym.make_vec("hss/Placement-v0", num_envs=2, vectorization_mode="sync", n_requests=300)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (2, 6)
    obs, rew, term, trunc, _ = venv.step(np.zeros(2, dtype=np.int64))
    assert rew.shape == (2,) and (rew > 0).all()
    venv.close()


def test_module_env_id_without_import() -> None:
    """``gym.make("hss_gym:hss/...")`` imports hss_gym itself (Gymnasium's module:id syntax)."""
    code = ("import sys, gymnasium as gym\n"
            "assert 'hss_gym' not in sys.modules\n"
            "for eid in ('hss/Placement-v0', 'hss/Migration-v0', 'hss/RLAlloc-v0', 'hss/LQoCo-v0'):\n"
            "    env = gym.make('hss_gym:' + eid, render_mode='rgb_array')\n"
            "    assert env.spec.id == eid, env.spec.id\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
