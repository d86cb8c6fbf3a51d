"""Run MQSim (CMU-SAFARI/MQSim, FAST'18) side by side with the flash model: build a private copy,
write its workload XML, run it, read its per-flow results.

MQSim is never part of hss-gym: its source stays in ``../shared/anchors/MQSim`` (beside the
checkout) and is copied into a cache folder outside the repository to be built. The copy gets one
added line that logs every request's end-to-end delay (MQSim reports only means and extremes; the
validation compares p99 too). Used by the ``mqsim`` tests and ``benchmarks/perf/bench_flash.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
PATCH_ANCHOR = "sim_time_type request_delay = Simulator->Time() - request->Arrival_time;"
PATCH_LINE = ' if (enabled_logging) log_file << "REQ\\t" << request_delay << "\\n";'


def mqsim_source() -> Path | None:
    """``../shared/anchors/MQSim`` beside the repository, if it is there."""
    src = REPO_ROOT / ".." / "shared" / "anchors" / "MQSim"
    return src.resolve() if (src / "src" / "main.cpp").is_file() else None


def unavailable_reason() -> str | None:
    """Why MQSim cannot be run here (None when it can)."""
    if mqsim_source() is None:
        return f"MQSim source not found at {REPO_ROOT / '..' / 'shared' / 'anchors' / 'MQSim'}"
    if shutil.which("g++") is None or shutil.which("make") is None:
        return "g++ and make are needed to build MQSim"
    return None


def default_cache_dir() -> Path:
    """Where the MQSim copy is built: outside the repository, shared by tests and benchmarks."""
    return Path(tempfile.gettempdir()) / f"hss-gym-mqsim-{os.getuid() if hasattr(os, 'getuid') else 0}"


def build_mqsim(cache_dir: "str | Path | None" = None, source: "str | Path | None" = None) -> Path:
    """Build (once) a latency-logging copy of MQSim under cache_dir; returns the binary.

    Safe when several processes ask at once (CI runs two test suites side by side): the first
    builds under a lock in a private folder and renames it into place when the binary exists; the
    others wait for the lock and find it. A build that failed or was killed leaves no half-built
    folder behind. ``source``: MQSim's source tree (default: :func:`mqsim_source`).
    """
    cache_dir = default_cache_dir() if cache_dir is None else Path(cache_dir)
    src = mqsim_source() if source is None else Path(source)
    if src is None:
        raise FileNotFoundError(unavailable_reason())
    commit = (src / "UPSTREAM_COMMIT").read_text().strip()[:12] if (src / "UPSTREAM_COMMIT").exists() else "unknown"
    dest = cache_dir / f"MQSim-{commit}-latlog"
    binary = dest / "MQSim"
    if binary.is_file():
        return binary
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f"{dest.name}.lock", "w") as lock:
        _lock(lock)
        if binary.is_file():  # built by another process while this one waited
            return binary
        work = Path(tempfile.mkdtemp(prefix=f"{dest.name}.", suffix=".build", dir=cache_dir))
        try:
            _build(src, work)
            if dest.exists():  # a folder without a binary: an old layout or a copy by hand
                shutil.rmtree(dest)
            os.rename(work, dest)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return binary


def _lock(f) -> None:
    """Hold an exclusive lock on the open file f until it is closed (POSIX; elsewhere no lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _build(src: Path, dest: Path) -> None:
    """Copy MQSim's source into dest, add the latency-logging line, and run make there."""
    shutil.copytree(src / "src", dest / "src")
    shutil.copy(src / "Makefile", dest / "Makefile")
    flow = dest / "src" / "host" / "IO_Flow_Base.cpp"
    text = flow.read_text()
    consume = text.index("void IO_Flow_Base::NVMe_consume_io_request")
    at = text.index(PATCH_ANCHOR, consume) + len(PATCH_ANCHOR)
    flow.write_text(text[:at] + PATCH_LINE + text[at:])
    jobs = str(min(2, os.cpu_count() or 1))
    # its Makefile makes the object folders (checkdirs) beside the objects: first, or -j races them
    res = subprocess.run(["make", "checkdirs"], cwd=dest, capture_output=True, text=True)
    if res.returncode == 0:
        res = subprocess.run(["nice", "-n", "10", "make", f"-j{jobs}", "MQSim"], cwd=dest, capture_output=True,
                             text=True)
    if res.returncode != 0 or not (dest / "MQSim").is_file():
        raise RuntimeError(f"building MQSim from {src} failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")


# MQSim's program/erase suspension is unreachable as shipped (commit 7ec40e3b), ignores its settings
# and would hang or crash if reached; the suspension validation runs a second copy with these five
# fixes (file, pattern, replacement, why). Each pattern must match: a changed MQSim makes the build
# fail loudly.
SUSPENSION_FIXES: tuple[tuple[str, str, str, str], ...] = (
    ("src/ssd/TSU_Priority_OutOfOrder.cpp",
     r"PlaneNoPerDie,\s*WriteReasonableSuspensionTimeForRead,\s*EraseReasonableSuspensionTimeForRead,"
     r"\s*EraseReasonableSuspensionTimeForWrite,\s*EraseSuspensionEnabled,\s*ProgramSuspensionEnabled\)",
     "PlaneNoPerDie, EraseSuspensionEnabled, ProgramSuspensionEnabled, WriteReasonableSuspensionTimeForRead, "
     "EraseReasonableSuspensionTimeForRead, EraseReasonableSuspensionTimeForWrite)",
     "the constructor passes its arguments to TSU_Base in the wrong order: both suspensions come out "
     "enabled whatever CMD_Suspension_Support says (from the non-zero preferred times), the program "
     "threshold is Preferred_suspend_erase_time_for_write and the erase thresholds are 0 or 1 ns"),
    ("src/ssd/TSU_Priority_OutOfOrder.cpp",
     r"_NVMController->Expected_finish_time\(chip\) - Simulator->Time\(\) < (\w+)",
     r"_NVMController->Expected_finish_time(chip) < Simulator->Time() + \1",
     "the time left is an unsigned difference: once the chip's expected finish has passed (a resumed "
     "operation runs past it, and a finishing erase re-enters the scheduler before its chip is marked "
     "idle) it wraps to a huge value, so the operation is suspended again, and a die whose command has "
     "just ended is 'suspended' (a null event: segmentation fault)"),
    ("src/ssd/TSU_Priority_OutOfOrder.cpp", r"suspensionRequired = true;(\s*)(case|default)",
     r"suspensionRequired = true; break;\1\2",
     "service_read/write_transaction: the WRITING and ERASING cases fall through to `default: return "
     "false`, so a busy chip is never given a command and suspension never happens"),
    ("src/ssd/NVM_PHY_ONFI_NVDDR2.cpp",
     r"if \(chipBKE->OngoingDieCMDTransfers\.size\(\)\) \{\s*chipBKE->PrepareSuspend\(\);\s*\}",
     "chipBKE->HasSuspend = true; chipBKE->No_of_active_dies--;",
     "Send_command_to_chip marks the chip as holding a suspended command only when a die command "
     "transfer is under way (never, for a chip in an array operation), so the suspended die stays "
     "counted active, the chip never becomes idle and the suspended command never resumes"),
    ("src/ssd/NVM_PHY_ONFI_NVDDR2.cpp",
     r"(DieBookKeepingEntry \*dieBKE = &chipBKE->Die_book_keeping_records\[i\];)(.*?)(chipBKE->PrepareResume\(\);)",
     r"\1 if (!dieBKE->Suspended || !dieBKE->Free) continue;\2\3 chipBKE->No_of_active_dies++;",
     "send_resume_command_to_chip resumes every die, dereferencing the null command of a die that was "
     "not suspended, and does not count the resumed die as active again; and it resumes a die whose "
     "suspending command is still on its way to it (another die's command ended meanwhile, and the "
     "chip looks idle), which then starts the resumed command a second time: two finish events for "
     "one command, the second after it is freed (a segmentation fault with program and erase "
     "suspension and reads during GC). A die is resumed once its suspending command is done"),
)


def build_mqsim_suspension_fixed(cache_dir: "str | Path | None" = None, source: "str | Path | None" = None) -> Path:
    """A copy of the latency-logging MQSim (:func:`build_mqsim`) with :data:`SUSPENSION_FIXES`
    applied, built once beside it (its objects reused: only the patched files recompile), under the
    same kind of lock. Returns the binary."""
    import hashlib

    base = build_mqsim(cache_dir, source).parent
    tag = hashlib.sha1(repr(SUSPENSION_FIXES).encode()).hexdigest()[:8]
    dest = base.parent / f"{base.name}-suspfix-{tag}"
    binary = dest / "MQSim"
    if binary.is_file():
        return binary
    with open(base.parent / f"{dest.name}.lock", "w") as lock:
        _lock(lock)
        if binary.is_file():
            return binary
        work = Path(tempfile.mkdtemp(prefix=f"{dest.name}.", suffix=".build", dir=base.parent))
        try:
            shutil.rmtree(work)
            shutil.copytree(base, work, symlinks=True)
            (work / "MQSim").unlink()
            for rel, pattern, repl, why in SUSPENSION_FIXES:
                f = work / rel
                text, n = re.subn(pattern, repl, f.read_text(), flags=re.S)
                if n == 0:
                    raise RuntimeError(f"MQSim suspension fix not applicable to {rel} (pattern {pattern!r}): {why}")
                f.write_text(text)
            res = subprocess.run(["nice", "-n", "10", "make", "-j1", "MQSim"], cwd=work, capture_output=True, text=True)
            if res.returncode != 0 or not (work / "MQSim").is_file():
                raise RuntimeError(f"building the suspension-fixed MQSim failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
            if dest.exists():
                shutil.rmtree(dest)
            os.rename(work, dest)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return binary


@dataclass
class Flow:
    """One MQSim IO flow. ``trace`` (a DiskSim ASCII file) makes it trace-based; otherwise it is a
    synthetic closed-loop (QUEUE_DEPTH) flow of uniform random, aligned requests."""

    read_pct: int = 100
    queue_depth: int = 1
    size_sectors: int = 8
    requests: int = 10000
    seed: int = 1
    channels: Sequence[int] | None = None      # default: all
    chips: Sequence[int] | None = None
    working_set_pct: int = 100
    occupancy_pct: int = 0                     # MQSim's Initial_Occupancy_Percentage (preconditioning)
    trace: str | None = None
    relay: int = 1
    priority: str = "HIGH"
    caching_mode: str = "TURNED_OFF"           # Device_Level_Data_Caching_Mode: WRITE_CACHE, READ_CACHE, ...


def _ids(v: Sequence[int] | None, n: int) -> str:
    return ",".join(str(i) for i in (range(n) if v is None else v))


def workload_xml(flows: Sequence[Flow], n_channels: int, n_chips: int, n_dies: int, n_planes: int) -> str:
    """MQSim's IO scenario file for flows (one scenario); each flow's DRAM data cache as its
    ``caching_mode`` says (off by default)."""
    out = ['<?xml version="1.0" encoding="us-ascii"?>', "<MQSim_IO_Scenarios>", "<IO_Scenario>"]
    for f in flows:
        common = [("Priority_Class", f.priority), ("Device_Level_Data_Caching_Mode", f.caching_mode),
                  ("Channel_IDs", _ids(f.channels, n_channels)), ("Chip_IDs", _ids(f.chips, n_chips)),
                  ("Die_IDs", _ids(None, n_dies)), ("Plane_IDs", _ids(None, n_planes)),
                  ("Initial_Occupancy_Percentage", f.occupancy_pct)]
        if f.trace:
            tag = "IO_Flow_Parameter_Set_Trace_Based"
            params = common + [("File_Path", f.trace), ("Percentage_To_Be_Executed", 100),
                               ("Relay_Count", f.relay), ("Time_Unit", "NANOSECOND")]
        else:
            tag = "IO_Flow_Parameter_Set_Synthetic"
            params = common + [("Working_Set_Percentage", f.working_set_pct),
                               ("Synthetic_Generator_Type", "QUEUE_DEPTH"), ("Read_Percentage", f.read_pct),
                               ("Address_Distribution", "RANDOM_UNIFORM"), ("Percentage_of_Hot_Region", 0),
                               ("Generated_Aligned_Addresses", "true"), ("Address_Alignment_Unit", f.size_sectors),
                               ("Request_Size_Distribution", "FIXED"), ("Average_Request_Size", f.size_sectors),
                               ("Variance_Request_Size", 0), ("Seed", f.seed),
                               ("Average_No_of_Reqs_in_Queue", f.queue_depth), ("Intensity", 32768),
                               ("Stop_Time", 0), ("Total_Requests_To_Generate", f.requests)]
        out.append(f"<{tag}>")
        out += [f"<{k}>{v}</{k}>" for k, v in params]
        out.append(f"</{tag}>")
    out += ["</IO_Scenario>", "</MQSim_IO_Scenarios>", ""]
    return "\n".join(out)


def ssdconfig_text(base: "str | Path", **overrides: object) -> str:
    """An ssdconfig.xml's text with some fields replaced (e.g. Block_No_Per_Plane=128), and the
    per-request latency log switched on."""
    text = Path(base).read_text()
    overrides = {"Enable_ResponseTime_Logging": "true", "ResponseTime_Logging_Period_Length": 10**15, **overrides}
    for k, v in overrides.items():
        text, n = re.subn(rf"<{k}>[^<]*</{k}>", f"<{k}>{v}</{k}>", text)
        if n != 1:
            raise KeyError(f"ssdconfig field {k!r} not found in {base}")
    return text


@dataclass
class MQSimResult:
    flows: list[dict] = field(default_factory=list)   # per flow: MQSim's attributes + "latencies_us"
    ftl: dict = field(default_factory=dict)
    wall_s: float = 0.0
    user_s: float = 0.0
    sys_s: float = 0.0

    def gc_write_amplification(self, host_page_writes: int) -> float:
        moved = float(self.ftl.get("Total_GC_Executions", 0)) * float(self.ftl.get("Average_Page_Movement_For_GC", 0))
        return (host_page_writes + moved) / host_page_writes if host_page_writes else float("nan")


def run_mqsim(binary: "str | Path", ssdconfig: str, workload: str, workdir: "str | Path",
              timeout: float = 600) -> MQSimResult:
    """Run MQSim on the given ssdconfig and workload texts in workdir; parse its results."""
    import resource
    import time

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "ssdconfig.xml").write_text(ssdconfig)
    (workdir / "workload.xml").write_text(workload)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([str(Path(binary).resolve()), "-i", "ssdconfig.xml", "-w", "workload.xml"], cwd=workdir,
                         capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = workdir / "workload_scenario_1.xml"
    if res.returncode != 0 or not out.is_file():
        raise RuntimeError(f"MQSim failed in {workdir} (exit {res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    root = ET.parse(out).getroot()
    result = MQSimResult(wall_s=wall, user_s=after.ru_utime - before.ru_utime, sys_s=after.ru_stime - before.ru_stime)
    for el in root.iter():
        if el.tag == "Host.IO_Flow":
            result.flows.append({c.tag: (c.text or "").strip() for c in el})
        elif el.tag == "SSDDevice.FTL":
            result.ftl = dict(el.attrib)
    for i, flow in enumerate(result.flows):
        log = workdir / f"workload.IO_Flow.No_{i}.log"
        lat = []
        if log.is_file():
            for line in log.read_text().splitlines():
                if line.startswith("REQ\t"):
                    lat.append(int(line[4:]) / 1000.0)
        flow["latencies_us"] = np.asarray(lat)
    return result
