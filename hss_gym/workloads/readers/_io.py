"""Opening trace files: compression by magic bytes, streaming decompression, hashing, line blocks.

A :class:`TraceFile` reads a file once, front to back, in bounded memory:

* the compression is recognised from the first bytes (gzip ``1f 8b``, zstd ``28 b5 2f fd``), not
  from the file name, and multi-member gzip / multi-frame zstd streams are read to the end;
* a stream that ends before its end-of-stream marker (a truncated download) raises
  :class:`~hss_gym.workloads.trace.TraceFormatError` naming the file, as does corrupt data;
* a UTF-8 byte order mark at the start of the text (Windows tools write one) is not part of the
  first line; UTF-16 text (a BOM ``FF FE`` / ``FE FF``) is refused with TraceFormatError saying so;
* the raw bytes (as stored on disk, compressed or not) are hashed with SHA-256 for provenance;
  large blocks are hashed on a helper thread while the caller parses (hashlib releases the GIL);
* :meth:`TraceFile.blocks` yields the decompressed text cut at line ends, in blocks of about
  ``block_bytes``, so a parser never sees half a line; NUL padding at the end of the text (a
  file cut out of a tar archive) is left out and counted (:attr:`TraceFile.nul_padding`);
* memory is bounded by what is read, never by what the file claims: decompression yields at most
  a few MiB per step (a 40 KB zstd frame may expand to 1 GiB), so a reader that stops early (a
  ``limit``) decompresses little more than it parses; a line longer than
  ``max(block_bytes, MAX_LINE_BYTES)`` (no trace record is; binary data or a decompression bomb
  may be) raises :class:`LongLineError` instead of being held whole, except a run of NUL bytes
  at the end of the text, which is counted as padding without being held;
* only regular files are read (:func:`open_trace`): a missing path raises FileNotFoundError
  saying so, and a FIFO, socket or device is refused at once with TraceFormatError. A pipe cannot
  be read twice (format detection rewinds, the hash reads the raw bytes) and opening a FIFO
  without a writer would block forever, so the file is opened non-blocking and checked with
  ``fstat`` before any read. Write a stream to a file first (or to a trace cache).
"""

from __future__ import annotations

import hashlib
import os
import stat
import zlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, TypeVar

import numpy as np

from hss_gym.workloads.trace import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
HEAD_BYTES = 1 << 16        # decompressed bytes available to format detection
_COMPRESSED_READ = 1 << 20  # raw read size for compressed input
_GZIP_PIECE = 1 << 22       # decompressed bytes per gzip step at most
# a zstd block holds at most 128 KiB and takes at least 4 bytes (ratio <= 32768): 512 compressed
# bytes per step give at most 16 MiB, at little cost (decompression is not the slow part)
_ZSTD_FEED = 512
#: a line longer than this (and than the block size) is not a trace record: an error, not held
MAX_LINE_BYTES = 1 << 20
_THREADED_HASH = 1 << 20    # hash blocks at least this large on the helper thread


TextT = TypeVar("TextT", bytes, memoryview)

_POOL: ThreadPoolExecutor | None = None
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def open_trace(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading if it is a regular file (symbolic links followed).

    Never blocks: the open is non-blocking (a FIFO without a writer would otherwise wait forever)
    and the file type is checked on the open descriptor, so nothing can be swapped in between.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"trace file {str(path)!r} does not exist") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise TraceFormatError(f"is {kind}, not a regular file: trace files are read twice "
                                   "(format detection, then the raw bytes' hash), so pipes and "
                                   "devices are refused; write the trace to a file first",
                                   path=str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _pool() -> ThreadPoolExecutor:
    """One helper thread shared by all hashers (created on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hss-gym-sha256")
    return _POOL


def _forget_pool() -> None:
    """In a forked child the parent's helper thread does not exist: start a new one on use."""
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


class _Hasher:
    """SHA-256 of a byte stream; big updates run on the helper thread, in order."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._job: Future[None] | None = None

    def update(self, data: bytes) -> None:
        self.wait()
        if len(data) < _THREADED_HASH:
            self._sha.update(data)
        else:
            self._job = _pool().submit(self._sha.update, data)

    def hexdigest(self) -> str:
        self.wait()
        return self._sha.hexdigest()

    def wait(self) -> None:
        if self._job is not None:
            job, self._job = self._job, None
            job.result()


def _last_newline(buf: np.ndarray, end: int) -> int:
    """Index of the last ``\\n`` in ``buf[:end]``, or -1."""
    window = 1 << 16
    while True:
        start = max(0, end - window)
        found = bytes(buf[start:end]).rfind(b"\n")
        if found >= 0 or start == 0:
            return start + found if found >= 0 else -1
        window *= 4


def _has_newline(data: bytes | memoryview, start: int, stop: int) -> bool:
    """Whether ``data[start:stop]`` holds a ``\\n`` (copied a growing window at a time)."""
    window = 1 << 12
    while start < stop:
        end = min(stop, start + window)
        if bytes(data[start:end]).find(b"\n") >= 0:
            return True
        start, window = end, window * 4
    return False


class LongLineError(TraceFormatError):
    """A line too long to be a trace record; the reader adds its number (the parser counts)."""

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(message, path=path, line=line)
        self.message = message


class TraceFile:
    """One pass over a (possibly compressed) trace file. Use as a context manager."""

    def __init__(self, path: str | Path, block_bytes: int = 1 << 24) -> None:
        if block_bytes < 1:
            raise ValueError(f"block_bytes must be >= 1, got {block_bytes}")
        self.path = Path(path)
        self.block_bytes = block_bytes
        self.max_line = max(block_bytes, MAX_LINE_BYTES)  # longer: LongLineError
        self._nul_run = 0  # NUL bytes of a run too long to hold: padding if nothing follows
        self._fh: BinaryIO = open_trace(self.path)  # closed by close()
        self._hasher = _Hasher()
        self._first = self._fh.read(4)
        self._fh.seek(0)
        if self._first.startswith(GZIP_MAGIC):
            self.compression: str | None = "gzip"
        elif self._first.startswith(ZSTD_MAGIC):
            self.compression = "zstd"
        else:
            self.compression = None
        self._pieces = self._text(self._decompressed())
        self._pending: list[bytes] = []
        self._head: bytes | None = None
        self._eof = False
        #: NUL bytes at the end of the text, left out of :meth:`blocks` (known once it is read)
        self.nul_padding = 0

    def __enter__(self) -> "TraceFile":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._hasher.wait()
        self._fh.close()

    @property
    def head(self) -> bytes:
        """The first complete lines of the text (about :data:`HEAD_BYTES`), for detection."""
        if self._head is None:
            size = sum(len(p) for p in self._pending)
            while size < HEAD_BYTES:
                piece = next(self._pieces, None)
                if piece is None:  # the whole file fits
                    self._head = b"".join(self._pending)
                    return self._head
                self._pending.append(piece)
                size += len(piece)
            head = b"".join(self._pending)[:HEAD_BYTES]
            self._head = head[:head.rfind(b"\n") + 1] or head
        return self._head

    def sha256(self) -> str:
        """Hex SHA-256 of the raw file bytes (hashes whatever the caller did not read)."""
        if not self._eof:
            while chunk := self._fh.read(1 << 22):
                self._hasher.update(chunk)
            self._eof = True
        return self._hasher.hexdigest()

    def blocks(self) -> Iterator[bytes | memoryview]:
        """The decompressed text in blocks of complete lines (the last may lack its newline).

        Blocks of an uncompressed file are read in place into fresh buffers (no copies) and come
        as memoryviews; decompressed ones as bytes. NUL bytes at the very end of the text (the
        padding of a file cut out of a tar archive, or of a preallocated log) are not part of it:
        they are left out of the last block and counted in :attr:`nul_padding`. A NUL anywhere
        else is text, and a parser reports its line.
        """
        held: bytes | memoryview | None = None  # one block of look-ahead: is it the last?
        try:
            for block in self._text_blocks():
                if held is not None:
                    yield held
                held = block
        except LongLineError:
            if held is not None:  # its lines come first: parsed, they number the long one
                yield held
            raise
        if held is not None:
            held = self._strip_padding(held)
            if len(held):
                yield held
        self.nul_padding += self._nul_run

    def _strip_padding(self, block: bytes | memoryview) -> bytes | memoryview:
        """``block`` (the last) without its trailing NUL bytes, counted in :attr:`nul_padding`."""
        buf = np.frombuffer(block, dtype=np.uint8)
        end, window = len(buf), 1 << 12
        while end:  # scan back for the last byte that is not NUL, a window at a time
            start = max(0, end - window)
            nonzero = np.flatnonzero(buf[start:end])
            if len(nonzero):
                end = start + int(nonzero[-1]) + 1
                break
            end, window = start, window * 4
        self.nul_padding = len(buf) - end
        return block[:end]

    def _text_blocks(self) -> Iterator[bytes | memoryview]:
        """:meth:`blocks` before the padding at the end is taken off."""
        self.head  # noqa: B018 - reads the start of the text through _text (the byte order mark)
        if self.compression is None:
            yield from self._plain_blocks()
            return
        parts = self._pending
        self._pending = []
        size = sum(len(p) for p in parts)
        want = self.block_bytes  # bytes to gather before looking for a line end
        carried = size           # bytes of parts[0] already looked at
        for piece in self._pieces:
            parts.append(piece)
            size += len(piece)
            if size < want:
                continue
            data = parts[0] if len(parts) == 1 else b"".join(parts)
            self._after_nul_run(data)
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # one line longer than a block: keep reading, up to max_line
                parts = [] if self._long_line(data) else [data]
                size = carried = len(parts[0]) if parts else 0
                want = max(self.block_bytes, 2 * size)  # geometric: each byte copied O(1) times
                continue
            yield from self._before_long_line(data, carried)
            yield data if cut == len(data) else data[:cut]
            rest = data[cut:]
            parts, size, want = ([rest] if rest else []), len(rest), self.block_bytes
            carried = size
        if size:
            data = parts[0] if len(parts) == 1 else b"".join(parts)
            self._after_nul_run(data)
            yield from self._before_long_line(data, carried)
            yield data

    def _plain_blocks(self) -> Iterator[memoryview]:
        carry = b"".join(self._pending)  # what format detection read
        self._pending = []
        while True:
            if self._eof:
                if carry:
                    yield memoryview(carry)
                return
            # a line longer than a block: read as much again (geometric: no quadratic copying)
            buf = np.empty(len(carry) + max(self.block_bytes, len(carry)), dtype=np.uint8)
            buf[:len(carry)] = np.frombuffer(carry, dtype=np.uint8)
            view = memoryview(buf)
            n = self._fh.readinto(view[len(carry):])
            if n:
                self._hasher.update(view[len(carry):len(carry) + n])
            else:
                self._eof = True
            end = len(carry) + n
            self._after_nul_run(view[:end])
            cut = _last_newline(buf, end) + 1 if n else end
            if cut == 0:  # one line longer than a block: keep reading, up to max_line
                carry = b"" if self._long_line(view[:end]) else bytes(view[:end])
                continue
            yield from self._before_long_line(view[:end], len(carry))
            if cut:
                yield view[:cut]
            carry = bytes(view[cut:end])

    def _long_line(self, partial: bytes | memoryview) -> bool:
        """Whether ``partial`` (text with no line end yet) is too long to hold: then, if it is
        only NUL bytes (padding, if nothing else follows), it is counted and the caller drops it;
        any other line that long raises :class:`LongLineError`."""
        if len(partial) <= self.max_line:
            return False
        if np.frombuffer(partial, dtype=np.uint8).any():
            raise self._long_line_error()
        self._nul_run += len(partial)
        return True

    def _before_long_line(self, data: TextT, carried: int) -> Iterator[TextT]:
        """Nothing if the last line of ``data[:carried]`` (read before) ends within max_line
        bytes (a longer line spans a block end); else the lines before it (parsed, they number
        it), then :class:`LongLineError`."""
        if not carried:
            return
        start = bytes(data[:carried]).rfind(b"\n") + 1
        stop = start + self.max_line + 1
        if len(data) < stop or _has_newline(data, carried, stop):
            return
        if start:
            yield data[:start]
        raise self._long_line_error()

    def _after_nul_run(self, data: bytes | memoryview) -> None:
        """After a NUL run too long to hold only NUL padding may follow: text continues that
        line, which is then too long (:class:`LongLineError`)."""
        if self._nul_run and np.frombuffer(data, dtype=np.uint8).any():
            raise self._long_line_error()

    def _long_line_error(self) -> LongLineError:
        return LongLineError(f"a line longer than {self.max_line} bytes: no trace record is that "
                             "long (binary data, a decompression bomb, or not a trace file?)",
                             path=str(self.path))

    # --------------------------------------------------------------------- raw and decompressed

    def _raw(self, size: int) -> Iterator[bytes]:
        """Raw file bytes in chunks of at most ``size``, hashed on the way."""
        remaining = os.fstat(self._fh.fileno()).st_size
        while True:
            # ask for no more than the file holds (read(n) allocates n bytes up front), then
            # probe for the end of the file with a small read
            chunk = self._fh.read(min(size, remaining) if remaining > 0 else 1 << 16)
            if not chunk:
                self._eof = True
                return
            remaining -= len(chunk)
            self._hasher.update(chunk)
            yield chunk

    def _text(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        """``pieces`` without a UTF-8 byte order mark at the start; UTF-16 text is an error."""
        start = b""
        for piece in pieces:
            start += piece
            if len(start) >= len(UTF8_BOM):
                break
        if start.startswith(UTF16_BOMS):
            raise self._error("is UTF-16 text (it starts with a UTF-16 byte order mark); trace "
                              "files are ASCII or UTF-8: convert it first (e.g. iconv -f UTF-16 "
                              "-t UTF-8)")
        if start.startswith(UTF8_BOM):
            start = start[len(UTF8_BOM):]
        if start:
            yield start
        yield from pieces

    def _decompressed(self) -> Iterator[bytes]:
        if self.compression is None:  # only the head: blocks() reads the rest in place
            yield from self._raw(HEAD_BYTES)
        elif self.compression == "gzip":
            yield from self._gunzip()
        else:
            yield from self._unzstd()

    def _error(self, message: str) -> TraceFormatError:
        return TraceFormatError(message, path=str(self.path))

    def _gunzip(self) -> Iterator[bytes]:
        d = None
        try:
            for chunk in self._raw(_COMPRESSED_READ):
                while chunk:
                    if d is not None and d.eof:  # another member, or padding after the last
                        if not chunk.startswith(GZIP_MAGIC[: len(chunk)]):
                            if chunk.strip(b"\0"):
                                raise self._error("trailing garbage after the gzip stream")
                            break
                        d = None
                    if d is None:
                        d = zlib.decompressobj(wbits=31)
                    out = d.decompress(chunk, _GZIP_PIECE)
                    if out:
                        yield out
                    chunk = d.unused_data if d.eof else d.unconsumed_tail
                    if not chunk and not d.eof and len(out) == _GZIP_PIECE:
                        # all input taken, output may still be pending in zlib
                        while out := d.decompress(b"", _GZIP_PIECE):
                            yield out
        except zlib.error as exc:
            raise self._error(f"corrupt gzip data ({exc})") from None
        if d is None or not d.eof:
            raise self._error("truncated gzip stream: the file ends before the end-of-stream "
                              "marker (incomplete download or copy?)")

    def _unzstd(self) -> Iterator[bytes]:
        import zstandard

        dctx = zstandard.ZstdDecompressor()
        d = None
        try:
            for raw in self._raw(_COMPRESSED_READ):
                view = memoryview(raw)
                for start in range(0, len(view), _ZSTD_FEED):  # bounded output per step
                    chunk: bytes | memoryview = view[start:start + _ZSTD_FEED]
                    while chunk:
                        if d is None or d.eof:
                            d = dctx.decompressobj()
                        out = d.decompress(chunk)
                        if out:
                            yield out
                        chunk = d.unused_data if d.eof else b""
        except zstandard.ZstdError as exc:
            raise self._error(f"corrupt zstd data ({exc})") from None
        if d is None or not d.eof:
            raise self._error("truncated zstd stream: the file ends inside a frame "
                              "(incomplete download or copy?)")
