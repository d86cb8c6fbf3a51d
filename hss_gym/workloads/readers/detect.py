"""Format detection: which format a trace file is in, from its first bytes, or a
TraceFormatError that asks for ``format=`` where a guess could rescale it silently."""

from __future__ import annotations

import re
from pathlib import Path

from hss_gym.workloads.readers.delimited import DelimitedParser
from hss_gym.workloads.readers.table import DELIMITED, FORMATS, PLAUSIBLE
from hss_gym.workloads.trace import TraceFormatError


_BLKPARSE_LINE = re.compile(rb"\s*[0-9]+,[0-9]+\s+[0-9]+\s+[0-9]+\s+[0-9]+\.[0-9]+\s+[0-9]+\s+"
                            rb"[A-Za-z]{1,2}\s")
_DETECT_LINES = 2000  # lines of the head (at most its 64 KiB) a delimited format must parse
_DETECT_ORDER = ("msr", "systor17", "alibaba", "tencent", "spc", "cloudphysics", "fiu",
                 "heimdall", "mqsim", "disksim")


def detect(head: bytes, path: str, engine: str = "auto") -> str:
    """The format of a file from its first decompressed bytes (and its name as a hint).

    Every delimited format parses the first lines (up to :data:`_DETECT_LINES`, 64 KiB); the
    candidates are those that parse most rows, need no header they lack, and whose values are
    plausible for their units (e.g. byte sizes that are multiples of 512). The one that parses
    the most rows wins; a file extension only breaks a tie. If two candidates remain tied (or
    the rows parse only as formats whose values are implausible), the file is *not* guessed:
    TraceFormatError names the candidates and asks for ``format=`` - a wrong guess would
    rescale offsets and times silently.
    """
    if head.startswith((b"fio version 2 iolog", b"fio version 3 iolog")):
        return "fio"
    head = head.rstrip(b"\0")  # NUL padding at the end of a small file (not read as a row)
    if not head.strip():  # not a format to detect: say so, not "could not detect the format"
        raise TraceFormatError("is empty: no requests to read" if not head else
                               f"holds no requests: its first {len(head):,} bytes are blank", path=path)
    # the first lines that are not blank: a junk line or two (a tar header) may come first
    first_lines = [line for line in head.split(b"\n", 200)[:200] if line.strip()][:10]
    if any(_BLKPARSE_LINE.match(line + b" ") for line in first_lines):
        return "blkparse"
    lines = head.split(b"\n", _DETECT_LINES)  # head: complete lines (or the whole file)
    sample = head if len(lines) <= _DETECT_LINES else b"\n".join(lines[:_DETECT_LINES]) + b"\n"
    suffixes = {s.lower() for s in Path(path).suffixes}
    first_rows = first_lines
    scores: dict[str, tuple[int, bool]] = {}
    implausible: list[str] = []
    for name in _DETECT_ORDER:
        fmt = DELIMITED[name]
        parser = DelimitedParser(fmt, path, engine, describe_errors=False)
        # cheap pre-check: one of the first lines (junk, a header, then rows) has the field count
        if not any(fmt.min_fields <= len(parser.fields(line)) <= parser.max_fields
                   for line in first_rows):
            continue
        block = parser.parse(sample)
        # most rows must parse (a few malformed rows are reported later, with their lines)
        if len(block) <= block.skipped or (fmt.detect_needs_header and not parser.saw_header):
            continue
        if fmt.plausible is not None and not fmt.plausible(block):
            implausible.append(name)
            continue
        scores[name] = (len(block) - block.skipped, bool(set(fmt.extensions) & suffixes))
    names = ", ".join(n for n in FORMATS if n != "cache")
    if not scores:
        if implausible:
            raise TraceFormatError(
                f"the first lines parse as {' or '.join(map(repr, implausible))} but their values "
                f"are implausible for {'that format' if len(implausible) == 1 else 'each'} "
                f"({'; '.join(PLAUSIBLE[n] for n in implausible)}), so reading it as "
                f"{'that format' if len(implausible) == 1 else 'one of them'} would rescale "
                "its times or offsets: hss-gym does not guess. Pass the format whose units the "
                "file has (format=, or format='csv' with columns= and units)", path=path)
        raise TraceFormatError(
            f"could not detect the trace format from the first lines; pass format= (one of {names})",
            path=path)
    ranked = sorted(scores, key=scores.__getitem__, reverse=True)
    if len(ranked) > 1 and scores[ranked[0]] == scores[ranked[1]]:
        tied = [n for n in ranked if scores[n] == scores[ranked[0]]]
        raise TraceFormatError(
            f"ambiguous trace format: the first {scores[ranked[0]][0]} rows parse equally well as "
            f"{' and '.join(map(repr, tied))}, whose units differ; pass format= (e.g. "
            f"format={tied[0]!r})", path=path)
    return ranked[0]
