"""A wheel's ``METADATA`` read with HTTP range requests, for indexes that serve no PEP 658 metadata file.

A wheel is a zip file, and a zip file is readable from its end (what pip's and uv's lazy-wheel
readers do):

1. one suffix range request (``Range: bytes=-16384``) brings the end-of-central-directory record
   (ZIP64 locator and record when present) and, for most wheels, the tail of the central directory;
   wheel builders write ``*.dist-info/`` last, so the ``METADATA`` entry is usually in that tail:
   the directory is parsed backwards from its end (the chain of entries must end exactly at the end
   of the directory) and only when the entry is not there is more of the directory fetched;
2. one range request for the member's local file header and its compressed bytes, inflated and
   checked against the CRC-32 of the directory entry.

A few kB to a few tens of kB per wheel instead of hundreds of MB.  When the index also lists the
same wheel under a ``file://`` URL (pip's extra indexes on this machine), the local copy is read.

Bounded: every request has the client's timeout; failed requests (timeouts, connection errors,
HTTP 5xx / 429) are retried with exponential backoff; :func:`prefetch` reads many wheels with at
most ``workers`` at a time and stops starting new reads at a total deadline.  A server that ignores
``Range`` (answers 200 with the whole file) is not downloaded from: the read fails with a reason.

Results (metadata or the reason it could not be read) are kept per client, so a wheel is read once.
"""
from __future__ import annotations

import contextlib
import itertools
import struct
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple
from urllib.parse import urlparse

from envdoctor.knowledge.wheelmeta import parse_metadata
from envdoctor.knowledge.wheelmeta import shut_response as _shut

TAIL_BYTES = 16 * 1024
MAX_DIRECTORY_BYTES = 64 * 1024 * 1024
MAX_METADATA_BYTES = 8 * 1024 * 1024
DEFAULT_WORKERS = 8

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
_CENTRAL_FMT = "<4sHHHHHHIIIHHHHHII"  # 46 bytes
_LOCAL_FMT = "<4sHHHHHIIIHH"  # 30 bytes


class LazyWheelError(Exception):
    """The wheel's METADATA could not be read by range requests (the message says why, one line)."""


@dataclass
class Stats:
    """What the range reads cost, per client: requests made, bytes received, wheels read."""

    requests: int = 0
    bytes: int = 0
    wheels: int = 0
    local: int = 0  # read from a file:// copy instead


@dataclass
class _Entry:
    name: str
    method: int
    crc: int
    csize: int
    usize: int
    offset: int
    flags: int


# --------------------------------------------------------------------------- transport


class _Flight:
    """The responses a :func:`prefetch` has open, so that at its deadline it can shut their sockets: a worker
    blocked reading a slow body then returns at once and the pool's threads can be joined within the budget
    (threads left running past the call would outlive the command's promise)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: set = set()
        self.over = False

    def enter(self, resp) -> bool:
        """Record ``resp`` as open; False (and its socket shut) once the deadline has passed."""
        with self.lock:
            if not self.over:
                self.live.add(resp)
                return True
        _shut(resp)
        return False

    def leave(self, resp) -> None:
        with self.lock:
            self.live.discard(resp)

    def end(self) -> None:
        """The deadline passed: shut every open response and any that opens from now on."""
        with self.lock:
            self.over = True
            live, self.live = list(self.live), set()
        for resp in live:
            _shut(resp)


class _RangeReader:
    """Byte ranges of one remote file, fetched with the client's session settings and kept."""

    def __init__(self, client, url: str, stats: Stats, lock: threading.Lock, deadline: Optional[float],
                 flight: Optional[_Flight] = None) -> None:
        self.client = client
        self.url = url
        self.stats = stats
        self.lock = lock
        self.deadline = deadline
        self.flight = flight
        self.size: Optional[int] = None
        self.segments: List[Tuple[int, bytes]] = []

    def _have(self, start: int, end: int) -> Optional[bytes]:
        for s, data in self.segments:
            if s <= start and end <= s + len(data):
                return data[start - s:end - s]
        return None

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file (``end`` clipped to its size)."""
        if self.size is not None:
            end = min(end, self.size)
        if start >= end:
            return b""
        got = self._have(start, end)
        if got is not None:
            return got
        data, first = self._get(f"bytes={start}-{end - 1}", end - start)
        if first != start:
            raise LazyWheelError(f"{self.url}: server answered range {start}- with bytes from {first}")
        self.segments.append((first, data))
        return data[: end - start]

    def tail(self, n: int) -> Tuple[int, bytes]:
        """The last ``n`` bytes (fewer when the file is smaller): (offset of the first byte, bytes)."""
        data, first = self._get(f"bytes=-{n}", n)
        self.segments.append((first, data))
        return first, data

    def _session(self):
        local = _THREAD.__dict__
        key = id(self.client)
        sessions = local.setdefault("sessions", {})
        if key not in sessions:
            import requests

            s = requests.Session()
            s.headers["User-Agent"] = "envdoctor-matrices (requests; range reads)"
            sessions[key] = s
        return sessions[key]

    def _get(self, rng: str, want: int) -> Tuple[bytes, int]:
        import requests

        timeout = float(getattr(self.client, "timeout", 15.0))
        retries = int(getattr(self.client, "retries", 2))
        backoff = float(getattr(self.client, "backoff", 0.5))
        cert = getattr(self.client, "cert", None)
        last = ""
        for attempt in range(retries + 1):
            if attempt:
                pause = backoff * (2 ** (attempt - 1))
                if self.deadline is not None and time.monotonic() + pause > self.deadline:
                    break
                time.sleep(pause)
            if self.deadline is not None and time.monotonic() > self.deadline:
                last = "the total time for reading wheels ran out"
                break
            wait_at_most = timeout
            if self.deadline is not None:
                # each wait on the socket ends by the deadline, so no worker outlives the total budget
                wait_at_most = max(0.05, min(timeout, self.deadline - time.monotonic()))
            kwargs = {"headers": {"Range": rng, "Accept-Encoding": "identity"},
                      "timeout": (min(wait_at_most, 10.0), wait_at_most), "stream": True}
            if cert:
                kwargs["verify"] = cert
            try:
                with self._session().get(self.url, **kwargs) as resp, self._open(resp):
                    status = resp.status_code
                    if status >= 500 or status == 429:
                        last = f"HTTP {status}"
                        continue
                    if status == 200:
                        # Range ignored: take the file only when it is small, never a real wheel download
                        body, over = _read_at_most(resp, TAIL_BYTES)
                        self._count(len(body))
                        if over:
                            raise LazyWheelError("the server ignores HTTP range requests (answered 200 with the "
                                                 "whole wheel); not downloaded")
                        self.size = len(body)
                        return body, 0
                    if status != 206:
                        raise LazyWheelError(f"range request answered HTTP {status}")
                    first, size = _content_range(resp.headers.get("Content-Range", ""))
                    body, over = _read_at_most(resp, want)
                    self._count(len(body))
                    if over:
                        raise LazyWheelError(f"range request {rng} answered more than {want} bytes")
                    if size is not None:
                        self.size = size
                    if first is None:
                        raise LazyWheelError("range answer without a usable Content-Range header")
                    return body, first
            except requests.exceptions.Timeout:
                last = f"timed out after {timeout:g} s"
            except requests.exceptions.ConnectionError as exc:
                last = f"connection failed ({type(exc).__name__})"
            except requests.exceptions.RequestException as exc:
                raise LazyWheelError(f"range request failed: {type(exc).__name__}") from None
        raise LazyWheelError(f"range request failed: {last} (tried {attempt + 1} times)")

    @contextlib.contextmanager
    def _open(self, resp):
        if self.flight is not None and not self.flight.enter(resp):
            raise LazyWheelError("range request failed: the total time for reading wheels ran out")
        try:
            yield
        finally:
            if self.flight is not None:
                self.flight.leave(resp)

    def _count(self, n: int) -> None:
        with self.lock:
            self.stats.requests += 1
            self.stats.bytes += n


_THREAD = threading.local()


def _read_at_most(resp, limit: int) -> Tuple[bytes, bool]:
    """(the body, or as much of it as was read, True when it is longer than ``limit``)."""
    body = b""
    for chunk in resp.iter_content(16 * 1024):
        body += chunk
        if len(body) > limit:
            return body, True
    return body, False


def _content_range(value: str) -> Tuple[Optional[int], Optional[int]]:
    """``bytes 100-199/1000`` -> (100, 1000); the size is None when ``*``."""
    text = value.strip()
    if not text.lower().startswith("bytes "):
        return None, None
    span, _, total = text[6:].partition("/")
    first = span.split("-", 1)[0].strip()
    try:
        start = int(first)
    except ValueError:
        return None, None
    try:
        size = int(total.strip())
    except ValueError:
        size = None
    return start, size


# --------------------------------------------------------------------------- zip structure


def _end_of_directory(reader: _RangeReader) -> Tuple[int, int]:
    """(offset, size) of the central directory, from the EOCD (and ZIP64) records at the file's end."""
    first, tail = reader.tail(TAIL_BYTES)
    pos = len(tail)
    while True:
        pos = tail.rfind(_EOCD, 0, pos)
        if pos < 0:
            raise LazyWheelError("not a zip file (no end-of-central-directory record in its last "
                                 f"{len(tail)} bytes)")
        if pos + 22 <= len(tail):
            comment_len = struct.unpack_from("<H", tail, pos + 20)[0]
            if pos + 22 + comment_len == len(tail):
                break
    _sig, _disk, _cd_disk, _n_disk, entries, cd_size, cd_offset, _clen = struct.unpack_from("<4sHHHHIIH", tail, pos)
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        loc = pos - 20
        if loc < 0 or tail[loc:loc + 4] != _EOCD64_LOCATOR:
            raise LazyWheelError("ZIP64 wheel without a ZIP64 end-of-central-directory locator")
        eocd64_at = struct.unpack_from("<Q", tail, loc + 8)[0]
        rec = reader.read(eocd64_at, eocd64_at + 56)
        if len(rec) < 56 or rec[:4] != _EOCD64:
            raise LazyWheelError("ZIP64 end-of-central-directory record not where its locator says")
        cd_size, cd_offset = struct.unpack_from("<QQ", rec, 40)
    if cd_size > MAX_DIRECTORY_BYTES:
        raise LazyWheelError(f"central directory of {cd_size} bytes is larger than {MAX_DIRECTORY_BYTES}")
    return cd_offset, cd_size


def _parse_entries(buf: bytes, start: int, end: int, prefix: bool = False) -> Optional[List[_Entry]]:
    """Entries of ``buf[start:end]`` when they chain exactly from ``start`` to ``end``; else None.

    ``prefix``: ``buf`` is the start of a longer directory; return the entries that fit whole.
    """
    out: List[_Entry] = []
    pos = start
    while pos < end:
        if pos + 46 > end and prefix:
            break
        if pos + 46 > end or buf[pos:pos + 4] != _CENTRAL:
            return None
        (_sig, _vm, _vn, flags, method, _t, _d, crc, csize, usize, nlen, xlen, clen, _disk, _ia, _ea,
         offset) = struct.unpack_from(_CENTRAL_FMT, buf, pos)
        name_end = pos + 46 + nlen
        extra_end = name_end + xlen
        nxt = extra_end + clen
        if nxt > end:
            if prefix:
                break
            return None
        usize, csize, offset = _zip64_extra(buf[name_end:extra_end], usize, csize, offset)
        name = buf[pos + 46:name_end].decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        out.append(_Entry(name, method, crc, csize, usize, offset, flags))
        pos = nxt
    return out


def _zip64_extra(extra: bytes, usize: int, csize: int, offset: int) -> Tuple[int, int, int]:
    i = 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4:i + 4 + size]
        if tag == 0x0001:
            j = 0
            vals = []
            for v in (usize, csize, offset):
                if v == 0xFFFFFFFF and j + 8 <= len(body):
                    vals.append(struct.unpack_from("<Q", body, j)[0])
                    j += 8
                else:
                    vals.append(v)
            return vals[0], vals[1], vals[2]
        i += 4 + size
    return usize, csize, offset


def _suffix_entries(buf: bytes, end: int, whole: bool) -> Optional[List[_Entry]]:
    """The entries of the directory tail in ``buf`` (ending at ``end``): from the first position where a
    chain of entries starts that ends exactly at ``end``.  ``whole``: ``buf`` starts at the directory."""
    if whole:
        return _parse_entries(buf, 0, end)
    pos = buf.find(_CENTRAL)
    while pos >= 0:
        got = _parse_entries(buf, pos, end)
        if got is not None:
            return got
        pos = buf.find(_CENTRAL, pos + 1)
    return None


def _metadata_entry(entries: Iterable[_Entry]) -> Optional[_Entry]:
    for e in entries:
        if e.name.count("/") == 1 and e.name.endswith(".dist-info/METADATA"):
            return e
    return None


def _find_entry(reader: _RangeReader, cd_offset: int, cd_size: int) -> _Entry:
    """The METADATA entry, looked for where wheel builders put ``*.dist-info/``: the directory's end
    (setuptools, hatch, flit ...: written last), then its start (bazel-built wheels, old torch: first),
    and only then in the whole directory."""
    cd_end = cd_offset + cd_size
    have = [s for s, data in reader.segments if s <= cd_end <= s + len(data)]
    start = max(cd_offset, min(have) if have else cd_end - TAIL_BYTES)
    tail = reader.read(start, cd_end)
    entry = _metadata_entry(_suffix_entries(tail, len(tail), whole=start == cd_offset) or [])
    if entry is not None or start == cd_offset:
        if entry is None:
            raise LazyWheelError("the wheel has no *.dist-info/METADATA member")
        return entry
    head = reader.read(cd_offset, min(cd_end, cd_offset + TAIL_BYTES))
    entry = _metadata_entry(_parse_entries(head, 0, len(head), prefix=True) or [])
    if entry is not None:
        return entry
    whole = reader.read(cd_offset, cd_end)
    entries = _parse_entries(whole, 0, len(whole))
    if entries is None:
        raise LazyWheelError("central directory is not readable")
    entry = _metadata_entry(entries)
    if entry is None:
        raise LazyWheelError("the wheel has no *.dist-info/METADATA member")
    return entry


def _member(reader: _RangeReader, e: _Entry) -> bytes:
    if e.csize > MAX_METADATA_BYTES or e.usize > MAX_METADATA_BYTES:
        raise LazyWheelError(f"{e.name} is larger than {MAX_METADATA_BYTES} bytes")
    if e.flags & 0x1:
        raise LazyWheelError(f"{e.name} is encrypted")
    head = reader.read(e.offset, e.offset + 30 + len(e.name.encode()) + 256 + e.csize)
    if len(head) < 30 or head[:4] != _LOCAL:
        raise LazyWheelError(f"no local file header for {e.name} at offset {e.offset}")
    nlen, xlen = struct.unpack_from("<HH", head, 26)
    data_start = e.offset + 30 + nlen + xlen
    data = reader.read(data_start, data_start + e.csize)
    if len(data) != e.csize:
        raise LazyWheelError(f"{e.name}: the file ends inside the member")
    if e.method == 0:
        raw = data
    elif e.method == 8:
        d = zlib.decompressobj(-15)
        try:
            raw = d.decompress(data, MAX_METADATA_BYTES + 1)
        except zlib.error as exc:
            raise LazyWheelError(f"{e.name}: cannot inflate ({exc})") from None
    else:
        raise LazyWheelError(f"{e.name}: compression method {e.method} not supported")
    if len(raw) > MAX_METADATA_BYTES:
        raise LazyWheelError(f"{e.name} inflates to more than {MAX_METADATA_BYTES} bytes")
    if zlib.crc32(raw) & 0xFFFFFFFF != e.crc:
        raise LazyWheelError(f"{e.name}: CRC-32 does not match the central directory")
    return raw


def read_remote_metadata_text(client, url: str, deadline: Optional[float] = None,
                              flight: Optional[_Flight] = None) -> str:
    """The text of the ``METADATA`` member of the wheel at ``url`` (http/https), by range requests."""
    stats, lock = _state(client)[1:]
    reader = _RangeReader(client, url, stats, lock, deadline, flight)
    cd_offset, cd_size = _end_of_directory(reader)
    entry = _find_entry(reader, cd_offset, cd_size)
    return _member(reader, entry).decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- per-client cache


_STATE_LOCK = threading.Lock()


def _state(client) -> Tuple[Dict[str, object], Stats, threading.Lock]:
    with _STATE_LOCK:
        st = client.__dict__.get("_lazywheel")
        if st is None:
            st = ({}, Stats(), threading.Lock())
            client.__dict__["_lazywheel"] = st
        return st


def stats(client) -> Stats:
    return _state(client)[1]


def failure(client, dist) -> Optional[str]:
    """Why the wheel's METADATA could not be read (None: it was read, or never tried)."""
    got = _state(client)[0].get(dist.url)
    return got if isinstance(got, str) else None


def _local_copy(client, dist):
    """The same wheel (file name and sha256 where both are known) listed with a file:// URL."""
    try:
        files = client.project_files(dist.name)
    except Exception:  # noqa: BLE001 - the pages were read before; be safe
        return None
    for f in files:
        if f.filename != dist.filename or urlparse(f.url).scheme.lower() != "file":
            continue
        a, b = (dist.hashes or {}).get("sha256"), (f.hashes or {}).get("sha256")
        if a and b and a.lower() != b.lower():
            continue
        return f
    return None


def remote_wheel_metadata(client, dist, deadline: Optional[float] = None, flight: Optional[_Flight] = None):
    """``Metadata`` of a remote wheel that has no PEP 658 file: a local copy, else range requests.

    None when it cannot be read; :func:`failure` says why.
    """
    cache, st, lock = _state(client)
    if dist.url in cache:
        got = cache[dist.url]
        return None if isinstance(got, str) else got
    local = _local_copy(client, dist)
    if local is not None:
        meta = client._local_wheel_metadata(local)
        if meta is not None:
            with lock:
                st.local += 1
            cache[dist.url] = meta
            return meta
    if urlparse(dist.url).scheme.lower() not in ("http", "https"):
        cache[dist.url] = "no metadata file and not an http(s) wheel"
        return None
    try:
        text = read_remote_metadata_text(client, dist.url, deadline, flight)
    except LazyWheelError as exc:
        cache[dist.url] = f"METADATA not readable by range requests: {exc}"
        return None
    meta = parse_metadata(text, f"{dist.url} (METADATA read with HTTP range requests)", dist.filename)
    if meta is None:
        cache[dist.url] = "METADATA read by range requests has no Name/Version"
        return None
    with lock:
        st.wheels += 1
    cache[dist.url] = meta
    return meta


def prefetch(client, dists, workers: int = DEFAULT_WORKERS, total_timeout: Optional[float] = None,
             status=None) -> None:
    """Read the METADATA of ``dists`` (those without a PEP 658 file), ``workers`` at a time; ``status(text, done,
    total)`` hears each one read.

    Reads not finished within ``total_timeout`` seconds are recorded as failures ("ran out of time"); the
    workers are joined before it returns, their open reads cut at the deadline, so no thread outlives the call.
    """
    cache = _state(client)[0]
    todo, seen = [], set()
    for d in dists:
        if d is None or d.metadata is not None or d.url in cache or d.url in seen:
            continue
        seen.add(d.url)
        todo.append(d)
    if not todo:
        return
    deadline = time.monotonic() + total_timeout if total_timeout else None
    flight = _Flight()
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="envdoctor-lazywheel")
    try:
        futures = {pool.submit(remote_wheel_metadata, client, d, deadline, flight): d for d in todo}
        if status is not None:
            read = itertools.count(1)  # next() on it is atomic: the callbacks run in the pool's threads

            def one_read(_fut) -> None:
                status("reading wheel metadata (HTTP range requests)", next(read), len(todo))

            status("reading wheel metadata (HTTP range requests)", 0, len(todo))
            for fut in futures:
                fut.add_done_callback(one_read)
        wait(list(futures), timeout=total_timeout)
        for fut, d in futures.items():
            if not fut.done():
                fut.cancel()
                cache.setdefault(d.url, f"not read within the total timeout of {total_timeout:g} s")
    finally:
        flight.end()
        # every socket wait is capped at the deadline and the open ones were just shut: the join is short
        pool.shutdown(wait=True, cancel_futures=True)


__all__ = ["LazyWheelError", "Stats", "failure", "prefetch", "read_remote_metadata_text", "remote_wheel_metadata",
           "stats"]
