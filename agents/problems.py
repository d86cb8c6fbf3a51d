"""The four problems behind one front door: :func:`make_env` and :func:`run_episode` for any policy.

A policy belongs to one problem (HSS placement/migration, FleetIO, RLAlloc, L-QoCo), known by its
base class; each problem declares here, in one :class:`ProblemAgents` entry of :data:`PROBLEMS`,
the env its policies play, how that env is built from a configuration, a workload and options,
and the loop that plays one episode of it. The two front doors dispatch on the policy's problem:

>>> policy = make_policy("rlalloc/dynamic")                    # any problem's policy
>>> env = make_env(policy, "rlalloc", "stg0-x4", episode_periods=50)
>>> run_episode(policy, env, seed=0).metrics["iops"]

``run_episode`` also plays the env a versioned module returns (``hss_v0.env()``,
``fleetio_v1.env()``: PettingZoo's AEC form in ``OrderEnforcingWrapper``; ``rlalloc_v0.env()``,
``lqoco_v0.env()``: Gymnasium's ``OrderEnforcing``): a PettingZoo AEC env made from a parallel env
is played through that parallel env (the loops of HSS and FleetIO are parallel), a Gymnasium
wrapper is stepped as it is, and the policy's ``reset`` gets the unwrapped env in every case. An
env of another problem, or no problem's env, is refused with what the policy needs.

The entries name modules and classes as strings, imported on use, so that playing one problem
imports no other problem's agents. The leaderboard's side of each problem (suites, metrics,
claims) is :mod:`hss_gym.benchmarks.problems`, whose jobs build and play their episodes through
these two doors.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any, Callable

from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.envs.lqoco.env import LQoCoEnv
from hss_gym.envs.rlalloc.env import RLAllocEnv
from hss_gym.envs.rlalloc.workloads import workload_options


@dataclass(frozen=True)
class ProblemAgents:
    """What the front doors need to know of one problem.

    * ``package``: its agents' module, with ``POLICIES`` and ``make_policy`` (the HSS problem's
      are :mod:`hss_gym.agents.base`'s own);
    * ``policy_class``, ``env_class``: ``"module:Class"`` of its policies' base class and of its
      env (what ``env.unwrapped`` is);
    * ``env_id``: its env's name in messages;
    * ``build(policy, config, workload, options)``: the env ``policy`` plays (see :func:`make_env`);
    * ``loop``: ``"module:function"`` of its episode loop, ``loop(policy, env, seed, **options)``.
    """

    name: str
    title: str
    env_id: str
    package: str
    policy_class: str
    env_class: str
    loop: str
    build: Callable[[Any, Any, Any, dict[str, Any]], Any]

    def env_type(self) -> type:
        """The class of the problem's env, unwrapped."""
        return _load(self.env_class)


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def _isinstance(obj: Any, spec: str) -> bool:
    """Whether ``obj`` is an instance of the class ``"module:Class"``, without importing it: no
    instance of a class exists before its module is imported."""
    module, _, attr = spec.partition(":")
    cls = getattr(sys.modules.get(module), attr, None)
    return cls is not None and isinstance(obj, cls)


def _with_profile(config: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the flash profile ``config`` (FleetIO's and RLAlloc's configuration is the
    SSD's profile: ``"fleetio"``, ``"fleetio-v0"``, ``"rlalloc"``, a JSON path, a ``FlashProfile``);
    no config leaves the env's default."""
    if config is None:
        return dict(options)
    if "profile" in options:
        raise ValueError(f"config {config!r} is the flash profile: give it as config or as profile=, not both")
    return {**options, "profile": config}


def _hss_env(policy: Any, config: Any, workload: Any, options: dict[str, Any]) -> Any:
    """The two-agent env with the options the policy needs, the caller's options winning; config
    ``perf_opt`` and workload ``ycsb-b`` by default."""
    return HSSParallelEnv("perf_opt" if config is None else config, "ycsb-b" if workload is None else workload,
                          **{**policy.env_options, **options})


def _fleetio_env(policy: Any, config: Any, workload: Any, options: dict[str, Any]) -> Any:
    """:func:`hss_gym.agents.fleetio.make_env` on the mix ``workload`` (``mix4`` by default): the
    policy's plan made for it and its sharing scheme over the caller's options."""
    return _load("hss_gym.agents.fleetio:make_env")(policy, "mix4" if workload is None else workload, **_with_profile(config, options))


def _rlalloc_env(policy: Any, config: Any, workload: Any, options: dict[str, Any]) -> Any:
    """The env of the streams ``workload`` names (``table1``, the default, or ``stg0-x<N>``), the
    options a policy needs (a trained model's card) over the caller's."""
    return RLAllocEnv(**{**_with_profile(config, options), **workload_options(workload),
                         **policy.env_options})


def _lqoco_env(policy: Any, config: Any, workload: Any, options: dict[str, Any]) -> Any:
    """The env on platform ``config`` (``oceanstor`` by default, or ``linux``) and the Table-4
    workload ``workload`` (``S-13`` by default), the options a policy needs over the caller's."""
    named = {k: v for k, v in (("config", config), ("workload", workload)) if v is not None}
    return LQoCoEnv(**named, **{**options, **policy.env_options})


#: The problems, HSS first; ``make_policy("<name>/<policy>")`` takes their names.
PROBLEMS: dict[str, ProblemAgents] = {p.name: p for p in (
    ProblemAgents("hss", "HSS", "hss/Harmonia-v0", "hss_gym.agents.base", "hss_gym.agents.base:Policy",
                  "hss_gym.envs.hss.env:HSSParallelEnv", "hss_gym.agents.base:run_hss_episode", _hss_env),
    ProblemAgents("fleetio", "FleetIO", "hss/FleetIO-v1", "hss_gym.agents.fleetio",
                  "hss_gym.agents.fleetio:FleetIOPolicy", "hss_gym.envs.fleetio.env:FleetIOEnv",
                  "hss_gym.agents.fleetio:run_episode", _fleetio_env),
    ProblemAgents("rlalloc", "RLAlloc", "hss/RLAlloc-v0", "hss_gym.agents.rlalloc",
                  "hss_gym.agents.rlalloc:AllocPolicy", "hss_gym.envs.rlalloc.env:RLAllocEnv",
                  "hss_gym.agents.rlalloc:run_episode", _rlalloc_env),
    ProblemAgents("lqoco", "L-QoCo", "hss/LQoCo-v0", "hss_gym.agents.lqoco",
                  "hss_gym.agents.lqoco:ControlPolicy", "hss_gym.envs.lqoco.env:LQoCoEnv",
                  "hss_gym.agents.lqoco:run_episode", _lqoco_env),
)}


def problem_of(policy: Any) -> ProblemAgents:
    """The problem whose policy ``policy`` is (by its base class); TypeError for a non-policy."""
    for problem in PROBLEMS.values():
        if _isinstance(policy, problem.policy_class):
            return problem
    bases = ", ".join(p.policy_class.replace(":", ".") for p in PROBLEMS.values())
    raise TypeError(f"{type(policy).__name__} is not a policy of any problem: a policy subclasses the base "
                    f"class of its problem's policies ({bases}; hss_gym.agents.make_policy makes one)")


def _problem_of_env(raw: Any) -> ProblemAgents | None:
    for problem in PROBLEMS.values():
        if _isinstance(raw, problem.env_class):
            return problem
    return None


def _parallel(env: Any) -> Any:
    """The parallel env a PettingZoo AEC env was made from (``parallel_to_aec``, under any
    ``OrderEnforcingWrapper``): what the versioned modules' ``env()`` and ``raw_env()`` return."""
    from pettingzoo.utils.conversions import parallel_to_aec_wrapper
    from pettingzoo.utils.wrappers import OrderEnforcingWrapper
    inner = env
    while isinstance(inner, OrderEnforcingWrapper):
        inner = inner.env
    if not isinstance(inner, parallel_to_aec_wrapper):
        raise TypeError(f"{type(env).__name__} is an AEC env not made from a parallel env: the episode loops "
                        f"step a parallel env (hss_v0.parallel_env(), fleetio_v1.parallel_env()); pass that")
    return inner.env


def _episode_env(problem: ProblemAgents, policy: Any, env: Any) -> Any:
    """The env ``problem``'s loop steps for ``env``: a PettingZoo AEC env's parallel env, any other
    env as it is; refused (TypeError, saying what the policy plays) when its unwrapped env is not
    the problem's."""
    from pettingzoo import AECEnv
    if isinstance(env, AECEnv):
        env = _parallel(env)
    raw = getattr(env, "unwrapped", env)
    if isinstance(raw, problem.env_type()):
        return env
    other = _problem_of_env(raw)
    what = (f"an env of the {other.title} problem ({other.env_id}, {type(raw).__name__})" if other is not None
            else f"a {type(raw).__name__}, the env of no problem")
    raise TypeError(f"policy {getattr(policy, 'name', type(policy).__name__)!r} is a policy of the {problem.title} "
                    f"problem: it plays {problem.env_id} ({problem.env_class.replace(':', '.')}), but the env is "
                    f"{what}; hss_gym.agents.make_env(policy, config, workload) builds the env a policy plays")


def make_env(policy: Any, config: Any = None, workload: Any = None, **options: Any) -> Any:
    """The env ``policy`` plays, of its problem, with the options it needs: the HSS two-agent env,
    FleetIO's, RLAlloc's or L-QoCo's, unwrapped (what ``parallel_env`` and ``raw_env`` give).

    ``config`` and ``workload`` as the problem's suites name them, None for its default:

    * HSS: a configuration (``"perf_opt"``, a device list or an ``HSSConfig``) and a workload (a
      name, a trace path or a ``Trace``): ``perf_opt``, ``ycsb-b``; the caller's options win over
      the policy's ``env_options`` (a caller may, say, give Sibyl the migration agent back);
    * FleetIO: the flash profile (``"fleetio"``, ``"fleetio-v0"``, ...) and a Table 5 mix
      (``mix4``); the policy plans for the mix first (SSDKeeper's partition search) and its sharing
      scheme wins over the caller's options;
    * RLAlloc: the flash profile (``"rlalloc"``) and ``table1`` (the default) or ``stg0-x<N>``
      (N copies of STG_0); a trained model's env options win;
    * L-QoCo: the platform (``"oceanstor"`` or ``"linux"``) and a Table 4 workload (``S-13``), a
      trace path or ``"adapt"``; the policy's ``env_options`` win.

    ``options`` are the env's constructor keywords."""
    problem = problem_of(policy)
    return problem.build(policy, config, workload, options)


def run_episode(policy: Any, env: Any, seed: int = 0, **options: Any) -> Any:
    """Play one episode of ``env`` (reset with ``seed``) with ``policy``, in the loop of the policy's
    problem; the result has ``.metrics`` (and ``.steps``).

    ``env`` is the policy's problem's env, wrapped or not (see the module docstring); an env of
    another problem raises TypeError naming both. ``options`` go to the problem's loop: HSS
    ``callback(step)`` every 10,000 steps (:func:`hss_gym.agents.base.run_hss_episode`), RLAlloc
    ``on_step(reward, info)``, L-QoCo ``keep_history``."""
    try:
        problem = problem_of(policy)
    except TypeError as e:
        if any(_isinstance(env, p.policy_class) for p in PROBLEMS.values()):
            raise TypeError(f"{e}; the policy comes first: run_episode(policy, env, seed)") from None
        raise
    return _load(problem.loop)(policy, _episode_env(problem, policy, env), seed, **options)
