"""Long sequential write streams on an HSS whose home device is a disk: streamed to the disk.

A disk writes a sequential stream at its full bandwidth, with no positioning. Once a write stream
has run for as many pages as the disk writes in one positioning time (the size the cleaner's
batches into a disk have, to amortise their seek: :func:`~hss_gym.agents.cleaner.seek_amortising_pages`),
the disk serves the stream as efficiently as a cleaning batch, and the stream's data ends on the
disk either way, unless it is rewritten or read back first. Two rules follow, for the reference
agents and the ``fit_first_ref`` rule:

* **No cleaning for it.** A long stream's write that did not fit a faster device and went to the
  disk does not ask the cleaner for room: the room would buy the stream nothing the disk does not
  give it, and a cleaning batch into the disk, run in a gap of the stream, makes the stream's next
  write wait for the whole batch and its seeks.
* **Not onto a slower middle device.** A long stream whose writes on a middle device (between the
  fastest and the disk) cost more per page than the disk's sequential transfer goes to the disk
  for the rest of the stream: a QLC drive past its SLC cache, an SSD slowed by its garbage
  collection as it fills, or writes queued behind cleanings. The fastest device is not judged so:
  what a stream's pages gain there is mostly their later reads, which its write latency does not
  show.

Both rules assume the disk writes the stream without positioning and that its data ends on the
disk anyway. Neither holds for every workload: a disk that also serves random reads seeks away
between the stream's writes, and a stream rewritten in place (a storage engine's circular log) or
read back soon is worth its room on a faster device. Which way pays shows in the latency of the
requests around the streams, so the rules run only while they measurably do: epochs in which a
long stream was written compare them with placing the streams as any other write
(:class:`~hss_gym.agents.arms.EpochArms`; the rules are the default, the other way tried now and
then while the tries cost under 2% of all requests' latency).

Streams are told apart as the core's readahead tells read streams apart: a write that starts where
one of the last 8 writes ended continues that one's stream. Nothing here acts when the home
device is not a disk. Measured in docs/learning-diagnostics.md.
"""

from __future__ import annotations

from typing import Any

from hss_gym.agents.arms import EpochArms
from hss_gym.agents.cleaner import seek_amortising_pages
from hss_gym.workloads.trace import PAGE_SIZE

#: write streams followed at once (as the core's readahead follows 8 read streams)
STREAMS: int = 8
#: weight of a write's cost per page in its stream's running mean
COST_WEIGHT: float = 0.25


class _Stream:
    __slots__ = ("pages", "cost", "home")

    def __init__(self) -> None:
        self.pages = 0  # written so far
        self.cost: float | None = None  # running mean of µs per page on a middle device
        self.home = False  # sent to the disk for the rest of the run


class WriteStreams:
    """The write streams of one episode of ``env`` (an HSS env, after its reset), and what each
    long one's writes cost per page on a middle device."""

    def __init__(self, env: Any, epoch: int) -> None:
        disk = env.cfg.devices[-1]
        self._env = env
        self._home = env.cfg.n_devices - 1
        #: pages from which a stream is long; 0 (off) when the home device is not a disk
        self.long = seek_amortising_pages(disk)
        #: the disk's sequential transfer per page (µs)
        self.home_cost = PAGE_SIZE / disk.write_bandwidth_mbps if self.long else 0.0
        self._end: dict[int, _Stream] = {}  # where each followed stream's last write ended
        self._cur = _Stream()
        self._timed: tuple[_Stream, int, int] | None = None  # (stream, step, pages) of a write to time
        #: whether the rules are off (the arm running: False, the default, they apply), judged over
        #: epochs of ``epoch`` requests
        self.arms = EpochArms(env, epoch, keep=True) if self.long else None
        self._written = False  # whether a long stream was written in the epoch running now

    def tick(self, step: int) -> None:
        """Account request ``step`` (placed now): closes an epoch every ``epoch`` requests."""
        arms = self.arms
        if arms is not None and arms.due(step):
            arms.close(step, self._written)
            self._written = False

    @property
    def ruled(self) -> bool:
        """Whether the rules apply to long streams now (else they are placed as any other write)."""
        return self.arms is not None and not self.arms.arm

    def write(self, offset: int, size: int) -> bool:
        """Account a write of ``size`` bytes at ``offset``, the request now placed; whether its
        stream is long (then :meth:`home` and :meth:`placed` apply to it)."""
        if not self.long:
            return False
        if self._timed is not None:  # the last timed write has completed: its latency is known
            s, step, pages = self._timed
            c = float(self._env._latencies[step]) / pages
            s.cost = c if s.cost is None else s.cost + COST_WEIGHT * (c - s.cost)
            s.home = s.home or s.cost > self.home_cost
            self._timed = None
        s = self._end.pop(offset, None)
        if s is None:
            s = _Stream()
            if len(self._end) >= STREAMS:
                del self._end[next(iter(self._end))]  # the stream followed longest
        s.pages += -(-size // PAGE_SIZE)
        self._end[offset + size] = s
        self._cur = s
        if s.pages >= self.long:
            self._written = True
            return True
        return False

    def home(self) -> bool:
        """Whether the current write's (long) stream goes to the disk for the rest of its run."""
        return self._cur.home

    def placed(self, step: int, device: int, size: int) -> None:
        """The current long write (request ``step``) went to ``device``: timed if a middle device."""
        if 0 < device < self._home:
            self._timed = (self._cur, step, -(-size // PAGE_SIZE))
