"""What gate may do with files other people wrote: gate runs in CI on files a pull request can change.

The threat model (docs/gate.md, "Untrusted inputs") in code:

* **Reads** stay inside the repository: a ``-r`` / ``-c`` include, a local ``--find-links`` folder or a uv path source
  that resolves (symlinks followed) outside the repository of the file that names it -- the nearest folder above it
  holding ``.git``, else its own folder -- is not read (``--allow-outside`` reads it).  A FILE named on the command line
  is the user's choice and is read wherever it is, unless it is a symlink leading out of its repository.
* **One budget** for a run: every input and include together at most :data:`MAX_TOTAL_BYTES` bytes and
  :data:`MAX_TOTAL_LINES` lines; the file that crosses it is refused before it is parsed.
* **No environment variables** are expanded (pip expands ``${VAR}``) unless named with ``--env-var NAME``.
* **Contacts**: the resolver is run only when every index the input names is allowed (:class:`IndexPolicy`); an input
  naming another index is judged offline, and the index is named by its origin only, never contacted.
* **Echo**: a problem quotes at most the start of the offending token (:func:`quote_token`), and at most
  :data:`MAX_PROBLEMS_PER_FILE` problems of one file are printed, then a count.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

MAX_TOTAL_BYTES = 8 * 1024 * 1024
MAX_TOTAL_LINES = 100_000
MAX_PROBLEMS_PER_FILE = 5
QUOTE_CHARS = 40

_TOKEN = re.compile(r"[A-Za-z0-9._\-\[\]]+")
# pip expands ${NAME} with NAME in capitals, digits and _ only (pip/_internal/req/req_file.py); the one grammar
# gate reads a variable reference by, in every input and URL
ENV_REF = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)\}")


class OverBudget(ValueError):
    """The inputs of one run are larger than the budget (the reason only; callers add the file name)."""


def quote_token(text: str, pos: Optional[int] = None) -> str:
    """A quoted start of ``text`` that is safe to print: the leading name-like characters (letters, digits, ``.-_[]``),
    cut at ``pos`` (where a parser stopped) and at :data:`QUOTE_CHARS`; ``…`` marks what is not shown.  A line of
    ``/etc/passwd`` or ``KEY=secret`` shows as ``'root…'`` / ``'KEY…'``."""
    s = (text or "").strip()
    mm = _TOKEN.match(s)
    head = mm.group(0) if mm else ""
    if pos is not None:
        head = head[:max(pos, 0)]
    head = head[:QUOTE_CHARS]
    return repr(head + ("…" if len(head) < len(s) else ""))


def has_env_ref(text: str) -> bool:
    return bool(ENV_REF.search(text or ""))


def expandable_env(env: Mapping[str, str], names: Sequence[str]) -> Dict[str, str]:
    """The variables an input may expand: only those named (``--env-var NAME``) and set."""
    return {n: env[n] for n in names if n in env}


# --------------------------------------------------------------------------- where reads may go


def repository_root(path: str) -> str:
    """The repository a file belongs to: the nearest folder above it (as named, symlinks not followed) holding a
    ``.git`` entry, else the file's own folder."""
    start = os.path.dirname(os.path.abspath(path))
    here = start
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        up = os.path.dirname(here)
        if up == here:
            return start
        here = up


def inside(path: str, root: str) -> bool:
    """Does ``path``, symlinks resolved, lie in ``root`` (symlinks resolved)?"""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


@dataclass
class Guard:
    """The reads of one gate run: confined to each input's repository and counted against one budget."""

    allow_outside: bool = False
    max_bytes: int = MAX_TOTAL_BYTES
    max_lines: int = MAX_TOTAL_LINES
    bytes_read: int = 0
    lines_read: int = 0
    roots: Dict[str, str] = field(default_factory=dict)  # top file -> its repository

    def root_of(self, top: str) -> str:
        if top not in self.roots:
            self.roots[top] = repository_root(top)
        return self.roots[top]

    def outside(self, path: str, top: str) -> Optional[str]:
        """Why ``path`` (named by the input ``top``) is not read, or None."""
        if self.allow_outside:
            return None
        root = self.root_of(top)
        if inside(path, root):
            return None
        return f"it is outside the repository ({root}); gate reads it only with --allow-outside"

    def top_outside(self, path: str) -> Optional[str]:
        """A named FILE is read wherever it is, unless it is a symlink leading out of its repository."""
        if self.allow_outside or not os.path.islink(path):
            return None
        return self.outside(path, path)

    def count(self, text: str) -> None:
        """Count a file's text against the budget; OverBudget when it crosses it."""
        self.bytes_read += len(text.encode("utf-8", "surrogatepass"))
        self.lines_read += text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if self.bytes_read > self.max_bytes:
            raise OverBudget(f"the inputs of this run exceed gate's budget of {self.max_bytes // (1024 * 1024)} MiB in "
                             f"all (install inputs are kilobytes; this file is not read)")
        if self.lines_read > self.max_lines:
            raise OverBudget(f"the inputs of this run exceed gate's budget of {self.max_lines} lines in all "
                             f"(this file is not read)")

    def reader(self, read):
        """``read`` with every file's text counted against the budget."""
        def budgeted(path: str) -> str:
            text = read(path)
            self.count(text)
            return text
        return budgeted


# --------------------------------------------------------------------------- which indexes may be contacted


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, credentials and path left out: how an index is named in output."""
    try:
        u = urlsplit(url.strip())
        host = u.hostname or ""
        port = f":{u.port}" if u.port else ""
    except ValueError:
        return "an unreadable URL"
    if not u.scheme or not host:
        return "a URL without a host"
    return f"{u.scheme.lower()}://{host.lower()}{port}"


def _parts(url: str) -> Optional[Tuple[str, str, Optional[int], str, bool]]:
    """(scheme, host, port, path without a trailing slash, has credentials), or None for what is not a URL."""
    try:
        u = urlsplit(url.strip())
        port = u.port
    except ValueError:
        return None
    if not u.scheme or not u.hostname:
        return None
    default = {"http": 80, "https": 443}.get(u.scheme.lower())
    return (u.scheme.lower(), u.hostname.lower(), None if port == default else port, (u.path or "").rstrip("/"),
            bool(u.username or u.password))


@dataclass(frozen=True)
class KnownIndex:
    """One row of matrices/gate_indexes.toml: an index (and every URL under it) the data knows."""

    url: str
    kind: str  # pytorch | jax-releases | other
    serves: str
    contact: bool  # gate's resolver may contact it
    serving: str = ""  # the page the framework's guide names (jax-releases)

    def covers(self, url: str) -> bool:
        """``url`` lies under this index, whatever its scheme (what it serves does not depend on http or https)."""
        got, want = _parts(url), _parts(self.url)
        if got is None or want is None:
            return False
        return got[1:3] == want[1:3] and (got[3] == want[3] or got[3].startswith(want[3] + "/"))


@functools.lru_cache(maxsize=1)
def known_indexes() -> Tuple[KnownIndex, ...]:
    """The indexes matrices/gate_indexes.toml describes, in its order."""
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    try:
        data = parse_toml_cached((data_dir("matrices") / "gate_indexes.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple(KnownIndex(str(r["url"]), str(r.get("kind", "other")), str(r.get("serves", "")),
                            r.get("contact", True) is not False, str(r.get("serving", "")))
                 for r in data.get("index", []) if isinstance(r, dict) and isinstance(r.get("url"), str))


def known_index(url: str) -> Optional[KnownIndex]:
    return next((k for k in known_indexes() if k.covers(url)), None)


def framework_indexes() -> Tuple[Tuple[str, str], ...]:
    """(URL prefix, what it serves) of the frameworks' own indexes the resolver may contact."""
    return tuple((k.url, k.serves) for k in known_indexes() if k.contact)


@dataclass
class IndexPolicy:
    """The indexes gate's resolver may contact: pip's configured ones (and pip's default), the frameworks' own indexes
    the data names, and those allowed with ``--allow-index URL``.  An allowed URL covers the URLs under it; a URL
    holding credentials or an unexpanded ``${VAR}`` is allowed only when written exactly so in the allowed list."""

    allowed: List[str]

    @classmethod
    def for_run(cls, env: Mapping[str, str], allow: Sequence[str] = ()) -> "IndexPolicy":
        from envdoctor.default_index import default_index
        from envdoctor.knowledge.index import read_pip_config

        urls: List[str] = list(allow)
        try:
            conf = read_pip_config(env)
        except Exception:  # noqa: BLE001 - an unreadable pip configuration adds nothing
            conf = {}
        for key in ("index-url", "extra-index-url", "find-links"):
            urls.extend((conf.get(key, ("", ""))[0] or "").split())
        default = default_index()
        if default:
            urls.append(default)
        urls.extend(u for u, _ in framework_indexes())
        return cls(urls)

    def refused(self, url: str) -> Optional[str]:
        """Why the resolver may not contact ``url``, or None."""
        if url.strip() in self.allowed:
            return None
        if has_env_ref(url):
            return "it names an environment variable gate does not expand"
        got = _parts(url)
        if got is None:
            return "it is not a URL gate can check"
        scheme, host, port, path, creds = got
        if creds:
            return "it holds credentials"
        if any(_under(url, a) for a in self.allowed):
            return None
        return "it is not an allowed index"


def _under(url: str, prefix: str) -> bool:
    """``url`` is ``prefix`` or lies under it (same scheme, host and port; a path at or below its path); a prefix
    holding credentials covers nothing."""
    got, want = _parts(url), _parts(prefix)
    if got is None or want is None or want[4]:
        return False
    path = got[3]
    return got[:3] == want[:3] and (path == want[3] or path.startswith(want[3] + "/"))


def refused_contacts(unit, policy: IndexPolicy, guard: Optional[Guard] = None,
                     uv_project: bool = False) -> List[Tuple[str, str]]:
    """(file:line, why) for each place an input would make the resolver go that is not allowed: an index or
    find-links URL, a local find-links folder outside the repository, and -- for a pyproject given to uv as a project
    -- a git / URL source or a path source outside the repository, and every URL under [tool.uv]."""
    out: List[Tuple[str, str]] = []
    guard = guard or Guard()
    for o in unit.indexes:
        if o.kind == "no-index":
            continue
        url = o.url
        if o.kind == "find-links" and "://" not in url:
            if has_env_ref(url):
                out.append((str(o.loc), f"--find-links {quote_token(url)}: it names an environment variable gate "
                                        f"does not expand"))
                continue
            path = url[5:] if url.startswith("file:") else url
            full = path if os.path.isabs(path) else os.path.join(os.path.dirname(os.path.abspath(o.loc.file)), path)
            why = guard.outside(full, unit.path)
            if why:
                out.append((str(o.loc), f"--find-links folder: {why}"))
            continue
        why = policy.refused(url)
        if why:
            out.append((str(o.loc), f"the file names an index that is not allowed ({origin(url)}: {why}); gate did not "
                                    f"contact it (--allow-index URL allows it)"))
    for name, entries in (unit.sources or {}).items():
        for e in entries:
            if "git" in e or "url" in e:
                target = e.get("git") or e.get("url") or ""
                why = policy.refused(target) if "url" in e else "a git source is fetched by cloning"
                if why:
                    out.append((unit.path, f"[tool.uv.sources] {name}: {origin(target)} is not allowed ({why}); "
                                           f"gate did not contact it"))
            elif "path" in e:
                full = os.path.join(os.path.dirname(os.path.abspath(unit.path)), str(e["path"]))
                why = guard.outside(full, unit.path)
                if why:
                    out.append((unit.path, f"[tool.uv.sources] {name}: the path source {why}"))
    seen = {o.url for o in unit.indexes} | {str(e.get(k)) for es in (unit.sources or {}).values() for e in es
                                            for k in ("git", "url") if e.get(k)}
    for url in (unit.uv_urls if uv_project else ()):
        if url in seen:
            continue
        why = policy.refused(url)
        if why:
            out.append((unit.path, f"[tool.uv] names {origin(url)}, which is not allowed ({why}); gate did not "
                                   f"contact it"))
    return out


__all__ = ["MAX_PROBLEMS_PER_FILE", "MAX_TOTAL_BYTES", "MAX_TOTAL_LINES", "Guard", "IndexPolicy", "OverBudget",
           "ENV_REF", "KnownIndex", "expandable_env", "framework_indexes", "has_env_ref", "known_index", "known_indexes", "inside", "origin", "quote_token",
           "refused_contacts", "repository_root"]

