"""The reference agents' idle-time data movement: room on the faster devices, and readahead.

A placement agent that never evicts on the critical path sends a request that does not fit to a
slower device; :class:`Cleaner` asks the HSS to move pages down in idle time so later requests
fit again, in batches a disk can write without positioning dominating, in chunks that yield to
host I/O on an SSD, and, with ``victims="reuse"``, in the victim order the HSS learns from the
trace. With ``readahead`` it also has the HSS copy the pages a sequential read stream will read
next, when they were read before, up to the fastest device in idle time. The reference agents (:mod:`hss_gym.agents.harmonia`)
and the ``fit_first`` rules (:mod:`hss_gym.agents.rules`) use it; the measurements behind each
part are in docs/learning-diagnostics.md.
"""

from __future__ import annotations

from typing import Any

from hss_gym.envs.hss.env import HSSParallelEnv
from hss_gym.hss import MAX_REQUEST_PAGES
from hss_gym.workloads.trace import PAGE_SIZE


#: the reference agents' readahead window, in pages: Linux's default ``read_ahead_kb`` (128 KiB)
READAHEAD_PAGES: int = 131072 // PAGE_SIZE


#: into an SSD home, the largest chunk in first chunks (:func:`first_chunk_pages`): the chunk's fixed
#: service time is then at most a fifth of it, and a host request behind it waits a few small writes
CHUNK_GROWTH: int = 4
#: into an SSD home, the cleaning's chunks in flight at once: one on the data channel, one in its fixed
#: service, one ready (a host request at the home waits behind at most these)
CLEAN_DEPTH: int = 3


def seek_amortising_pages(profile: Any) -> int:
    """Pages a disk writes in one average positioning time (seek plus half a rotation): a batch of
    that size spends at most half its device time positioning. 0 for a device without seeks."""
    if profile.kind != "hdd":
        return 0
    position_us = (profile.seek_avg_ms + (30_000.0 / profile.rpm if profile.rpm else 0.0)) * 1000.0
    return int(position_us * profile.write_bandwidth_mbps / PAGE_SIZE)


def first_chunk_pages(profile: Any) -> int:
    """Pages an SSD transfers in one 4 KiB write's service time: a cleaning's first chunk in an
    idle period, so a host request arriving during it waits about one more small write."""
    return max(1, int(profile.write_latency_us * profile.write_bandwidth_mbps / PAGE_SIZE))


class Cleaner:
    """Room on the faster devices for what the placement agent sends there (``clean=...``).

    A placement agent that never evicts on the critical path (``evict=False``) sends a request
    that does not fit its device to the next slower one. While a greedy choice (not the
    exploration warm-up) was sent past device ``d`` within the last ``window`` requests, the
    cleaner asks the HSS to move pages of ``d`` to ``d + 1`` until ``free`` of ``d``'s capacity is
    free, at least ``min_batch`` pages at a time, as one batch in the next idle time
    (:meth:`hss_gym.hss.HSS.clean`: one read, one sequential write, as a critical-path eviction
    is modelled; the victims in LRU order, or the pages accessed once first when the cleaned
    pages accessed more often are the ones read again, as ARC adapts). So the evictions an HSS
    must make run off the critical path, and only while the placement agent wants the room.
    Deviation from the papers (whose agents evict on the critical path); measured in
    docs/learning-diagnostics.md.

    * **No cascades.** When ``d + 1`` (not the home device) has no room for the batch beyond its
      own ``free`` share, the cleaner first cleans ``d + 1`` into ``d + 2`` (a batch of its own, in
      its own idle time). A batch into a full middle device would make room there inside the same
      batch, its write to ``d + 1`` waiting for ``d + 1``'s own eviction to the slowest device,
      and every host request to ``d + 1`` queued behind both.
    * **Batches that amortise a seek.** A batch into a disk is at least what the disk writes in
      one average positioning time (seek plus half a rotation: :func:`seek_amortising_pages`),
      so each batch's seek, and the host stream's seek back after it, cost a small share of its
      transfer; into an SSD, ``min_batch``.
    * **Chunks that yield to host I/O.** A batch into an SSD runs in chunks of ``min_batch`` pages,
      each started only while both devices have a free server, so a host request waits behind a
      chunk per server, not the whole batch (an I/O scheduler's idle class). A batch into a disk
      runs whole: resuming it after a host request would cost another seek.
    * **Small chunks while the cleaning is ahead**, into the home device when it is an SSD: every
      chunk is what the SSD transfers in one small write's service time (:func:`first_chunk_pages`;
      4 pages for the catalogue's SSDs), so a host request arriving during one waits about one
      more small write. While the cleaning is behind (the cleaned device has less than half its
      ``free`` goal free, or a write was sent past it within the last ``patience`` requests), each
      idle period's chunks start there and double up to ``CHUNK_GROWTH`` first chunks (16 pages:
      the fixed service is then a fifth of a chunk's time), so a long idle period still cleans at
      nearly full speed.
    * **A few chunks in flight**, into an SSD home: at most ``CLEAN_DEPTH`` (3: one on the data
      channel, one in its fixed service, one ready; ``HSS.clean_depth``). An SSD with many servers
      otherwise takes a chunk on each at once, and a read at home waits for all their transfers
      on the shared channel (measured in docs/learning-diagnostics.md). Into a middle device the
      chunks stay whole: its own cleaning must keep pace behind it, and smaller chunks there let
      write-heavy traces fill the faster devices.
    * **Full speed when the home has no idle time**: a cleaning forced after ``patience`` requests
      without idle time (below) runs whole ``min_batch`` chunks with no limit in flight, and so do
      its chunks until the next cleaning asked in idle time. A home a closed loop keeps busy needs
      the cleaning's throughput more than its reads need short waits.
    * **Room that grows with the writes turned away**, on a device cleaned into an SSD home: its
      ``free`` goal doubles each time a write is sent past it (it did not fit), at most once per
      ``patience`` requests, up to an eighth of the device (the cleaner's largest batch), and
      halves back towards ``free`` once per ``window`` requests in which no write was turned
      away. A burst of writes faster than the cleaning then finds the room it needs where such
      bursts come, and the device keeps its data where they do not. Into a disk the goal stays
      ``free``: a larger goal there means larger disk batches, and the reads behind them wait
      longer (measured in docs/learning-diagnostics.md).
    * A cleaning still waiting for idle time after ``patience`` requests runs at low priority, as
      a full migration queue's oldest move does (requests the fast device turned away can keep the
      slower one from ever idling).
    * **Learned victims** (``victims="reuse"``; ``"lru"`` by default): the HSS learns, per 2 MiB
      region, whether the access after a write of one of its pages is a read or another write,
      and a cleaning takes first the pages written where written pages are seldom read again
      (``HSS.reuse_victims``), while those turn out to be read back less often than the other
      cleaned pages. Only reads gain from a page kept on a faster device: a rewrite goes to the
      fastest device it fits on wherever the page is.
    * **Readahead** (``readahead=N`` pages; 0, off, by default): a read that continues one of the
      last few read streams for the second time or more has the pages after it that were read
      before and sit on the home device, up to a window that doubles with each sequential read
      to at most N, copied to the fastest device in the next idle time, into free room only,
      while at least half of the prefetched pages whose outcome is known were read there (the
      core's ``readahead``; one continued stream in 16 still prefetches, so the count follows a
      changing workload). A re-read stream is promoted before it is read; a first-touch read
      still stays home. The cleanings make the room, as for any write.
    """

    def __init__(self, free: float = 0.02, window: int = 1000, patience: int = 50, min_batch: int = 64,
                 victims: str = "lru", readahead: int = 0) -> None:
        if not 0.0 < free < 1.0 or window < 1 or patience < 1 or min_batch < 1:
            raise ValueError(f"clean: need 0 < free < 1 and window, patience, min_batch >= 1; got {free}, "
                             f"{window}, {patience}, {min_batch}")
        if victims not in ("lru", "reuse"):
            raise ValueError(f"victims must be 'lru' or 'reuse', got {victims!r}")
        self.free, self.window, self.patience, self.min_batch = float(free), int(window), int(patience), int(min_batch)
        if not 0 <= readahead <= MAX_REQUEST_PAGES:
            raise ValueError(f"readahead must be 0 (off) to {MAX_REQUEST_PAGES} pages, got {readahead}")
        self.victims, self.readahead = victims, int(readahead)

    def reset(self, env: HSSParallelEnv) -> None:
        self._core = env.hss.core
        self._core.reuse_victims = self.victims == "reuse"
        self._core.readahead = self.readahead
        self._caps = list(env.hss.capacities)
        self._goal = [max(1, int(self.free * c)) for c in self._caps]
        self._home = env.cfg.n_devices - 1
        self._asked_at = 0
        #: the smallest batch into each device (by its target): one that amortises a disk's
        #: positioning time, but never more than an eighth of the device it cleans
        seek = [seek_amortising_pages(p) for p in env.cfg.devices]
        self._min_batch = [max(self.min_batch, min(seek[d + 1], self._caps[d] // 8)) for d in range(self._home)]
        #: the chunks of a batch into each device's next: min_batch into an SSD, none into a disk
        self._chunk = [0 if seek[d + 1] else self.min_batch for d in range(self._home)]
        #: the first chunk of an idle period into each device's next: into an SSD home only (0: whole chunks)
        self._first = [first_chunk_pages(env.cfg.devices[d + 1]) if d + 1 == self._home and not seek[d + 1] else 0
                       for d in range(self._home)]
        #: into an SSD home, chunks grow to CHUNK_GROWTH first chunks at most, CLEAN_DEPTH of them in flight
        self._chunk = [min(c, CHUNK_GROWTH * f) if f else c for c, f in zip(self._chunk, self._first)]
        #: the devices whose goal grows with the writes turned away (cleaned into an SSD home), the
        #: goal's fraction of each device, and when it last grew and shrank
        self._grows = [d for d in range(self._home) if self._first[d]]
        self._frac = [self.free] * self._home
        self._grown_at = [-(1 << 30)] * self._home
        self._shrunk_at = [0] * self._home

    @property
    def into_ssd_home(self) -> list[int]:
        """The devices cleaned into the home device where it is an SSD (after :meth:`reset`)."""
        return list(self._grows)

    def _room(self, step: int, wanted_at: list[int]) -> None:
        """The goals that grow with the writes turned away: double when one was turned away at
        this step (at most once per ``patience``), halve after ``window`` requests without."""
        for d in self._grows:
            frac = self._frac[d]
            if wanted_at[d] == step:
                if step - self._grown_at[d] >= self.patience:
                    self._grown_at[d] = step
                    frac = min(0.125, 2.0 * frac)
            elif frac > self.free and step - wanted_at[d] > self.window and step - self._shrunk_at[d] > self.window:
                self._shrunk_at[d] = step
                frac = max(self.free, 0.5 * frac)
            if frac != self._frac[d]:
                self._frac[d] = frac
                self._goal[d] = max(1, int(frac * self._caps[d]))

    def __call__(self, step: int, wanted_at: list[int]) -> None:
        """Ask for this step's cleaning (``wanted_at``: the placement agent's, per device)."""
        core = self._core
        if self._grows:
            self._room(step, wanted_at)
        for d in range(self._home):
            if step - wanted_at[d] <= self.window:
                used = core.used_pages
                deficit = self._goal[d] - (self._caps[d] - used[d])
                if deficit > 0:
                    pages = min(max(deficit, self._min_batch[d]), used[d])
                    t = d + 1
                    while t < self._home and used[t] + pages > self._caps[t] - self._goal[t]:
                        d, pages = t, min(max(used[t] + pages - (self._caps[t] - self._goal[t]),
                                              self._min_batch[t]), used[t])  # room on t first
                        t += 1
                    chunk = self._chunk[d]
                    if self._first[d] and 2 * (self._caps[d] - used[d]) >= self._goal[d] \
                            and step - wanted_at[d] > self.patience:
                        chunk = self._first[d]  # ahead: every chunk one small write's service time
                    if not core.clean_pending:
                        if self._first[d]:
                            core.clean_depth = CLEAN_DEPTH
                        core.clean(d, pages, False, chunk, self._first[d])
                        self._asked_at = step
                    elif step - self._asked_at >= self.patience:
                        if self._first[d]:  # no idle time at home: the cleaning at full speed
                            core.clean_depth, chunk = 0, self.min_batch
                        core.clean(d, pages, True, chunk, self._first[d])
                        self._asked_at = step
                    return
