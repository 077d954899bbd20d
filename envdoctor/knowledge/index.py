"""A small client for Python package indexes: the simple repository API, read-only.

* Where: the index URLs come only from pip's own configuration (its config files and the
  ``PIP_INDEX_URL`` / ``PIP_EXTRA_INDEX_URL`` variables, read with :mod:`configparser`, pip is never
  run) or from an explicit ``--index-url``.  No index host is written into envdoctor: when pip is
  configured with no ``index-url``, pip's own default is asked from the installed pip; when even
  that is unavailable the user is told to pass ``--index-url``.
* What: PEP 691 JSON pages (``Accept: application/vnd.pypi.simple.v1+json``) and PEP 503 HTML
  pages, ``http(s)://`` and ``file://`` indexes, and PEP 658 / PEP 714 metadata files
  (``<wheel-url>.metadata``) so a wheel's METADATA is read without downloading the wheel.  On a
  ``file://`` index without metadata files the METADATA member is read from the local wheel.
* Failures: an unreachable index, a timeout, an HTTP error other than 404, or a page that is not
  what it claims raise :class:`IndexUnavailable` (one line, exit code 2).  A project or file the
  index does not have is not an error (empty result / None).
"""
from __future__ import annotations

import configparser
import hashlib
import html
import json
import os
import re
import threading
import time
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote, urldefrag, urljoin, urlparse
from urllib.request import url2pathname

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envdoctor.errors import IndexUnavailable, NoIndexConfigured
from envdoctor.facts.platform import marker_env_for, platform_facts, wheel_tag_platform
from envdoctor.facts.versions import parse_version
from envdoctor.knowledge.wheelmeta import Metadata, parse_metadata  # noqa: F401 - Metadata: this client's answers
from envdoctor.knowledge.wheelmeta import shut_response as _shut

# Retry policy for http(s): attempts = 1 + RETRIES, sleeping BACKOFF * 2**i between them.
RETRIES = 2
BACKOFF = 0.5
DEFAULT_TIMEOUT = 15.0
MAX_PAGE_BYTES = 64 * 1024 * 1024
MAX_METADATA_BYTES = 8 * 1024 * 1024

ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
NO_INDEX_MESSAGE = "no package index configured; pass --index-url or set PIP_INDEX_URL"

_MANYLINUX_X86_64 = re.compile(r"^manylinux(1|2010|2014|_\d+_\d+)_x86_64$")
_CPYTHON = re.compile(r"^cp(\d)(\d+)$")


class _PastDeadline(Exception):
    """One request took longer than the client's timeout in all (retried like a timeout)."""


# --------------------------------------------------------------------------- pip configuration


@dataclass
class IndexConfig:
    """The indexes to read, primary first, and where each one was configured."""

    urls: List[str]
    origins: Dict[str, str] = field(default_factory=dict)
    cert: Optional[str] = None  # CA bundle pip is configured with (``cert``), used for https


def _truthy(value: str) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def pip_config_files(env: Mapping[str, str], etc: str = "/etc", prefix: Optional[str] = None) -> List[str]:
    """pip's configuration files in the order pip reads them (later files win).

    Order as in pip's ``Configuration.iter_config_files``: ``PIP_CONFIG_FILE`` (lowest), the global
    files (``$XDG_CONFIG_DIRS/pip/pip.conf``, default ``/etc/xdg``, then ``/etc/pip.conf``), the user
    files (``~/.pip/pip.conf`` then ``$XDG_CONFIG_HOME/pip/pip.conf``; skipped when
    ``PIP_CONFIG_FILE`` names an existing file) and the site file ``$VIRTUAL_ENV/pip.conf``.
    ``PIP_CONFIG_FILE=/dev/null`` disables all files, as in pip.
    """
    env_file = env.get("PIP_CONFIG_FILE")
    if env_file is not None and env_file == os.devnull:
        return []
    files: List[str] = []
    if env_file:
        files.append(env_file)
    xdg_dirs = env.get("XDG_CONFIG_DIRS", "") or ""
    dirs = [d for d in xdg_dirs.split(os.pathsep) if d.strip()] or [os.path.join(etc, "xdg")]
    files.extend(os.path.join(d, "pip", "pip.conf") for d in dirs)
    files.append(os.path.join(etc, "pip.conf"))
    if not (env_file and os.path.exists(env_file)):
        home = env.get("HOME") or os.path.expanduser("~")
        files.append(os.path.join(home, ".pip", "pip.conf"))
        xdg_home = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files.append(os.path.join(xdg_home, "pip", "pip.conf"))
    site = env.get("VIRTUAL_ENV") or prefix
    if site:
        files.append(os.path.join(site, "pip.conf"))
    return files


def read_pip_config(env: Mapping[str, str], etc: str = "/etc", prefix: Optional[str] = None) -> Dict[str, Tuple[str, str]]:
    """``index-url``, ``extra-index-url``, ``no-index``, ``cert`` as pip would see them for ``pip install``.

    Returns ``{key: (value, origin)}``.  Within a file ``[install]`` overrides ``[global]``; later
    files override earlier ones; ``PIP_<KEY>`` environment variables override every file.
    Unreadable or malformed files are skipped (pip would refuse them; envdoctor just ignores them).
    """
    wanted = ("index-url", "extra-index-url", "no-index", "cert")
    values: Dict[str, Tuple[str, str]] = {}
    for path in pip_config_files(env, etc=etc, prefix=prefix):
        if not os.path.isfile(path):
            continue
        parser = configparser.RawConfigParser()
        try:
            with open(path, encoding="utf-8") as fh:
                parser.read_file(fh)
        except (OSError, UnicodeDecodeError, configparser.Error):
            continue
        for section in ("global", "install"):
            if not parser.has_section(section):
                continue
            for key, value in parser.items(section):
                name = key.strip().lower().replace("_", "-")
                if name in wanted:
                    values[name] = (value, f"{path} [{section}]")
    for name in wanted:
        var = "PIP_" + name.upper().replace("-", "_")
        if env.get(var) is not None and str(env.get(var)).strip() != "":
            values[name] = (str(env[var]), var)
    return values


def pip_default_index() -> Optional[str]:
    """The index pip uses when none is configured, asked from the installed pip (None without pip)."""
    from envdoctor.default_index import default_index

    return default_index()


def configured_indexes(explicit: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                       etc: str = "/etc", prefix: Optional[str] = None) -> IndexConfig:
    """The indexes to read: ``explicit`` (``--index-url``, replaces everything) or pip's configuration."""
    environ = os.environ if env is None else env
    conf = read_pip_config(environ, etc=etc, prefix=prefix)
    cert = conf.get("cert", (None, ""))[0]
    explicit = [u.strip() for u in explicit if u and u.strip()]
    if explicit:
        return IndexConfig(urls=_dedupe(explicit), origins={u: "--index-url" for u in explicit}, cert=cert)
    if "no-index" in conf and _truthy(conf["no-index"][0]):
        raise NoIndexConfigured(f"pip is configured with no-index ({conf['no-index'][1]}); {NO_INDEX_MESSAGE}")
    urls: List[str] = []
    origins: Dict[str, str] = {}
    if "index-url" in conf and conf["index-url"][0].strip():
        value, origin = conf["index-url"]
        url = value.split()[0]
        urls.append(url)
        origins[url] = origin
    else:
        default = pip_default_index()
        if default:
            urls.append(default)
            origins[default] = "pip's default index"
    if "extra-index-url" in conf:
        value, origin = conf["extra-index-url"]
        for url in value.split():
            urls.append(url)
            origins.setdefault(url, origin)
    urls = _dedupe(urls)
    if not urls:
        raise NoIndexConfigured(NO_INDEX_MESSAGE)
    return IndexConfig(urls=urls, origins=origins, cert=cert)


def _dedupe(urls: Iterable[str]) -> List[str]:
    out: List[str] = []
    for u in urls:
        if u not in out:
            out.append(u)
    return out


# --------------------------------------------------------------------------- the simple API


@dataclass(frozen=True)
class DistFile:
    """One wheel listed on an index page."""

    filename: str
    url: str  # absolute, fragment (hash) removed
    index_url: str
    name: str  # canonical project name
    version: Version
    build: Tuple
    tags: frozenset
    requires_python: Optional[str] = None
    metadata: Optional[Dict[str, str]] = None  # PEP 658/714: None = no metadata file; {} = offered, no hash
    yanked: bool = False
    hashes: Optional[Dict[str, str]] = None

    @property
    def platforms(self) -> List[str]:
        return sorted({t.platform for t in self.tags})

    @property
    def is_manylinux_x86_64(self) -> bool:
        return any(_MANYLINUX_X86_64.match(t.platform) for t in self.tags)

    @property
    def is_any(self) -> bool:
        return any(t.platform == "any" for t in self.tags)

    def cpython_versions(self) -> List[Tuple[int, int]]:
        out = set()
        for t in self.tags:
            m = _CPYTHON.match(t.interpreter)
            if m:
                out.add((int(m.group(1)), int(m.group(2))))
        return sorted(out)


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    url: str


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: Optional[str] = None
        self.links: List[Dict[str, Optional[str]]] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag == "base" and self.base is None:
            href = dict(attrs).get("href")
            if href:
                self.base = href
        elif tag == "a":
            d = dict(attrs)
            if d.get("href"):
                self.links.append(d)


def _hash_attr(value: str) -> Optional[Dict[str, str]]:
    """``data-core-metadata`` / ``data-dist-info-metadata`` value: "false" -> None, "true" -> {}, "sha256=.." -> hash."""
    text = value.strip()
    if text.lower() == "false":
        return None
    if text.lower() in ("", "true"):
        return {}
    if "=" in text:
        algo, _, digest = text.partition("=")
        return {algo.strip().lower(): digest.strip().lower()}
    return {}


def _json_meta(value: object) -> Optional[Dict[str, str]]:
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, dict):
        return {str(k).lower(): str(v).lower() for k, v in value.items()}
    return None


def _make_file(filename: str, url: str, index_url: str, requires_python: Optional[str],
               metadata: Optional[Dict[str, str]], yanked: bool, hashes: Optional[Dict[str, str]]) -> Optional[DistFile]:
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return DistFile(filename=filename, url=url, index_url=index_url, name=str(name), version=version, build=build,
                    tags=frozenset(tags), requires_python=(requires_python or None), metadata=metadata,
                    yanked=yanked, hashes=hashes)


def parse_json_page(text: str, page_url: str, index_url: str) -> List[DistFile]:
    """Files of a PEP 691 JSON project page.  Raises ValueError when it is not such a page."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise ValueError("not a PEP 691 project page (no 'files' list)")
    out: List[DistFile] = []
    for item in data["files"]:
        if not isinstance(item, dict) or not isinstance(item.get("filename"), str) or not isinstance(item.get("url"), str):
            continue
        url = urldefrag(urljoin(page_url, item["url"]))[0]
        meta = item.get("core-metadata", item.get("data-dist-info-metadata", item.get("dist-info-metadata")))
        yanked = item.get("yanked", False)
        hashes = item.get("hashes") if isinstance(item.get("hashes"), dict) else None
        rp = item.get("requires-python")
        f = _make_file(item["filename"], url, index_url, rp if isinstance(rp, str) else None, _json_meta(meta),
                       bool(yanked), hashes)
        if f is not None:
            out.append(f)
    return out


def parse_html_page(text: str, page_url: str, index_url: str) -> List[DistFile]:
    """Files of a PEP 503 HTML project page (anchors; PEP 592/658/714 data attributes)."""
    parser = _LinkParser()
    try:
        parser.feed(text)
        parser.close()
    except Exception:  # noqa: BLE001 - HTMLParser is lenient; be safe anyway
        return []
    base = urljoin(page_url, parser.base) if parser.base else page_url
    out: List[DistFile] = []
    for link in parser.links:
        full, frag = urldefrag(urljoin(base, link["href"] or ""))
        filename = unquote(full.rstrip("/").rsplit("/", 1)[-1])
        hashes = None
        if "=" in frag:
            algo, _, digest = frag.partition("=")
            hashes = {algo.lower(): digest.lower()}
        meta: Optional[Dict[str, str]] = None
        for attr in ("data-core-metadata", "data-dist-info-metadata"):
            if attr in link:  # present without a value means "true"
                value = link[attr]
                meta = _hash_attr(value if value is not None else "true")
                break
        rp = link.get("data-requires-python")
        f = _make_file(filename, full, index_url, html.unescape(rp) if rp else None, meta,
                       "data-yanked" in link, hashes)
        if f is not None:
            out.append(f)
    return out


class IndexClient:
    """Reads project pages and metadata files from one or more indexes (merged, primary first)."""

    def __init__(self, urls: Sequence[str], timeout: float = DEFAULT_TIMEOUT, retries: Optional[int] = None,
                 backoff: Optional[float] = None, cert: Optional[str] = None, session=None) -> None:
        if not urls:
            raise NoIndexConfigured(NO_INDEX_MESSAGE)
        self.urls = [u if u.endswith("/") else u + "/" for u in urls]
        self.timeout = timeout
        self.retries = RETRIES if retries is None else retries
        self.backoff = BACKOFF if backoff is None else backoff
        self.cert = cert if cert and os.path.exists(cert) else None
        self._session = session
        self._pages: Dict[str, List[DistFile]] = {}
        for u in self.urls:
            scheme = urlparse(u).scheme.lower()
            if scheme not in ("http", "https", "file"):
                raise IndexUnavailable(f"unsupported package index URL {u!r} (use http://, https:// or file://)")
            # a missing project page is "no releases" (404), so a file:// index that is not there at all would read
            # as an index with nothing newer: it is unreachable, as a host that does not answer is
            if scheme == "file" and not Path(url2pathname(unquote(urlparse(u).path))).is_dir():
                raise IndexUnavailable(f"cannot read package index at {u}: no such folder")

    # ---------------------------------------------------------------- transport

    def _session_obj(self):
        if self._session is None:
            import requests

            self._session = requests.Session()
            self._session.headers["User-Agent"] = "envdoctor-matrices (requests)"
        return self._session

    def fetch(self, url: str, accept: Optional[str] = None, limit: int = MAX_PAGE_BYTES) -> Response:
        """GET one URL; 404/410 come back as a Response, every other failure raises IndexUnavailable."""
        scheme = urlparse(url).scheme.lower()
        if scheme == "file":
            return self._fetch_file(url, limit)
        return self._fetch_http(url, accept, limit)

    def _fetch_file(self, url: str, limit: int) -> Response:
        path = Path(url2pathname(unquote(urlparse(url).path)))
        if path.is_dir():
            path = path / "index.html"
        if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
            raise IndexUnavailable(f"cannot read {url}: not a regular file")
        try:
            with open(path, "rb") as fh:
                body = fh.read(limit + 1)
        except FileNotFoundError:
            return Response(404, "", b"", url)
        except OSError as exc:
            raise IndexUnavailable(f"cannot read {url}: {exc.strerror or exc}") from None
        if len(body) > limit:
            raise IndexUnavailable(f"{url} is larger than {limit // (1024 * 1024)} MiB")
        ctype = "text/html" if path.suffix in (".html", ".htm") else ""
        return Response(200, ctype, body, url)

    def _fetch_http(self, url: str, accept: Optional[str], limit: int) -> Response:
        import requests

        headers = {"Accept": accept} if accept else {}
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            try:
                resp = self._get_within(url, headers, limit)
                if resp.status >= 500 or resp.status == 429:
                    last = f"HTTP {resp.status}"
                    continue
                if resp.status >= 400 and resp.status not in (404, 410):
                    raise IndexUnavailable(f"package index refused {url}: HTTP {resp.status}")
                return resp
            except (requests.exceptions.Timeout, _PastDeadline):
                last = f"timed out after {self.timeout:g} s"
            except requests.exceptions.SSLError as exc:
                raise IndexUnavailable(f"cannot reach package index at {url}: TLS error ({_short(exc)})") from None
            except requests.exceptions.ConnectionError as exc:
                last = f"connection failed ({_short(exc)})"
            except requests.exceptions.RequestException as exc:
                raise IndexUnavailable(f"cannot reach package index at {url}: {_short(exc)}") from None
        raise IndexUnavailable(f"cannot reach package index at {url}: {last} "
                               f"(tried {self.retries + 1} times; offline? pass --index-url to use another index)")

    def _get_within(self, url: str, headers: Dict[str, str], limit: int) -> Response:
        """One GET, bounded as a whole: `self.timeout` from the connect to the body's last byte.

        requests' timeout applies to each read, so a server dripping a byte a second never trips it.
        The request runs in a daemon thread that this one waits for until the deadline: past it,
        _PastDeadline is raised at once. The thread is left to end by itself: once the headers came its
        socket is shut down here (its read fails at once); before that it ends when the server gives up
        or a read waits longer than the timeout, and with the process at the latest (a daemon thread)."""
        deadline = time.monotonic() + self.timeout
        box: Dict[str, object] = {}

        def work() -> None:
            try:
                box["value"] = self._get_body(url, headers, limit, deadline, box)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="envdoctor-index-get", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            box["abandoned"] = True
            _shut(box.get("response"))
            raise _PastDeadline(url)
        error, value = box.get("error"), box.get("value")
        if isinstance(error, BaseException):
            raise error
        assert isinstance(value, Response), "the worker sets value or error before it ends"
        return value

    def _get_body(self, url: str, headers: Dict[str, str], limit: int, deadline: float,
                  box: Dict[str, object]) -> Response:
        kwargs = {"headers": headers, "timeout": (min(self.timeout, 10.0), self.timeout), "stream": True}
        if self.cert:
            kwargs["verify"] = self.cert
        with self._session_obj().get(url, **kwargs) as resp:
            box["response"] = resp
            status = resp.status_code
            if status >= 400:
                return Response(status, "", b"", url)
            body = bytearray()
            for chunk in resp.iter_content(64 * 1024):
                if box.get("abandoned") or time.monotonic() > deadline:
                    raise _PastDeadline(url)
                body += chunk
                if len(body) > limit:
                    raise IndexUnavailable(f"{url} is larger than {limit // (1024 * 1024)} MiB")
            ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
            return Response(status, ctype, bytes(body), str(resp.url or url))

    # ---------------------------------------------------------------- pages

    def project_files(self, project: str) -> List[DistFile]:
        """Every wheel of ``project`` on every configured index (empty when no index has it)."""
        key = canonicalize_name(project)
        if key in self._pages:
            return self._pages[key]
        files: List[DistFile] = []
        for index in self.urls:
            files.extend(self._index_files(index, str(key)))
        self._pages[key] = files
        return files

    def _index_files(self, index: str, project: str) -> List[DistFile]:
        page = urljoin(index, project + "/")
        resp = self.fetch(page, accept=ACCEPT)
        if resp.status in (404, 410):
            return []
        try:
            text = resp.body.decode("utf-8")
        except UnicodeDecodeError:
            raise IndexUnavailable(f"package index page {page} is not UTF-8 text") from None
        ctype = resp.content_type
        as_json = ctype == JSON_TYPE or ctype == "application/json" or (ctype == "" and text.lstrip().startswith("{"))
        if as_json:
            try:
                return parse_json_page(text, resp.url if resp.url.endswith("/") else page, index)
            except (ValueError, TypeError) as exc:
                raise IndexUnavailable(f"package index page {page} is not valid PEP 691 JSON: {_short(exc)}") from None
        if ctype and "html" not in ctype:
            raise IndexUnavailable(f"package index page {page} has unexpected content type {ctype!r}")
        return parse_html_page(text, page, index)

    def versions(self, project: str, platform: str = "manylinux_x86_64", final_only: bool = True) -> List[Version]:
        """Public versions with a wheel for ``platform`` (manylinux x86_64 or pure), ascending."""
        out = set()
        for f in self.project_files(project):
            if f.yanked or not _platform_ok(f, platform):
                continue
            v = Version(f.version.public)
            if final_only and (v.is_prerelease or v.is_devrelease):
                continue
            out.add(v)
        return sorted(out)

    def pick_wheel(self, project: str, version: str, platform: str = "manylinux_x86_64") -> Optional[DistFile]:
        """The wheel of ``project==version`` for Linux x86_64: a manylinux x86_64 wheel, else a pure one.

        Picked by wheel tags: not yanked first, no local label first, then the highest build tag and
        the lowest CPython tag (deterministic).  None when the index has no such wheel.
        """
        return pick_wheel(self.project_files(project), version, platform)

    # ---------------------------------------------------------------- metadata

    def metadata(self, dist: DistFile) -> Optional[Metadata]:
        """Core metadata of a wheel without downloading it: the PEP 658 file, or the local wheel's member.

        None when the index offers no metadata file and the wheel is not local.
        """
        if dist.metadata is not None:
            url = dist.url + ".metadata"
            resp = self.fetch(url, limit=MAX_METADATA_BYTES)
            if resp.status == 200:
                expected = (dist.metadata or {}).get("sha256")
                if expected and hashlib.sha256(resp.body).hexdigest() != expected:
                    raise IndexUnavailable(f"metadata file {url} does not match its sha256 on the index page")
                meta = parse_metadata(resp.body.decode("utf-8", errors="replace"), url, dist.filename)
                if meta is None:
                    raise IndexUnavailable(f"metadata file {url} is not core metadata (no Name/Version)")
                return meta
        if urlparse(dist.url).scheme.lower() == "file":
            return self._local_wheel_metadata(dist)
        from .lazywheel import remote_wheel_metadata  # no PEP 658 file: a local copy, else HTTP range requests

        return remote_wheel_metadata(self, dist)

    def _local_wheel_metadata(self, dist: DistFile) -> Optional[Metadata]:
        path = Path(url2pathname(unquote(urlparse(dist.url).path)))
        try:
            with zipfile.ZipFile(path) as zf:
                names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
                if not names:
                    return None
                text = zf.read(names[0])[:MAX_METADATA_BYTES].decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None
        except (OSError, zipfile.BadZipFile, KeyError) as exc:
            raise IndexUnavailable(f"cannot read METADATA from {dist.url}: {_short(exc)}") from None
        return parse_metadata(text, f"{dist.url} (METADATA inside the wheel)", dist.filename)

    def release_metadata(self, project: str, version: str) -> Tuple[Optional[DistFile], Optional[Metadata]]:
        dist = self.pick_wheel(project, version)
        if dist is None:
            return None, None
        return dist, self.metadata(dist)


def _platform_ok(f: DistFile, platform: str) -> bool:
    if platform == "manylinux_x86_64":
        return f.is_manylinux_x86_64 or f.is_any
    return any(t.platform == platform for t in f.tags) or f.is_any


def pick_wheel(files: Sequence[DistFile], version: str, platform: str = "manylinux_x86_64") -> Optional[DistFile]:
    want = parse_version(version)
    if want is None:
        return None
    cands = [f for f in files if Version(f.version.public) == Version(want.public) and _platform_ok(f, platform)]
    if want.local:
        cands = [f for f in cands if f.version == want] or cands
    if not cands:
        return None

    def key(f: DistFile):
        cps = f.cpython_versions()
        return (
            f.yanked,
            f.version.local is not None,
            not f.is_manylinux_x86_64,  # a platform wheel before a pure one
            f.metadata is None,  # a wheel whose metadata file is served
            tuple(-x if isinstance(x, int) else 0 for x in (f.build[:1] or (0,))),
            cps[0] if cps else (99, 99),
            f.filename,
        )

    return sorted(cands, key=key)[0]


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # requests nests the reason deep inside; keep the informative tail
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if m:
        return m.group(1).strip()
    m = re.search(r"(Connection refused|Name or service not known|timed out|Temporary failure in name resolution)", text)
    if m:
        return m.group(1)
    return text[:160]


# --------------------------------------------------------------------------- requirements


def python_for(dist: Optional[DistFile], default: str = "3.12") -> str:
    """The Python version a wheel's markers are evaluated for (its lowest CPython tag)."""
    if dist is not None:
        cps = dist.cpython_versions()
        if cps:
            return f"{cps[0][0]}.{cps[0][1]}"
    return default


def wheel_platform(dist: Optional[DistFile]) -> Tuple[str, str, Optional[str]]:
    """(system, machine, platform key) a wheel installs on (envdoctor.facts.platform reads its platform tags); a
    pure or unknown wheel counts as Linux x86_64 (the machine the tables describe first) with key None for an
    unknown platform."""
    for plat in (dist.platforms if dist is not None else []):
        facts = platform_facts(wheel_tag_platform(plat))
        if facts is not None:
            return facts.system, facts.machine, facts.key
    pure = dist is None or dist.is_any
    return "Linux", "x86_64", ("linux-x86_64" if pure else None)


def requirements(meta: Metadata, extra: Optional[str] = None, python: str = "3.12",
                 base: bool = True, system: str = "Linux", machine: str = "x86_64") -> Dict[str, Requirement]:
    """Requirements that apply on ``system`` / ``machine`` (Linux x86_64 unless told): the base ones (``base``)
    and/or those of ``extra``.

    With ``extra`` given and ``base`` False, only requirements that need the extra are returned.
    Later lines for the same project are merged into one specifier set.
    """
    env = marker_env_for(system, machine, python)
    out: Dict[str, Requirement] = {}
    extras = []
    if extra:
        extras = sorted({extra, extra.replace("_", "-"), extra.replace("-", "_")})
    for line in meta.requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is None:
            applies = base
        else:
            plain = _eval(req.marker, env, "")
            with_extra = any(_eval(req.marker, env, e) for e in extras)
            applies = (base and plain) or (with_extra and not plain)
        if not applies:
            continue
        name = canonicalize_name(req.name)
        if name in out:
            merged = Requirement(str(out[name]).split(";")[0])
            merged.specifier &= req.specifier
            merged.extras |= req.extras
            out[name] = merged
        else:
            req.marker = None
            out[name] = req
    return out


def python_markers(meta: Metadata) -> Dict[str, str]:
    """{project: marker} of the requirements outside any extra whose marker names the Python (``python_version <
    "3.15"``): a pin that holds only for some of a release's wheels. The marker is kept whole, as the line says it."""
    out: Dict[str, str] = {}
    for line in meta.requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        text = str(req.marker) if req.marker is not None else ""
        if "python_version" in text or "python_full_version" in text:
            if "extra" not in text:
                out[canonicalize_name(req.name)] = text
    return out


def _eval(marker, env: Dict[str, str], extra: str) -> bool:
    e = dict(env)
    e["extra"] = extra
    try:
        return bool(marker.evaluate(e))
    except Exception:  # noqa: BLE001 - unknown marker variables: does not apply
        return False


def spec_of(req: Optional[Requirement]) -> Optional[str]:
    return str(req.specifier) if req is not None else None


def exact_pin(spec: Optional[str]) -> Optional[str]:
    """``"13.0.3"`` for ``"==13.0.3"`` (also ``<=X,>=X``); None when the specifier is not one version."""
    if not spec:
        return None
    try:
        ss = SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    items = list(ss)
    if len(items) == 1 and items[0].operator in ("==", "===") and "*" not in items[0].version:
        return items[0].version
    ops = {s.operator: s.version for s in items}
    if len(items) == 2 and ops.get("<=") and ops.get("<=") == ops.get(">="):
        return ops["<="]
    return None


def same_spec(a: Optional[str], b: Optional[str]) -> bool:
    """Two specifier strings mean the same set of clauses (order-insensitive; "(==1)" == "==1")."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return SpecifierSet(str(a).strip("() ")) == SpecifierSet(str(b).strip("() "))
    except InvalidSpecifier:
        return str(a).strip() == str(b).strip()


__all__ = [
    "DistFile", "IndexClient", "IndexConfig", "IndexUnavailable", "Metadata", "NO_INDEX_MESSAGE", "NoIndexConfigured",
    "configured_indexes", "exact_pin", "parse_html_page", "parse_json_page", "parse_metadata",
    "pick_wheel", "pip_config_files", "pip_default_index", "python_for", "read_pip_config", "requirements",
    "same_spec", "spec_of",
]
