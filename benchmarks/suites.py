"""Benchmark suites: which workloads, configurations, policies and seeds a leaderboard runs.

Suites are data, JSON files in ``benchmarks/suites/`` (installed as package data of
``hss_gym.benchmarks``); a user's own suite is any JSON file of the same shape::

    {
      "name": "quick", "version": 1, "description": "...",
      "problem": "hss",                                        # optional, default "hss"
      "policies": ["fast_only", "random", "mymodule:make_policy"],
      "seeds": [0, 1, 2],
      "n_requests": 20000,
      "workload_sets": {"table5": ["mix1", "mix2"]},          # optional, referenced as "@table5"
      "tracks": [
        {"name": "perf_opt", "configs": ["perf_opt"], "workloads": ["ycsb-b", "@table5"]},
        {"name": "real", "configs": ["cost_opt"], "traces_dir": null,   # null: given by --traces
         "n_requests": 50000, "options": {"skip_bad": true,
                                          "trace_options": {"*.blk": {"format": "blkparse"}}}}
      ]
    }

The ``problem`` (:mod:`hss_gym.benchmarks.problems`) says what a job runs and which names are
valid; a track's ``options`` are handed to the problem's jobs (for the HSS problem: trace reader
options - every ``load_trace`` option but ``limit``, e.g. ``format``, ``skip_bad``, ``sort``,
blkparse ``event``/``device``, a ``csv`` layout - for all trace files or per file-name pattern in
``trace_options``, checked when the suite is loaded). Every policy the
problem calls *learned* must run at least ``min_seeds`` seeds (default 3): their results vary with
the seed, and the report gives 95% confidence intervals over seeds.

A *track* is a set of (workload, configuration) pairs whose results are compared together;
``n_requests`` and ``seeds`` may be set per track. Workloads are registered names
(``hss-gym list workloads``) or trace file paths; a ``traces_dir`` track takes every trace file
in a directory (hidden files and ``README*`` skipped). ``fast_only`` (the normalisation
reference) is always part of the policy list.

Built-in suites: ``quick`` (the README's main command), ``hss-bench-v1`` (the standard
leaderboard), ``real`` (a track over a directory of real traces), and one ``<problem>-v1`` suite
per other problem (``hss-gym list suites``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from hss_gym.benchmarks.problems import DEFAULT_PROBLEM, Problem, get_problem
from hss_gym.agents.base import missing_extra
from hss_gym.workloads.registry import canonical_name

SUITES_DIR = Path(__file__).resolve().parent / "suites"
MIN_SEEDS = 3


class SuiteError(ValueError):
    """A suite definition is malformed or references unknown names."""


@dataclass(frozen=True)
class Track:
    """A group of runs compared together: workloads x configurations x seeds, ``n`` requests."""

    name: str
    configs: tuple[str, ...]
    workloads: tuple[str, ...]
    n_requests: int | None
    seeds: tuple[int, ...]
    traces_dir: str | None = None
    description: str = ""
    options: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Suite:
    """A parsed, validated suite definition (see the module docstring)."""

    name: str
    version: int
    description: str
    policies: tuple[str, ...]
    tracks: tuple[Track, ...]
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    problem: str = DEFAULT_PROBLEM

    @property
    def spec(self) -> Problem:
        """The suite's :class:`~hss_gym.benchmarks.problems.Problem`."""
        return get_problem(self.problem)

    def digest(self) -> str:
        """A stable hash of the definition (recorded with every run)."""
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).hexdigest()[:16]

    def track(self, name: str) -> Track:
        for t in self.tracks:
            if t.name == name:
                return t
        raise SuiteError(f"suite {self.name!r} has no track {name!r}; tracks: "
                         f"{', '.join(t.name for t in self.tracks)}")


def list_suites() -> list[str]:
    """Names of the built-in suites."""
    try:
        files = [p.name for p in resources.files("hss_gym.benchmarks").joinpath("suites").iterdir()]
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        files = [p.name for p in SUITES_DIR.iterdir()]
    return sorted(f[:-5] for f in files if f.endswith(".json"))


def _read_builtin(name: str) -> tuple[dict[str, Any], str]:
    path = SUITES_DIR / f"{name}.json"
    return json.loads(path.read_text()), str(path)


def load_suite(spec: str | os.PathLike[str], traces_dir: str | os.PathLike[str] | None = None,
               check: bool = True) -> Suite:
    """A suite by built-in name or JSON path.

    ``traces_dir`` fills tracks whose ``traces_dir`` is ``null`` (the ``real`` suite); such a
    track without a directory raises :class:`SuiteError`. ``check`` verifies that every workload
    and configuration exists. Unknown suite names raise :class:`SuiteError` listing the valid ones.
    """
    s = os.fspath(spec)
    if s in list_suites():
        raw, source = _read_builtin(s)
    elif s.endswith(".json") or os.path.isfile(s):
        if not os.path.isfile(s):
            raise SuiteError(f"no suite file {s!r}")
        try:
            raw, source = json.loads(Path(s).read_text()), s
        except json.JSONDecodeError as e:
            raise SuiteError(f"suite file {s}: invalid JSON: {e}") from None
    else:
        near = difflib.get_close_matches(s, list_suites(), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise SuiteError(f"unknown suite {s!r}{hint}; valid: {', '.join(list_suites())}, "
                         f"or the path of a suite JSON file")
    return parse_suite(raw, source=source, traces_dir=traces_dir, check=check)


def _expand(items: list[Any], sets: dict[str, list[str]], where: str) -> list[str]:
    out: list[str] = []
    for w in items:
        if not isinstance(w, str):
            raise SuiteError(f"{where}: workloads must be strings, got {w!r}")
        if w.startswith("@"):
            if w[1:] not in sets:
                raise SuiteError(f"{where}: unknown workload set {w!r}; defined: "
                                 f"{', '.join('@' + k for k in sets) or 'none'}")
            out.extend(sets[w[1:]])
        else:
            out.append(w)
    return out


def trace_files(directory: str | os.PathLike[str]) -> list[str]:
    """The trace files of a ``traces_dir`` track: regular files, sorted, absolute paths."""
    d = Path(directory)
    if not d.is_dir():
        raise SuiteError(f"traces directory {os.fspath(directory)!r} does not exist")
    files = sorted(str(p.resolve()) for p in d.iterdir()
                   if p.is_file() and not p.name.startswith(".") and not p.name.upper().startswith("README"))
    if not files:
        raise SuiteError(f"traces directory {os.fspath(directory)!r} has no trace files")
    return files


def parse_suite(raw: dict[str, Any], source: str = "<dict>", traces_dir: str | os.PathLike[str] | None = None,
                check: bool = True) -> Suite:
    """Validate a suite definition (a dict as in the JSON files) and return a :class:`Suite`."""
    if not isinstance(raw, dict):
        raise SuiteError(f"{source}: a suite is a JSON object")
    unknown = set(raw) - {"name", "version", "description", "problem", "policies", "seeds", "n_requests",
                          "workload_sets", "tracks", "min_seeds"}
    if unknown:
        raise SuiteError(f"{source}: unknown suite key(s) {sorted(unknown)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"{source}: 'name' must be a non-empty string")
    policies = list(raw.get("policies") or [])
    if not all(isinstance(p, str) and p for p in policies):
        raise SuiteError(f"{source}: 'policies' must be a list of policy names or 'module:factory'")
    try:
        problem = get_problem(raw.get("problem") or DEFAULT_PROBLEM)
    except ValueError as e:
        raise SuiteError(f"{source}: {e}") from None
    for p in reversed(problem.required):
        if p not in policies:
            policies.insert(0, p)
    seeds = raw.get("seeds", [0, 1, 2])
    n = raw.get("n_requests", 100_000 if problem.name == DEFAULT_PROBLEM else None)
    min_seeds = raw.get("min_seeds", MIN_SEEDS)
    if not isinstance(min_seeds, int) or min_seeds < 1:
        raise SuiteError(f"{source}: min_seeds must be a positive integer, got {min_seeds!r}")
    sets = raw.get("workload_sets") or {}
    tracks_raw = raw.get("tracks")
    if not isinstance(tracks_raw, list) or not tracks_raw:
        raise SuiteError(f"{source}: 'tracks' must be a non-empty list")
    tracks: list[Track] = []
    for i, t in enumerate(tracks_raw):
        where = f"{source}: track {t.get('name', i) if isinstance(t, dict) else i}"
        if not isinstance(t, dict):
            raise SuiteError(f"{where}: a track is a JSON object")
        bad = set(t) - {"name", "configs", "workloads", "traces_dir", "n_requests", "seeds", "description",
                        "options"}
        if bad:
            raise SuiteError(f"{where}: unknown key(s) {sorted(bad)}")
        tname = t.get("name") or f"track{i}"
        configs = t.get("configs")
        if not isinstance(configs, list) or not configs:
            raise SuiteError(f"{where}: 'configs' must be a non-empty list")
        tdir = None
        if "traces_dir" in t:
            directory = t["traces_dir"] or traces_dir
            if not directory:
                raise SuiteError(f"{where} runs every trace file of a directory: give it with "
                                 f"--traces DIR (load_suite(..., traces_dir=DIR))")
            workloads = trace_files(directory) if check else [os.fspath(directory)]
            tdir = os.fspath(directory)
        else:
            workloads = [_key(w, problem) for w in _expand(t.get("workloads") or [], sets, where)]
        if not workloads:
            raise SuiteError(f"{where}: no workloads")
        tn = t.get("n_requests", n)
        ts = t.get("seeds", seeds)
        if tn is not None and (not isinstance(tn, int) or tn < 1):
            raise SuiteError(f"{where}: n_requests must be a positive integer, got {tn!r}")
        if not isinstance(ts, list) or not ts or not all(isinstance(s, int) and s >= 0 for s in ts):
            raise SuiteError(f"{where}: seeds must be a non-empty list of non-negative integers, got {ts!r}")
        learned = sorted(p for p in policies if p in problem.learned)
        if learned and len(set(ts)) < min_seeds:
            raise SuiteError(f"{where}: the learned policies {', '.join(learned)} need at least {min_seeds} "
                             f"seeds (their results vary with the seed), got {ts}; set \"min_seeds\" to "
                             f"allow fewer")
        if len(set(workloads)) != len(workloads):
            raise SuiteError(f"{where}: duplicate workloads")
        opts = t.get("options") or {}
        if not isinstance(opts, dict):
            raise SuiteError(f"{where}: options must be a JSON object, got {opts!r}")
        if problem.check_options is not None:
            try:  # before anything runs: a bad reader option would fail every job of the track
                problem.check_options(opts, workloads if check else [])
            except ValueError as e:
                raise SuiteError(f"{source}: suite {name!r}, track {tname!r}: {e}") from None
        tracks.append(Track(tname, tuple(configs), tuple(workloads), tn, tuple(ts), tdir,
                            t.get("description", ""), opts))
    if len({t.name for t in tracks}) != len(tracks):
        raise SuiteError(f"{source}: duplicate track names")
    suite = Suite(name, int(raw.get("version", 1)), raw.get("description", ""), tuple(policies),
                  tuple(tracks), source, raw, raw.get("problem") or DEFAULT_PROBLEM)
    if check:
        check_names(suite)
    return suite


def check_names(suite: Suite) -> None:
    """Raise :class:`SuiteError` if a workload, configuration or policy name is unknown."""
    for t in suite.tracks:
        for c in t.configs:
            check_config(c, suite.spec)
        for w in t.workloads:
            check_workload(w, suite.spec)
    for p in suite.policies:
        check_policy(p, suite.spec)


def _check(fn: Any, name: str) -> None:
    if fn is not None:
        try:
            fn(name)
        except ValueError as e:
            raise SuiteError(str(e)) from None


def check_config(name: str, problem: Problem | None = None) -> None:
    """Raise :class:`SuiteError` (listing the valid names) for an unknown configuration."""
    _check((problem or get_problem()).check_config, name)


def check_workload(name: str, problem: Problem | None = None) -> None:
    """Raise :class:`SuiteError` (listing the valid names) for an unknown workload / missing file."""
    _check((problem or get_problem()).check_workload, name)


def check_policy(spec: str, problem: Problem | None = None) -> None:
    """Raise :class:`SuiteError` (listing the valid names) for an unknown policy name."""
    _check((problem or get_problem()).check_policy, spec)


def with_overrides(suite: Suite, *, policies: list[str] | None = None, tracks: list[str] | None = None,
                   workloads: list[str] | None = None, configs: list[str] | None = None,
                   seeds: list[int] | None = None, n_requests: int | None = None,
                   oracle: bool = True) -> Suite:
    """The suite restricted or changed by command-line options.

    ``policies`` replaces the policy list; the problem's references are added (the required
    ones always, the others unless ``oracle=False``, which also drops them from the suite: the
    HSS Oracle).
    ``tracks``/``workloads``/``configs`` keep only those; ``seeds`` and ``n_requests`` replace
    every track's. Unknown names raise :class:`SuiteError`.
    """
    prob = suite.spec
    optional = [r for r in prob.references if r not in prob.required]
    pols = list(suite.policies)
    if policies:
        for p in policies:
            check_policy(p, prob)
        pols = list(dict.fromkeys(policies))
        pols += [r for r in optional if r not in pols and oracle]
        for r in reversed(prob.required):
            if r not in pols:
                pols.insert(0, r)
    if not oracle:
        pols = [p for p in pols if p not in optional]
    ts = list(suite.tracks)
    if tracks:
        ts = [suite.track(t) for t in tracks]
    if configs:
        for c in configs:
            check_config(c, prob)
    if workloads:
        for w in workloads:
            check_workload(w, prob)
    out: list[Track] = []
    for t in ts:
        cs = tuple(c for c in t.configs if not configs or c in configs)
        ws = t.workloads
        if workloads:
            keep = [_key(w, prob) for w in workloads]
            # a named-workload track runs exactly the requested workloads (even ones not in it);
            # a traces_dir track keeps the requested files it has
            ws = tuple(keep) if t.traces_dir is None else tuple(w for w in ws if w in keep)
        if not cs or not ws:
            continue
        out.append(Track(t.name, cs, ws, n_requests or t.n_requests,
                         tuple(seeds) if seeds else t.seeds, t.traces_dir, t.description, t.options))
    if not out:
        raise SuiteError(f"suite {suite.name!r}: the options leave no runs (configs {configs}, "
                         f"workloads {workloads}, tracks {tracks})")
    return Suite(suite.name, suite.version, suite.description, tuple(pols), tuple(out), suite.source, suite.raw,
                 suite.problem)


def without_missing_extras(suite: Suite) -> tuple[Suite, dict[str, str]]:
    """The suite without the policies whose optional extra is not installed here, and those
    policies, each with what to install (:func:`hss_gym.agents.base.missing_extra`)."""
    from dataclasses import replace

    spec = suite.spec
    missing = {p: why for p in suite.policies
               if (why := missing_extra(p if spec.name == "hss" else f"{spec.name}/{p}"))}
    if not missing:
        return suite, missing
    return replace(suite, policies=tuple(p for p in suite.policies if p not in missing)), missing


def _key(w: str, problem: Problem | None = None) -> str:
    """The canonical registered name of an HSS workload, or the absolute path of a trace file."""
    if os.path.isfile(w):
        return os.path.abspath(w)
    if problem is not None and problem.name != DEFAULT_PROBLEM:
        return w
    return canonical_name(w) or w
