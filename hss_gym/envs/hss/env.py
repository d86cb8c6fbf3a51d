"""The two-agent hybrid-storage environment (PettingZoo ``ParallelEnv``) of :mod:`hss_gym.hss_v0`.

Documented there (Description, Action Space, Observation Space, Rewards, Starting State, Episode
End, Arguments, Version History); get it with ``hss_v0.parallel_env(...)`` (or
``hss_gym.parallel_env(...)``, the same factory).
"""

from __future__ import annotations

import copy
import difflib
import inspect
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from hss_gym import render
from hss_gym.config import HSSConfig, make_config
from hss_gym.envs._contract import (ReplayCopy, check_agent_keys, check_discrete_action, check_int, check_real,
                                    env_closed, episode_over, not_reset)
from hss_gym.envs.hss.features import ROOM_FEATURES, feature_flags, feature_names, observation_space
from hss_gym.backends import _core
from hss_gym.hss import HSS, check_request_sizes
from hss_gym.metrics import RunMetrics, compute_metrics
from hss_gym.render import RENDER_MODES, check_render_mode
from hss_gym.workloads.registry import WorkloadSpec, canonical_name, check_count, check_seed, trace_file_spec
from hss_gym.workloads.trace import PAGE_SIZE, Trace
from hss_gym.workloads.readers import FORMAT_OPTIONS, LOAD_OPTIONS
from hss_gym.backends.sim import timing_params
from hss_gym.workloads.registry import get_trace
from hss_gym.backends.real import attach_real

AGENTS = ["placement", "migration"]
#: the placement agent's rewards: Harmonia's ``L_ref / L_t`` on the steps it acts (the default), or
#: ``-L_t / L_ref`` on every step (the episode's return is then minus the sum of all latencies)
REWARDS = ("ratio", "latency")
_ENV_KEYS = {"workload", "n_requests", "window", "backend", "paths", "backend_options", "max_steps", "raw_bins", "features",
             "reward_n", "reward_x", "penalty", "reward_ref_us", "migration", "render_mode"}


def check_options(config_options: dict[str, Any]) -> None:
    """Refuse a keyword that is neither an env option nor a configuration field, naming the one
    that was probably meant (``n_request=`` -> ``n_requests``) and both lists."""
    env_opts = sorted(p for p in inspect.signature(HSSParallelEnv.__init__).parameters
                      if p not in ("self", "config", "workload", "config_options")) + ["backend_options", "paths"]
    cfg_opts = sorted(set(HSSConfig.__dataclass_fields__) - {"meta", "devices", "name"}) + ["fast_fraction"]
    unknown = sorted(set(config_options) - set(cfg_opts) - {"backend_options", "paths"})
    if unknown:
        reader = [k for k in unknown if k in LOAD_OPTIONS or any(k in o for o in FORMAT_OPTIONS.values())]
        if reader:  # a trace file's reader options travel with its path
            raise ValueError(f"trace reader option(s) {reader} are no env options: give them with the trace "
                             f"file, workload={{'path': PATH, {reader[0]!r}: ...}} (docs/inputs.md)")
        near = difflib.get_close_matches(unknown[0], env_opts + cfg_opts, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown option(s) {unknown}{hint}; env options: {env_opts}; configuration options: "
                         f"{cfg_opts}")


class HSSParallelEnv(ReplayCopy, ParallelEnv):
    """``hss_v0.parallel_env``; see :mod:`hss_gym.hss_v0`. ``copy.deepcopy`` and ``pickle`` work by replay
    (:class:`hss_gym.envs._contract.ReplayCopy`; not with ``backend="uring"``)."""

    # render_fps: the playback rate of a recorded episode (one frame per request), not a real time
    metadata = {"name": "hss_v0", "render_modes": list(RENDER_MODES), "render_fps": 30,
                "is_parallelizable": True}

    def __init__(self, config: "str | HSSConfig | list[Any]" = "perf_opt", workload: WorkloadSpec = "ycsb-b",
                 *, n_requests: int = 100_000, window: tuple[int, int] | None = None, backend: str = "sim",
                 max_steps: int | None = None, raw_bins: bool = False, features: str = "harmonia",
                 reward_n: int = 50, reward_x: int = 10, penalty: float = 0.01,
                 reward_ref_us: float | None = None, migration: bool = True,
                 render_mode: str | None = None, room_feature: str = "fraction",
                 trace_window: "int | tuple[int, int] | None" = None, reward: str = "ratio",
                 **config_options: Any) -> None:
        if backend not in ("sim", "uring"):
            raise ValueError(f"unknown backend {backend!r}; available: 'sim', 'uring'")
        self._paths = config_options.pop("paths", None)
        self._backend_options = dict(config_options.pop("backend_options", None) or {})
        if backend == "uring" and not self._paths:
            raise ValueError("backend='uring' needs paths=[fast_path, ..., home_path] (files or block devices)")
        self.backend, self._real = backend, None
        check_render_mode(render_mode)
        reward_n, reward_x = check_int("reward_n", reward_n, 1), check_int("reward_x", reward_x, 1)
        if n_requests is not None:
            n_requests = check_count(n_requests)
        penalty = check_real("penalty", penalty, 0.0)
        if reward_ref_us is not None:
            reward_ref_us = check_real("reward_ref_us", reward_ref_us, 0.0, low_open=True)
        if max_steps is not None:
            max_steps = check_int("max_steps", max_steps, 1)
        window = check_window(window)
        trace_window = check_trace_window(trace_window)
        if trace_window is not None and window is not None:
            raise ValueError(f"window={window} and trace_window={trace_window} both choose the episode's slice of "
                             f"the trace: give one of them")
        self.trace_window = trace_window
        self._check_trace_window_workload(workload)
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(map(repr, REWARDS))}, got {reward!r}")
        if features not in ("harmonia", "sibyl"):
            raise ValueError(f"features must be 'harmonia' or 'sibyl', got {features!r}")
        check_options(config_options)
        self.cfg = make_config(config, **config_options)
        self.n_requests, self.window, self.max_steps = n_requests, window, max_steps
        self.reward = reward
        self._latency_reward = reward == "latency"
        self.raw_bins, self.kind, self.migration_enabled = raw_bins, features, migration
        if room_feature not in ROOM_FEATURES:
            raise ValueError(f"room_feature must be one of {', '.join(map(repr, ROOM_FEATURES))}, got {room_feature!r}")
        self.room_feature = room_feature
        self._feature_flags = feature_flags(features, room_feature)  # the C core's feature flags
        self.reward_n, self.reward_x, self.penalty = int(reward_n), int(reward_x), float(penalty)
        self.render_mode = render_mode
        n = self.cfg.n_devices
        self.feature_names = feature_names(n, features)
        self._obs_space = observation_space(n, features, raw_bins)
        self._obs_shape = self._obs_space.shape
        self._act_space = spaces.Discrete(n)
        self._curr_dev_index = self.feature_names.index("curr_dev")
        self._dev_scale = n - 1
        self._dtype = np.int64 if raw_bins else np.float32
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._mask = np.ones(n, dtype=np.int8)  # template: every infos dict gets its own copy
        self.reward_ref_us = reward_ref_us if reward_ref_us is not None else self._default_ref()
        self._workload_spec = _checked_workload(workload)
        self._trace: Trace | None = None
        self._hss: HSS | None = None
        self._seed = 0  # the episode's seed: the reset seed, or drawn from _rng by an unseeded reset
        # The env's generator (Gymnasium's convention): reset(seed=s) reseeds it with s, an unseeded
        # reset draws the next episode's seed from it; from entropy until the first seeded reset.
        self._rng = np.random.default_rng()
        self._source: tuple[Any, Trace] | None = None  # (spec, trace) of a trace workload, read once
        self.episode_window: tuple[int, int] | None = None  # the episode's (start, stop) in the trace read
        self._started = False  # reset() has run (step() before it raises)
        self._closed = False  # close() has run, and no reset() since
        self._ep: _core.Episode | None = None  # the episode's C stepper (reset() makes it; fast_step is its step)

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        self._check_agent(agent)
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        self._check_agent(agent)
        return self._act_space

    def _check_agent(self, agent: str) -> None:
        if agent not in AGENTS:
            raise KeyError(f"unknown agent {agent!r}; agents are {AGENTS}")

    def _default_ref(self) -> float:
        p = timing_params(self.cfg.devices[0], 1)
        return p["read_us"] + PAGE_SIZE / p["read_bw"]

    # ------------------------------------------------------------------ episode
    def _check_trace_window_workload(self, spec: WorkloadSpec) -> None:
        if self.trace_window is not None and isinstance(spec, str) and canonical_name(spec) is not None:
            raise ValueError(f"trace_window is for trace workloads (a file, 'catalogue:NAME' or a Trace); "
                             f"{spec!r} is generated: every unseeded reset() already draws a new episode of it")

    def _read(self, spec: WorkloadSpec, seed: int) -> Trace:
        """The workload's trace before any window: a registered name generated from ``seed``; a
        file (with its reader options) or ``catalogue:NAME`` read once (its first ``n_requests``), or a Trace as given, kept
        until the workload changes, since no seed changes it."""
        if isinstance(spec, str) and canonical_name(spec) is not None:
            return get_trace(spec, n=self.n_requests, seed=seed)
        if self._source is None or not (self._source[0] is spec or (isinstance(spec, (str, Mapping))
                                                                     and spec == self._source[0])):
            self._source = (spec, spec if isinstance(spec, Trace) else get_trace(spec, n=self.n_requests))
        return self._source[1]

    def _load_trace(self, spec: WorkloadSpec, seed: int) -> Trace:
        tr = self._read(spec, seed)
        if self.trace_window is not None:  # a window of the long trace, drawn from the episode's seed
            low, high = self.trace_window
            if high > len(tr):
                raise ValueError(f"trace_window {self.trace_window} asks for up to {high} requests; the trace has "
                                 f"{len(tr)} (n_requests={self.n_requests} of it were read; n_requests=None reads all)")
            rng = np.random.default_rng(seed)
            length = int(rng.integers(low, high + 1))
            start = int(rng.integers(0, len(tr) - length + 1))
            self.episode_window = (start, start + length)
            return tr.slice(start, start + length).validate()
        self.episode_window = self.window
        if self.window is not None:
            start, stop = self.window
            if stop > len(tr):
                raise ValueError(f"window ({start}, {stop}) is outside the trace's {len(tr)} requests "
                                 f"(stop must be <= {len(tr)})")
            tr = tr.slice(start, stop)
        return tr.validate()

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self._replay_reset(seed=seed, options=options)
        options = dict(options or {})
        unknown = set(options) - {"workload", "window"}
        if unknown:  # PettingZoo's API test passes arbitrary options: warn, do not fail
            warnings.warn(f"ignoring unknown reset option(s) {sorted(unknown)}; valid: 'workload', 'window'",
                          stacklevel=2)
        if "window" in options:
            window = check_window(options["window"], "reset option window")
            if window is not None and self.trace_window is not None:
                raise ValueError(f"reset option window={window}: this env draws its windows (trace_window="
                                 f"{self.trace_window}); give one of them")
            self.window = window
        if "workload" in options:
            options["workload"] = _checked_workload(options["workload"])
            self._check_trace_window_workload(options["workload"])
            self._source = None  # read it again
        if seed is not None:
            self._seed = check_seed(seed)
            self._rng = np.random.default_rng(self._seed)
        else:  # Gymnasium's convention: continue the env's generator, a new episode
            self._seed = int(self._rng.integers(2**63))
        spec = options.get("workload", self._workload_spec)
        self._workload_spec = spec
        self._trace = self._load_trace(spec, self._seed)
        check_request_sizes(self._trace, self.cfg)  # before any per-page work
        real = {}
        if self.backend == "uring":
            real = self._real_backend(self._trace)
        self._hss = HSS(self.cfg, footprint_pages=self._trace.footprint_pages(), seed=self._seed,
                        streams=self._trace.n_streams(), **real)
        tr = self._trace
        self._hss.reset(self._seed)
        self._end = len(tr) if self.max_steps is None else min(len(tr), self.max_steps)
        # Requests as Python tuples: indexing them is far cheaper than NumPy scalars per step.
        self._reqs = list(zip(tr.time_us[:self._end].tolist(), tr.op[:self._end].tolist(),
                              tr.offset[:self._end].tolist(), tr.size[:self._end].tolist()))
        self._latencies = np.empty(self._end, dtype=np.float64)  # written by the core's env_step
        self.agents = list(AGENTS)
        self._started = True
        self._closed = False
        self._actions = np.empty(2 * self._end, dtype=np.int64)  # the steps' (place, move): copies replay them
        obs = self._new_obs()
        core = self._hss.core
        needs, cand = core.env_begin(*self._reqs[0], *obs, self._feature_flags, self.migration_enabled,
                                     self._latencies)
        self._ep = _core.Episode(core, tr.time_us, tr.op, tr.offset, tr.size, self._end, needs, self._feature_flags,
                           self.migration_enabled, self.reward_ref_us, self.penalty, self.reward_n, self.reward_x,
                           self._latency_reward, obs, self._actions, np.empty, (self._obs_shape, self._dtype),
                           self.agents, None if self._real is None else self._real.complete)
        self.fast_step = self._ep.step  # type: ignore[method-assign]
        infos = self._infos(0.0, [], [], 0.0, 0, bool(needs), cand, -1 if cand < 0 else self._candidate_device())
        return {"placement": obs[0], "migration": obs[1]}, infos

    def _new_obs(self) -> tuple[np.ndarray, np.ndarray]:
        shape = self._obs_space.shape
        return np.empty(shape, dtype=self._dtype), np.empty(shape, dtype=self._dtype)

    def _infos(self, latency: float, credit: list[int], executed: list[int], move_delay: float, evicted: int,
               needs: bool, page: int, device: int) -> dict[str, dict[str, Any]]:
        # Fresh arrays per call (Gymnasium's data-reuse check; users keep what they are given).
        step, mask = self._ep.i, self._mask
        return {
            "placement": {"acting": needs, "action_mask": mask.copy(), "step": step,
                          "latency_us": latency, "evicted": evicted},
            "migration": {"acting": page >= 0, "action_mask": mask.copy(), "step": step,
                          "credit": credit, "executed": executed, "move_delay_us": move_delay,
                          "page": page, "device": device},
        }

    def _candidate_device(self) -> int:
        """The candidate's device, read back from the migration observation's curr_dev bin."""
        v = self._ep.obs[1].item(self._curr_dev_index)
        return int(v) if self.raw_bins else int(v * self._dev_scale + 0.5)

    def _action(self, actions: dict[str, Any], agent: str) -> int:
        return check_discrete_action(actions[agent], self._act_space.n, f"action for {agent!r}")

    def not_running(self, env_name: str = "hss/Harmonia-v0") -> Exception:
        """Why ``step()`` cannot run now (no agents): closed, ended, or never reset."""
        if self._closed:
            return env_closed(env_name)
        return episode_over(env_name) if self._started else not_reset(env_name)

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise self.not_running()
        if len(actions) != 2 or "placement" not in actions or "migration" not in actions:
            check_agent_keys(actions, AGENTS)
        # Both agents' actions are checked (also one that is not acting, whose action is ignored);
        # fast path for a plain in-range int, check_discrete_action for anything else.
        n, ep = self._act_space.n, self._ep
        place, move = actions["placement"], actions["migration"]
        no_cand = ep.cand < 0
        if type(place) is not int or not 0 <= place < n:
            place = self._action(actions, "placement")
        if (type(move) is not int or not 0 <= move < n) and not (move == -1 and no_cand):
            move = self._action(actions, "migration")  # -1: the "device" infos give when nothing is judged
        if not ep.needs:
            place = 0
        if no_cand:
            move = -1
        (obs_p, obs_m, r_place, r_migr, latency, evicted, credit, executed, move_delay, done, needs, page,
         dev) = self.fast_step(place, move)
        if done:
            self.agents = []
        infos = self._infos(latency, credit, executed, move_delay, evicted, needs, page, dev)
        if done:
            summary = self.metrics().to_dict()
            for a in AGENTS:
                infos[a]["metrics"] = summary
        return ({"placement": obs_p, "migration": obs_m}, {"placement": r_place, "migration": r_migr},
                {"placement": False, "migration": False}, {"placement": done, "migration": done}, infos)

    def fast_step(self, place: int, move: int) -> tuple[np.ndarray, np.ndarray, float, float, float, int, list[int],
                                                        list[int], float, bool, bool, int, int]:
        """:meth:`step` without PettingZoo's dicts, for a policy's own episode loop
        (:meth:`hss_gym.agents.base.Policy.run_fast`). ``place`` and ``move`` must be device
        indices (ignored for an agent that is not acting; ``place`` is checked where it is not).
        Returns, in order: the next observations (placement, migration), the rewards (placement,
        migration), then the infos: ``latency_us``, ``evicted``, ``credit``, ``executed``,
        ``move_delay_us``, whether the episode ended, and for the next request whether the
        placement agent acts, the migration candidate (``page``) and its ``device`` (-1, -1: none);
        the step index is :attr:`step_index`. The lists are fresh; the observations too, as
        :meth:`step`'s. After the episode's last step :attr:`agents` is empty.

        It is the episode's C stepper (``backends/core``: ``Episode``, vec.c's slot step: the
        simulator's step, the rewards and the observations in one call), set by :meth:`reset`;
        this method only says why there is none (the env is closed or was never reset)."""
        raise self.not_running("hss/Harmonia-v0 fast_step")

    # ------------------------------------------------------------------ extras
    # Privileged views for baselines that need more than the observation (heuristics reading the
    # raw request, K-SVM/RNN-HSS migrating in bulk, the Oracle reading the future trace).
    @property
    def hss(self) -> HSS:
        """The HSS being simulated (page metadata, critical-path moves)."""
        if self._hss is None:
            raise RuntimeError("call reset() first")
        return self._hss

    @property
    def trace(self) -> Trace:
        """The trace of the current episode."""
        if self._trace is None:
            raise RuntimeError("call reset() first")
        return self._trace

    @property
    def step_index(self) -> int:
        """Index in :attr:`trace` of the request the agents are observing now."""
        return self._ep.i if self._ep is not None else 0

    @property
    def request(self) -> tuple[float, int, int, int]:
        """The request the agents are observing now: (time_us, op, offset, size); time_us is its
        arrival in the trace."""
        return self._reqs[min(self.step_index, self._end - 1)]

    @property
    def requests(self) -> list[tuple[float, int, int, int]]:
        """The episode's requests, in order, as :attr:`request` gives them (``requests[i]`` is the
        one observed at step ``i``; the list itself, for a policy's own loop: do not modify)."""
        return self._reqs

    @property
    def issue_time_us(self) -> float:
        """When the request the agents are observing now is issued (its arrival, or later in a
        closed loop or a full host queue): the time from which device queues are seen."""
        return self.hss.issue_time_us

    def latencies(self) -> np.ndarray:
        """Latency (µs) of each request served so far in this episode, in trace order (a copy)."""
        return self._latencies[:self.step_index].copy()

    def metrics(self) -> RunMetrics:
        """Metrics of the requests served so far in this episode."""
        i = self.step_index
        if self._hss is None or i == 0:
            raise RuntimeError("no request has been served yet")
        return compute_metrics(self._latencies[:i], self._hss.counters())

    def state(self) -> np.ndarray:
        """Global state: both agents' observations concatenated."""
        if self._hss is None:
            raise RuntimeError("call reset() first")
        return np.concatenate(self._ep.obs)  # type: ignore[union-attr]

    def render(self) -> "str | np.ndarray | None":
        """The state as ``render_mode`` asks: ``"ansi"`` one text line (step, mean latency, pages
        per device, migration queue); ``"rgb_array"`` an image (:meth:`_render_rgb`); None
        without a render mode."""
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        if self._hss is None:
            return "hss-gym: not reset"
        c = self._hss.counters()
        used = ", ".join(f"{p.id} {u}/{cap if d < self.cfg.n_devices - 1 else '∞'}"
                         for d, (p, u, cap) in enumerate(zip(self.cfg.devices, c["used_pages"], self._hss.capacities)))
        i = self.step_index
        mean = self._latencies[:i].mean() if i else float("nan")
        return (f"step {i}/{self._end}  mean latency {mean:.1f} us  pages [{used}]  "
                f"queue {c['queue_length']}/{self.cfg.queue_size}  migrations {c['migrations']}  "
                f"evictions {c['evictions']}")

    #: requests shown in the rgb_array latency strip, and its log scale's ends (µs)
    RENDER_LATENCIES, RENDER_LAT_RANGE = 200, (1.0, 1e5)

    def _render_rgb(self) -> np.ndarray:
        """A 240 x 400 picture (taller with 5+ devices): one occupancy bar per device (used pages of its capacity; the
        last, unbounded device against the trace's footprint), the migration queue, and the
        latencies of the last :attr:`RENDER_LATENCIES` requests on a log scale (1 µs to 100 ms,
        red above 10 ms) - what one watches to see placement fill the fast device and
        evictions or migrations show up as latency."""
        if self._hss is None:
            return render.message("HSS-GYM: NOT RESET", 240, 400)
        n = self.cfg.n_devices
        cv = render.Canvas(max(240, 24 + 20 * n + 24 + 10 + 80), 400)  # taller with 5+ devices
        c = self._hss.counters()
        i = self.step_index
        mean = self._latencies[:i].mean() if i else float("nan")
        cv.text(8, 6, f"STEP {i}/{self._end}  MEAN {mean:.0f} US")
        footprint = max(self._trace.footprint_pages(), 1) if self._trace is not None else 1
        y = 24
        for d, (p, used, cap) in enumerate(zip(self.cfg.devices, c["used_pages"], self._hss.capacities)):
            last = d == n - 1
            denom = footprint if last else max(cap, 1)
            cv.text(8, y + 3, p.id[:4])
            cv.hbar(48, y, 240, 14, used / denom, render.color(d))
            cv.text(296, y + 3, f"{used}/{'FP' if last else cap}", scale=1)
            y += 20
        cv.text(8, y + 3, "MQ")
        cv.hbar(48, y, 240, 14, c["queue_length"] / max(self.cfg.queue_size, 1), render.DARK)
        cv.text(296, y + 3, f"{c['queue_length']}/{self.cfg.queue_size} MIGR {c['migrations']}", scale=1)
        y += 24
        k = self.RENDER_LATENCIES
        lat = self._latencies[max(0, i - k):i]
        cv.text(8, y, f"LATENCY, LAST {k} REQUESTS (LOG 1US-100MS)", scale=1)
        y += 10
        h = cv.height - y - 8
        frac = render.log_fraction(lat, *self.RENDER_LAT_RANGE)
        cv.strip(8, y, 384, h, frac, render.color(0), slots=k)
        slow = render.log_fraction(np.array([1e4]), *self.RENDER_LAT_RANGE)[0]
        cv.rect(8, y + h * (1 - slow), 384, 1, render.RED)  # the 10 ms line
        return cv.img

    def _real_backend(self, trace: Trace) -> dict[str, Any]:
        """The real backend (kept across resets: it owns the files), sized for ``trace``."""
        span = int((trace.offset + trace.size).max() + PAGE_SIZE - 1) // PAGE_SIZE if len(trace) else 1
        caps = self.cfg.page_capacities(trace.footprint_pages())
        if self._real is not None:
            try:
                attach_real(self._real, None, caps, None, self.cfg.host_queue_depth(trace.n_streams()))
                self._real.check_request(0.0, 0, span * PAGE_SIZE)
            except ValueError:  # too small for this trace: reopen our own files larger
                self._real.close()
                self._real = None
                self._backend_options["overwrite"] = True
        if self._real is None:
            self._real, _ = attach_real("uring", self._paths, caps,
                                        {"span_pages": span, **self._backend_options},
                                        self.cfg.host_queue_depth(trace.n_streams()))
        return {"backend": self._real}

    def close(self) -> None:
        if self._real is not None:
            self._real.close()
            self._real = None
        self._hss = None
        self._ep = None
        self.__dict__.pop("fast_step", None)  # the class's: it says the env is closed
        self.agents = []
        self._closed = True

    # ------------------------------------------------------------------ copies (ReplayCopy)
    def _replay_snapshot(self) -> dict[str, Any]:
        # What reset() starts from; a Trace is never modified, so it is shared, not copied.
        return {"_seed": self._seed, "window": self.window, "_workload_spec": self._workload_spec,
                "_rng": copy.deepcopy(self._rng)}

    def _replay_tail(self) -> list[tuple[str, tuple, dict[str, Any]]]:
        i = self.step_index
        return [("_replay_fast_steps", (self._actions[:2 * i].tobytes(),), {})] if self._started and i else []

    def _replay_fast_steps(self, packed: bytes) -> None:
        """Replay :meth:`fast_step` calls recorded as (place, move) int64 pairs."""
        acts = np.frombuffer(packed, dtype=np.int64).tolist()
        step = self.fast_step
        for k in range(0, len(acts), 2):
            step(acts[k], acts[k + 1])

    def _replay_check(self) -> None:
        if self.backend != "sim":
            raise TypeError(f"hss/Harmonia-v0 with backend={self.backend!r} drives real devices and cannot be "
                            f"copied or pickled; use backend='sim'")

    def _replay_fingerprint(self) -> Any:
        if self._hss is None:
            return None
        return (self.step_index, len(self.agents), repr(sorted(self._hss.counters().items())))


def _checked_workload(workload: WorkloadSpec) -> WorkloadSpec:
    """``workload`` as the env keeps it: a trace file with reader options (``{"path": ..., "format":
    ...}``) checked now (a misspelt option fails before the first reset) and copied (a later change
    to the caller's dict does not change the env's workload); anything else as given."""
    if isinstance(workload, Mapping):
        trace_file_spec(workload)
        return dict(workload)
    return workload


def check_trace_window(trace_window: Any) -> tuple[int, int] | None:
    """``trace_window`` (requests per episode: ``N``, or ``(low, high)`` for a length drawn in
    [low, high]) as ``(low, high)``, or None."""
    if trace_window is None:
        return None
    if isinstance(trace_window, (int, np.integer)) and not isinstance(trace_window, (bool, np.bool_)):
        n = check_int("trace_window", trace_window, 1)
        return n, n
    if isinstance(trace_window, (str, bytes)) or not hasattr(trace_window, "__len__") or len(trace_window) != 2:
        raise ValueError(f"trace_window must be None, N (requests per episode) or (low, high) (a length drawn in "
                         f"[low, high]), got {trace_window!r}")
    low = check_int("trace_window low", trace_window[0], 1)
    high = check_int("trace_window high", trace_window[1], 1)
    if high < low:
        raise ValueError(f"trace_window ({low}, {high}) is reversed: low must be <= high")
    return low, high


def check_window(window: Any, name: str = "window") -> tuple[int, int] | None:
    """``window`` as ``(start, stop)`` ints with ``0 <= start < stop`` (a slice of the trace), or
    None; a reversed or empty window is reported as such."""
    if window is None:
        return None
    if isinstance(window, (str, bytes)) or not hasattr(window, "__len__") or len(window) != 2:
        raise ValueError(f"{name} must be None or (start, stop), a slice of the trace, got {window!r}")
    start = check_int(f"{name} start", window[0], 0)
    stop = check_int(f"{name} stop", window[1], 0)
    if stop < start:
        raise ValueError(f"{name} ({start}, {stop}) is reversed: start must be < stop; did you mean ({stop}, {start})?")
    if stop == start:
        raise ValueError(f"{name} ({start}, {stop}) is empty: start must be < stop")
    return start, stop
