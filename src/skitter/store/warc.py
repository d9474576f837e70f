"""WARC 1.1 output that survives kill -9.

Layout
------
Files are ``{prefix}-{UTC yyyymmddHHMMSS}-{serial:05d}.warc.gz`` in one directory. The serial
increases over the life of the directory (a new writer continues after the highest serial it
finds), so "newer" always means "higher serial". Each file starts with a ``warcinfo`` record.
Every record is its own gzip member, so any record can be read by seeking straight to its
offset, and byte ranges of whole members can be concatenated into a valid WARC file
(:func:`export_warc`).

:meth:`WarcWriter.write` stores one fetch as a ``request`` record followed by a ``response``
record, linked both ways by ``WARC-Concurrent-To``. The :class:`WarcLocation` it returns covers
**both** records: ``offset`` is where the request record starts and ``length`` is the byte
length of the pair (request member + response member). :func:`read_record` accepts that offset
(it skips the request record) or the offset of the response record itself.

The response block is the HTTP status line and headers as received, except that
``Transfer-Encoding`` is dropped (the body is stored de-chunked) and ``Content-Length`` is set to
``len(raw_body)``; ``Content-Encoding`` is kept, because the stored payload is ``raw_body``, the
body as sent. ``WARC-Payload-Digest`` is the SHA-1 of ``raw_body`` and ``WARC-Block-Digest`` the
SHA-1 of the whole block, both base32 as usual. ``WARC-Date`` is ``FetchResult.started`` with
microseconds (WARC 1.1 allows fractional seconds). A response whose body was cut short (over
``--max-body``, a timeout or a disconnect mid-body: the fetch's ``error``) says so in
``WARC-Truncated`` (``length``, ``time``, ``disconnect``), and its payload is what was read.

Crash safety
------------
1. ``write`` appends whole gzip members to the current file; nothing is durable yet.
2. ``flush`` writes to the OS (optionally fsyncs) and returns ``(filename, end_offset)``. The caller records that in the same
   SQLite transaction as the rows that point at the records, so SQLite never references WARC
   bytes that are not on disk.
3. After a crash, :meth:`WarcWriter.resume` truncates the committed file to the committed end
   offset (dropping records that were written but never committed, and any torn half-written
   member), deletes every file of the prefix with a higher serial, and opens a *new* file for
   further writes; a repaired file is never appended to.

If a write fails part-way (disk full, an exception or cancellation inside ``write``), the file
is truncated back to where the failed pair started and closed, and the next ``write`` opens a
new file, so a failed write never leaves garbage between good records.

Implementation choice: records by hand, deflated by ISA-L
--------------------------------------------------------
The request and response records are serialised here (:func:`_http_record`): the header fields
fastwarc's ``WarcRecord.write`` writes, in its order, with both digests from ``hashlib`` (a
hypothesis test holds the bytes equal to fastwarc's). Each record is deflated as its own gzip
member (level 1) by ISA-L (``isal.isal_zlib``, the python-isal package; zlib if it is missing).
The crawl's worker process does this for every fetch (docs/benchmarks.md), so both choices were
measured on 1,000 pages of the benchmark web (28 KiB average):

- ISA-L instead of fastwarc's ``GzipWriter`` (zlib level 1): 0.18 ms a fetch instead of 0.36 ms,
  and 22 % smaller output (12.8 KB vs 16.5 KB a pair), since ISA-L's level 1 searches matches
  better than zlib's.
- The records by hand instead of ``WarcRecord.write`` into a buffer: 0.17 ms a fetch instead of
  0.20 ms. fastwarc computes the block digest with its own SHA-1 at half OpenSSL's speed (31
  against 16 µs on 28 KiB) and copies the block into the record and again into the buffer.
  (While zlib did the compressing, an A/B run found hand-built records within its noise.)

The warcinfo record of each file and exports, written once a file, still use fastwarc's
``GzipWriter`` (64 KiB buffer).

Reading: :func:`read_record` uses fastwarc (a runtime dependency). :func:`validate` checks the
gzip framing itself and then reads every record with warcio (digests verified) when warcio is
installed (it is in the ``test`` extra), else with fastwarc.

A ``WarcWriter`` is not thread-safe; use it from one thread (the crawl loop's).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import time
import uuid
import zlib
from dataclasses import dataclass
from datetime import datetime, UTC
from http import HTTPStatus
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlsplit

# fastwarc (and the C++ runtime it loads: 3 MB) is imported by the functions that write or read
# WARC files, not here: the analysis worker encodes its records with encode_pair alone
if TYPE_CHECKING:
    from fastwarc.stream_io import GzipWriter
    from fastwarc.warc import WarcRecord

from ..errors import CrawlDirError, UnaskedCoding, UsageError
from ..models import FetchResult
from .text import deflate as _deflate   # Intel's ISA-L: 2-3x zlib's speed at level 1, smaller output

__all__ = [
    "WarcLocation",
    "WarcWriter",
    "encode_revisit",
    "PROFILE_IDENTICAL",
    "PROFILE_NOT_MODIFIED",
    "read_record",
    "validate",
    "export_warc",
]

COMPRESSION_LEVEL = 1  # 3x faster than 6 on HTML for ~12% larger files (docs/benchmarks.md)
_GZIP_BUFFER = 1 << 16
_COPY_CHUNK = 1 << 20
_CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass(frozen=True, slots=True)
class WarcLocation:
    """Where one fetch is stored: ``filename`` (base name in the WARC directory), ``offset`` of
    its request record and ``length`` of the request + response pair, in bytes of the file."""

    filename: str
    offset: int
    length: int


Source = WarcLocation | tuple[str, int, int]


# --------------------------------------------------------------------------------------- helpers


def _warc_date(ts: float) -> str:
    if not ts or ts <= 0:
        ts = time.time()
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _clean(text: str) -> str:
    """No CR/LF inside a header line (a header could otherwise forge record structure)."""
    if "\r" in text or "\n" in text:
        text = text.replace("\r", " ").replace("\n", " ")
    return text


def _hbytes(text: str) -> bytes:
    text = _clean(text)
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _http_version(version: str) -> str:
    version = (version or "1.1").strip()
    if version.upper().startswith("HTTP/"):
        version = version[5:]
    return version or "1.1"


def _response_block_head(result: FetchResult) -> bytes:
    status = int(result.status)  # type: ignore[arg-type]
    reason = result.reason
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    out = [_hbytes(f"HTTP/{_http_version(result.http_version)} {status} {reason}")]
    length = b"Content-Length: " + str(len(result.raw_body)).encode("ascii")
    length_done = False
    for name, value in result.headers:
        low = name.lower()
        if low == "transfer-encoding":
            continue
        if low == "content-length":
            if not length_done:
                out.append(length)
                length_done = True
            continue
        out.append(_hbytes(name) + b": " + _hbytes(value))
    if not length_done:
        out.append(length)
    out.append(b"")
    out.append(b"")
    return b"\r\n".join(out)


def _request_block(result: FetchResult) -> bytes:
    parts = urlsplit(result.url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    out = [_hbytes(f"GET {target} HTTP/{_http_version(result.http_version)}")]
    has_host = False
    for name, value in result.request_headers:
        if name.lower() == "host":
            has_host = True
        out.append(_hbytes(name) + b": " + _hbytes(value))
    if not has_host and parts.netloc:
        out.insert(1, b"Host: " + _hbytes(parts.netloc.rsplit("@", 1)[-1]))
    out.append(b"")
    out.append(b"")
    return b"\r\n".join(out)


def _warcinfo_record(filename: str, software: str, description: str | None = None) -> WarcRecord:
    from fastwarc.warc import WarcRecord, WarcRecordType   # noqa: PLC0415 - see the imports

    rec = WarcRecord()
    rec.init_headers(WarcRecordType.warcinfo)
    rec.headers["WARC-Date"] = _warc_date(time.time())
    rec.headers["WARC-Filename"] = _clean(filename)
    rec.headers["Content-Type"] = "application/warc-fields"
    fields = [
        f"software: {_clean(software)}",
        "format: WARC File Format 1.1",
        f"conformsTo: {_CONFORMS_TO}",
    ]
    if description:
        fields.append(f"description: {_clean(description)}")
    rec.set_bytes_content(("\r\n".join(fields) + "\r\n").encode("utf-8"))
    return rec


def _name_re(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(prefix)}-(\d{{14}})-(\d{{5,}})\.warc\.gz$")


def _list_files(directory: Path, prefix: str) -> list[tuple[int, Path]]:
    """This prefix's WARC files in ``directory`` as (serial, path), by serial."""
    pattern = _name_re(prefix)
    found = []
    if directory.is_dir():
        for entry in os.scandir(directory):
            m = pattern.match(entry.name)
            if m and entry.is_file():
                found.append((int(m.group(2)), Path(entry.path)))
    found.sort()
    return found


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _record_id() -> bytes:
    return b"<urn:uuid:" + str(uuid.uuid4()).encode("ascii") + b">"


def _b32_sha1(h) -> bytes:
    return b"sha1:" + base64.b32encode(h.digest())


def _http_record(kind: bytes, record_id: bytes, date: bytes, uri: bytes, ip: bytes | None,
                 concurrent_to: bytes, head: bytes, body: bytes, payload_digest: bytes | None,
                 truncated: bytes | None = None) -> bytes:
    """One ``request`` or ``response`` record, uncompressed: its block is ``head + body``. The
    header fields and their order are fastwarc's (``WarcRecord.write``; a test holds the two
    byte-equal)."""
    block = hashlib.sha1(head)
    block.update(body)
    fields = [b"WARC/1.1", b"WARC-Type: " + kind, b"WARC-Date: " + date, b"WARC-Record-ID: " + record_id,
              b"Content-Length: %d" % (len(head) + len(body)), b"WARC-Target-URI: " + uri]
    if ip is not None:
        fields.append(b"WARC-IP-Address: " + ip)
    fields.append(b"WARC-Concurrent-To: " + concurrent_to)
    fields.append(b"Content-Type: application/http; msgtype=" + kind)
    if payload_digest is not None:
        fields.append(b"WARC-Payload-Digest: " + payload_digest)
    fields.append(b"WARC-Block-Digest: " + _b32_sha1(block))
    if truncated is not None:
        fields.append(b"WARC-Truncated: " + truncated)
    fields.append(b"\r\n")
    return b"\r\n".join(fields) + head + body + b"\r\n\r\n"


def _pair(result: FetchResult, uri: str, request_id: bytes, response_id: bytes) -> tuple[bytes, bytes]:
    """The request and response records of ``result``, uncompressed."""
    date = _warc_date(result.started).encode("ascii")
    target = _hbytes(uri)
    ip = _hbytes(result.ip) if result.ip else None
    raw = result.raw_body
    return (_http_record(b"request", request_id, date, target, ip, response_id, _request_block(result), b"", None),
            _http_record(b"response", response_id, date, target, ip, request_id, _response_block_head(result), raw,
                         _b32_sha1(hashlib.sha1(raw)), _truncated(result)))


def _truncated(result: FetchResult) -> bytes | None:
    """``WARC-Truncated`` (WARC 1.1 §5.13) of a response whose body was cut short: ``length`` over
    ``--max-body`` (too-large), ``time`` over a timeout, ``disconnect`` when the connection failed
    mid-body, ``unspecified`` otherwise; None for a whole body (no error)."""
    if result.error is None or UnaskedCoding.recorded(result.error):
        return None   # (a body in a compression we did not accept: read whole, archived as sent)
    code = result.error.split(":", 1)[0]
    return {"too-large": b"length", "timeout": b"time", "protocol": b"disconnect",
            "connect": b"disconnect", "tls": b"disconnect"}.get(code, b"unspecified")


def encode_pair(result: FetchResult, *, target_uri: str | None = None) -> bytes | None:
    """The request and response records of ``result`` as two gzip members, ready to append.

    Pure (no file I/O), so the crawl can run it in a worker process: compression is the costly
    part of archiving. None for a failed fetch (``status`` None)."""
    if result.status is None:
        return None
    request, response = _pair(result, target_uri or result.url, _record_id(), _record_id())
    # each record its own gzip member (WARC 1.1 annex D), deflated by ISA-L when installed
    return _deflate(request, COMPRESSION_LEVEL, 31) + _deflate(response, COMPRESSION_LEVEL, 31)


def encode_revisit(result: FetchResult, *, target_uri: str, profile: str, refers_to_uri: str,
                   refers_to_date: float) -> bytes:
    """A revisit (WARC 1.1, section 6.7, as Heritrix writes them): the ``request`` record and a
    ``revisit`` record whose block is the response's status line and headers only, pointing at the
    record that holds the payload (``WARC-Refers-To-Target-URI``, ``WARC-Refers-To-Date``: the
    stored version's URI and fetch time). ``profile``: :data:`PROFILE_NOT_MODIFIED` (the server
    answered 304 to a conditional request) or :data:`PROFILE_IDENTICAL` (a 200 whose payload is
    the stored one, byte for byte; ``WARC-Payload-Digest`` then names it). Two gzip members, ready
    to append, as :func:`encode_pair`; the archive grows by about a kilobyte, not by the page."""
    request_id, revisit_id = _record_id(), _record_id()
    date = _warc_date(result.started).encode("ascii")
    uri = _hbytes(target_uri)
    ip = _hbytes(result.ip) if result.ip else None
    request = _http_record(b"request", request_id, date, uri, ip, revisit_id, _request_block(result), b"", None)
    head = _response_block_head(result)
    digest = _b32_sha1(hashlib.sha1(result.raw_body)) if profile == PROFILE_IDENTICAL else None
    block = hashlib.sha1(head)
    fields = [b"WARC/1.1", b"WARC-Type: revisit", b"WARC-Date: " + date, b"WARC-Record-ID: " + revisit_id,
              b"Content-Length: %d" % len(head), b"WARC-Target-URI: " + uri]
    if ip is not None:
        fields.append(b"WARC-IP-Address: " + ip)
    fields += [b"WARC-Concurrent-To: " + request_id, b"WARC-Profile: " + profile.encode("ascii"),
               b"WARC-Refers-To-Target-URI: " + _hbytes(refers_to_uri),
               b"WARC-Refers-To-Date: " + _warc_date(refers_to_date).encode("ascii"),
               b"Content-Type: application/http; msgtype=response"]
    if digest is not None:
        fields.append(b"WARC-Payload-Digest: " + digest)
    fields += [b"WARC-Block-Digest: " + _b32_sha1(block), b"\r\n"]
    revisit = b"\r\n".join(fields) + head + b"\r\n\r\n"
    return _deflate(request, COMPRESSION_LEVEL, 31) + _deflate(revisit, COMPRESSION_LEVEL, 31)


# ---------------------------------------------------------------------------------------- writer


class WarcWriter:
    """Appends request/response record pairs to rolling ``.warc.gz`` files (see module doc)."""

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "skitter",
        max_file_bytes: int = 1 << 30,
        software: str = "skitter/0.1.0",
    ) -> None:
        if not prefix or "/" in prefix or os.sep in prefix:
            raise ValueError(f"bad WARC file prefix: {prefix!r}")
        if max_file_bytes <= 0:
            raise ValueError("max_file_bytes must be positive")
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_file_bytes = max_file_bytes
        self.software = software
        self.directory.mkdir(parents=True, exist_ok=True)
        self._f: BinaryIO | None = None  # the open file (buffered binary), or None between files / after close
        self._gz: GzipWriter | None = None
        self._name = ""
        self._offset = 0  # end offset of the last complete member in the current file
        self._pairs = 0  # pairs in the current file
        self._closed = False
        self._open_new()

    # -- files

    def _open_new(self) -> None:
        files = _list_files(self.directory, self.prefix)
        serial = files[-1][0] + 1 if files else 1
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        while True:
            name = f"{self.prefix}-{stamp}-{serial:05d}.warc.gz"
            try:
                f = open(self.directory / name, "xb")
            except FileExistsError:
                serial += 1
                continue
            break
        try:
            from fastwarc.stream_io import GzipWriter   # noqa: PLC0415 - see the imports

            gz = GzipWriter(f, compression_level=COMPRESSION_LEVEL, buffer_size=_GZIP_BUFFER)
            _warcinfo_record(name, self.software).write(gz, checksum_data=True)
            gz.finish()
            f.flush()
            os.fsync(f.fileno())
        except BaseException:
            f.close()
            (self.directory / name).unlink(missing_ok=True)
            raise
        _fsync_dir(self.directory)
        self._f, self._gz, self._name = f, gz, name
        self._offset = f.tell()
        self._pairs = 0

    def _close_file(self) -> None:
        f, gz = self._f, self._gz
        if f is None:
            return
        assert gz is not None  # _f and _gz are set and cleared together
        self._f = self._gz = None
        try:
            gz.close()
            f.flush()
            os.fsync(f.fileno())
        finally:
            f.close()

    def _abandon(self, good_end: int) -> None:
        """A write failed part-way: cut the file back to its last good member and close it."""
        f, gz = self._f, self._gz
        assert f is not None and gz is not None  # only called by write_encoded, with a file open
        self._f = self._gz = None
        for step in (
            gz.close,
            f.flush,
            lambda: f.truncate(good_end),
            lambda: os.fsync(f.fileno()),
            f.close,
        ):
            try:
                step()
            except BaseException:  # noqa: BLE001 - best effort; resume() truncates anyway
                pass
        self._offset = good_end

    # -- public API

    @property
    def filename(self) -> str:
        """Base name of the file being written (or last written)."""
        return self._name

    def write(self, result: FetchResult, *, target_uri: str | None = None) -> WarcLocation | None:
        """Append the request and response records of ``result``.

        Returns where the pair is (offset of the request record, length of both records), or
        None for a failed fetch (``status`` None), for which nothing is written.
        """
        data = encode_pair(result, target_uri=target_uri)
        return None if data is None else self.write_encoded(data)

    def write_encoded(self, data: bytes) -> WarcLocation:
        """Append a pair already encoded by :func:`encode_pair` (e.g. in a worker process)."""
        if self._closed:
            raise ValueError("write to a closed WarcWriter")
        if self._f is None:
            self._open_new()
        elif self._pairs and self._offset >= self.max_file_bytes:
            self._close_file()
            self._open_new()
        f = self._f
        assert f is not None  # _open_new() set it, or raised
        start = self._offset
        try:
            f.write(data)
        except BaseException:
            self._abandon(start)
            raise
        end = start + len(data)
        self._offset = end
        self._pairs += 1
        return WarcLocation(self._name, start, end - start)

    def flush(self, *, fsync: bool = False) -> tuple[str, int]:
        """Hand everything written so far to the OS; return (current file name, its end offset).

        Store the pair in the same transaction as the rows that reference the records. Handing
        the bytes to the OS is enough for a process crash (kill -9): the page cache survives it,
        just as SQLite's WAL with synchronous=NORMAL does. ``fsync=True`` also survives an OS
        crash (at ~30 ms a call on this machine's disk, it is off on the crawl's hot path)."""
        if self._f is not None:
            self._f.flush()
            if fsync:
                os.fsync(self._f.fileno())
        return self._name, self._offset

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_file()

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def resume(
        cls,
        directory: Path,
        committed: Mapping[str, int] | tuple[str, int] | None,
        **kw: object,
    ) -> WarcWriter:
        """Repair ``directory`` after a crash, then return a writer on a NEW file.

        ``committed`` is the last ``flush()`` result the caller committed, or a mapping of file
        name to committed end offset, or None if nothing was ever committed. Each committed file
        is truncated to its committed end offset; every WARC file of the prefix with a higher
        serial than the newest committed file is deleted (with None: every file of the prefix).
        Files with lower serials are left alone. Raises :class:`CrawlDirError` if a committed
        file is missing or shorter than its committed offset (committed records were lost).
        """
        directory = Path(directory)
        prefix = str(kw.get("prefix", "skitter"))
        if committed is None:
            points: dict[str, int] = {}
        elif isinstance(committed, Mapping):
            points = {Path(k).name: int(v) for k, v in committed.items()}
        else:
            name, offset = committed
            points = {Path(name).name: int(offset)}

        files = _list_files(directory, prefix)
        serial_of = {path.name: serial for serial, path in files}
        pattern = _name_re(prefix)
        for name, offset in points.items():
            if not pattern.match(name):
                raise CrawlDirError(f"committed WARC file {name!r} is not a {prefix!r} WARC file")
            if name not in serial_of:
                raise CrawlDirError(f"committed WARC file {directory / name} is missing")
            if offset < 0:
                raise CrawlDirError(f"bad committed offset {offset} for {name}")
        newest = max((serial_of[n] for n in points), default=0)

        for serial, path in files:
            if serial > newest:
                path.unlink()
        for name, offset in points.items():
            path = directory / name
            size = path.stat().st_size
            if size < offset:
                raise CrawlDirError(
                    f"WARC file {path} has {size} bytes, less than its committed end offset "
                    f"{offset}: committed records are lost"
                )
            if size > offset:
                with open(path, "r+b") as f:
                    f.truncate(offset)
                    f.flush()
                    os.fsync(f.fileno())
        _fsync_dir(directory)
        return cls(directory, **kw)  # type: ignore[arg-type]


def record_problem(path: Path, offset: int, length: int) -> str | None:
    """What is wrong with the record pair stored at ``offset`` (``length`` bytes) of ``path``, or
    None: each of its gzip members must inflate and start a WARC record. A crawl resumes only on a
    WARC file whose last committed pair reads (a file overwritten with other bytes was cut back
    to its committed length and crawled on; the damage showed at the next WARC export)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(length)
    except OSError as exc:
        return exc.strerror or str(exc)
    if len(data) < length:
        return f"{length - len(data)} bytes of it are missing"
    while data:   # each member (one record, at most a capped body: inflated whole)
        d = zlib.decompressobj(31)
        try:
            record = d.decompress(data)
        except zlib.error as exc:
            return f"it does not inflate ({exc})"
        if not d.eof:
            return "it is cut short"
        if not record.startswith(b"WARC/1."):
            return "it is no WARC record"
        data = d.unused_data
    return None


# ---------------------------------------------------------------------------------------- reading


def read_record(path: Path, offset: int) -> tuple[list[tuple[str, str]], bytes]:
    """Read the response record at ``offset`` (or the pair starting there, as returned by
    :meth:`WarcWriter.write`). Returns (HTTP headers as (name, value) pairs, payload as stored,
    i.e. ``raw_body`` with any content encoding)."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType   # noqa: PLC0415 - see the imports

    with open(path, "rb") as f:
        f.seek(offset)
        seen = 0
        for rec in ArchiveIterator(f, parse_http=True):
            if rec.record_type == WarcRecordType.response:
                headers = list(rec.http_headers.to_tuples()) if rec.http_headers else []
                return headers, rec.reader.read()
            seen += 1
            if rec.record_type != WarcRecordType.request or seen > 1:
                break
    raise ValueError(f"no response record at {path}:{offset}")


def _count_gzip_members(path: Path) -> int:
    """Walk the file as a sequence of gzip members; raise ValueError on a torn or bad member."""
    count = 0
    pos = 0  # file offset of the start of `data`
    member_start = 0
    d = None
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_COPY_CHUNK)
            if not chunk:
                break
            data = chunk
            while data:
                if d is None:
                    d = zlib.decompressobj(31)
                    member_start = pos
                    if data[:1] != b"\x1f" or (len(data) > 1 and data[1:2] != b"\x8b"):
                        raise ValueError(f"{path}: no gzip member at offset {pos}")
                try:
                    d.decompress(data, _COPY_CHUNK)
                    while d.unconsumed_tail and not d.eof:
                        d.decompress(d.unconsumed_tail, _COPY_CHUNK)
                except zlib.error as e:
                    raise ValueError(
                        f"{path}: corrupt gzip member at offset {member_start}: {e}"
                    ) from None
                if d.eof:
                    count += 1
                    rest = d.unused_data
                    pos += len(data) - len(rest)
                    data = rest
                    d = None
                else:
                    pos += len(data)
                    data = b""
    if d is not None:
        raise ValueError(f"{path}: truncated gzip member at offset {member_start}")
    return count


def _validate_warcio(path: Path) -> int:
    from warcio.archiveiterator import ArchiveIterator as WarcioIterator

    count = 0
    with open(path, "rb") as f:
        try:
            for rec in WarcioIterator(f, check_digests="raise"):
                if rec.rec_type not in {"warcinfo", "request", "response", "metadata",
                                        "resource", "revisit", "conversion", "continuation"}:
                    raise ValueError(f"unknown record type {rec.rec_type!r}")
                stream = rec.raw_stream
                while stream.read(_COPY_CHUNK):
                    pass
                count += 1
        except ValueError as e:
            raise ValueError(f"{path}: record {count + 1}: {e}") from e
        except Exception as e:  # noqa: BLE001 - warcio raises a zoo of exception types
            raise ValueError(f"{path}: record {count + 1}: {type(e).__name__}: {e}") from e
    return count


def _validate_fastwarc(path: Path) -> int:
    from fastwarc.warc import ArchiveIterator   # noqa: PLC0415 - see the imports

    count = 0
    with open(path, "rb") as f:
        try:
            for rec in ArchiveIterator(f, parse_http=False):
                if "WARC-Block-Digest" in rec.headers and not rec.verify_block_digest():
                    raise ValueError("block digest failed")
                if "WARC-Payload-Digest" in rec.headers:
                    rec.parse_http()
                    if not rec.verify_payload_digest():
                        raise ValueError("payload digest failed")
                count += 1
        except ValueError as e:
            raise ValueError(f"{path}: record {count + 1}: {e}") from e
        except OSError as e:
            raise ValueError(f"{path}: record {count + 1}: {e}") from e
    return count


def validate(path: Path) -> int:
    """Check that ``path`` is a clean WARC file and return its number of records.

    Clean: the file is a sequence of complete gzip members (no torn tail, no garbage), each
    member holds exactly one record, and every record parses with its digests verified (warcio
    if installed, else fastwarc). Raises ValueError otherwise."""
    path = Path(path)
    members = _count_gzip_members(path)
    try:
        import warcio  # noqa: F401
    except ImportError:
        records = _validate_fastwarc(path)
    else:
        records = _validate_warcio(path)
    if records != members:
        raise ValueError(f"{path}: {members} gzip members but {records} records")
    return records


# ---------------------------------------------------------------------------------------- export


def export_warc(
    sources: Iterable[Source],
    out: Path,
    *,
    directory: Path | None = None,
    software: str = "skitter/0.1.0",
) -> list[WarcLocation]:
    """Copy record pairs byte-for-byte into one new ``.warc.gz`` file ``out``.

    ``sources`` are :class:`WarcLocation` or ``(filename, offset, length)``; relative file names
    are looked up in ``directory`` (the WARC directory). The output starts with its own warcinfo
    record and is written to ``out.part`` first, then renamed. Returns the location of each
    copied pair in ``out``."""
    out = Path(out)
    if out.is_symlink():   # written through, as a shell's redirection would: the link stays
        out = Path(os.path.realpath(out))
    if out.exists() and not out.is_file():
        raise UsageError(f"{out}: not a regular file (a WARC export is written beside it, then renamed to it)")
    tmp = out.with_name(out.name + ".part")
    handles: dict[Path, object] = {}
    placed: list[WarcLocation] = []
    try:
        with open(tmp, "wb") as w:
            from fastwarc.stream_io import GzipWriter   # noqa: PLC0415 - see the imports

            gz = GzipWriter(w, compression_level=COMPRESSION_LEVEL, buffer_size=_GZIP_BUFFER)
            _warcinfo_record(out.name, software, "export of a skitter crawl").write(
                gz, checksum_data=True
            )
            gz.finish()
            gz.close()
            for src in sources:
                if isinstance(src, WarcLocation):
                    name, offset, length = src.filename, src.offset, src.length
                else:
                    name, offset, length = src
                p = Path(name)
                if not p.is_absolute() and directory is not None:
                    p = Path(directory) / p
                f = handles.get(p)
                if f is None:
                    try:
                        f = handles[p] = open(p, "rb")
                    except FileNotFoundError:   # the crawl's records name it: the directory lost it
                        raise CrawlDirError(f"a WARC file of the crawl is missing: {p}") from None
                f.seek(offset)  # type: ignore[attr-defined]
                start = w.tell()
                left = length
                first = True
                while left > 0:
                    buf = f.read(min(left, _COPY_CHUNK))  # type: ignore[attr-defined]
                    if not buf:   # a WARC file cut short (a disk full, a copy interrupted)
                        raise CrawlDirError(f"WARC file {p} is damaged: its record at {offset} ({length} bytes) "
                                            "is past the end of the file")
                    if first and buf[:2] != b"\x1f\x8b":
                        raise CrawlDirError(f"WARC file {p} is damaged: no gzip member at offset {offset}, where "
                                            "crawl.db has a record")
                    first = False
                    w.write(buf)
                    left -= len(buf)
                placed.append(WarcLocation(out.name, start, length))
            w.flush()
            os.fsync(w.fileno())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        for f in handles.values():
            f.close()  # type: ignore[attr-defined]
    return placed
