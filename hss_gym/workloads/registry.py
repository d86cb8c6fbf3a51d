"""One entry point for every workload: registered synthetic names, Table 5 mixes and trace files.

Names are case-insensitive; ``_`` and ``-`` are interchangeable and the dash of the RocksDB and
YCSB ids is optional (``"SSD_00"``, ``"ssd00"``, ``"YCSB-B"`` and ``"ycsbb"`` all work).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from hss_gym.workloads import catalogue, learning, mixes, synthetic, training
from hss_gym.workloads.readers import FORMAT_OPTIONS, LOAD_OPTIONS, check_options
from hss_gym.workloads.readers import load_trace as _load
from hss_gym.workloads.trace import Trace

DEFAULT_N = 100_000
#: Most requests a workload may be generated with (about 40 bytes each: 40 GB); larger traces are
#: read from files (``iter_chunks`` streams them).
MAX_REQUESTS = 10**9


def check_count(value: Any, name: str = "n_requests") -> int:
    """``value`` as a request count in [1, MAX_REQUESTS], or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_REQUESTS:
        shown = value.item() if isinstance(value, np.generic) else value
        raise ValueError(f"{name} must be an integer in [1, {MAX_REQUESTS:_}], got {shown!r}")
    return int(value)


def check_seed(value: Any, name: str = "seed") -> int:
    """``value`` as a seed in [0, 2**63), or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**63:
        shown = value.item() if isinstance(value, np.generic) else value
        raise ValueError(f"{name} must be a non-negative integer (below 2**63), got {shown!r}")
    return int(value)


def list_workloads() -> list[str]:
    """Every registered name: the 18 synthetic workloads, ``mix1`` .. ``mix6``, the learning
    scenarios with known answers (``learn-*``, :mod:`hss_gym.workloads.learning`), then the
    training workloads (``train-*``, :mod:`hss_gym.workloads.training`)."""
    return synthetic.workload_names() + list(mixes.MIXES) + learning.names() + training.names()


def canonical_name(name: str) -> str | None:
    """The registered id ``name`` refers to, or ``None`` when it refers to none."""
    key = name.strip().lower().replace("_", "-")
    key = re.sub(r"^(ssd|ycsb)-?", r"\1-", key)
    known = key in synthetic.TARGETS or key in mixes.MIXES or key in learning.DEFAULTS or key in training.TRAIN_WORKLOADS
    return key if known else None


def _unknown(name: str) -> ValueError:
    """The error for an unregistered name, with close matches and the valid names."""
    close = difflib.get_close_matches(name.strip().lower(), list_workloads(), n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return ValueError(f"unknown workload {name!r}.{hint} Valid names: "
                      f"{', '.join(list_workloads())}; or give the path of a trace file.")


def make_trace(name: str, n: int = DEFAULT_N, seed: int = 0, **params: Any) -> Trace:
    """Generate ``n`` requests of the registered workload or mix ``name`` from ``seed``.

    ``params`` override a workload's generator parameters (``synthetic.default_params``); a mix
    accepts ``footprint_scale``. Unknown names raise ``ValueError`` listing the valid ones.
    """
    key = canonical_name(name)
    if key is None:
        raise _unknown(name)
    n, seed = check_count(n, "n"), check_seed(seed)
    if key in mixes.MIXES:
        return mixes.generate_mix(key, n, seed, **params)
    if key in learning.DEFAULTS:
        return learning.generate(key, n, seed, **params)
    if key in training.TRAIN_WORKLOADS:
        return training.generate(key, n, seed, **params)
    return synthetic.generate(key, n, seed, **params)


def load_trace(path: str | os.PathLike[str], format: str | None = None, **kwargs: Any) -> Trace:
    """Read a trace file; see ``hss_gym.workloads.readers.load_trace``."""
    return _load(path, format=format, **kwargs)


#: A workload: a registered name, ``catalogue:NAME``, a trace file path, a path with the reader's
#: options (``{"path": ..., "format": ..., ...}``: :func:`trace_file_spec`), or a :class:`Trace`.
WorkloadSpec = str | os.PathLike[str] | Mapping[str, Any] | Trace


def trace_file_spec(spec: Mapping[str, Any]) -> tuple[str | os.PathLike[str], dict[str, Any]]:
    """Split a workload given as ``{"path": P, **options}`` into the path and the options of
    :func:`load_trace` it is read with, checked before the file is read.

    A workload is otherwise one string, which has no room for a file's layout: a home-made CSV
    needs ``format="csv"``, its ``columns`` and its units. ``P`` is a trace file or
    ``catalogue:NAME``; the options are those of ``load_trace`` but ``limit`` (the request count
    the caller asks for, e.g. the env's ``n_requests``, sets it). Raises ValueError naming what is
    wrong (a missing path, a registered name, an unknown or misspelt option), or FileNotFoundError.
    """

    options = dict(spec)
    known = ["path", *LOAD_OPTIONS, *sorted(set().union(*FORMAT_OPTIONS.values()))]
    unknown = [str(k) for k in options if k not in known]
    if unknown:
        near = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"workload {options.get('path')!r}: unknown option(s) {unknown}{hint}; a workload dict "
                         f"holds 'path' and the options of load_trace: {', '.join(known[1:])}")
    if "path" not in options:
        raise ValueError(f"a workload given as a dict needs 'path' (a trace file) beside the reader's "
                         f"options, got keys {sorted(map(str, options))}")
    path = options.pop("path")
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"workload 'path' must be a trace file path, got {path!r}")
    if isinstance(path, str) and canonical_name(path) is not None:
        raise ValueError(f"workload path {path!r} is a generated workload: reader options apply to "
                         f"trace files only; pass the name alone")
    if "limit" in options:
        raise ValueError("workload option 'limit': the request count (n_requests) says how many "
                         "requests of the file are read")
    try:
        check_options(options)
    except ValueError as e:
        raise ValueError(f"workload {os.fspath(path)!r}: {e}") from None
    check_workload(path)
    return path, options


def get_trace(spec: WorkloadSpec, n: int | None = None, seed: int = 0,
              **params: Any) -> Trace:
    """A trace from a registered name, a trace file path, or an existing :class:`Trace`.

    A name generates ``n`` requests (default 100,000) with ``seed`` and ``params``.
    ``"catalogue:NAME"`` is a pinned real trace (:mod:`hss_gym.workloads.catalogue`: fetched
    once, verified by sha256 on every use), read like a path. A path is
    read with :func:`load_trace` (``params`` are passed to it, e.g. ``format=``), only its first
    ``n`` requests when ``n`` is given (``limit=n``); ``seed`` is unused then. A mapping
    ``{"path": P, **options}`` reads ``P`` with those options (:func:`trace_file_spec`). A Trace
    is returned as is, or its first ``n`` requests. A name wins over a file of the same name in
    the working directory.
    """
    if isinstance(spec, Trace):
        return spec if n is None else spec.slice(0, n)
    if isinstance(spec, Mapping):
        path, options = trace_file_spec(spec)
        return get_trace(path, n=n, seed=seed, **options, **params)
    if isinstance(spec, str) and canonical_name(spec) is not None:
        return make_trace(spec, DEFAULT_N if n is None else n, seed, **params)
    if isinstance(spec, str) and spec.startswith(catalogue.PREFIX):
        return catalogue.load(spec, **params) if n is None else catalogue.load(spec, limit=n,
                                                                                **params)
    check_workload(spec)
    return load_trace(spec, **params) if n is None else load_trace(spec, limit=n, **params)


def check_workload(spec: str | os.PathLike[str] | Mapping[str, Any]) -> None:
    """Raise unless ``spec`` is a registered name, a catalogue trace or an existing path (alone or
    with reader options: :func:`trace_file_spec`): a word that is no name gives the valid names
    (ValueError), a path that does not exist says so (FileNotFoundError). Whether an existing path
    is a readable trace is for :func:`load_trace` to tell."""
    if isinstance(spec, Mapping):
        trace_file_spec(spec)
        return
    if isinstance(spec, str) and canonical_name(spec) is not None:
        return
    if isinstance(spec, str) and spec.startswith(catalogue.PREFIX):
        catalogue.entry(spec)  # a known name (downloaded and verified when it is read)
        return
    if os.path.lexists(spec):
        return
    text = os.fspath(spec)
    if isinstance(spec, str) and "/" not in text and os.sep not in text and not os.path.splitext(text)[1]:
        raise _unknown(text)
    raise FileNotFoundError(f"trace file {text!r} does not exist (and it is not a registered "
                            f"workload name; see hss_gym.workloads.list_workloads())")
