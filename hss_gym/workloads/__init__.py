"""Workloads: the columnar request representation, trace readers, synthetic generators of the
papers' workloads (Harmonia Table 4) and mixes (Table 5), and trace statistics. The other
problems' workloads are modules of their own here, imported by name: :mod:`.fleetio` (FleetIO's
tenants and Table 5 mixes), :mod:`.msr_streams` (RLAlloc's Table I streams) and :mod:`.lqoco`
(L-QoCo's Table 4 workloads).

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
