"""Workloads: the columnar request representation, trace readers, the trace catalogue and cache,
synthetic generators of the HSS papers' workloads (Harmonia Table 4) and mixes (Table 5), the
learning scenarios and training split, and trace statistics: what every problem reads traces
through. The other problems' own workloads live with their envs: ``hss_gym/envs/fleetio/workloads.py``
(FleetIO's tenants and Table 5 mixes), ``hss_gym/envs/rlalloc/workloads.py`` (RLAlloc's Table I
streams) and ``hss_gym/envs/lqoco/workloads.py`` (L-QoCo's Table 4 workloads); their versioned
modules re-export what a user needs of them.

>>> from hss_gym.workloads import make_trace, load_trace, describe
>>> tr = make_trace("ycsb-b", n=100_000, seed=0)
"""
from hss_gym.workloads.cache import load_cache, save_cache
from hss_gym.workloads.mixes import MIXES
from hss_gym.workloads.readers import FORMATS, SkippedRowsWarning, convert, detect_format, iter_chunks
from hss_gym.workloads.registry import get_trace, list_workloads, load_trace, make_trace
from hss_gym.workloads.stats import describe, format_description
from hss_gym.workloads.synthetic import TARGETS
from hss_gym.workloads.trace import PAGE_SIZE, READ, WRITE, Trace, TraceFormatError

__all__ = ["FORMATS", "MIXES", "PAGE_SIZE", "READ", "TARGETS", "WRITE", "SkippedRowsWarning", "Trace",
           "TraceFormatError", "convert", "describe", "detect_format", "format_description", "get_trace",
           "iter_chunks", "list_workloads", "load_cache", "load_trace", "make_trace", "save_cache"]
