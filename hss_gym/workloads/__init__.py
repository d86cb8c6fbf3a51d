"""Workloads: the columnar request representation, trace readers and synthetic generators."""
from hss_gym.workloads.trace import PAGE_SIZE, READ, WRITE, Trace, TraceFormatError

__all__ = ["PAGE_SIZE", "READ", "WRITE", "Trace", "TraceFormatError"]
