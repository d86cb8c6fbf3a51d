"""The C51 update written with PyTorch autograd: the reference the C kernel is tested against.

:class:`hss_gym.agents.c51.C51Agent` trains with a C kernel on NumPy arrays. This module writes
the same update as a readable PyTorch graph: :class:`TorchReference` wraps an agent's arrays as
the parameters of an ``nn.Sequential`` (shared memory: a step here changes the agent's weights)
and steps them with ``torch.optim.Adam``. ``C51Config(trainer="torch")`` trains with it, and the
tests compare the C kernel's loss, gradients and Adam steps with it. Edit :meth:`TorchReference.loss`
to try a new loss. It needs PyTorch (``pip install 'hss-gym[agents]'``); nothing else imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn


class QNetwork(nn.Module):
    """An MLP with swish hidden layers -> (n_actions, n_atoms) logits, whose parameters are the
    given NumPy arrays (shared memory, not copies)."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], n_actions: int, n_atoms: int) -> None:
        super().__init__()
        modules: list[nn.Module] = []
        for i, (w, b) in enumerate(layers):
            linear = nn.Linear(w.shape[1], w.shape[0])
            linear.weight = nn.Parameter(torch.from_numpy(w))
            linear.bias = nn.Parameter(torch.from_numpy(b))
            modules += [linear, nn.SiLU()] if i < len(layers) - 1 else [linear]  # SiLU is swish
        self.net = nn.Sequential(*modules)
        self.n_actions, self.n_atoms = n_actions, n_atoms

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).view(-1, self.n_actions, self.n_atoms)

    def linear_layers(self) -> list[nn.Linear]:
        return [m for m in self.net if isinstance(m, nn.Linear)]


class TorchReference:
    """The C51 loss and Adam step of ``agent``'s training network, in PyTorch."""

    def __init__(self, agent: Any) -> None:  # a C51Agent, passed in (this module imports nothing of c51's)
        cfg = agent.cfg
        if cfg.torch_threads:  # tiny networks: intra-op threads only add synchronisation cost
            torch.set_num_threads(cfg.torch_threads)
        self.agent = agent
        self.q = QNetwork(agent._params, agent.n_actions, cfg.n_atoms)
        self.target = QNetwork(agent._target, agent.n_actions, cfg.n_atoms)
        self.opt = torch.optim.Adam(self.q.parameters(), lr=cfg.lr, fused=True)
        self.z = torch.linspace(cfg.v_min, cfg.v_max, cfg.n_atoms)
        self.dz = (cfg.v_max - cfg.v_min) / (cfg.n_atoms - 1)

    def loss(self, idx: np.ndarray) -> torch.Tensor:
        """The C51 loss of the minibatch at the agent's replay positions ``idx``: the categorical
        projection of ``r + discount * z`` under the target network's greedy action, and the
        cross-entropy of the training network's distribution against it."""
        a, cfg = self.agent, self.agent.cfg
        if a.scale is None:
            raise RuntimeError("no reward scale yet: take a train_step() first or set reward_scale")
        a.wait()
        obs = torch.from_numpy(a.obs_buf[idx])
        nxt = torch.from_numpy(a.next_buf[idx])
        act = torch.from_numpy(a.act_buf[idx])
        rew = torch.from_numpy(np.clip(a.rew_buf[idx] * a.scale, a.r_lo, a.r_hi))
        disc = torch.from_numpy(a.disc_buf[idx])
        with torch.no_grad():
            p_next = torch.softmax(self.target(nxt), dim=2)
            best = (p_next * self.z).sum(2).argmax(1)
            p = p_next[torch.arange(len(idx)), best]
            tz = (rew.unsqueeze(1) + disc.unsqueeze(1) * self.z).clamp(cfg.v_min, cfg.v_max)
            b = (tz - cfg.v_min) / self.dz
            lo, hi = b.floor().long(), b.ceil().long()
            same = lo == hi  # b on an atom: all its mass goes there
            m = torch.zeros_like(p)
            m.scatter_add_(1, lo, p * (hi.float() - b + same.float()))
            m.scatter_add_(1, hi, p * (b - lo.float()))
        logp = torch.log_softmax(self.q(obs)[torch.arange(len(idx)), act], dim=1)
        return -(m * logp).sum(1).mean()

    def step(self, idx: np.ndarray) -> float:
        """One Adam step on the loss of the minibatch at ``idx``; returns the loss."""
        loss = self.loss(idx)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item()
