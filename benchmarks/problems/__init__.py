"""The problems the leaderboard harness knows, through one small registry (SPEC §14).

hss-gym holds five RL problems of storage systems (HSS placement/migration, FleetIO, RLAlloc,
L-QoCo, ...). The harness (``hss-gym bench | report | validate``) is the same for all of them: it
expands a suite into jobs, runs them in parallel with incremental, provenance-stamped results,
and writes reports with confidence intervals. What differs per problem is described by one
:class:`Problem` object, defined as ``PROBLEM`` in one module of this package
(``benchmarks/problems/<name>.py``); a suite names it with ``"problem": "<name>"``. A problem
outside hss-gym is ``"problem": "mypkg.mod:PROBLEM"``. Adding a problem adds a file here (plus its
env, agents and suite); it never edits the harness.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hss_gym.backends.flash import load_profile

#: the problem of suites that do not name one (the Harmonia/Sibyl HSS problem)
DEFAULT_PROBLEM = "hss"
#: the problems whose policies include a trained model's file (``"sb3:PATH.zip"``, ``"torch:PATH.pt"``,
#: ``"rllib:DIR"``; :mod:`hss_gym.agents.models`)
MODEL_PROBLEMS = ("hss", "rlalloc", "lqoco")


@dataclass(frozen=True)
class Metric:
    """A number a problem's runs report (``record["metrics"][key]``, after :attr:`Problem.derive`)."""

    key: str
    label: str
    higher_is_better: bool
    digits: int = 3
    pct: bool = False  #: printed as a percentage (the value is already in percent)
    #: ``(policy, key)``: the metric is not read from the runs but computed by the report from
    #: the track's means, ``100 * mean(policy's key) / mean(this policy's key)`` over the same
    #: cells (e.g. % of Oracle from the normalised mean latency, so it follows a ranking on
    #: ``key``); it is not shown for the references (Fast-Only "% of Oracle" means nothing)
    relative_to: tuple[str, str] | None = None


@dataclass(frozen=True)
class NoHarm:
    """How a problem judges "do no harm" against the policy that does nothing (HSS: Slow-Only,
    which never uses the fast device). Per workload (and configuration) of a track and per key
    of ``keys`` (each lower is better: e.g. the mean latency, then its tails), a policy's mean of
    the key over the seeds is divided by ``policy``'s over the same seeds; the report shows the
    geometric mean of these ratios over the track's workloads (below 1 = better than doing
    nothing) and how many workloads have a ratio above ``tolerance`` (harm: e.g. more than 2%
    slower than doing nothing), two columns per key.

    ``names`` gives each key's name in its columns' labels: ``"p99"`` labels ``p99 / <policy>``
    and ``p99 harm``; the empty name, the first key's, labels ``geo. / <policy>`` and ``harm``."""

    policy: str
    keys: tuple[str, ...]
    names: tuple[str, ...] = ("",)
    tolerance: float = 1.02

    def __post_init__(self) -> None:
        if not self.keys or len(self.names) != len(self.keys):
            raise ValueError(f"NoHarm needs one name per key, got keys {self.keys} and names {self.names}")

    def columns(self) -> list[tuple[str, str, str]]:
        """``(key, ratio label, harm label)`` per key, in order."""
        return [(k, f"{n} / {self.policy}" if n else f"geo. / {self.policy}", f"{n} harm" if n else "harm")
                for k, n in zip(self.keys, self.names)]


@dataclass(frozen=True)
class Problem:
    """What the harness needs to know about one problem.

    * ``run_job(job) -> {"metrics": {...}, "steps": int, "provenance": {...}}`` runs one fresh
      policy for one episode; a job has ``suite, problem, track, workload, config, policy, seed,
      options`` (and ``n_requests`` for the HSS problem). Optional extra keys of the result are
      stored on the record: ``curves`` (name -> list of floats, e.g. a learning curve) and
      ``latency_quantiles``. It raises with a clear message on error and is deterministic.
    * ``metrics[0]`` ranks the leaderboard; ``references`` are idealised or clairvoyant policies
      shown apart from the ranking; ``required`` policies are part of every suite of the problem
      (e.g. the normalisation reference); ``learned`` policies must run several seeds.
    * ``derive(cell)`` turns the raw metrics of the runs of one (workload, config, seed) cell,
      ``{policy: metrics}``, into the metrics the report shows (e.g. normalised to a reference).
    * ``claims(records)`` evaluates the papers' published claims against ok result records, in
      one shape for every problem: ``[{"id", "claim", "paper", "where", "rule", "ours",
      "agree": True | False | None}]``. The claims are data (``benchmarks/published/<name>.json``)
      judged by the shared evaluator: ``claims=claims_of("<name>")``
      (:mod:`hss_gym.benchmarks.claims`).
    * ``figures(tracks)`` adds problem-specific figures to the HTML report.
    * ``no_harm`` (:class:`NoHarm`): the do-nothing policy every policy is judged against per
      workload, on one or more metrics (geometric mean of the ratios, workloads with harm),
      shown when it ran.
    * ``rules``: simple policies built from the reference agents' parts with nothing learned
      (what learning must beat); ``reference_agents``: the problem's own learned agents. With
      ``no_harm``, the report names the best rule and the best baseline (every other ranked
      policy but the do-nothing one) and each reference agent's score as a ratio to them.
    * ``cell_tables``: raw run metrics shown per policy and (workload, configuration) as they are
      (counts, say, that no metric normalises), each in its own table.
    * ``precheck(record)`` says why a recorded run cannot be re-run identically here (its
      trace or configuration hashes differently), or returns None; ``validate`` uses it.
    * ``check_options(options, workloads)`` checks a track's ``options`` before anything runs
      (``workloads``: the track's, names or trace paths) and raises ValueError naming the bad
      option; the suite loader adds the suite and track.
    """

    name: str
    title: str
    run_job: Callable[[dict[str, Any]], dict[str, Any]]
    policies: Callable[[], Sequence[str]]
    metrics: tuple[Metric, ...]
    learned: frozenset[str] = frozenset()
    references: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    check_workload: Callable[[str], None] | None = None
    check_config: Callable[[str], None] | None = None
    derive: Callable[[dict[str, dict[str, Any]]], dict[str, dict[str, Any]]] | None = None
    claims: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    figures: Callable[[list[Any]], list[tuple[tuple[str, str], str, str]]] | None = None
    precheck: Callable[[dict[str, Any]], str | None] | None = None
    check_options: Callable[[dict[str, Any], Sequence[str]], None] | None = None
    description: str = ""
    #: ``(curve name, x-axis label with its unit, x of the first point, x between points)`` per
    #: curve a run records (``curves``): e.g. ``(name, "requests served", 1000, 1000)`` for a
    #: mean latency per 1,000-request window. Other curves are plotted against the point number.
    curve_axes: tuple[tuple[str, str, float, float], ...] = ()
    no_harm: NoHarm | None = None
    rules: tuple[str, ...] = ()
    reference_agents: tuple[str, ...] = ()
    #: ``(key, meaning)`` of raw run metrics (``record["metrics"][key]``) the report tabulates per
    #: policy and (workload, configuration), mean over the seeds: e.g. the HSS's migrations per run
    cell_tables: tuple[tuple[str, str], ...] = ()

    def curve_axis(self, name: str) -> tuple[str, float, float]:
        """(x label, first x, x step) of the curve ``name``."""
        for n, label, start, step in self.curve_axes:
            if n == name:
                return label, start, step
        return "point of the curve (no unit recorded)", 1, 1

    @property
    def primary(self) -> Metric:
        """The metric the leaderboard ranks on."""
        return self.metrics[0]

    def metric(self, key: str) -> Metric:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(f"problem {self.name!r} has no metric {key!r}; it has {[m.key for m in self.metrics]}")

    def check_policy(self, spec: str) -> None:
        """Raise ValueError (listing the valid names) for an unknown policy. ``module:factory``
        specs are not imported here: one that fails to import is a failed run, recorded."""
        names = list(self.policies())
        fmt, _, path = spec.partition(":")
        if fmt in ("sb3", "torch", "rllib") and self.name in MODEL_PROBLEMS:
            if not (os.path.isdir(path) if fmt == "rllib" else os.path.isfile(path)):
                raise ValueError(f"policy {spec!r}: {'checkpoint folder' if fmt == 'rllib' else 'model file'} "
                                 f"{path} not found")
        elif fmt in ("sb3", "torch", "rllib") and self.name == "fleetio":
            raise ValueError(f"policy {spec!r}: the fleetio problem plays no trained model file (the hss, rlalloc "
                             f"and lqoco problems do)")
        if ":" in spec or spec in names:
            return
        near = difflib.get_close_matches(spec, names, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown {self.name} policy {spec!r}{hint}; valid: {', '.join(names)}, "
                         f"or 'module:factory'")


def list_problems() -> list[str]:
    """The problems of this installation (the modules of this package)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


@functools.lru_cache(maxsize=None)
def get_problem(name: str | None = None) -> Problem:
    """The problem called ``name`` (default ``hss``), or ``module:attribute`` for one outside."""
    name = name or DEFAULT_PROBLEM
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            obj = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"cannot load problem {name!r}: {e}") from None
    elif name in list_problems():
        obj = importlib.import_module(f"{__name__}.{name}").PROBLEM
    else:
        near = difflib.get_close_matches(name, list_problems(), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown problem {name!r}{hint}; valid: {', '.join(list_problems())}, "
                         f"or 'module:PROBLEM'")
    if not isinstance(obj, Problem):
        raise ValueError(f"problem {name!r} is a {type(obj).__name__}, not a hss_gym.benchmarks.problems.Problem")
    return obj


def flash_profile_precheck(rec: dict[str, Any]) -> str | None:
    """``precheck`` of the problems on the flash SSD model (FleetIO, RLAlloc): a run re-runs
    identically only on the device it was made on, so its flash profile (name and scale, as
    recorded) must hash here as it did then (:meth:`FlashProfile.digest`)."""
    prov = rec.get("provenance") or {}
    want = prov.get("profile_hash")
    if want is None:
        return "no flash-profile hash recorded (a run made before profiles were hashed): re-run it"
    try:
        got = load_profile(prov["profile"], scale=prov.get("profile_scale")).digest()
    except (KeyError, ValueError) as e:
        return f"flash profile {prov.get('profile')!r}: {e}"
    if got != want:
        return (f"flash profile {prov['profile']!r} changed: the run was made on profile hash {want}, this "
                f"installation's is {got} (docs/flash-model.md says what changed)")
    return None
