"""RNN-HSS: recurrent-network prediction of page access frequency, with migration at fixed
intervals (adapted, as in Harmonia §3.3, from Kleio: Doudali et al., "Kleio: A Hybrid Memory Page
Scheduler with Machine Intelligence", HPDC 2019; also a Sibyl baseline).

What it does
  * **Placement** (:class:`~hss_gym.agents.heuristics.FastUntilFull`): a fixed heuristic — the
    fast device until it is full, then the slow device (Harmonia: RNN-HSS and K-SVM "perform data
    placement for incoming I/O requests using a fixed heuristic policy").
  * **Migration** (:class:`RNNHSSMigration`): every ``interval`` (1000) requests, each tracked
    page's access counts over the last ``window`` (8) intervals form a sequence; a GRU
    (:class:`AccessPredictor`, PyTorch) predicts the page's access count in the next interval.
    The predictor is first trained on the interval that just ended (inputs: the ``window``
    intervals before it, target: its counts), then predicts from the latest ``window`` intervals.
    Pages are ranked by prediction; those predicted to be accessed at least ``min_count`` times,
    up to each device's capacity, get the fast device, the others the slow one; pages whose
    device changes are moved at once with ``env.hss.move`` (demotions, then promotions) on the
    critical path of the request that ends the interval. The environment's migration agent is
    answered with "stay".

What it simplifies
  * Kleio trains one LSTM per (important) page offline and schedules pages between DRAM and
    NVM; here one small GRU is shared by all pages, trained online at every interval on at most
    ``train_pages`` sampled pages (``epochs`` passes), on ``log1p`` counts. Its weights persist
    across :meth:`reset` calls of the same object.
  * At most ``max_pages`` pages are tracked (recently/frequently accessed); pages idle for the
    whole window are forgotten and leave the fast device by LRU eviction when promotions need
    their space. ``max_moves`` bounds the pages moved per interval (``None``: unbounded).

``RNNHSS`` is placement + migration; ``RNNHSSMigration`` alone (``agents = ("migration",)``)
pairs with another placement policy through :class:`hss_gym.agents.base.Combined`
(Sibyl+RNN-HSS). torch is imported here only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from hss_gym.agents.archivist import single_thread
from hss_gym.agents.base import Combined
from hss_gym.agents.heuristics import FastUntilFull, PageHistory, PeriodicMigration, unique_rows
from hss_gym.agents.sibyl import Sibyl
from hss_gym.envs.hss.env import HSSParallelEnv

PREDICT_BATCH = 32768  # rows per forward pass of the reference prediction
ROW_BLOCK = 64  # a multiple of the row block of the CPU matrix kernels


class _Net(nn.Module):
    def __init__(self, hidden: int, cell: str) -> None:
        super().__init__()
        rnn = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}[cell]
        self.rnn = rnn(input_size=1, hidden_size=hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (batch, window) of log1p counts
        out, _ = self.rnn(x.unsqueeze(-1))
        return self.head(out[:, -1]).squeeze(-1)


class AccessPredictor:
    """A small recurrent network predicting a page's next-interval access count from its counts
    in the previous ``window`` intervals (trained and evaluated on ``log1p`` counts).

    ``hidden`` (16), ``cell`` ("gru", "lstm" or "rnn"), ``lr`` (1e-2), ``batch_size`` (256),
    ``seed`` (0) for the initial weights and minibatch order.
    """

    def __init__(self, window: int = 8, hidden: int = 16, cell: str = "gru", lr: float = 1e-2,
                 batch_size: int = 256, seed: int = 0) -> None:
        if cell not in ("gru", "lstm", "rnn"):
            raise ValueError(f"cell must be 'gru', 'lstm' or 'rnn', got {cell!r}")
        if window < 1 or hidden < 1 or batch_size < 1:
            raise ValueError("window, hidden and batch_size must be >= 1")
        self.window, self.batch_size = int(window), int(batch_size)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = _Net(int(hidden), cell)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.rng = np.random.default_rng(seed)
        self.loss_curve: list[float] = []

    def _check(self, seqs: np.ndarray) -> np.ndarray:
        seqs = np.asarray(seqs, dtype=np.float32)
        if seqs.ndim != 2 or seqs.shape[1] != self.window:
            raise ValueError(f"expected sequences of shape (n, {self.window}), got {seqs.shape}")
        return seqs

    def fit(self, seqs: np.ndarray, targets: np.ndarray, epochs: int = 1) -> float:
        """Train on count sequences ``(n, window)`` and next-interval counts ``(n,)``; returns the
        mean minibatch loss (MSE on log1p counts)."""
        X = torch.as_tensor(np.log1p(self._check(seqs)))
        Y = torch.as_tensor(np.log1p(np.asarray(targets, dtype=np.float32)))
        n, losses = len(Y), []
        with single_thread():
            for _ in range(epochs):
                perm = torch.as_tensor(self.rng.permutation(n))
                for s in range(0, n, self.batch_size):
                    idx = perm[s:s + self.batch_size]
                    loss = nn.functional.mse_loss(self.net(X[idx]), Y[idx])
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
                    losses.append(loss.item())
        mean = float(np.mean(losses)) if losses else float("nan")
        self.loss_curve.append(mean)
        return mean

    def predict(self, seqs: np.ndarray) -> np.ndarray:
        """Predicted next-interval access count of each sequence (>= 0).

        The result is, bit for bit, that of one forward pass over all rows in batches of
        :data:`PREDICT_BATCH` (the reference), but costs a pass over the *distinct* rows only
        (counts are small integers: most pages share their history; 32,768 tracked pages have a
        few thousand distinct histories). That needs care because the CPU matrix kernels compute
        the last rows of a batch whose size is not a multiple of their row block with other code
        (the results differ in the last bit): the distinct rows are padded to a multiple of
        :data:`ROW_BLOCK`, so each is computed by the full-block code, and the last
        ``ROW_BLOCK + size % ROW_BLOCK`` rows of each reference batch (the whole batch if it is
        smaller than ``2 * ROW_BLOCK``) are recomputed as one batch, which ends with the same tail
        as the reference's. ``tests/test_baselines.py`` checks the equality for every tail size.
        """
        X = np.log1p(self._check(seqs))
        n, out = len(X), np.empty(len(X), dtype=np.float32)
        with torch.inference_mode(), single_thread():
            if n:
                rows, inverse = unique_rows(X)
                padded = np.concatenate([rows, np.repeat(rows[:1], -len(rows) % ROW_BLOCK, axis=0)])
                out[:] = self.net(torch.from_numpy(padded)).numpy()[inverse]
            for start in range(0, n, PREDICT_BATCH):
                stop = min(n, start + PREDICT_BATCH)
                size = stop - start
                tail = size if size < 2 * ROW_BLOCK else ROW_BLOCK + size % ROW_BLOCK
                out[stop - tail:stop] = self.net(torch.from_numpy(X[stop - tail:stop])).numpy()
        return np.expm1(np.clip(out.astype(np.float64), 0.0, None))


class RNNHSSMigration(PeriodicMigration):
    """RNN-HSS's migration half: bulk critical-path migration every ``interval`` requests.

    ``interval`` (1000), ``window`` (8 intervals of history), ``max_pages`` (32768 tracked),
    ``train_pages`` (2048 sampled per training), ``epochs`` (2), ``min_count`` (1.0: predicted
    accesses for the fast device), ``max_moves`` (512 per interval, ``None`` unbounded),
    ``demote_cold`` (True), predictor options ``hidden`` (16), ``cell`` ("gru"), ``lr`` (1e-2),
    ``seed`` (0).
    """

    name = "rnn_hss_migration"

    def __init__(self, interval: int = 1000, window: int = 8, max_pages: int = 32768,
                 train_pages: int = 2048, epochs: int = 2, min_count: float = 1.0,
                 max_moves: int | None = 512, demote_cold: bool = True, hidden: int = 16,
                 cell: str = "gru", lr: float = 1e-2, seed: int = 0) -> None:
        if train_pages < 1 or epochs < 1:
            raise ValueError("train_pages and epochs must be >= 1")
        # window + 1 intervals: the extra one is the interval to learn from
        super().__init__(interval, PageHistory(window + 1, max_pages), max_moves, demote_cold, seed)
        self.train_pages, self.epochs, self.min_count = int(train_pages), int(epochs), float(min_count)
        self.predictor = AccessPredictor(window, hidden, cell, lr, seed=seed)

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.last_prediction: np.ndarray | None = None

    def migrate(self) -> int:
        """Train on the interval just ended, predict the next one, move pages now; pages moved."""
        h = self.history
        if len(h.pages) == 0:
            return 0
        c = h.counts
        n = len(c)
        idx = self._rng.choice(n, self.train_pages, replace=False) if n > self.train_pages else np.arange(n)
        self.predictor.fit(c[idx, :-1], c[idx, -1], epochs=self.epochs)
        pred = self.predictor.predict(c[:, 1:])
        self.last_prediction = pred
        n_dev = self.env.cfg.n_devices
        target = np.where(pred >= self.min_count, 0, n_dev - 1)
        # fill the devices hottest first: device 0's overflow goes to device 1, and so on
        return self.apply(target, pred)


class RNNHSS(Combined):
    """RNN-HSS: fast-until-full placement + :class:`RNNHSSMigration` (``seed`` and keyword
    arguments go to it; ``slow_device`` to the placement)."""

    name = "rnn_hss"

    def __init__(self, slow_device: int = -1, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(FastUntilFull(slow_device=slow_device), RNNHSSMigration(seed=seed, **kwargs), name="rnn_hss")
        self.env_options = {"migration": False}  # type: ignore[misc]  # it migrates by itself


def sibyl_rnn_hss(seed: int = 0, **kwargs: Any) -> Combined:
    """Sibyl+RNN-HSS (Harmonia section 3.3): Sibyl's RL placement with :class:`RNNHSSMigration`."""
    return Combined(Sibyl(seed=seed), RNNHSSMigration(seed=seed, **kwargs), name="sibyl+rnn_hss")
