"""Native vector envs: N HSS simulators stepped in one C call, over shared NumPy arrays.

* :class:`PlacementVectorEnv` / :class:`MigrationVectorEnv` — ``gymnasium.vector.VectorEnv``\\ s of
  ``hss/Placement-v0`` / ``hss/Migration-v0``, what
  ``gym.make_vec("hss/Placement-v0", num_envs=N, vectorization_mode="vector_entry_point", ...)``
  returns (also without ``vectorization_mode``: a registered ``vector_entry_point`` is the default);
* :class:`ParallelVectorEnv` — N two-agent envs (``hss_v0.parallel_env``) with both agents'
  arrays, for multi-agent trainers.

Why: Gymnasium's SyncVectorEnv calls each env's Python ``step`` in turn, and that Python path, not
the simulator, set the pace of training. Here one call (``backends/core/vec.c``) steps
every env, computes the rewards and writes observations, rewards and episode ends into arrays
shared with C, optionally over several threads with the GIL released (``threads=``).

Semantics, as SyncVectorEnv's over the same envs (tested bit for bit, across autoresets):

* Gymnasium's next-step autoreset (``metadata["autoreset_mode"]``): the step after an env's
  episode ended resets it (its action is ignored; reward 0, not terminated or truncated);
* ``reset(seed=s)`` resets env ``i`` with seed ``s + i``; a list gives each env its seed; None
  leaves the seeding to each env; ``options`` go to every env (``options["reset_mask"]`` resets
  only some, as SyncVectorEnv does);
* an episode start is the single env's own Python ``reset()`` (so whatever it does, seeding and
  options included, the vector env does too); only the steps run in C;
* infos: ``"metrics"`` (and its mask ``"_metrics"``) for the envs whose episode ended in the
  step, as the single env's last info gives them; nothing per step (no ``latency_us``,
  ``credit``, ...), and nothing at reset.

The arrays returned are the shared ones, rewritten by the next step or reset: copy what you keep
(``copy=True`` returns copies, as SyncVectorEnv does by default). Only ``backend="sim"`` and no
``render_mode``. The sub-envs are stepped in C, so their Python objects (``envs``) are not
kept up to date between episode starts: read them, do not step them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hss_gym.backends import _core
from hss_gym.envs._vector import check_num_envs, reset_envs
from hss_gym.envs.hss.env import AGENTS, HSSParallelEnv
from hss_gym.envs.hss.single import SingleAgentEnv, migration_env, placement_env
from hss_gym.metrics import compute_metrics

#: the C batch's modes (backends/core/vec.h HSS_VEC_*)
_PAIR, _PLACEMENT, _MIGRATION = 0, 1, 2


def _check_threads(threads: Any, num_envs: int) -> int:
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)) \
            or not 1 <= threads <= num_envs:
        raise ValueError(f"threads must be an integer in 1..num_envs ({num_envs}), got {threads!r}")
    return int(threads)


def _check_actions(actions: Any, n: int, n_dev: int, who: str, low: int = 0) -> np.ndarray:
    """``actions`` as an int64 array of n devices in [low, n_dev); a clear error otherwise."""
    a = np.asarray(actions)
    if a.shape != (n,) or a.dtype.kind not in "iu":
        raise ValueError(f"{who} must be an integer array of shape ({n},) (one device per env), got "
                         f"{'dtype ' + str(a.dtype) if a.shape == (n,) else 'shape ' + str(a.shape)}")
    bad = (a < low) | (a >= n_dev)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"{who}[{k}] = {a[k]} is not a device in {low}..{n_dev - 1}")
    return a


class _Batch:
    """The C batch over N two-agent envs and its shared arrays: what the three classes share."""

    def __init__(self, penvs: list[HSSParallelEnv], mode: int, threads: int, place_dev: int = 0) -> None:
        first = penvs[0]
        for p in penvs:
            if p.backend != "sim":
                raise ValueError(f"the vector envs run the simulator only (backend='sim'), got backend={p.backend!r}")
            if p.render_mode is not None:
                raise ValueError("the vector envs do not render; use vectorization_mode='sync' with render_mode")
            if p.reward != "ratio":
                raise ValueError(f"the vector envs compute the default reward ('ratio') only, got reward={p.reward!r}; "
                                 "use vectorization_mode='sync' for reward='latency'")
        n, nfeat = len(penvs), first._obs_shape[0]
        self.penvs, self.mode, self.place_dev = penvs, mode, place_dev
        self.n_dev = first.cfg.n_devices
        dtype = first._dtype
        self.act_p = np.zeros(n, np.int64)
        self.act_m = np.zeros(n, np.int64)
        self.skip = np.zeros(n, np.bool_)
        self.obs_p = np.zeros((n, nfeat), dtype)
        self.obs_m = np.zeros((n, nfeat), dtype)
        self.rew_p = np.zeros(n, np.float64)
        self.rew_m = np.zeros(n, np.float64)
        self.trunc = np.zeros(n, np.bool_)
        self.term = np.zeros(n, np.bool_)  # never set: an HSS episode ends when its trace runs out
        self.acting_p = np.zeros(n, np.bool_)
        self.acting_m = np.zeros(n, np.bool_)
        arrays = {name: getattr(self, name) for name in ("act_p", "act_m", "skip", "obs_p", "obs_m", "rew_p",
                                                         "rew_m", "trunc", "acting_p", "acting_m")}
        self.core = _core.VecEnv(n, mode, nfeat, arrays, raw=dtype == np.int64, threads=threads)

    def load(self, k: int) -> None:
        """Slot k takes env k's episode, just begun by its Python reset."""
        p = self.penvs[k]
        ep = p._ep
        if ep.window_open:  # a reset has run no move: nothing to carry over
            raise RuntimeError(f"env {k}: a migration reward window is open after reset()")
        tr = p._trace
        self.core.load(k, p._hss.core, tr.time_us, tr.op, tr.offset, tr.size, ep.i, p._end, ep.needs, p._feature_flags,
                       p.migration_enabled, self.place_dev, p.reward_ref_us, p.penalty, p.reward_n, p.reward_x)

    def ended(self, k: int, infos: dict[str, Any], add_info: Callable[..., dict[str, Any]]) -> dict[str, Any]:
        """Env k's episode ended: bring its Python env to the end and add its metrics to infos."""
        p = self.penvs[k]
        p._ep.finish()
        p.agents = []
        summary = compute_metrics(p._latencies[:p._end], p._hss.counters()).to_dict()
        return add_info(infos, {"metrics": summary}, k)


class _Threaded:
    """What the vector envs over a :class:`_Batch` share: the ``threads`` setting and the step of
    the batch with its autoresets."""

    _batch: _Batch
    _autoreset: np.ndarray
    _started: bool
    num_envs: int
    _reset_env: Callable[..., None]
    _add_info: Callable[..., dict[str, Any]]

    def _reset_envs(self, seed: "int | list[int | None] | None", options: dict[str, Any] | None) -> np.ndarray:
        """Reset the envs ``options["reset_mask"]`` names (all without one) with their seeds;
        returns the mask. The caller zeroes their rewards."""
        mask = reset_envs(seed, options, self.num_envs, self._reset_env)
        self._batch.trunc[mask] = False
        self._autoreset[mask] = False
        self._started = True
        return mask

    def _advance(self) -> dict[str, Any]:
        """Step the batch (the envs whose episode ended last step are reset instead: next-step
        autoreset) and return the infos of the envs whose episode ends now."""
        b = self._batch
        b.skip[:] = self._autoreset
        b.core.step()
        infos: dict[str, Any] = {}
        if self._autoreset.any():
            for k in np.flatnonzero(self._autoreset):
                self._reset_env(int(k))
        if b.trunc.any():
            for k in np.flatnonzero(b.trunc):
                infos = b.ended(int(k), infos, self._add_info)
        self._autoreset[:] = b.trunc
        return infos

    @property
    def threads(self) -> int:
        """Threads stepping the batch (the caller's included)."""
        return self._batch.core.threads

    @threads.setter
    def threads(self, threads: int) -> None:
        self._batch.core.set_threads(_check_threads(threads, self.num_envs))


class _SingleVectorEnv(_Threaded, VectorEnv):
    """The native vector env of a single-agent HSS env (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    _mode: int

    def __init__(self, num_envs: int, make_env: Callable[..., SingleAgentEnv], *, threads: int = 1,
                 copy: bool = False, **kwargs: Any) -> None:
        self.num_envs = n = check_num_envs(num_envs)
        threads = _check_threads(threads, n)
        self.envs = [make_env(**kwargs) for _ in range(n)]
        first = self.envs[0]
        place_dev = 0
        if self._mode == _MIGRATION:
            place_dev = first.other_policy.device
        self._batch = b = _Batch([e.env for e in self.envs], self._mode, threads, place_dev)
        self.copy = bool(copy)
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._obs, self._rew = (b.obs_p, b.rew_p) if self._mode == _PLACEMENT else (b.obs_m, b.rew_m)
        self._act = b.act_p if self._mode == _PLACEMENT else b.act_m
        self._autoreset = np.zeros(n, np.bool_)
        self._started = False

    def _reset_env(self, k: int, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._obs[k], _ = self.envs[k].reset(seed=seed, options=options)
        self._batch.load(k)

    def reset(self, *, seed: "int | list[int | None] | None" = None, options: dict[str, Any] | None = None):
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            super().reset(seed=int(seed))
        mask = self._reset_envs(seed, options)
        self._rew[mask] = 0.0
        return (self._obs.copy() if self.copy else self._obs), {}

    def step(self, actions: Any):
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}: step() called before reset(); call reset() first")
        if self.closed:
            raise RuntimeError(f"{type(self).__name__}: step() called after close()")
        b = self._batch
        self._act[:] = _check_actions(actions, self.num_envs, b.n_dev, "actions")
        infos = self._advance()
        if self.copy:
            return self._obs.copy(), self._rew.copy(), b.term.copy(), b.trunc.copy(), infos
        return self._obs, self._rew, b.term, b.trunc, infos

    def close_extras(self, **kwargs: Any) -> None:
        for e in getattr(self, "envs", ()):  # none when __init__ refused its arguments (__del__ closes it)
            e.close()


class PlacementVectorEnv(_SingleVectorEnv):
    """``hss/Placement-v0`` x ``num_envs``, stepped in C (module docstring). Keywords: those of
    ``hss/Placement-v0``, plus ``threads`` (threads stepping the batch, default 1) and ``copy``
    (return copies of the shared arrays, default False)."""

    _mode = _PLACEMENT

    def __init__(self, num_envs: int = 1, *, threads: int = 1, copy: bool = False, **kwargs: Any) -> None:
        super().__init__(num_envs, placement_env, threads=threads, copy=copy, **kwargs)


class MigrationVectorEnv(_SingleVectorEnv):
    """``hss/Migration-v0`` x ``num_envs``, stepped in C (module docstring). Keywords: those of
    ``hss/Migration-v0`` (``placement_policy`` included), plus ``threads`` and ``copy`` as for
    :class:`PlacementVectorEnv`."""

    _mode = _MIGRATION

    def __init__(self, num_envs: int = 1, *, threads: int = 1, copy: bool = False, **kwargs: Any) -> None:
        super().__init__(num_envs, migration_env, threads=threads, copy=copy, **kwargs)


class ParallelVectorEnv(_Threaded):
    """``hss_v0.parallel_env`` x ``num_envs``, both agents, stepped in C: for multi-agent
    trainers that batch the envs themselves. Keywords: those of ``hss_v0.parallel_env``
    (``config``, ``workload``, ``n_requests``, ...), plus ``threads`` and ``copy`` as for
    :class:`PlacementVectorEnv`.

    ``reset(seed=, options=)`` -> ``(observations, infos)``; ``step(actions)`` -> ``(observations,
    rewards, terminations, truncations, infos)``: every value a dict by agent (``"placement"``,
    ``"migration"``) of arrays with one row per env; ``actions`` likewise (the migration agent's -1:
    no move). ``infos[agent]["acting"]`` says, per env, whether the agent decides the next step
    (the placement agent: the request needs a placement; the migration agent: there is a
    candidate), as the two-agent env's infos do; the other agent's action is then ignored.
    ``infos["metrics"]`` / ``infos["_metrics"]``: the ended episodes' metrics. Autoreset and seeds
    as the vector envs of this module (next step; env i gets seed s + i)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "name": "hss_v0_vector"}
    possible_agents = list(AGENTS)

    def __init__(self, num_envs: int = 1, *, threads: int = 1, copy: bool = False, **kwargs: Any) -> None:
        self.num_envs = n = check_num_envs(num_envs)
        threads = _check_threads(threads, n)
        self.envs = [HSSParallelEnv(**kwargs) for _ in range(n)]
        self._batch = _Batch(self.envs, _PAIR, threads)
        self.copy = bool(copy)
        self._autoreset = np.zeros(n, np.bool_)
        self._started = False
        self.closed = False

    def observation_space(self, agent: str) -> spaces.Space:
        """One env's observation space of ``agent`` (the arrays have ``num_envs`` rows of it)."""
        return self.envs[0].observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """One env's action space of ``agent``."""
        return self.envs[0].action_space(agent)

    def _reset_env(self, k: int, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        b = self._batch
        obs, infos = self.envs[k].reset(seed=seed, options=options)
        b.obs_p[k], b.obs_m[k] = obs["placement"], obs["migration"]
        b.acting_p[k] = infos["placement"]["acting"]
        b.acting_m[k] = infos["migration"]["acting"]
        b.load(k)

    def _out(self) -> tuple[dict[str, np.ndarray], ...]:
        b = self._batch
        c = np.copy if self.copy else (lambda a: a)
        return ({"placement": c(b.obs_p), "migration": c(b.obs_m)}, {"placement": c(b.rew_p), "migration": c(b.rew_m)},
                {"placement": c(b.term), "migration": c(b.term)}, {"placement": c(b.trunc), "migration": c(b.trunc)},
                {"placement": c(b.acting_p), "migration": c(b.acting_m)})

    def reset(self, seed: "int | list[int | None] | None" = None, options: dict[str, Any] | None = None):
        mask = self._reset_envs(seed, options)
        self._batch.rew_p[mask] = self._batch.rew_m[mask] = 0.0
        obs, _, _, _, acting = self._out()
        return obs, {a: {"acting": acting[a]} for a in AGENTS}

    def step(self, actions: dict[str, Any]):
        if not self._started:
            raise RuntimeError("ParallelVectorEnv: step() called before reset(); call reset() first")
        if self.closed:
            raise RuntimeError("ParallelVectorEnv: step() called after close()")
        if not isinstance(actions, dict) or set(actions) != set(AGENTS):
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(f"actions must be a dict with keys {AGENTS} (one array per agent), got {got}")
        b = self._batch
        b.act_p[:] = _check_actions(actions["placement"], self.num_envs, b.n_dev, "actions['placement']")
        b.act_m[:] = _check_actions(actions["migration"], self.num_envs, b.n_dev, "actions['migration']", low=-1)
        infos = self._advance()
        obs, rew, term, trunc, acting = self._out()
        for a in AGENTS:
            infos[a] = {"acting": acting[a]}
        return obs, rew, term, trunc, infos

    _add_info = VectorEnv._add_info  # the "key"/"_key" layout of Gymnasium's vector infos

    def close(self) -> None:
        if not self.closed:
            for e in self.envs:
                e.close()
            self.closed = True
