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
from typing import BinaryIO

import numpy as np

from hss_gym.workloads.trace import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
HEAD_BYTES = 1 << 16        # decompressed bytes available to format detection
_COMPRESSED_READ = 1 << 20  # raw read size for compressed input
_THREADED_HASH = 1 << 20    # hash blocks at least this large on the helper thread


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


class TraceFile:
    """One pass over a (possibly compressed) trace file. Use as a context manager."""

    def __init__(self, path: str | Path, block_bytes: int = 1 << 24) -> None:
        if block_bytes < 1:
            raise ValueError(f"block_bytes must be >= 1, got {block_bytes}")
        self.path = Path(path)
        self.block_bytes = block_bytes
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
        for block in self._text_blocks():
            if held is not None:
                yield held
            held = block
        if held is not None:
            held = self._strip_padding(held)
            if len(held):
                yield held

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
        for piece in self._pieces:
            parts.append(piece)
            size += len(piece)
            if size < self.block_bytes:
                continue
            data = parts[0] if len(parts) == 1 else b"".join(parts)
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # one line longer than a block: keep reading
                parts, size = [data], len(data)
                continue
            yield data if cut == len(data) else data[:cut]
            rest = data[cut:]
            parts, size = ([rest] if rest else []), len(rest)
        if size:
            yield parts[0] if len(parts) == 1 else b"".join(parts)

    def _plain_blocks(self) -> Iterator[memoryview]:
        carry = b"".join(self._pending)  # what format detection read
        self._pending = []
        while True:
            if self._eof:
                if carry:
                    yield memoryview(carry)
                return
            buf = np.empty(len(carry) + self.block_bytes, dtype=np.uint8)  # pages: on write
            buf[:len(carry)] = np.frombuffer(carry, dtype=np.uint8)
            view = memoryview(buf)
            n = self._fh.readinto(view[len(carry):])
            if n:
                self._hasher.update(view[len(carry):len(carry) + n])
            else:
                self._eof = True
            end = len(carry) + n
            cut = _last_newline(buf, end) + 1 if n else end
            if cut == 0:  # one line longer than a block: keep reading
                carry = bytes(view[:end])
                continue
            if cut:
                yield view[:cut]
            carry = bytes(view[cut:end])

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
                    out = d.decompress(chunk)
                    if out:
                        yield out
                    chunk = d.unused_data if d.eof else b""
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
            for chunk in self._raw(_COMPRESSED_READ):
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
