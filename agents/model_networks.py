"""The networks of trained models, evaluated in NumPy: :class:`NumpyMLP` (the weights of a
PyTorch ``Linear`` stack, copied out of an SB3, CleanRL or RLlib checkpoint), :class:`ScriptedModule`
(a TorchScript module) and :class:`Greedy` (the memoised argmax a policy plays).

Why NumPy: a per-step ``model.predict`` is mostly PyTorch's per-call overhead for networks of a
few thousand weights (:mod:`hss_gym.agents.models` has the whole story).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

#: the activations a network may use, by their PyTorch names (lower case)
ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0.0),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    "leakyrelu": lambda x: np.where(x > 0, x, 0.01 * x),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "identity": lambda x: x,
}


class NumpyMLP:
    """A feed-forward policy network in NumPy (float64): ``layers`` are (weight, bias) pairs as
    PyTorch's ``Linear`` stores them, ``activation`` follows every layer but the last (a list: one
    per layer but the last, for an RLlib encoder and head with activations of their own); ``nvec``:
    the observation is MultiDiscrete and one-hot encoded per component first (SB3's preprocessing)."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], activation: str | list[str],
                 nvec: np.ndarray | None = None) -> None:
        names = [activation] * (len(layers) - 1) if isinstance(activation, str) else list(activation)
        if len(names) != len(layers) - 1:
            raise ValueError(f"{len(names)} activations for {len(layers)} layers (one between each two)")
        for name in names or ([activation] if isinstance(activation, str) else []):
            if name not in ACTIVATIONS:
                raise ValueError(f"unsupported activation {name!r}; supported: {', '.join(ACTIVATIONS)}")
        for (w, _), (w2, _) in zip(layers, layers[1:]):
            if w2.shape[1] != w.shape[0]:
                raise ValueError(f"layer shapes do not chain: {w.shape} then {w2.shape}")
        self.layers = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in layers]
        self.acts = [ACTIVATIONS[name] for name in names]
        self.activation = activation
        self.nvec = None if nvec is None else np.asarray(nvec, np.int64)
        self.n_inputs = int(self.nvec.size if self.nvec is not None else self.layers[0][0].shape[1])
        self.n_outputs = int(self.layers[-1][0].shape[0])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, np.float64).reshape(-1)
        if self.nvec is not None:
            offsets = np.concatenate(([0], np.cumsum(self.nvec)[:-1]))
            hot = np.zeros(int(self.nvec.sum()))
            hot[offsets + x.astype(np.int64)] = 1.0
            x = hot
        for i, (w, b) in enumerate(self.layers):
            x = w @ x + b
            if i < len(self.acts):
                x = self.acts[i](x)
        return x


class ScriptedModule:
    """A TorchScript module as a scoring function: a float32 batch of one observation in, one row of
    action scores (logits or Q-values) out."""

    def __init__(self, module: Any) -> None:
        self.module = module.eval()
        self.n_inputs: int | None = None
        self.n_outputs: int | None = None

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        import torch
        with torch.no_grad():
            out = self.module(torch.as_tensor(np.asarray(obs, np.float32).reshape(1, -1)))
        return out.detach().cpu().numpy().reshape(-1)


class Greedy:
    """The argmax of a scoring function, memoised per observation (the function is fixed, and the
    binned observations repeat)."""

    def __init__(self, scores: Callable[[np.ndarray], np.ndarray]) -> None:
        self.scores = scores
        self.cache: dict[bytes, int] = {}

    def __call__(self, obs: np.ndarray) -> int:
        key = obs.tobytes()
        a = self.cache.get(key)
        if a is None:
            a = self.cache[key] = int(np.argmax(self.scores(obs)))
        return a


def linear_layers(state: dict[str, Any], prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``prefix.<i>.weight``/``.bias`` pairs of ``state`` in index order, as NumPy arrays."""
    pat = re.compile(rf"^{re.escape(prefix)}\.(\d+)\.weight$")
    idx = sorted(int(m.group(1)) for k in state if (m := pat.match(k)))
    layers = []
    for i in idx:
        w = state[f"{prefix}.{i}.weight"]
        b = state.get(f"{prefix}.{i}.bias")
        w = w.detach().cpu().numpy() if hasattr(w, "detach") else np.asarray(w)
        if w.ndim != 2:
            raise ValueError(f"{prefix}.{i}.weight has shape {w.shape}: only Linear layers are supported")
        b = np.zeros(w.shape[0]) if b is None else (b.detach().cpu().numpy() if hasattr(b, "detach") else np.asarray(b))
        layers.append((w, b))
    return layers
