"""The one cache of answers kept between runs, each with its witness.

Five kinds of answer are kept, all through this module and under one discipline: a command's answer (a compiler's
``--version``, ``ldconfig -p``, the Python helper's walk of an environment), the matrices built from their TOML,
the parsed TOML of a table, the judgement of a Requires-Dist line, and the device code and links of a shared
object. An answer is given again only when all of this holds:

* **The key** holds everything the answer depends on *as given* (:func:`make_key`): the command line as invoked
  (an interpreter by the path it was called by: two venvs share one resolved interpreter and differ in everything
  else), the whole environment and the working folder.
* **The witness** -- every file and folder the answer was read from -- still has the signature it had
  (:func:`signature`: device, inode, size, mtime_ns, ctime_ns; a file put back in place with the same size and its
  mtime restored still has a new ctime). Nothing is kept whose witness changed within :data:`RACY_S` seconds
  before it was stored: a change within the filesystem's timestamp granularity could follow unseen (git's
  "racily clean" entries).
* **Trust**: the cache folder, the entry's folder and the entry itself are owned by the running user (or root) and
  writable by nobody else (as ssh's StrictModes): an answer another user could have planted is not used, nor is
  anything written there; the answer is computed, with a one-line note on stderr (:func:`note`).
* **Bounds**: a cache file is read as every input is (envdoctor.infile): a regular file only (a FIFO never blocks,
  a device is never read), at most a size bound, JSON nested at most :data:`MAX_DEPTH` levels. A bad one is
  deleted and named as *the cache's* file, never as bundled data, and the answer computed.

Files are plain JSON (never pickle: a cache file cannot run code), written atomically with mode 0600 in folders of
mode 0700. ENVDOCTOR_NO_CACHE=1 turns every kind off (ENVDOCTOR_NO_PARSE_CACHE=1, older, the matrices' kinds);
deleting the folder is always safe.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

FORMAT = 2
RACY_S = 2.0
MAX_ENTRIES = 64  # answers of one kind kept as one file each; the oldest go first
MAX_ENTRY_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64
VOLATILE = ("_",)  # what the shell sets to the command just typed: read by no tool
OWN_PREFIX = "ENVDOCTOR_"  # envdoctor's own switches (no watchdog, the cache folder): they change no command's answer

Signature = Optional[List[int]]
Witness = List[Tuple[str, Signature]]

_LOCK = threading.Lock()
_NOTED: Set[str] = set()


# -- on or off, and where ---------------------------------------------------------------------------------------

def _flag(env: Mapping[str, str], name: str) -> bool:
    return str(env.get(name, "")).strip().lower() not in ("", "0", "false", "no")


def enabled(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether answers are kept and reused at all (ENVDOCTOR_NO_CACHE unset)."""
    return not _flag(os.environ if env is None else env, "ENVDOCTOR_NO_CACHE")


def parse_enabled(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether the matrices' kinds (compiled tables, parsed TOML, pin judgements) are kept: ENVDOCTOR_NO_CACHE and
    the older ENVDOCTOR_NO_PARSE_CACHE both turn them off."""
    environ = os.environ if env is None else env
    return enabled(environ) and not environ.get("ENVDOCTOR_NO_PARSE_CACHE")


def root(env: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """The cache folder (``$ENVDOCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/envdoctor``, else ``~/.cache/envdoctor``),
    or None when there is none to use."""
    from envdoctor.cachedir import default_cache_dir

    try:
        return default_cache_dir(env).parent
    except (OSError, RuntimeError, KeyError):
        return None


def note(text: str) -> None:
    """A one-line note on stderr, once per process: why the cache was not used."""
    with _LOCK:
        if text in _NOTED:
            return
        _NOTED.add(text)
    try:
        sys.stderr.write(f"envdoctor: note: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# -- witnesses ----------------------------------------------------------------------------------------------------

def signature(path: str, follow: bool = True) -> Signature:
    """[dev, inode, size, mtime_ns, ctime_ns] of what `path` names (links followed unless not `follow`), None if
    nothing is there."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None
    return sig_of(st)


def sig_of(st: os.stat_result) -> List[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def witness_of(paths: Iterable[str]) -> Witness:
    return [(p, signature(p)) for p in paths]


def link_chain(path: str, hops: int = 40) -> List[Tuple[str, Signature, str]]:
    """The witness items of each symbolic link `path` goes through to its file (its own signature, not followed):
    a link repointed elsewhere, or made anew, changes one."""
    out: List[Tuple[str, Signature, str]] = []
    here = os.path.abspath(path)
    for _ in range(hops):
        try:
            if not os.path.islink(here):
                break
            out.append((here, signature(here, follow=False), "lstat"))
            here = os.path.join(os.path.dirname(here), os.readlink(here))
        except (OSError, ValueError):
            break
    return out


def holds(witness: Any) -> bool:
    """Whether every [path, signature] (or [path, signature, "lstat"]) of `witness` still holds; a malformed one
    never does."""
    if not isinstance(witness, list):
        return False
    try:
        for item in witness:
            if len(item) == 3 and item[2] == "lstat":
                if signature(item[0], follow=False) != item[1]:
                    return False
            elif len(item) != 2 or signature(item[0]) != item[1]:
                return False
    except (TypeError, ValueError):
        return False
    return True


def is_racy(witness: Iterable[Any], now: Optional[float] = None) -> bool:
    """Whether something in `witness` changed within RACY_S seconds of `now`: then the answer is not stored."""
    limit = int(((time.time() if now is None else now) - RACY_S) * 1e9)
    return any(isinstance(item[1], list) and len(item[1]) == 5 and (item[1][3] > limit or item[1][4] > limit)
               for item in witness)


def sig_is_racy(sig: Signature, now: float) -> bool:
    limit = int((now - RACY_S) * 1e9)
    return sig is not None and (sig[3] > limit or sig[4] > limit)


def stat_key(paths: Iterable[str], head: str = "", racy: bool = True) -> Optional[str]:
    """`head` and the signature of each of `paths` ("none" when absent or not a regular file), as one string to
    compare as it is: a key of files by their stat facts alone, nothing read (as Python's .pyc checks its source).
    None when one cannot be stat'ed for another reason, or changed within the racy window (then no key is kept:
    it could change again unseen; `racy` False: code files, which do not change under a running check)."""
    out = [head]
    when = time.time()
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            out.append(f"{path}:none")
            continue
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            out.append(f"{path}:none")
            continue
        sig = sig_of(st)
        if racy and sig_is_racy(sig, when):
            return None
        out.append(f"{path}:" + ":".join(map(str, sig)))
    return "\n".join(out)


def _sha256(data: bytes) -> str:
    """hashlib.sha256(data).hexdigest() from the built-in module (CPython 3.11's _sha256, 3.12's _sha2): importing
    hashlib loads OpenSSL (~3 ms, ~3.7 MiB of every check)."""
    for name in ("_sha256", "_sha2"):
        try:
            module: Any = __import__(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


def make_key(kind: str, parts: Sequence[Any], env: Optional[Mapping[str, str]] = None,
             cwd: Optional[str] = None) -> str:
    """A digest of what an answer may depend on besides its witness: `parts` as given, the environment, the cwd."""
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = ""
    items = sorted((str(k), str(v)) for k, v in (env or {}).items()
                   if k not in VOLATILE and not str(k).startswith(OWN_PREFIX))
    text = json.dumps([FORMAT, kind, list(parts), items, cwd], separators=(",", ":"), ensure_ascii=True)
    return _sha256(text.encode("utf-8", "surrogatepass"))


# -- trust, reading, writing -------------------------------------------------------------------------------------

def _owner_ok(st: os.stat_result) -> bool:
    euid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    return st.st_uid in (euid, 0) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _mode(st: os.stat_result) -> str:
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def folder_problem(folder: Path, top: Optional[Path]) -> str:
    """Why answers in `folder` cannot be trusted ("" when they can, or when nothing is there yet): it, and each
    folder above it up to `top` (the cache root), must be owned by this user (or root) and writable by nobody else."""
    chain = [folder]
    if top is not None:
        here = folder
        while here != top and here.parent != here and top in here.parents:
            here = here.parent
            chain.append(here)
    for where in chain:
        try:
            st = os.stat(where)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{where}: cannot be checked ({exc.strerror or exc})"
        if not stat.S_ISDIR(st.st_mode):
            return f"{where} is not a folder"
        if not _owner_ok(st):
            return f"the cache folder {where} could be written by another user ({_mode(st)})"
    return ""


_NOT_STRUCTURE = bytes(range(256)).translate(None, b'[]{}"\\')  # every byte but brackets, quotes, backslash


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text `raw` nests arrays and objects deeper than `limit` (certainly when deeper than
    `limit`, perhaps from half of it: each pass peels one or two levels), at the cost of a few byte scans instead of
    a walk of the parsed value (a tenth of the parse, not more than it). Brackets in strings do not count."""
    s = raw.translate(None, _NOT_STRUCTURE)
    s = s.replace(b"\\\\", b"").replace(b'\\"', b"").replace(b"\\", b"")
    s = s.replace(b'""', b"")  # a string without brackets; removing two adjacent quotes keeps every bracket's side
    if b'"' in s:
        import re

        s = re.sub(rb'"[^"]*"', b"", s)
    for _ in range(max(1, limit // 2)):
        n = len(s)
        s = s.replace(b"[]", b"").replace(b"{}", b"")
        if len(s) in (0, n):
            return False  # all peeled; or unbalanced, which the parser refuses
    return True


class BadEntry(ValueError):
    """A cache file that is not one this code wrote for this user: the reason."""


def read_file(path: Path, limit: int = MAX_ENTRY_BYTES, object_hook: Any = None) -> Any:
    """The JSON value of a cache file, or None when there is none. BadEntry (the file is then deleted) when it is
    there but not usable: not a regular file, not this user's or writable by others, too big, not JSON, nested
    deeper than MAX_DEPTH."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadEntry(f"cannot be opened ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadEntry("not a regular file")
        if not _owner_ok(st):
            raise BadEntry(f"could be written by another user ({_mode(st)})")
        if st.st_size > limit:
            raise BadEntry(f"larger than {limit} bytes")
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise BadEntry(f"larger than {limit} bytes")
    except OSError as exc:
        raise BadEntry(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if too_deep(raw):
        raise BadEntry(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw.decode("utf-8"), object_hook=object_hook)
    except (ValueError, RecursionError):
        raise BadEntry("not JSON (corrupt, truncated or nested too deeply)") from None
    except (KeyError, TypeError, AttributeError) as exc:  # the caller's object_hook refused a part
        raise BadEntry(f"not an entry this version wrote ({type(exc).__name__})") from None


def read(path: Path, top: Optional[Path], limit: int = MAX_ENTRY_BYTES, object_hook: Any = None) -> Any:
    """read_file(path) under the folder rules; None on a miss, an untrusted folder (noted) or a bad entry (noted,
    deleted unless it is another user's)."""
    problem = folder_problem(path.parent, top)
    if problem:
        note(f"{problem}: its kept answers are not used")
        return None
    try:
        return read_file(path, limit, object_hook)
    except BadEntry as exc:
        note(f"envdoctor's cache file {path} was discarded ({exc}); the answer was computed")
        discard(path)
        return None


def discard(path: Path) -> None:
    """Delete a bad cache file (a file, a link, a FIFO; never a folder or a device node someone put there)."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISFIFO(mode):
            os.unlink(path)
    except OSError:
        pass


def _mkdirs(folder: Path) -> None:
    """`folder` and the missing ones above it, made with mode 0700 (as the XDG base directory spec asks of the
    cache home)."""
    missing = []
    here = folder
    while not os.path.isdir(here):
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for where in reversed(missing):
        try:
            os.mkdir(where, 0o700)
        except FileExistsError:
            pass


def write(path: Path, top: Optional[Path], value: Any) -> bool:
    """Store `value` as JSON at `path`, atomically, mode 0600; False when not stored (an untrusted or unwritable
    folder, a value that is not plain data)."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    data = text.encode("utf-8", "surrogatepass")
    if too_deep(data):
        return False  # read_file would refuse it
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    made = False
    try:
        _mkdirs(path.parent)
        if folder_problem(path.parent, top):
            return False
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
        made = True
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        if made:  # a full disk, a folder gone: nothing half-written stays behind
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False
    return True


# -- one file per answer ----------------------------------------------------------------------------------------

class Store:
    """One kind of answer: ``<cache root>/<name>/<key>.json``, one small file per answer ({"format", "witness",
    "value"}), so that a run reads only the answer it asks for and two runs never rewrite each other's."""

    def __init__(self, name: str, env: Optional[Mapping[str, str]] = None) -> None:
        self.top: Optional[Path] = root(env) if enabled(env) else None
        self.path: Optional[Path] = self.top / name if self.top is not None else None  # the folder
        self._read: Dict[str, Any] = {}  # key -> the entry read from its file (or None: none there)

    def _entry(self, key: str) -> Any:
        if key not in self._read:
            self._read[key] = read(self.path / f"{key}.json", self.top) if self.path is not None else None
        return self._read[key]

    def get(self, key: str) -> Any:
        """The value stored under `key` while its witness holds, else None."""
        if self.path is None:
            return None
        hit = self._entry(key)
        if isinstance(hit, dict) and hit.get("format") == FORMAT and "value" in hit and holds(hit.get("witness")):
            return hit["value"]
        return None

    def put(self, key: str, witness: Sequence[Any], value: Any) -> bool:
        """Store `value` under `key`, the oldest answers going past MAX_ENTRIES. False when nothing was stored: no
        cache, a racy witness, an untrusted or unwritable folder."""
        if self.path is None or is_racy(witness):
            return False
        entry = {"format": FORMAT, "witness": [list(w) for w in witness], "value": value}
        if not write(self.path / f"{key}.json", self.top, entry):
            return False
        self._read[key] = json.loads(json.dumps(entry))  # what the file holds: never the caller's objects
        self._trim()
        return True

    def _trim(self) -> None:
        try:
            names = [n for n in os.listdir(self.path) if n.endswith(".json")]
            if len(names) <= MAX_ENTRIES:
                return
            aged = sorted(names, key=lambda n: _mtime(os.path.join(str(self.path), n)))
            for n in aged[:len(names) - MAX_ENTRIES]:
                os.unlink(os.path.join(str(self.path), n))
                self._read.pop(n[:-5], None)
        except OSError:
            pass  # another run trimmed it, or an unreadable folder: a few answers too many


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


_STORES: Dict[Tuple[str, str], Store] = {}


def store(name: str, env: Optional[Mapping[str, str]] = None) -> Store:
    """The Store of `name` for `env`'s cache folder, one per process (each answer's file is read once; every answer
    it gives is checked against its witness all the same)."""
    probe = Store(name, env)
    with _LOCK:
        return _STORES.setdefault((name, str(probe.path)), probe)


def reset() -> None:
    """Forget what this process read (a test's new "process")."""
    with _LOCK:
        _STORES.clear()
        _NOTED.clear()


__all__ = ["BadEntry", "FORMAT", "RACY_S", "Store", "store", "enabled", "parse_enabled", "root", "note",
           "signature", "sig_of", "witness_of", "link_chain", "holds", "is_racy", "make_key", "read", "read_file", "write",
           "folder_problem", "reset", "stat_key", "too_deep"]
