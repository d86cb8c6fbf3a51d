"""Archivist: a learned classifier of request features -> device (Ren et al., "Archivist: A Machine
Learning Assisted Data Placement Mechanism for Hybrid Storage Systems", ICCD 2019; a Sibyl
baseline, SPEC §7).

What it does
  Placement only. Every placement decision is made by a small neural network (PyTorch training,
  NumPy inference) that maps the request's features — the placement agent's observation: request
  type and size, the first page's access interval, access count, current device and migration
  interval, and the fast device's free space — to a class: *hot* (served best by the fast device)
  or *cold*. The network is trained online, every ``train_every`` (1000) requests, on the last
  ``buffer_size`` labelled decisions. A decision's label comes from its observed outcome: the
  request's first page is *hot* if it was accessed again within ``horizon`` requests (a page
  re-used within about one fast-device residence time is worth fast-device space), else *cold*.
  Labels are read back from the HSS's per-page last-access stamp ``horizon`` requests after each
  decision. Until the first training data goes to the fast device; while only one class has been
  seen, to that class's device. When the fast device is full the core evicts LRU data on the
  critical path.

What it simplifies
  * Archivist classifies files/data chunks with features from file-system metadata and a
    network trained offline on historical traces, then retrains periodically; here the features
    are the environment's Table-1 bins and the network starts untrained each run (learned state
    persists across :meth:`reset` calls of the same object).
  * Two classes; with more than two devices p(hot) is split evenly over the devices (p(hot) above
    (N-1)/N -> device 0, ...), cold -> the home device.
  * ``horizon="auto"`` = fast-device capacity / mean pages per request (clipped to
    [``min_horizon``, ``max_horizon``]), fixed at the first training.
  * Predictions are cached per distinct feature vector between trainings (the features are binned).

torch is imported here only.
"""

from __future__ import annotations

from collections import deque
from contextlib import contextmanager
from typing import Any, ClassVar, Iterator

import numpy as np
import torch
from torch import nn

from hss_gym.agents.base import Infos, Obs, Policy
from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.hss import PAGE_SHIFT


@contextmanager
def single_thread() -> Iterator[None]:
    """Run tiny-tensor training on one thread: PyTorch's intra-op threads only add overhead for
    networks this small (and oversubscribe a busy machine). The previous setting is restored."""
    n = torch.get_num_threads()
    if n != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if n != 1:
            torch.set_num_threads(n)


class Archivist(Policy):
    """See the module docstring. Keyword arguments: ``hidden`` ((16, 16)), ``lr`` (1e-2),
    ``epochs`` (2 passes per training), ``batch_size`` (256), ``buffer_size`` (4096 labelled
    decisions), ``train_every`` (1000 requests), ``horizon`` ("auto" or requests),
    ``min_horizon`` (100), ``max_horizon`` (20000), ``seed`` (0)."""

    name = "archivist"
    agents = ("placement",)
    env_options: ClassVar[dict[str, Any]] = {"migration": False}

    def __init__(self, hidden: tuple[int, ...] = (16, 16), lr: float = 1e-2, epochs: int = 2,
                 batch_size: int = 256, buffer_size: int = 4096, train_every: int = 1000,
                 horizon: "int | str" = "auto", min_horizon: int = 100, max_horizon: int = 20000,
                 seed: int = 0) -> None:
        if horizon != "auto" and (not isinstance(horizon, (int, np.integer)) or horizon < 1):
            raise ValueError(f"horizon must be 'auto' or a positive number of requests, got {horizon!r}")
        if train_every < 1 or buffer_size < 1 or batch_size < 1 or epochs < 1:
            raise ValueError("train_every, buffer_size, batch_size and epochs must be >= 1")
        self.hidden, self.lr, self.epochs = tuple(int(h) for h in hidden), float(lr), int(epochs)
        self.batch_size, self.buffer_size, self.train_every = int(batch_size), int(buffer_size), int(train_every)
        self.horizon_opt, self.min_horizon, self.max_horizon = horizon, int(min_horizon), int(max_horizon)
        self.seed = int(seed)
        self.net: nn.Module | None = None
        self.loss_curve: list[tuple[int, float]] = []  # (labelled samples seen, loss)
        self.trainings = 0
        self.constant: int | None = None  # the only class seen so far (1 hot, 0 cold), if any

    # -- model ---------------------------------------------------------------------------------
    def _build(self, n_in: int) -> None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            layers: list[nn.Module] = []
            d = n_in
            for h in self.hidden:
                layers += [nn.Linear(d, h), nn.SiLU()]
                d = h
            layers.append(nn.Linear(d, 2))
            self.net = nn.Sequential(*layers)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=self.lr)
        self.n_in = n_in
        self._weights: list[tuple[np.ndarray, np.ndarray]] | None = None

    def _export(self) -> None:
        """Copy the trained weights into NumPy for cheap per-request inference."""
        lin = [m for m in self.net if isinstance(m, nn.Linear)]
        self._weights = [(m.weight.detach().numpy().T.astype(np.float64), m.bias.detach().numpy().astype(np.float64))
                         for m in lin]
        self._cache: dict[bytes, int] = {}

    def p_hot(self, x: np.ndarray) -> np.ndarray:
        """P(hot) of feature rows ``x`` (NumPy forward pass of the inference copy)."""
        if self._weights is None:
            return np.ones(len(x))
        h = np.asarray(x, dtype=np.float64)
        for i, (w, b) in enumerate(self._weights):
            h = h @ w + b
            if i < len(self._weights) - 1:
                h = h / (1.0 + np.exp(-h))  # SiLU (swish)
        z = h[:, 1] - h[:, 0]
        return 1.0 / (1.0 + np.exp(-z))

    def train(self) -> float | None:
        """One training round on the labelled buffer; returns the mean loss (None: skipped)."""
        if len(self._y) < 2 * self.batch_size:
            return None
        y = np.fromiter(self._y, dtype=np.int64)
        counts = np.bincount(y, minlength=2)
        if counts.min() == 0:  # one class only so far: predict it (nothing to learn yet)
            self.constant = int(np.argmax(counts))
            return None
        self.constant = None
        X = torch.as_tensor(np.stack(self._x), dtype=torch.float32)
        Y = torch.as_tensor(y)
        weight = torch.as_tensor(len(y) / (2.0 * counts), dtype=torch.float32)  # class balance
        loss_fn = nn.CrossEntropyLoss(weight=weight)
        losses = []
        with single_thread():
            self._fit(X, Y, loss_fn, losses)
        self.trainings += 1
        mean = float(np.mean(losses))
        self.loss_curve.append((self._labelled, mean))
        self._export()
        return mean

    def _fit(self, X: torch.Tensor, Y: torch.Tensor, loss_fn: nn.Module, losses: list[float]) -> None:
        n = len(Y)
        for _ in range(self.epochs):
            perm = torch.as_tensor(self._rng.permutation(n))
            for s in range(0, n, self.batch_size):
                idx = perm[s:s + self.batch_size]
                loss = loss_fn(self.net(X[idx]), Y[idx])
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                losses.append(loss.item())

    # -- episode -------------------------------------------------------------------------------
    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        n_in = env.observation_space("placement").shape[0]
        if self.net is None:
            self._build(n_in)
        elif n_in != self.n_in:
            raise ValueError(f"archivist was trained on {self.n_in} features; this environment has {n_in}")
        self.n_dev = env.cfg.n_devices
        self._rng = np.random.default_rng([self.seed, 0 if seed is None else int(seed)])
        self._pending: deque[tuple[int, int, np.ndarray]] = deque()  # (core step, page, features)
        self._x: deque[np.ndarray] = deque(maxlen=self.buffer_size)
        self._y: deque[int] = deque(maxlen=self.buffer_size)
        self._labelled = 0
        self._pages_sum = 0
        self._decisions = 0
        self._next_train = self.train_every
        self.horizon = None if self.horizon_opt == "auto" else int(self.horizon_opt)
        self._page = env.hss.page
        if self._weights is not None:
            self._cache = {}

    def _device(self, p: float) -> int:
        n = self.n_dev
        return min(n - 1, int((1.0 - p) * n)) if n > 2 else (0 if p >= 0.5 else n - 1)

    def _label(self, now: int) -> None:
        """Label the decisions made ``horizon`` requests ago: re-accessed since -> hot."""
        pending, page, h = self._pending, self._page, self.horizon
        while pending and now - pending[0][0] >= h:
            step, p, x = pending.popleft()
            m = page(p)
            self._x.append(x)
            self._y.append(int(m is not None and m["last_access"] > step))
            self._labelled += 1

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        env = self.env
        i = env.step_index
        now = i + 1  # the core numbers requests from 1
        if self.horizon is not None:
            self._label(now)
        if i >= self._next_train:
            self._next_train = i + self.train_every
            if self.horizon is None and self._decisions:
                pages = self._pages_sum / self._decisions
                cap = env.hss.capacities[0]
                self.horizon = int(np.clip(cap / max(pages, 1.0), self.min_horizon, self.max_horizon))
                self._label(now)
            self.train()
        if not infos["placement"]["acting"]:
            return {"placement": 0}
        _, _, offset, size = env.request
        p0 = offset >> PAGE_SHIFT
        x = observations["placement"]
        self._pending.append((now, p0, x.copy()))
        self._pages_sum += ((offset + size - 1) >> PAGE_SHIFT) - p0 + 1
        self._decisions += 1
        if self.constant is not None:
            return {"placement": 0 if self.constant else self.n_dev - 1}
        if self._weights is None:
            return {"placement": 0}
        key = x.tobytes()
        d = self._cache.get(key)
        if d is None:
            d = self._cache[key] = self._device(float(self.p_hot(x[None, :])[0]))
        return {"placement": d}
