"""FleetIO's PPO agent at inference time: the trained actor in NumPy (no torch needed).

One network, shared by every vSSD (each vSSD runs its own copy, as the paper deploys the
pre-trained model in each new vSSD's agent): 33 inputs -> [50, 50] tanh -> three categorical
heads (harvest 0..16, make_harvestable 0..16, priority 0..2). Actions are the heads' argmax
(``deterministic=True``) or samples from them. Weights: ``weights/fleetio_ppo.npz`` (eq. 2's
beta = 0.6, policy ``fleetio_ppo``) and ``weights/fleetio_ppo_local.npz`` (beta = 1, the paper's
"FleetIO-Customized-Local" ablation, policy ``fleetio_ppo_local``), written by
``python -m hss_gym.agents.fleetio.ppo`` (see that module for the commands).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hss_gym.agents.fleetio.baselines import FleetIOPolicy

HEADS = (17, 17, 3)


class PPOPolicy(FleetIOPolicy):
    name = "fleetio_ppo"
    env_options = {"isolation": "fleetio"}

    def __init__(self, weights: dict[str, np.ndarray], *, deterministic: bool = True, seed: int = 0) -> None:
        need = {"w0", "b0", "w1", "b1", "wa", "ba"}
        if not need <= set(weights):
            raise ValueError(f"PPO weights need arrays {sorted(need)}, got {sorted(weights)}")
        self.w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)

    @classmethod
    def load(cls, path: str | Path, **kw: Any) -> "PPOPolicy":
        with np.load(path) as z:
            return cls({k: z[k] for k in z.files}, **kw)

    @classmethod
    def load_default(cls, name: str = "fleetio_ppo", **kw: Any) -> "PPOPolicy":
        """The shipped weights ``weights/<name>.npz``; the policy reports ``name``."""
        ref = resources.files("hss_gym.agents.fleetio").joinpath(f"weights/{name}.npz")
        with resources.as_file(ref) as p:
            if not Path(p).exists():
                raise FileNotFoundError(f"{p}: no shipped PPO weights; run python -m hss_gym.agents.fleetio.ppo")
            pol = cls.load(p, **kw)
        pol.name = name
        return pol

    def logits(self, x: np.ndarray) -> list[np.ndarray]:
        w = self.w
        h = np.tanh(np.tanh(x @ w["w0"] + w["b0"]) @ w["w1"] + w["b1"])
        z = h @ w["wa"] + w["ba"]
        return np.split(z, np.cumsum(HEADS)[:-1], axis=-1)

    def act(self, observations: dict[str, np.ndarray], infos: dict[str, dict[str, Any]]) -> dict[str, np.ndarray]:
        """Every vSSD's action from its own observation (the infos are not read)."""
        agents = list(observations)
        heads = self.logits(np.stack([observations[a] for a in agents]).astype(np.float64))
        out = np.zeros((len(agents), 3), np.int64)
        for j, z in enumerate(heads):
            if self.deterministic:
                out[:, j] = z.argmax(axis=1)
            else:
                p = np.exp(z - z.max(axis=1, keepdims=True))
                p /= p.sum(axis=1, keepdims=True)
                out[:, j] = [self.rng.choice(len(q), p=q) for q in p]
        return {a: out[i] for i, a in enumerate(agents)}
