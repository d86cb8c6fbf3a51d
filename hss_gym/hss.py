"""The HSS: a configuration, a backend and the native core, behind one small Python API.

This is the single entry point for placement and migration decisions; environments and policies
call it, never the C module directly:

>>> hss = HSS("perf_opt", footprint_pages=trace.footprint_pages(), seed=0)
>>> if hss.begin(t, op, offset, size):      # a placement decision is needed (write/first touch)
...     ...                                   # observe, decide device d
>>> latency_us = hss.finish(d)
>>> page = hss.candidate()                    # migration agent: a previously placed page
>>> hss.enqueue(page, target)                 # queued; runs in device idle time

Whole traces with a fixed placement device (the built-in reference replays) run entirely in C
through :meth:`HSS.run_fixed`. See ``backends/core/hss.h`` for the model of the core.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hss_gym.backends import _core
from hss_gym.backends.sim import SimBackend
from hss_gym.config import HSSConfig, make_config
from hss_gym.metrics import RunMetrics, compute_metrics
from hss_gym.workloads.trace import PAGE_SIZE, Trace
from hss_gym.backends.real import attach_real

#: log2 of the traces' :data:`~hss_gym.workloads.trace.PAGE_SIZE`: a byte offset's page is
#: ``offset >> PAGE_SHIFT``; the one definition the agents import
PAGE_SHIFT: int = PAGE_SIZE.bit_length() - 1

#: bytes of metadata per touched page in the core (device, slot, count, last access, last move)
PAGE_META_BYTES: int = _core.PAGE_META_BYTES


#: pages one request may touch at most (1 GiB): the core's bound on per-request work and memory
#: (``HSS_MAX_REQ_PAGES`` in ``backends/core/hss_types.h``; docs/inputs.md)
MAX_REQUEST_PAGES: int = _core.MAX_REQUEST_PAGES


def check_request_sizes(trace: Trace, config: HSSConfig, footprint_pages: int | None = None) -> None:
    """Refuse ``trace`` if one of its requests is larger than ``config``'s total capacity
    (:meth:`HSSConfig.total_capacity_pages`) or touches more than :data:`MAX_REQUEST_PAGES` pages,
    with a ValueError naming the request, its size and the limit. One vectorised pass, before any
    per-page work: a request's pages are worked on one by one, so a 16 TiB write in a two-line
    trace would otherwise take minutes and gigabytes before failing."""
    if not len(trace):
        return
    footprint = trace.footprint_pages() if footprint_pages is None else footprint_pages
    capacity = config.total_capacity_pages(max(1, footprint)) * PAGE_SIZE
    if int(trace.size.max()) > capacity:
        i = int(np.argmax(trace.size > capacity))
        raise ValueError(f"{_where(trace, i)}: {_too_large(int(trace.size[i]), capacity, config.name)}")
    first, last = trace.page_ranges()
    over = last - first >= MAX_REQUEST_PAGES
    if over.any():
        i = int(np.argmax(over))
        raise ValueError(f"{_where(trace, i)}: {_too_many_pages(int(trace.offset[i]), int(trace.size[i]))}")


def _where(trace: Trace, i: int) -> str:
    path = trace.source.get("path")
    return f"file {path}, request {i}" if path else f"trace {trace.name!r}, request {i}"


def _too_large(size: int, capacity: int, config: str) -> str:
    return (f"{size} bytes ({size / 2**30:.1f} GiB) is larger than configuration {config}'s "
            f"total capacity, {capacity} bytes ({capacity / 2**30:.1f} GiB: the bounded devices "
            "plus the home device's nominal capacity); no device could store it (a damaged "
            "trace, or a size column in the wrong unit?)")


def _too_many_pages(offset: int, size: int) -> str:
    pages = (offset + size - 1) // PAGE_SIZE - offset // PAGE_SIZE + 1
    return (f"{size} bytes at offset {offset} ({size / 2**30:.1f} GiB) touch {pages} pages, more than "
            f"the {MAX_REQUEST_PAGES} ({MAX_REQUEST_PAGES * PAGE_SIZE // 2**30} GiB) one request may "
            "touch (the simulator keeps state per page; block layers split I/O into requests of a "
            "few MiB): a damaged trace, or a size column in the wrong unit?")


class HSS:
    """A hybrid storage system over the simulated backend.

    ``config``: a configuration name, device list or :class:`HSSConfig` (see :mod:`hss_gym.config`);
    an :class:`HSSConfig` without ``options`` is used as is (the envs pass theirs: nothing is
    resolved again on the way to the device model);
    ``footprint_pages``: the workload's distinct pages, which sizes the bounded devices;
    ``seed``: seeds the device model's randomness (HDD rotation, noise). Same seed, same results.
    ``backend``: "sim", or "uring" with ``paths`` (one file/block device per device) and
    ``backend_options`` (see :mod:`hss_gym.backends.real`): latencies are then measured on them.
    """

    def __init__(self, config: "str | HSSConfig | list[Any]" = "perf_opt", *, footprint_pages: int,
                 seed: int = 0, streams: int = 1, backend: Any = "sim", paths: Any = None,
                 backend_options: dict[str, Any] | None = None, **options: Any) -> None:
        self.config = make_config(config, **options)
        if int(footprint_pages) <= 0:
            raise ValueError(f"footprint_pages must be > 0, got {footprint_pages}")
        self.footprint_pages = int(footprint_pages)
        self.capacities = self.config.page_capacities(self.footprint_pages)
        self.queue_depth = self.config.host_queue_depth(streams)
        self.real: Any = None  # the real-device backend; the core's timing is then a shadow model
        if not (isinstance(backend, str) and backend == "sim"):
            self.real, self.capacities = attach_real(backend, paths, self.capacities, backend_options,
                                                     self.queue_depth)
        self.backend = SimBackend(list(self.config.devices), self.capacities, seed,
                                  self.config.noise_p, self.config.noise_sigma)
        self.core = _core.HSS(self.backend.devices, self.capacities, self.config.queue_size,
                              self.config.min_interval, self.config.scan_window,
                              self.queue_depth, self.config.preloaded)
        if self.real is not None:
            self.core.set_log(True)
        self.capacity_bytes = self.config.total_capacity_pages(self.footprint_pages) * PAGE_SIZE
        # the smallest size that can break either bound (an unaligned request touches one page more)
        self._check_above = min(self.capacity_bytes, (MAX_REQUEST_PAGES - 1) * PAGE_SIZE)
        self._t = 0.0
        self.seed = seed
        self.reset(seed)

    @property
    def n_devices(self) -> int:
        return self.config.n_devices

    def reset(self, seed: int | None = None) -> None:
        """Empty the HSS and idle its devices (reseeded with ``seed`` if given)."""
        if seed is not None:
            self.seed = seed
        if self.real is not None:
            self.real.reset(self.seed)
        self.core.reset(self.seed)

    # -- the decision interface -------------------------------------------------------------
    def begin(self, t: float, op: int, offset: int, size: int) -> bool:
        """Start a host request (runs idle-time migrations first). True if it needs a placement
        decision: every write, and a read touching a page never seen before. A request larger
        than the configuration's total capacity or touching more than :data:`MAX_REQUEST_PAGES`
        pages is a ValueError (before any per-page work)."""
        if size > self._check_above:  # one comparison on the common path
            if size > self.capacity_bytes:
                raise ValueError(f"request at offset {offset}: "
                                 f"{_too_large(int(size), self.capacity_bytes, self.config.name)}")
            if (offset + size - 1) // PAGE_SIZE - offset // PAGE_SIZE >= MAX_REQUEST_PAGES:
                raise ValueError(f"request: {_too_many_pages(int(offset), int(size))}")
        if self.real is not None:
            self._t = self.real.check_request(t, offset, size)
        return self.core.begin(t, op, offset, size)

    def finish(self, place: int = 0) -> float:
        """Complete the pending request on device ``place``; return its latency (µs)."""
        lat = self.core.finish(place)
        return lat if self.real is None else self.real.complete(self.core, self._t)

    def candidate(self) -> int | None:
        """A previously placed page for the migration agent to judge, or None."""
        return self.core.candidate()

    def enqueue(self, page: int, target: int) -> bool:
        """Queue a move of ``page`` to ``target`` (False when it is already there or queued)."""
        return self.core.enqueue(page, target)

    def clean(self, device: int, pages: int, force: bool = False, chunk: int = 0, first: int = 0) -> bool:
        """Move ``device``'s ``pages`` least recently used pages to the next slower device in idle
        time (after the queued moves): as one batch, or with ``chunk`` > 0 in chunks of that many
        pages, each started only while both devices have a free server (host I/O then waits
        behind a chunk, not the batch); with ``first`` > 0, each idle period's chunks start at
        ``first`` pages and double up to ``chunk``. With one already pending: False, or with
        ``force`` that one's next chunk runs now at low priority and this one is asked for instead."""
        return self.core.clean(device, pages, force, chunk, first)

    def move(self, page: int, target: int, t: float) -> float:
        """Move a page now (critical-path migration); return the completion time."""
        return self.core.move(page, target, t)

    def remap(self, page: int, target: int) -> None:
        """Move a page instantly with no device time: an idealised migration (the Oracle's).
        ValueError if ``target`` is full."""
        self.core.remap(page, target)

    @property
    def used_pages(self) -> list[int]:
        """Pages held by each device (cheaper than :meth:`counters`)."""
        return self.core.used_pages

    @property
    def issue_time_us(self) -> float:
        """When the current request (after :meth:`begin`) was issued: its arrival, or later when
        it waited for a host slot (``queue_depth``). Device queues are judged from here."""
        return self.core.issue_us

    @property
    def evictions(self) -> int:
        """Pages evicted on the critical path so far (cheaper than :meth:`counters`)."""
        return self.core.evictions

    def page(self, page: int) -> dict[str, Any] | None:
        """Metadata of a page: device, count, last_access, last_move, queued."""
        return self.core.page(page)

    def devices(self, pages: np.ndarray) -> np.ndarray:
        """Device of each page (int64; -1 for a page not placed): :meth:`page`'s ``device`` for
        many pages in one call."""
        pages = np.ascontiguousarray(pages, dtype=np.int64)
        out = np.empty(len(pages), dtype=np.int64)
        self.core.devices(pages, out)
        return out

    def counters(self) -> dict[str, Any]:
        return self.core.counters()

    def close(self) -> None:
        """Release the real-device backend, if any (the simulator holds nothing)."""
        if self.real is not None:
            self.real.close()

    def memory_bytes(self) -> int:
        """Bytes held by the page table, LRU queues and slot allocators."""
        return self.core.memory_bytes()

    # -- whole-trace replay ----------------------------------------------------------------
    def run_fixed(self, trace: Trace, place: int) -> tuple[np.ndarray, RunMetrics]:
        """Replay ``trace`` from an empty HSS placing everything on device ``place`` (LRU
        eviction down the hierarchy when it is full). Returns latencies (µs) and metrics."""
        trace.validate()
        check_request_sizes(trace, self.config, self.footprint_pages)
        self.reset()
        if self.real is not None:
            lat, _ = self.real.run_fixed(self.core, trace, place)
            return lat, compute_metrics(lat, self.counters())
        lat = np.empty(len(trace), dtype=np.float64)
        self.core.replay(trace.time_us, trace.op, trace.offset, trace.size, place, lat)
        return lat, compute_metrics(lat, self.counters())
