"""A package index on 127.0.0.1 (port 0) for the matrices verify/refresh tests; never the network.

It serves the simple repository API for the wheels it is given: a project page as PEP 691 JSON
(``Accept: application/vnd.pypi.simple.v1+json``) or PEP 503 HTML, and a PEP 658 ``.metadata``
file next to every wheel.  Wheels themselves are not served (a request for one is logged and
answered 404, so a test can assert nothing was downloaded) unless ``serve_wheels=True``: then a small synthetic wheel
holding only the recorded METADATA answers (for a resolver that reads METADATA from the wheel).

The metadata comes from RECORDED real metadata (tests/fixtures/index, see SOURCES.toml):
``recorded/*.txt`` hold the Requires-Dist / Requires-Python lines read from the public index
(one ``== <project> <version>  wheel=<file>  requires_python=<spec>`` block per release);
``metadata/*.metadata`` are real METADATA headers (and one derived future release).

Mode "lazy" serves the index the way the public index is reached from here: no PEP 658 metadata
file, and the wheels themselves, with HTTP range requests (206 / Content-Range).  Each wheel is a
real zip built on first request (:func:`build_wheel`) whose ``*.dist-info/METADATA`` is the recorded
METADATA text, laid out like the real wheels: many members, a large payload, and the ``.dist-info``
directory last (setuptools-built torch, jax) or first (bazel-built tensorflow).  ``bytes_served``,
``range_requests`` and ``max_parallel`` say what the client cost.
"""
from __future__ import annotations

import hashlib
import html
import io
import json
import re
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote, unquote

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

FIX = Path(__file__).parent / "fixtures" / "index"
_BLOCK = re.compile(r"^== (\S+) (\S+)\s+wheel=(\S+)\s+requires_python=(\S+)\s*$")


def recorded_metadata(path: Path) -> Dict[str, str]:
    """``{wheel filename: METADATA text}`` from a recorded evidence file."""
    out: Dict[str, str] = {}
    current: Optional[Tuple[str, str, str, str]] = None
    lines: List[str] = []

    def flush() -> None:
        if current is None:
            return
        project, version, wheel, rp = current
        head = ["Metadata-Version: 2.1", f"Name: {project}", f"Version: {version}"]
        if rp != "None":
            head.append(f"Requires-Python: {rp}")
        out[wheel] = "\n".join(head + [f"Requires-Dist: {x}" for x in lines]) + "\n"

    for raw in path.read_text(encoding="utf-8").splitlines():
        m = _BLOCK.match(raw)
        if m:
            flush()
            current = (m.group(1), m.group(2), m.group(3), m.group(4))
            lines = []
        elif current is not None and raw.startswith("    ") and raw.strip():
            lines.append(raw.strip())
    flush()
    return out


def all_recorded() -> Dict[str, str]:
    """Every recorded release (evidence files) plus the real METADATA files, by wheel file name."""
    files: Dict[str, str] = {}
    for p in sorted((FIX / "recorded").glob("*.txt")):
        files.update(recorded_metadata(p))
    for p in sorted((FIX / "metadata").glob("*.metadata")):
        name = p.name[: -len(".metadata")]
        if "2.16.0" in name:  # the simulated future release is added only by the tests that want it
            continue
        files[name] = p.read_text(encoding="utf-8")
    return files


def report_metadata(path: Path) -> Dict[str, str]:
    """``{wheel filename: METADATA text}`` from a recorded resolver report (recorded/*.json: name, version,
    requires_python, requires_dist, provides_extra of each wheel, copied from pip's --report)."""
    out: Dict[str, str] = {}
    for item in json.loads(path.read_text(encoding="utf-8"))["install"]:
        head = ["Metadata-Version: 2.1", f"Name: {item['name']}", f"Version: {item['version']}"]
        if item.get("requires_python"):
            head.append(f"Requires-Python: {item['requires_python']}")
        head += [f"Provides-Extra: {x}" for x in item.get("provides_extra") or []]
        head += [f"Requires-Dist: {x}" for x in item.get("requires_dist") or []]
        out[item["filename"]] = "\n".join(head) + "\n"
    return out


def wheel_bytes(filename: str, metadata: str) -> bytes:
    """A small synthetic wheel whose only content is its dist-info (METADATA = the recorded text), for resolvers that
    read METADATA from the wheel itself (no PEP 658 file, or uv's range requests)."""
    import io
    import zipfile

    name, version, _build, tags = parse_wheel_filename(filename)
    stem = f"{str(name).replace('-', '_')}-{version}.dist-info"
    tag_lines = "".join(f"Tag: {t}\n" for t in sorted(str(t) for t in tags))
    files = {f"{stem}/METADATA": metadata,
             f"{stem}/WHEEL": f"Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\n{tag_lines}"}
    record = "".join(f"{k},,\n" for k in files) + f"{stem}/RECORD,,\n"
    files[f"{stem}/RECORD"] = record
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in files.items():
            zf.writestr(k, v)
    return buf.getvalue()


def future_torch() -> Dict[str, str]:
    p = FIX / "metadata" / "torch-2.16.0-cp311-cp311-manylinux_2_28_x86_64.whl.metadata"
    return {p.name[: -len(".metadata")]: p.read_text(encoding="utf-8")}


def build_wheel(filename: str, metadata: str, members: int = 600, payload: int = 256 * 1024,
                dist_info_first: Optional[bool] = None) -> bytes:
    """A real wheel zip: ``members`` small modules, one ``payload``-byte binary, and the dist-info
    (METADATA = ``metadata``, WHEEL, RECORD).  ``dist_info_first`` None: first for tensorflow (as bazel
    writes it), last otherwise (as setuptools / hatch / flit do)."""
    name, version, _b, _t = parse_wheel_filename(filename)
    stem = filename.split("-", 2)
    dist_info = f"{stem[0]}-{stem[1]}.dist-info"
    if dist_info_first is None:
        dist_info_first = str(name).startswith("tensorflow")
    pkg = str(name).replace("-", "_")
    buf = io.BytesIO()
    dist = [(f"{dist_info}/METADATA", metadata.encode()),
            (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: false\n")]
    body = [(f"{pkg}/mod_{i:04d}.py", f"VALUE = {i}\n".encode()) for i in range(members)]
    body.append((f"{pkg}/_native.so", bytes(range(256)) * (payload // 256)))
    order = dist + body if dist_info_first else body + dist
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arc, data in order:
            zf.writestr(arc, data, compress_type=zipfile.ZIP_STORED if arc.endswith(".so") else zipfile.ZIP_DEFLATED)
        zf.writestr(f"{dist_info}/RECORD", "".join(f"{a},,\n" for a, _ in order))
    return buf.getvalue()


def _range(header: str, size: int) -> Optional[Tuple[int, int]]:
    """``bytes=a-b`` / ``bytes=a-`` / ``bytes=-n`` -> (first, last) inclusive, clipped; None when unusable."""
    m = re.match(r"^bytes=(\d*)-(\d*)$", header.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if not m.group(1):
        n = int(m.group(2))
        return max(0, size - n), size - 1
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) else size - 1
    if first >= size:
        return None
    return first, min(last, size - 1)


class FakeIndex:
    """``with FakeIndex(files, mode="json") as idx: idx.url`` -> ``http://127.0.0.1:PORT/simple/``.

    mode: "json" (PEP 691 when asked for), "html" (always PEP 503), "500" (every request fails),
    "garbage" (project pages claim JSON but are not), "slow" (answers after ``delay`` seconds),
    "nometa" (pages offer no metadata files), "lazy" (no metadata files; wheels served with range
    requests), "lazy-norange" (wheels served whole, Range ignored), "lazy-slow" (each wheel request
    answers after ``delay`` s), "lazy-flaky" (the first request for each wheel fails with HTTP 503).
    """

    def __init__(self, files: Dict[str, str], mode: str = "json", delay: float = 3.0,
                 extra_files: Optional[List[str]] = None, serve_wheels: bool = False) -> None:
        self.files = dict(files)  # wheel filename -> METADATA text
        self.extra_files = list(extra_files or [])  # listed, but no metadata file
        self.mode = mode
        self.delay = delay
        self.serve_wheels = serve_wheels  # answer wheel requests with a synthetic wheel holding the METADATA
        self.requests: List[Tuple[str, str]] = []  # (path, Accept)
        self.ranges: Dict[str, List[Optional[str]]] = {}  # wheel path -> Range header of each request
        self.bytes_served = 0  # wheel bytes sent
        self.range_requests = 0
        self.max_parallel = 0  # most wheel requests in flight at once
        self._parallel = 0
        self._lock = threading.Lock()
        self._wheels: Dict[str, bytes] = {}
        self._failed_once: set = set()
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # ----------------------------------------------------------------- content

    def projects(self) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for fn in list(self.files) + self.extra_files:
            # a source archive (listed with no metadata file) or a wheel
            name = str(parse_sdist_filename(fn)[0] if fn.endswith((".tar.gz", ".zip")) else parse_wheel_filename(fn)[0])
            out.setdefault(name, []).append(fn)
        return out

    def page(self, project: str, as_json: bool) -> Optional[Tuple[str, bytes]]:
        files = self.projects().get(str(canonicalize_name(project)))
        if files is None:
            return None
        entries = []
        for fn in sorted(files):
            meta = self.files.get(fn)
            digest = hashlib.sha256(meta.encode()).hexdigest() if meta is not None else None
            entries.append((fn, digest))
        if as_json:
            data = {"meta": {"api-version": "1.1"}, "name": project, "versions": [], "files": []}
            for fn, digest in entries:
                item = {"filename": fn, "url": f"../../files/{quote(fn)}", "hashes": {}, "requires-python": None}
                if digest and not self.no_metadata:
                    # the keys the default index's JSON pages carry (PEP 714: core-metadata, and the
                    # data-dist-info-metadata it served before); never the PEP 691 "dist-info-metadata" key, which
                    # pip before 23.2 cannot parse (pypa/pip#12042) and which that index therefore never served
                    item["core-metadata"] = {"sha256": digest}
                    item["data-dist-info-metadata"] = {"sha256": digest}
                data["files"].append(item)
            return "application/vnd.pypi.simple.v1+json", json.dumps(data).encode()
        rows = []
        for fn, digest in entries:
            attrs = ""
            if digest and not self.no_metadata:
                attrs = f' data-dist-info-metadata="sha256={digest}" data-core-metadata="sha256={digest}"'
            rows.append(f'<a href="../../files/{html.escape(quote(fn))}"{attrs}>{html.escape(fn)}</a><br/>')
        body = "<!DOCTYPE html>\n<html><body>\n" + "\n".join(rows) + "\n</body></html>\n"
        return "text/html", body.encode()

    @property
    def no_metadata(self) -> bool:
        return self.mode == "nometa" or self.mode.startswith("lazy")

    def wheel(self, filename: str) -> Optional[bytes]:
        with self._lock:
            if filename not in self._wheels and filename in self.files:
                self._wheels[filename] = build_wheel(filename, self.files[filename])
            return self._wheels.get(filename)

    # ----------------------------------------------------------------- server

    def __enter__(self) -> "FakeIndex":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, ctype: str, body: bytes) -> None:
                self.send_response(status)
                if ctype:
                    self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

            def do_HEAD(self) -> None:  # noqa: N802 - uv asks before a range request; no ranges: it downloads
                path = unquote(self.path.split("?", 1)[0])
                parts = [p for p in path.split("/") if p]
                if owner.serve_wheels and len(parts) == 2 and parts[0] == "files" and parts[1] in owner.files:
                    owner.requests.append((self.path.split("?", 1)[0], "HEAD"))
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(wheel_bytes(parts[1], owner.files[parts[1]]))))
                    self.end_headers()
                    return
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                accept = self.headers.get("Accept", "")
                owner.requests.append((path, accept))
                if path.endswith(".whl"):
                    owner.ranges.setdefault(path, []).append(self.headers.get("Range"))
                if owner.mode == "slow":
                    time.sleep(owner.delay)
                if owner.mode == "500":
                    return self._send(500, "text/plain", b"internal error")
                parts = [p for p in path.split("/") if p]
                if len(parts) == 2 and parts[0] == "simple":
                    if owner.mode == "garbage":
                        return self._send(200, "application/vnd.pypi.simple.v1+json", b'{"files": [garbage')
                    as_json = owner.mode != "html" and "application/vnd.pypi.simple.v1+json" in accept
                    got = owner.page(parts[1], as_json)
                    if got is None:
                        return self._send(404, "text/plain", b"not found")
                    return self._send(200, got[0], got[1])
                if len(parts) == 2 and parts[0] == "files" and parts[1].endswith(".metadata"):
                    meta = owner.files.get(unquote(parts[1])[: -len(".metadata")])
                    if meta is None or owner.no_metadata:
                        return self._send(404, "text/plain", b"not found")
                    return self._send(200, "application/octet-stream", meta.encode())
                if len(parts) == 2 and parts[0] == "files" and parts[1].endswith(".whl") and \
                        owner.mode.startswith("lazy"):
                    return self._wheel(unquote(parts[1]))
                if (owner.serve_wheels and len(parts) == 2 and parts[0] == "files"
                        and unquote(parts[1]) in owner.files):
                    return self._send(200, "application/octet-stream",
                                      wheel_bytes(unquote(parts[1]), owner.files[unquote(parts[1])]))
                return self._send(404, "text/plain", b"not found")

            def _wheel(self, filename: str) -> None:
                data = owner.wheel(filename)
                if data is None:
                    return self._send(404, "text/plain", b"not found")
                with owner._lock:
                    owner._parallel += 1
                    owner.max_parallel = max(owner.max_parallel, owner._parallel)
                    first_time = filename not in owner._failed_once
                    owner._failed_once.add(filename)
                try:
                    if owner.mode == "lazy-slow":
                        time.sleep(owner.delay)
                finally:
                    # counted as in flight until just before the answer is sent: a client that has read its answer
                    # and started the next request never meets this one still counted
                    with owner._lock:
                        owner._parallel -= 1
                if owner.mode == "lazy-flaky" and first_time:
                    return self._send(503, "text/plain", b"try again")
                rng = self.headers.get("Range")
                if owner.mode == "lazy-norange" or not rng:
                    with owner._lock:
                        owner.bytes_served += len(data)
                    return self._send(200, "application/octet-stream", data)
                span = _range(rng, len(data))
                if span is None:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                first, last = span
                body = data[first:last + 1]
                with owner._lock:
                    owner.bytes_served += len(body)
                    owner.range_requests += 1
                self.send_response(206)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return None

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:  # quiet: clients time out on purpose
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/simple/"

    def wheel_downloads(self) -> List[str]:
        """Every request for a wheel file (range reads included)."""
        return [p for p, _ in self.requests if p.endswith(".whl")]

    def whole_wheel_requests(self) -> List[str]:
        """Requests for a wheel without a Range header: downloads of the whole wheel."""
        return [p for p, rs in self.ranges.items() for r in rs if not r]


def closed_port_url() -> str:
    """An index URL on 127.0.0.1 where nothing listens (connection refused)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/simple/"
