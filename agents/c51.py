"""The C51 learner shared by Harmonia, Sibyl and SAPM, in one readable file (CleanRL style).

C51 (Bellemare et al., ICML 2017) learns, for each action, a categorical distribution of returns
over ``n_atoms`` fixed values ``z`` in ``[v_min, v_max]``; the policy takes the action with the
highest expected value. As in Sibyl (ISCA'22) and Harmonia (arXiv 2503.20507, section 4.5):

* **two networks**: a *training* network (NumPy arrays the C kernel steps with Adam) and an
  *inference* network that makes the decisions and is refreshed with the training weights every ``sync_every`` requests
  (1000). The inference copy runs in C (:mod:`hss_gym.agents._c51`): a decision costs about a
  microsecond instead of a PyTorch call's tens to hundreds of microseconds. It also serves as the target
  network of the Bellman update, as a DQN target network does;
* **the gradient step** of the training network is computed by ``trainer="c"`` (default), a C
  kernel that updates the parameters in place, or by ``trainer="torch"``, the same step written
  with autograd and ``torch.optim.Adam`` in :mod:`hss_gym.agents.c51_torch` (the reference the C
  kernel is tested against; edit it to try a new loss; it needs PyTorch, the ``agents`` extra).
  Both compute the same update; the C kernel takes
  an order of magnitude less time per minibatch (measured by benchmarks/perf/bench_agents.py; the
  numbers are in docs/performance.md), which is what lets the agents learn online at the
  environment's speed;
* **experience replay** of the last ``buffer_size`` (1000) transitions ``(s, a, r, s', discount)``,
  with uniformly sampled minibatches of ``batch_size``; the discount of the next state is gamma
  unless the transition gives its own (0: terminal; per-page credit, :mod:`hss_gym.agents.credit`,
  gives ``gamma ** k``). Each transition's projected target is cached until the target network
  refreshes;
* **epsilon-greedy** exploration (``epsilon`` = 0.001), after ``explore_steps`` decisions over
  which epsilon falls linearly from 1 (0: none; loaded weights skip it);
* **reward scaling**: C51's support is fixed, but the environment's rewards ``L_ref / L_t`` range
  from ~1 (fast-device speed) to ~0.01 on a saturated workload, where every return would fall in
  the first atom. With ``reward_scale=None`` (default) the rewards are divided by the mean
  absolute reward of the first ``batch_size`` experiences, times ``reward_target`` (0.5), and
  clipped to the support's range; the scale is then fixed for the rest of the run. Set a number
  to fix it yourself (1.0 = raw rewards);
* training: Harmonia runs "16 batches per training step" in a background thread. Here the steps
  are spread evenly: one minibatch gradient step every ``train_every`` experiences (the placement
  agents use 8, docs/learning-diagnostics.md). With ``train_thread=True`` (default, C trainer) a
  worker thread takes them while the agent acts: each step's minibatch is drawn when it is due
  (the replay keeps a row it overwrites until the steps that may have drawn it have read it), the
  worker runs the steps in order, and the agent waits for them before it reads the weights (every ``sync_every`` requests, or when :attr:`C51Agent.weights` is read), so results are
  exactly those of synchronous training (``train_thread=False``) and do not depend on timing.

The agents need no PyTorch: the parameters are NumPy arrays, initialised as PyTorch's
``nn.Linear`` initialises them (:func:`init_layers`: the same numbers, drawn from the same
Mersenne Twister stream, so results did not change when PyTorch left the agents).

Every gradient step's loss is kept in :attr:`C51Agent.loss_curve` as ``(experiences, loss)``
(Harmonia Fig. 7). :meth:`C51Agent.save`/:meth:`C51Agent.load` store the weights in a NumPy
``.npz`` file (:func:`save_state`) with the shapes they were made for, and refuse weights for
another number of devices or features.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hss_gym.agents._c51 import C51Net, C51Trainer

Layers = list[tuple[np.ndarray, np.ndarray]]


@dataclass
class C51Config:
    """Hyper-parameters of one C51 agent (defaults: Harmonia's placement agent, Table 2)."""

    hidden: tuple[int, ...] = (10,)
    n_atoms: int = 51
    v_min: float = 0.0
    v_max: float = 10.0
    gamma: float = 0.9
    lr: float = 1e-3
    epsilon: float = 0.001
    explore_steps: int = 0
    batch_size: int = 128
    buffer_size: int = 1000
    train_every: int = 64
    sync_every: int = 1000
    reward_scale: float | None = None
    reward_target: float = 0.5
    trainer: str = "c"
    train_thread: bool = True
    torch_threads: int | None = 1

    def __post_init__(self) -> None:
        self.hidden = tuple(int(h) for h in self.hidden)
        checks = {
            "hidden": all(h >= 1 for h in self.hidden), "n_atoms": self.n_atoms >= 2,
            "v_max": self.v_max > self.v_min, "gamma": 0.0 <= self.gamma < 1.0, "lr": self.lr > 0,
            "epsilon": 0.0 <= self.epsilon <= 1.0, "explore_steps": self.explore_steps >= 0, "batch_size": self.batch_size >= 1,
            "buffer_size": self.buffer_size >= self.batch_size, "train_every": self.train_every >= 1,
            "sync_every": self.sync_every >= 1,
            "reward_scale": self.reward_scale is None or self.reward_scale > 0,
            "reward_target": self.reward_target > 0, "trainer": self.trainer in ("c", "torch"),
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"invalid C51 hyper-parameter(s) {bad}: {asdict(self)} (need hidden >= 1, "
                             f"n_atoms >= 2, v_max > v_min, 0 <= gamma < 1, lr > 0, 0 <= epsilon <= 1, explore_steps >= 0, "
                             f"buffer_size >= batch_size >= 1, train_every >= 1, sync_every >= 1, trainer 'c' or 'torch')")


def make_config(defaults: C51Config, overrides: "C51Config | dict[str, Any] | None") -> C51Config:
    """Table-2 defaults with some hyper-parameters overridden (a dict) or replaced (a config)."""
    if isinstance(overrides, C51Config):
        return overrides
    d = dict(defaults.__dict__)
    for k, v in (overrides or {}).items():
        if k not in d:
            raise ValueError(f"unknown C51 hyper-parameter {k!r}; valid: {sorted(d)}")
        d[k] = v
    return C51Config(**d)


def _mt_words(seed: int, n: int) -> np.ndarray:
    """The first ``n`` 32-bit outputs of the Mersenne Twister seeded with ``seed`` as PyTorch's CPU
    generator seeds it (``init_genrand``, as NumPy's legacy ``RandomState(seed)``)."""
    return np.random.RandomState(seed).randint(0, 2**32, size=n, dtype=np.uint32).astype(np.uint64)


def _uniform(words: np.ndarray, bound: float) -> np.ndarray:
    """PyTorch's CPU ``uniform_(-bound, bound)`` of float32 from 32-bit words: 24 random bits
    scaled to [0, 1), then ``x * (to - from) + from`` fused (one rounding), in float32."""
    x = (words & 0xFFFFFF).astype(np.float32) * np.float32(2.0 ** -24)
    lo, hi = np.float32(-bound), np.float32(bound)
    span = np.float32(hi - lo)
    # x * span is exact in float64 (24 x 24 bits) and so is the sum: one rounding, as a fused multiply-add
    return (x.astype(np.float64) * float(span) + float(lo)).astype(np.float32)


def init_layers(sizes: tuple[int, ...], seed: int) -> Layers:
    """Weights and biases of an MLP with layer widths ``sizes``, initialised as PyTorch's
    ``nn.Linear`` does (weights Kaiming-uniform with ``a = sqrt(5)``, i.e. U(+-1/sqrt(fan_in));
    biases U(+-1/sqrt(fan_in))) after ``torch.manual_seed(s)``, ``s`` drawn from a generator seeded
    with ``seed`` (``torch.randint(2**31 - 1, generator=...)``): the numbers the agents had when
    their networks were PyTorch modules, bit for bit (tests/test_agents.py checks it against
    PyTorch), so no result changed when PyTorch left the agents."""
    first = _mt_words(seed, 2)
    torch_seed = int((first[0] << np.uint64(32)) | first[1]) % (2**31 - 1)  # randint uses 64 bits
    shapes = list(zip(sizes[:-1], sizes[1:]))
    words = _mt_words(torch_seed, sum(a * b + b for a, b in shapes))
    layers: Layers = []
    pos = 0
    for fan_in, fan_out in shapes:
        gain = math.sqrt(2.0 / (1 + 5))  # leaky_relu gain with a = sqrt(5)
        w_bound = math.sqrt(3.0) * (gain / math.sqrt(fan_in))
        w = _uniform(words[pos:pos + fan_in * fan_out], w_bound).reshape(fan_out, fan_in)
        pos += fan_in * fan_out
        b = _uniform(words[pos:pos + fan_out], 1.0 / math.sqrt(fan_in))
        pos += fan_out
        layers.append((w, b))
    return layers


def save_state(path: "str | Path", state: dict[str, Any]) -> None:
    """Write a (nested) state dict to a NumPy ``.npz`` file at exactly ``path``: its arrays as
    arrays, everything else as one JSON document (no pickles: loading runs no code)."""
    arrays: dict[str, np.ndarray] = {}

    def split(obj: Any, key: str) -> Any:
        if isinstance(obj, np.ndarray):
            arrays[key] = obj
            return {"__array__": key}
        if isinstance(obj, dict):
            return {k: split(v, f"{key}/{k}" if key else k) for k, v in obj.items()}
        return obj

    meta = split(state, "")
    with open(path, "wb") as f:  # a file object: np.savez would add ".npz" to a path
        np.savez(f, __meta__=np.array(json.dumps(meta)), **arrays)


def load_state(path: "str | Path") -> dict[str, Any]:
    """Read a state dict written by :func:`save_state`. A PyTorch file of an earlier hss-gym (before
    the agents left PyTorch) is read when PyTorch is installed (save it again to convert it); anything else is refused."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except zipfile.BadZipFile:
        raise ValueError(f"{path}: not an hss-gym weights file (not a .npz archive)") from None
    if "__meta__.npy" in names:
        with np.load(path, allow_pickle=False) as data:
            def join(obj: Any) -> Any:
                if isinstance(obj, dict):
                    if set(obj) == {"__array__"}:
                        return data[obj["__array__"]]
                    return {k: join(v) for k, v in obj.items()}
                return obj
            return join(json.loads(str(data["__meta__"])))
    if any(n.endswith("/data.pkl") for n in names):
        try:
            import torch
        except ImportError:
            raise ValueError(f"{path}: PyTorch weights of an earlier hss-gym; to convert them, install "
                             f"PyTorch (pip install 'hss-gym[agents]'), load them and save them again") from None

        def to_numpy(obj: Any) -> Any:
            if isinstance(obj, torch.Tensor):
                return obj.numpy()
            if isinstance(obj, dict):
                return {k: to_numpy(v) for k, v in obj.items()}
            return obj
        return to_numpy(torch.load(path, weights_only=True))
    raise ValueError(f"{path}: not an hss-gym weights file (a zip archive without its contents)")


@dataclass
class C51Agent:
    """One C51 agent: act, remember, learn. See the module docstring."""

    n_inputs: int
    n_actions: int
    cfg: C51Config = field(default_factory=C51Config)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_inputs < 1 or self.n_actions < 1:
            raise ValueError(f"C51Agent needs n_inputs >= 1 and n_actions >= 1, got {self.n_inputs}, {self.n_actions}")
        cfg = self.cfg
        sizes = (self.n_inputs, *cfg.hidden, self.n_actions * cfg.n_atoms)
        self._params = init_layers(sizes, self.seed)  # the training network
        self._target = [(np.zeros_like(w), np.zeros_like(b)) for w, b in self._params]  # set by sync()
        self._background = cfg.trainer == "c" and cfg.train_thread
        self.infer = C51Net((self.n_inputs, *cfg.hidden), self.n_actions, cfg.n_atoms, cfg.v_min, cfg.v_max,
                            cfg.epsilon, self.seed)
        self.np_rng = np.random.default_rng(self.seed)
        cap = cfg.buffer_size
        self.obs_buf = np.zeros((cap, self.n_inputs), dtype=np.float32)
        self.next_buf = np.zeros((cap, self.n_inputs), dtype=np.float32)
        self.act_buf = np.zeros(cap, dtype=np.int64)
        self.rew_buf = np.zeros(cap, dtype=np.float32)
        self.disc_buf = np.zeros(cap, dtype=np.float32)
        self.trainer = C51Trainer((self.n_inputs, *cfg.hidden), self.n_actions, cfg.n_atoms, cfg.v_min, cfg.v_max,
                                  cfg.gamma, cfg.lr, self._params, self._target, self.obs_buf,
                                  self.next_buf, self.act_buf, self.rew_buf, cfg.batch_size, self.seed,
                                  disc_buf=self.disc_buf)
        self.scale = cfg.reward_scale
        self.r_lo, self.r_hi = cfg.v_min * (1 - cfg.gamma), cfg.v_max * (1 - cfg.gamma)
        self.requests = 0
        self._explore_left = cfg.explore_steps
        if cfg.explore_steps:
            self.infer.epsilon = 1.0
        self._next_sync = cfg.sync_every
        self._loss_curve: list[tuple[int, float]] = []
        self._torch: Any = None
        if cfg.trainer == "torch":
            # local: c51_torch imports PyTorch (the agents extra), which the C kernel trainer never needs
            from hss_gym.agents.c51_torch import TorchReference
            self._torch = TorchReference(self)
        self.sync()

    @property
    def weights(self) -> Layers:
        """The training network's ``(weight, bias)`` arrays per layer (after the background
        gradient steps due so far): the trainer's memory, updated in place."""
        self.wait()
        return self._params

    @property
    def target_weights(self) -> Layers:
        """The target (and inference) network's ``(weight, bias)`` arrays, as of the last sync."""
        return self._target

    @property
    def loss_curve(self) -> list[tuple[int, float]]:
        """``(experiences, loss)`` of every gradient step so far."""
        self.wait()
        return self._loss_curve

    @loss_curve.setter
    def loss_curve(self, value: list[tuple[int, float]]) -> None:
        self.wait()
        self._loss_curve = value

    def wait(self) -> None:
        """Wait for the gradient steps running in the background thread (their losses join
        :attr:`loss_curve`)."""
        if self._background:
            self._loss_curve.extend(self.trainer.drain())

    # -- acting ----------------------------------------------------------------------------
    def act(self, obs: np.ndarray) -> int:
        """Epsilon-greedy action of the inference network for a float32 observation. During the
        first ``explore_steps`` decisions epsilon falls linearly from 1 to ``epsilon``."""
        if self._explore_left:
            self._explore_left -= 1
            cfg = self.cfg
            self.infer.epsilon = cfg.epsilon + (1.0 - cfg.epsilon) * self._explore_left / cfg.explore_steps
        return self.infer.act(obs)

    @property
    def exploring(self) -> bool:
        """Whether the exploration warm-up (``explore_steps``) is still on."""
        return self._explore_left > 0

    def greedy(self, obs: np.ndarray) -> int:
        return self.infer.greedy(obs)

    def q_values(self, obs: np.ndarray) -> tuple[float, ...]:
        """Expected return of each action under the inference network."""
        return self.infer.q(obs)

    def tick(self, requests: int = 1) -> None:
        """Count host requests; refresh the inference network every ``sync_every``."""
        self.requests += requests
        if self.requests >= self._next_sync:
            self._next_sync = (self.requests // self.cfg.sync_every + 1) * self.cfg.sync_every
            self.sync()

    def until_sync(self) -> int:
        """Requests until the inference network's next refresh: ``tick(until_sync())`` refreshes
        it, as that many ``tick()`` calls would (an episode loop may count them itself)."""
        return self._next_sync - self.requests

    def sync(self) -> None:
        """Copy the training weights to the inference network (C) and the target network."""
        self.wait()  # for the background steps
        for (w, b), (tw, tb) in zip(self._params, self._target):  # the trainer's memory
            np.copyto(tw, w)
            np.copyto(tb, b)
        self.trainer.invalidate()
        self.infer.set_weights(self._params)

    # -- learning --------------------------------------------------------------------------
    def remember(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
                 discount: float | None = None) -> None:
        """Store a transition; every ``train_every`` transitions, take one gradient step.
        ``discount`` weighs the next state's return (default gamma; 0: a terminal transition)."""
        n = self.trainer.push(obs, action, reward, next_obs, self.cfg.gamma if discount is None else discount)
        if n % self.cfg.train_every == 0 and self.trainer.size >= self.cfg.batch_size:
            self.queue_step()

    def queue_step(self) -> None:
        """:meth:`train_step` on a uniform minibatch, taken by the background thread when it runs
        the steps (its loss joins :attr:`loss_curve` at the next :meth:`wait`), else now."""
        if not self._background:
            self.train_step()
            return
        if self.scale is None:
            self.scale = self._first_scale()
        self.trainer.submit(self.scale, self.r_lo, self.r_hi)

    @property
    def experiences(self) -> int:
        return self.trainer.experiences

    @property
    def size(self) -> int:
        return self.trainer.size

    def train_step(self, indices: np.ndarray | None = None) -> float:
        """One minibatch of the C51 update (categorical projection + cross-entropy, Adam), on a
        uniform sample of the replay buffer or on the given buffer positions."""
        cfg = self.cfg
        self.wait()
        if self.scale is None:
            self.scale = self._first_scale()
        if cfg.trainer == "c":
            value = self.trainer.train(self.scale, self.r_lo, self.r_hi, indices)
        else:
            value = self._torch.step(self.np_rng.integers(0, self.size, size=cfg.batch_size)
                                     if indices is None else np.asarray(indices))
        self._loss_curve.append((self.experiences, value))
        return value

    def _first_scale(self) -> float:
        return self.cfg.reward_target / max(float(np.abs(self.rew_buf[:self.size]).mean()), 1e-12)

    def c_gradients(self, idx: np.ndarray) -> tuple[float, list[tuple[np.ndarray, np.ndarray]]]:
        """Loss and per-layer (dW, db) of the minibatch at ``idx`` from the C kernel, without
        stepping: for checking it against autograd on :meth:`loss`."""
        value = self.trainer.train(self.scale, self.r_lo, self.r_hi, idx, apply=False)
        return value, [(np.frombuffer(gw, np.float32).reshape(w.shape), np.frombuffer(gb, np.float32))
                       for (gw, gb), (w, _) in zip(self.trainer.gradients(), self._params)]

    # -- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Shapes, configuration, reward scale, weights (copies) and loss curve, for :func:`save_state`."""
        weights = {}
        for i, (w, b) in enumerate(self.weights):  # the names PyTorch's nn.Sequential gave them
            weights[f"net.{2 * i}.weight"], weights[f"net.{2 * i}.bias"] = w.copy(), b.copy()
        return {"format": "hss-gym-c51/1", "n_inputs": self.n_inputs, "n_actions": self.n_actions,
                "reward_scale": self.scale, "config": asdict(self.cfg), "weights": weights,
                "loss_curve": np.asarray(self.loss_curve, dtype=np.float64).reshape(-1, 2)}

    def load_state_dict(self, state: dict[str, Any], source: str = "weights") -> None:
        """Load weights saved by :meth:`state_dict`; refuses another shape or network."""
        if state.get("format") != "hss-gym-c51/1":
            raise ValueError(f"{source}: not hss-gym C51 weights (format {state.get('format')!r})")
        if state["n_actions"] != self.n_actions:
            raise ValueError(f"{source}: weights are for {state['n_actions']} devices (actions), this agent "
                             f"has {self.n_actions}; train or load weights for this configuration")
        if state["n_inputs"] != self.n_inputs:
            raise ValueError(f"{source}: weights are for {state['n_inputs']} features, this agent observes "
                             f"{self.n_inputs} (another feature set or number of devices)")
        saved = state["config"]
        for k in ("hidden", "n_atoms", "v_min", "v_max"):
            mine = getattr(self.cfg, k)
            theirs = tuple(saved[k]) if k == "hidden" else saved[k]
            if theirs != mine:
                raise ValueError(f"{source}: weights have {k}={theirs}, this agent has {k}={mine}")
        weights = state["weights"]
        for i, (w, b) in enumerate(self.weights):
            for name, dest in ((f"net.{2 * i}.weight", w), (f"net.{2 * i}.bias", b)):
                got = np.asarray(weights.get(name))
                if got.shape != dest.shape:
                    raise ValueError(f"{source}: {name} has shape {got.shape}, this agent's is {dest.shape}")
                np.copyto(dest, got)  # in place: the trainer holds this memory
        self.scale = state.get("reward_scale", self.scale)
        self._explore_left = 0  # trained weights: no random warm-up, epsilon as configured
        self.infer.epsilon = self.cfg.epsilon
        self.loss_curve = [(int(e), float(v)) for e, v in state.get("loss_curve", [])]
        self.sync()

    def save(self, path: "str | Path") -> None:
        """Write the weights to a ``.npz`` file (:func:`save_state`) at ``path``."""
        save_state(path, self.state_dict())

    def load(self, path: "str | Path") -> None:
        self.load_state_dict(load_state(path), str(path))

    def memory_bytes(self) -> int:
        """Bytes of the experience buffer, the training, target and inference weights and the
        trainer's state (Adam's moments; the C kernel's gradients and minibatch scratch)."""
        params = sum(w.size + b.size for w, b in self._params)
        bufs = sum(b.nbytes for b in (self.obs_buf, self.next_buf, self.act_buf, self.rew_buf, self.disc_buf))
        trainer = self.trainer.nbytes if self.cfg.trainer == "c" else 2 * 4 * params
        return bufs + 3 * 4 * params + trainer
