"""Workloads: the columnar request representation, trace readers, synthetic generators of the
papers' workloads (Harmonia Table 4) and mixes (Table 5), and trace statistics.

>>> from hss_gym.workloads import make_trace, load_trace, describe
>>> tr = make_trace("ycsb-b", n=100_000, seed=0)
"""
from hss_gym.workloads.mixes import MIXES
from hss_gym.workloads.registry import get_trace, list_workloads, load_trace, make_trace
from hss_gym.workloads.stats import describe, format_description
from hss_gym.workloads.synthetic import TARGETS
from hss_gym.workloads.trace import PAGE_SIZE, READ, WRITE, Trace, TraceFormatError

__all__ = ["MIXES", "PAGE_SIZE", "READ", "TARGETS", "WRITE", "Trace", "TraceFormatError", "describe",
           "format_description", "get_trace", "list_workloads", "load_trace", "make_trace"]
