"""The HSS problem's policies, loop and registry, over the protocol every problem shares
(:mod:`hss_gym.agents.protocol`, re-exported here).

Every policy of every problem (HSS placement/migration, FleetIO, RLAlloc, L-QoCo) subclasses
:class:`BasePolicy` and is driven the same way, by ``run_episode(policy, env, seed)`` in the loop
of its problem (:mod:`hss_gym.agents.problems`, which also builds any policy's env:
``make_env(policy, config, workload)``):

>>> obs, infos = env.reset(seed=seed); policy.reset(env, seed)
>>> while running:              # PettingZoo: env.agents; Gymnasium: not (terminated or truncated)
...     obs, rewards, terminated, truncated, infos = env.step(policy.act(obs, infos))
...     if policy.learns:
...         policy.observe(obs, rewards, infos)          # learners train here

* ``reset(env, seed=None)``: a new episode of ``env`` starts (after ``env.reset(seed=seed)``);
  learned state persists unless the policy clears it.
* ``act(observations, infos) -> actions``: the env's latest observations and infos (from
  ``reset`` or the last ``step``), in the env's own form; the actions to step with.
* ``observe(observations, rewards, infos)``: the outcome of the last ``act``, as ``step``
  returned it (next observations, rewards, infos). A learner that needs the observation or action
  before it keeps them from its ``act``; the episode's end is the loop's business (each env puts
  what a learner may need about it in its infos). The loops skip ``observe`` unless ``learns``.

What differs between problems is the form of the values, which is the env's: the multi-agent envs
(HSS's two agents, FleetIO's vSSDs) pass dicts keyed by agent and take a dict of actions; RLAlloc
and L-QoCo pass one observation, one float reward and one info dict, and take one action (an
L-QoCo policy may also return a float: the next admitted rate in MB/s). Each problem's base class
adds what its env needs around the protocol: :class:`Policy` here (``agents``, ``env_options``,
``run_fast``), ``FleetIOPolicy`` (``env_options``, ``prepare`` to plan before the env is built),
``AllocPolicy``, ``ControlPolicy`` (``env_options``), in ``agents/<problem>/``. A subclass whose
``reset``, ``act`` or ``observe`` cannot be called as the protocol calls it (e.g. FleetIO's former
``act(obs)``, RLAlloc's former ``observe(obs, action, reward, next_obs, done)``) is refused when
it is defined.

The HSS problem: a :class:`Policy` acts for one or both agents of the two-agent env
(:class:`hss_gym.envs.hss.env.HSSParallelEnv`), driven by :func:`run_hss_episode`.

* ``act`` returns actions for the agents in :attr:`Policy.agents`; :func:`run_hss_episode` fills the
  others in (placement on device 0, migration "stay"), so a placement-only policy needs no
  migration logic. :class:`Combined` pairs a placement policy with a migration policy.
* ``observe`` sees every step's rewards, including the migration agent's delayed reward and its
  ``infos["migration"]["credit"]`` (the steps it pays for).
* ``env_options`` are the environment options a policy needs (Sibyl: its own features and no
  migration agent; Fast-Only: a fast device that holds everything).
* Policies may read privileged state through the env they get in ``reset`` (``env.request``,
  ``env.issue_time_us``, ``env.hss``, ``env.trace``): heuristics that look at raw request fields, baselines that migrate
  in bulk on the critical path, and the Oracle, which reads the future.

Policies are made by name (:data:`POLICIES`, :func:`make_policy`) or from a ``"module:factory"``
string, the factory called with keyword arguments. The same two calls serve every problem:
``make_policy("fleetio/ssdkeeper")``, ``make_policy("rlalloc/static")``,
``make_policy("lqoco/coto")`` (a bare name is an HSS policy; ``"hss/harmonia"`` is the same as
``"harmonia"``), ``make_env(policy, config, workload)`` builds the env of any of them and
``run_episode(policy, env, seed)`` plays one episode of any of the four environments, wrapped or
not, with the loop of the policy's problem, returning a result with ``.metrics``
(:mod:`hss_gym.agents.problems`).
"""

from __future__ import annotations

import difflib
import gc
import importlib
import importlib.util
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from hss_gym.agents.models import load_model_policy
from hss_gym.agents.problems import PROBLEMS, make_env, run_episode  # noqa: F401  (the front doors, here too)
# the policy protocol, defined below the registry (hss_gym.agents.models builds on it too)
from hss_gym.agents.protocol import (MODEL_FORMATS, PROTOCOL, BasePolicy, Infos, Obs,  # noqa: F401
                                     Policy, overridden, stay_action)
from hss_gym.envs.hss.env import AGENTS, HSSParallelEnv


class Combined(Policy):
    """A placement policy and a migration policy acting together (e.g. Sibyl + K-SVM)."""

    def __init__(self, placement: Policy, migration: Policy, name: str | None = None) -> None:
        if "placement" not in placement.agents:
            raise ValueError(f"{placement.name} does not act for the placement agent")
        if "migration" not in migration.agents:
            raise ValueError(f"{migration.name} does not act for the migration agent")
        self.placement, self.migration = placement, migration
        self.name = name or f"{placement.name}+{migration.name}"  # type: ignore[misc]
        opts = dict(migration.env_options)
        opts.update(placement.env_options)
        opts.pop("migration", None)  # the migration policy is here: keep the migration agent on
        self.env_options = opts  # type: ignore[misc]
        self.learns = placement.learns or migration.learns  # type: ignore[misc]

    def reset(self, env: HSSParallelEnv, seed: int | None = None) -> None:
        super().reset(env, seed)
        self.placement.reset(env, seed)
        self.migration.reset(env, seed)

    def act(self, observations: Obs, infos: Infos) -> dict[str, int]:
        return {"placement": self.placement.act(observations, infos)["placement"],
                "migration": self.migration.act(observations, infos)["migration"]}

    def observe(self, observations: Obs, rewards: dict[str, float], infos: Infos) -> None:
        if self.placement.learns:
            self.placement.observe(observations, rewards, infos)
        if self.migration.learns:
            self.migration.observe(observations, rewards, infos)

    def close(self) -> None:
        self.placement.close()
        self.migration.close()


class InvalidActionError(ValueError):
    """A policy returned an action the environment cannot take."""


@dataclass
class EpisodeResult:
    """One episode of a policy: its metrics and how long it took. ``metrics`` is a
    :class:`~hss_gym.metrics.RunMetrics` for the HSS problem and the env's metrics dict for FleetIO
    and RLAlloc; ``curves`` holds per-step series where the loop records them (FleetIO: the mean
    reward over vSSDs per window; RLAlloc: the reward per period)."""

    policy: str
    metrics: Any
    steps: int
    wall_s: float
    curves: dict[str, list[float]] = field(default_factory=dict)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else float("inf")


def _complete(policy: Policy, actions: Any, infos: Infos) -> dict[str, int]:
    if not isinstance(actions, dict):
        raise InvalidActionError(f"policy {policy.name!r} returned {type(actions).__name__}, "
                                 f"expected a dict of actions keyed by agent")
    if "placement" not in actions:
        actions["placement"] = 0
    if "migration" not in actions:
        actions["migration"] = stay_action(infos)
    return actions


def run_hss_episode(policy: Policy, env: Any, seed: int = 0,
                    callback: Callable[[int], None] | None = None) -> EpisodeResult:
    """The HSS problem's episode loop: run ``policy`` for one episode of ``env`` (the two-agent
    env, or a parallel wrapper of it; reset with ``seed``); the result's ``metrics`` are the env's
    :class:`~hss_gym.metrics.RunMetrics`. :func:`run_episode` calls it for an HSS policy.

    ``callback(step)`` is called every 10,000 steps (progress bars). An invalid action raises
    :class:`InvalidActionError` naming the policy.

    A policy with its own loop (:meth:`Policy.run_fast`, e.g. Harmonia and Sibyl: the same
    decisions and updates without the per-step dicts) runs the episode in it, on the unwrapped
    env only (a wrapper's step would be skipped).

    Python's cyclic garbage collector is paused for the episode: each step allocates a few dicts
    and tuples, which reference counting frees, and the collections they trigger would scan the
    whole heap (NumPy, PyTorch) for nothing; the few objects an episode leaves in cycles are
    collected after it (measured in docs/performance.md).
    """
    start = time.perf_counter()
    raw = env.unwrapped
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        obs, infos = env.reset(seed=seed)
        policy.reset(raw, seed)
        # only on this env's own step: a subclass that changes step() gets the generic loop
        fast = (policy.run_fast(env, obs, infos, callback)
                if env is raw and type(env).step is HSSParallelEnv.step else None)
        if fast is not None:
            return EpisodeResult(policy.name, env.metrics(), fast, time.perf_counter() - start)
        learns, full = policy.learns, set(policy.agents) == set(AGENTS)
        act, observe, step = policy.act, policy.observe, env.step
        n = 0
        while env.agents:
            actions = act(obs, infos)
            if not full or type(actions) is not dict:
                actions = _complete(policy, actions, infos)
            try:
                obs, rewards, _, _, infos = step(actions)
            except (TypeError, ValueError, KeyError) as e:
                raise InvalidActionError(f"policy {policy.name!r} returned an invalid action at step "
                                         f"{n}: {e}") from e
            if learns:
                observe(obs, rewards, infos)
            n += 1
            if callback is not None and n % 10_000 == 0:
                callback(n)
    finally:
        if gc_was_on:
            gc.enable()
    return EpisodeResult(policy.name, raw.metrics(), n, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# Registry: name -> "module:factory". Modules are imported on demand, so listing policies or
# making a heuristic never imports torch.
POLICIES: dict[str, str] = {
    "fast_only": "hss_gym.agents.heuristics:FastOnly",
    "slow_only": "hss_gym.agents.heuristics:SlowOnly",
    "random": "hss_gym.agents.heuristics:RandomPolicy",
    "cde": "hss_gym.agents.heuristics:CDE",
    "hps": "hss_gym.agents.heuristics:HPS",
    "fit_first": "hss_gym.agents.rules:FitFirst",
    "fit_first_reuse": "hss_gym.agents.rules:fit_first_reuse",
    "fit_first_reuse_ra": "hss_gym.agents.rules:fit_first_reuse_ra",
    "fit_first_ref": "hss_gym.agents.rules:fit_first_ref",
    "archivist": "hss_gym.agents.archivist:Archivist",
    "k_svm": "hss_gym.agents.ksvm:KSVM",
    "rnn_hss": "hss_gym.agents.rnn_hss:RNNHSS",
    "sibyl": "hss_gym.agents.sibyl:sibyl",
    "sibyl_paper": "hss_gym.agents.sibyl:sibyl_paper",
    "sibyl+k_svm": "hss_gym.agents.ksvm:sibyl_ksvm",
    "sibyl+rnn_hss": "hss_gym.agents.rnn_hss:sibyl_rnn_hss",
    "cde+rl_migr": "hss_gym.agents.combos:cde_rl_migr",
    "sapm": "hss_gym.agents.sapm:SAPM",
    "harmonia": "hss_gym.agents.harmonia:harmonia",
    "harmonia_paper": "hss_gym.agents.harmonia:harmonia_paper",
    "oracle": "hss_gym.agents.oracle:Oracle",
    "oracle_paid": "hss_gym.agents.oracle:PaidOracle",
}


#: The problems besides HSS, whose policies :func:`make_policy` makes from ``"<problem>/<name>"``
#: with their own packages' ``make_policy`` (:data:`hss_gym.agents.problems.PROBLEMS`).
_OTHERS = tuple(p for p in PROBLEMS if p != "hss")


def list_policies(problem: str = "hss") -> list[str]:
    """Names of the built-in policies of ``problem`` ("hss", "fleetio", "rlalloc", "lqoco"), as
    :func:`make_policy` takes them (the other problems' with their prefix), or of every problem
    (``"all"``)."""
    if problem == "hss":
        return list(POLICIES)
    if problem == "all":
        return [*POLICIES, *(n for p in _OTHERS for n in list_policies(p))]
    if problem not in _OTHERS:
        raise ValueError(f"unknown problem {problem!r}; valid: {', '.join(PROBLEMS)}, all")
    names = list(importlib.import_module(PROBLEMS[problem].package).POLICIES)
    if problem == "rlalloc":
        names.append("rlalloc_dqn")  # made on demand (PyTorch)
    return [f"{problem}/{n}" for n in names]


def _takes_seed(factory: Callable[..., Policy]) -> bool:
    try:
        return "seed" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): do not guess
        return False


#: The optional packages policies import, and the extra of hss-gym that installs each.
EXTRAS: dict[str, str] = {"torch": "agents", "sklearn": "agents", "matplotlib": "agents",
                          "stable_baselines3": "sb3", "torchrl": "torchrl", "ray": "rllib"}

#: The built-in policies that need an optional package (a PyTorch or scikit-learn model), by the
#: modules they import; every other one, the reference agents included, runs on the core install.
#: (A trained model, ``"sb3:PATH"`` or ``"torch:PATH"``, needs torch to read its weights.)
NEEDS: dict[str, tuple[str, ...]] = {
    "archivist": ("torch",), "k_svm": ("sklearn",), "rnn_hss": ("torch",),
    "sibyl+k_svm": ("sklearn",), "sibyl+rnn_hss": ("torch",), "rlalloc/rlalloc_dqn": ("torch",),
}


def missing_extra(spec: str) -> str | None:
    """Why the built-in policy ``spec`` cannot run on this install ("needs the 'agents' extra:
    pip install ..."), or None when it can."""
    needs = NEEDS.get(spec) or (("torch",) if spec.partition(":")[0].rpartition("/")[2] in ("sb3", "torch") else ())
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    extras = sorted({EXTRAS[m] for m in missing})
    return (f"needs {', '.join(missing)}, the {', '.join(repr(e) for e in extras)} extra: "
            f"pip install 'hss-gym[{','.join(extras)}]'")


def _import_error(spec: str, e: ImportError) -> ValueError:
    """What a user reads when a policy's module cannot be imported: which extra brings it."""
    missing = (e.name or "").split(".")[0]
    hint = (f"; policy {spec!r} needs the {EXTRAS[missing]!r} extra: pip install 'hss-gym[{EXTRAS[missing]}]'"
            if missing in EXTRAS else "")
    return ValueError(f"policy {spec!r}: cannot import module {e.name or '?'!r}: {e}{hint}")


def load_factory(spec: str) -> Callable[..., Policy]:
    """The factory for a registered name or a ``"module:factory"`` string."""
    if ":" in spec:
        module, _, attr = spec.partition(":")
    elif spec in POLICIES:
        module, _, attr = POLICIES[spec].partition(":")
    else:
        others = [n for problem in _OTHERS for n in list_policies(problem)]
        near = ([n for n in others if n.partition("/")[2] == spec]  # another problem's policy
                or difflib.get_close_matches(spec, [*POLICIES, *others], n=1))
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown policy {spec!r}{hint}; valid: {', '.join(POLICIES)}, "
                         f"or 'module:factory'")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise _import_error(spec, e) from e
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise ValueError(f"policy {spec!r}: module {module!r} has no attribute {attr!r}") from None


def make_policy(spec: "str | Policy", *, seed: int | None = None, **kwargs: Any) -> Any:
    """A policy from a registered name, a ``"module:factory"`` string, or a policy (returned).
    ``"fleetio/<name>"``, ``"rlalloc/<name>"`` and ``"lqoco/<name>"`` make another problem's
    policy (:func:`list_policies`), with ``kwargs``. ``"sb3:PATH.zip"``, ``"torch:PATH.pt"`` and
    ``"rllib:DIR"`` play a trained model greedily (:mod:`hss_gym.agents.models`): an HSS env's as
    they are, an ``hss/RLAlloc-v0`` or ``hss/LQoCo-v0`` model with its problem's prefix
    (``"rlalloc/sb3:PATH.zip"``).

    ``seed`` seeds the policy's own randomness (a learner's initial network, exploration, replay
    sampling) and is given to factories that have a ``seed`` parameter; a policy without one is
    random only through the episode seed its :meth:`Policy.reset` gets (or not at all). The
    leaderboard passes each run's seed, so a learner's runs over seeds are independent even on one
    fixed trace."""
    if isinstance(spec, Policy):
        return spec
    fmt = spec.partition(":")[0]
    if fmt in MODEL_FORMATS:  # a trained model's file, not a module
        return load_model_policy(spec)
    problem, _, name = spec.partition("/")
    if "/" in spec and (":" not in spec or name.partition(":")[0] in MODEL_FORMATS):
        if problem in _OTHERS:
            maker = importlib.import_module(PROBLEMS[problem].package).make_policy
            if seed is not None and _takes_seed(maker):
                kwargs["seed"] = seed
            try:
                return maker(name, **kwargs)
            except ImportError as e:
                raise _import_error(spec, e) from e
        if problem != "hss":
            raise ValueError(f"unknown problem {problem!r} in policy {spec!r}; valid: hss, "
                             f"{', '.join(_OTHERS)} (a name without a problem is an HSS policy)")
        spec = name
        if name.partition(":")[0] in MODEL_FORMATS:
            return make_policy(spec)
    factory = load_factory(spec)
    if seed is not None and _takes_seed(factory):
        kwargs["seed"] = seed
    try:
        policy = factory(**kwargs)
    except ImportError as e:  # a combination imports its parts' modules when made
        raise _import_error(spec, e) from e
    if not isinstance(policy, Policy):
        raise TypeError(f"policy factory {spec!r} returned {type(policy).__name__}, not a "
                        f"hss_gym.agents.Policy")
    return policy
