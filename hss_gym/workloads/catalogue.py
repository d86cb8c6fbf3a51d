"""A pinned catalogue of small public real block traces, downloaded once and verified on use.

Real traces make the standard comparisons honest, but a user should not have to hunt for them,
nor trust that the file they found is the one a leaderboard ran on. Each entry names a file in
a public repository at a commit (so its raw URL never changes), with its size, sha256, format
and reader options, the number of requests it holds and a note on where it comes from and on
what terms. :func:`path` returns the local file: downloaded on first use into the cache
directory, then checked against its size and sha256 **every time** it is used (a file changed
in the cache is an error, never silently replaced or read).

The cache directory is ``$HSS_GYM_DATA`` if set, else ``$XDG_CACHE_HOME/hss-gym/traces``, else
``~/.cache/hss-gym/traces``. Offline, put the file there yourself (any copy with the right
sha256 will do). ``mirror=`` (or ``$HSS_GYM_MIRROR``) downloads from another base URL holding
the files by their catalogue file names (a local mirror; the tests use one).

Workloads and suites name catalogue traces as ``"catalogue:NAME"``
(``get_trace("catalogue:msr-rsrch_1")``); the command line is ``hss-gym traces list | info NAME
| fetch NAME``. Downloads use the standard library only (``urllib``), written to a temporary
file, hashed while they arrive and renamed into place only when the sha256 matches.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from hss_gym.workloads.readers import load_trace

PREFIX = "catalogue:"
_CHUNK = 1 << 20


class CatalogueError(ValueError):
    """A catalogue trace is unknown, cannot be downloaded, or does not match its sha256."""


@dataclass(frozen=True)
class Entry:
    """One pinned trace file: where it comes from, what it is, how to read it."""

    name: str
    file: str                  # file name in the cache (and on a mirror)
    repo: str                  # origin repository (owner/name)
    commit: str | None         # commit the URL is pinned to (None: not pinned yet)
    path: str                  # path in the repository
    size: int                  # bytes
    sha256: str
    format: str                # reader format (load_trace format=)
    requests: int              # requests load_trace reads from it
    description: str
    licence: str               # where it comes from and on what terms, as far as known
    options: dict[str, Any] = field(default_factory=dict)  # further load_trace options

    @property
    def url(self) -> str | None:
        """The raw URL at the pinned commit (None when no commit is pinned)."""
        if self.commit is None:
            return None
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"

    def info(self) -> dict[str, Any]:
        """Everything known about the entry, for ``hss-gym traces info``."""
        return {"name": self.name, "file": self.file, "repository": self.repo,
                "commit": self.commit, "path": self.path, "url": self.url, "size": self.size,
                "sha256": self.sha256, "format": self.format, "options": self.options,
                "requests": self.requests, "description": self.description,
                "licence": self.licence}


_MSR_TERMS = ("MSR Cambridge block I/O traces (Narayanan et al., FAST 2008), published in the "
              "SNIA IOTTA repository under its terms; ")

ENTRIES: tuple[Entry, ...] = (
    Entry("msr-rsrch_1", "msr-rsrch_1.csv", "shenzr/cross-rack-aware-updates",
          "b1007fd544e441273472745e31c15655b8a942d3", "example-traces/rsrch_1.csv", 755_814,
          "4310d76a35f27754d87d5e641e3e302b5c9df5a30384fe39966858b14e3f3187", "msr", 13_780,
          "MSR Cambridge rsrch_1 (research projects volume 1), the complete volume trace: "
          "42 reads, 13,738 writes",
          _MSR_TERMS + "this copy is redistributed in the repository named"),
    Entry("msr-excerpt-rw20", "msr-excerpt-rw20.trace", "ucare-uchicago/Heimdall",
          "4239978e278a85d62daf9922771b5a673f1fa3c0",
          "ds_pipeline/data/raw_data/msr.cut.per_10k.rw_20_80.105.trace", 304_752,
          "ef43beb542f4497041fc57dfdec199ba1dee96f4d578536cb31c227ee1ab0db5", "heimdall",
          10_000, "a 10,000-request excerpt of the MSR Cambridge traces (20% reads), in "
          "Heimdall's replayer format (ms, bytes)",
          _MSR_TERMS + "excerpt made and redistributed by the Heimdall repository"),
    Entry("msnfs-disksim", "msnfs-disksim.trace", "huaicheng/replayer",
          "fdd4d6f6f3a8f795a16f6b1f342163d4d1d39c7c", "replayer/MSN-FS-30s-ms", 4_055_231,
          "7120325e0dd83a82bec022e477ab545f36202afc2b746056bf6a52f807b702e8", "disksim",
          149_999, "150,000-request excerpt of the MSR 'MSN File Server' production trace, "
          "DiskSim ASCII (ms, 512-byte blocks)",
          "Microsoft production server traces (SNIA IOTTA, under its terms); excerpt "
          "redistributed by the repository named"),
    Entry("pcmark-disksim", "pcmark-disksim.trace", "andrew841018/disksim_github",
          "e1602a6fa63ea31c8320691e7b38684590a92f61", "disksim_2021/pcmark", 1_569_052,
          "9a1a0c90467665053643514832c2a3ab446d36160ef503ad16c51278cf95fa5d",
          "disksim", 56_088, "a PCMark desktop trace distributed with DiskSim",
          "distributed with DiskSim (Carnegie Mellon University's licence); this copy from the "
          "repository named"),
    Entry("postmark-disksim", "postmark-disksim.trace", "menliang99/Cache-Simulator-for-SSD",
          "cb3eeab6894623dbb4d1de73e8789b7ccca7ebc6", "ssdmodel/valid/ssd-postmark-aligned2.trace",
          1_655_095, "d386d464cfe7f242f293fa95a13927524621ccfd4d7724c8bb7cf7c90ae5e6d9",
          "disksim", 61_502, "a Postmark run from the DiskSim SSD-extension validation traces",
          "DiskSim SSD extension (Microsoft Research) validation traces; this copy from the "
          "repository named"),
    Entry("mqsim-tpcc-small", "tpcc-small.trace", "CMU-SAFARI/MQSim",
          "db363f1af7678b336bc96d5743c6da8fffa0b9b3", "traces/tpcc-small.trace", 194_790,
          "404dd97c3fd4bf605c23abb1f57823226d31da9ed5caeb37b01236496a81fa56", "mqsim", 6_999,
          "a TPC-C derived trace shipped with MQSim (integer ns, 512-byte sectors)",
          "shipped with MQSim (MIT licence, as the repository states)"),
    Entry("cloudphysics-io", "cloudPhysicsIO.csv", "1a1a11a/libCacheSim", None,
          "data/cloudPhysicsIO.csv", 3_116_791,
          "987ff2213050e47d24e8ba6e010d4b3127e51aafef6a76a8a6d43d13b9156fa1", "cloudphysics",
          113_872, "a CloudPhysics VMware vscsi trace sample, as libCacheSim's CSV",
          "CloudPhysics trace sample distributed with libCacheSim (its licence); commit not "
          "pinned yet: no download URL, place the file (sha256 below) in the cache"),
    Entry("wiscsee-blkparse", "blkparse-wiscsee.txt", "junhe/wiscsee", None,
          "tests/testdata/blkparse-output.txt", 52_040,
          "5919c759433b7ba9d849b8efa7357fd953465429ac613829daf17fdc60b4c88e", "blkparse", 673,
          "blkparse output of a real ext4 run (WiscSee test data): 161 reads, 512 writes",
          "WiscSee test data (its licence); commit not pinned yet: no download URL, place the "
          "file (sha256 below) in the cache"),
)

CATALOGUE: dict[str, Entry] = {e.name: e for e in ENTRIES}


def names() -> list[str]:
    """The catalogue's trace names."""
    return list(CATALOGUE)


def entry(name: str) -> Entry:
    """The entry called ``name`` (a ``catalogue:`` prefix is allowed); CatalogueError lists
    the names when there is none."""
    key = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if key not in CATALOGUE:
        raise CatalogueError(f"no trace {key!r} in the catalogue; its traces: "
                             f"{', '.join(CATALOGUE)}")
    return CATALOGUE[key]


def cache_dir() -> Path:
    """Where catalogue traces are kept: $HSS_GYM_DATA, else the user cache directory."""
    if os.environ.get("HSS_GYM_DATA"):
        return Path(os.environ["HSS_GYM_DATA"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hss-gym" / "traces"


def local_path(name: str) -> Path:
    """Where the trace ``name`` is (or would be) in the cache; not checked."""
    return cache_dir() / entry(name).file


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file."""
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def verify(name: str, file: Path | None = None) -> Path:
    """Check the cached file of ``name`` (or ``file``) against its size and sha256; return it.

    A file that differs is an error naming both hashes (delete it to download it again): a
    leaderboard result must be measured on exactly the pinned requests.
    """
    e = entry(name)
    file = local_path(name) if file is None else file
    if not file.is_file():
        raise CatalogueError(f"catalogue trace {e.name!r} is not in the cache ({file}); "
                             f"`hss-gym traces fetch {e.name}` downloads it")
    size = file.stat().st_size
    got = sha256_of(file) if size == e.size else None
    if got != e.sha256:
        found = f"sha256 {got}" if got is not None else f"{size:,} bytes, not {e.size:,}"
        raise CatalogueError(f"{file}: not the pinned {e.name!r} (expected sha256 {e.sha256}, "
                             f"found {found}); delete it to download it again")
    return file


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts: it may still be writing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_parts(dest: Path) -> None:
    """Remove the partial downloads of ``dest`` (``.<file>.<pid>.*.part``) left by fetches that
    were killed (SIGKILL, power loss: no ``finally`` ran), those whose process is gone."""
    prefix = f".{dest.name}."
    for part in dest.parent.glob(f"{prefix}*.part"):
        pid = part.name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            part.unlink(missing_ok=True)


def fetch(name: str, *, mirror: str | None = None, timeout: float = 60.0,
          force: bool = False) -> Path:
    """The verified local file of catalogue trace ``name``, downloaded first if not cached.

    ``mirror`` (default ``$HSS_GYM_MIRROR``) is a base URL holding the files by their
    catalogue file names; otherwise the entry's pinned raw URL. The download goes to a
    temporary file in the cache directory (named with this process's PID) and is renamed into
    place only if its sha256 matches; it is removed on any error or interrupt, and one left by a
    killed fetch is removed by the next fetch of the file. ``force`` downloads again even if a
    good copy is cached.
    """
    e = entry(name)
    dest = local_path(name)
    if dest.exists() and not force:
        return verify(name, dest)
    mirror = mirror if mirror is not None else os.environ.get("HSS_GYM_MIRROR") or None
    url = mirror.rstrip("/") + "/" + e.file if mirror else e.url
    if url is None:
        raise CatalogueError(f"catalogue trace {e.name!r} has no pinned download URL yet "
                             f"({e.licence}); copy {e.repo}'s {e.path} to {dest} (sha256 "
                             f"{e.sha256}), or give a mirror")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_parts(dest)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.{os.getpid()}.", suffix=".part", dir=dest.parent)
    try:
        sha, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
                    while chunk := response.read(_CHUNK):
                        sha.update(chunk)
                        size += len(chunk)
                        if size > e.size:
                            break  # more than the pinned file: it cannot match
                        out.write(chunk)
            except urllib.error.HTTPError as exc:
                raise CatalogueError(
                    f"cannot download catalogue trace {e.name!r} from {url}: HTTP {exc.code} "
                    f"{exc.reason} (put the file, sha256 {e.sha256}, at {dest})") from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise CatalogueError(
                    f"cannot download catalogue trace {e.name!r} from {url}: {reason} (offline? "
                    f"put the file, sha256 {e.sha256}, at {dest}; or set HSS_GYM_DATA to a "
                    "folder holding it)") from None
        if size != e.size or sha.hexdigest() != e.sha256:
            got = (sha.hexdigest() if size == e.size else f"more than {e.size:,} bytes"
                   if size > e.size else f"{size:,} bytes, not {e.size:,}")
            raise CatalogueError(f"download of {e.name!r} from {url} does not match the pin "
                                 f"(expected sha256 {e.sha256}, got {got}); nothing was kept")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return verify(name, dest)


def load(name: str, **options: Any) -> Any:
    """The catalogue trace ``name`` read with its format and reader options (``options``
    override or add ``load_trace`` options, e.g. ``limit``); fetched and verified first."""

    e = entry(name)
    path = fetch(name)
    opts: dict[str, Any] = {"format": e.format, **e.options, "name": e.name, **options}
    trace = load_trace(path, **opts)
    trace.source["catalogue"] = e.name
    return trace
