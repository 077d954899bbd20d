"""Answers of probe commands that the files on disk fix, kept between runs (issue 18).

Some commands give the same answer for as long as the files they read stay the same: a compiler's or nvcc's
``--version`` (the text is compiled into the executable), ``ldconfig -p`` (it prints /etc/ld.so.cache) and the
Python helper of envdoctor.probes.pyenv (it reports what a walk of the target's sys.path reads). Such an answer is kept in ``<cache root>/<name>/<key>.json``
with a *witness*: every file and folder it depended on, each with its signature (size, mtime_ns, inode,
ctime_ns, or null for "absent"). It is reused only when

* the key matches: the resolved executable, the arguments, the whole environment the command would get and the
  working folder (a wrapper that reads a variable or the cwd gets no stale answer), and
* every witness still has the signature it had: a folder whose entries changed (a package installed, removed,
  upgraded), a rewritten or replaced file, a file that appeared where there was none, all change one.

Only successful answers are kept, and none whose witness changed in the RACY_S seconds before it was stored (a
file written within the filesystem's timestamp granularity could change again unseen, as git's "racily clean"
entries). ENVDOCTOR_NO_CACHE=1 turns the cache off (every command runs); deleting the files is always safe.
The files are plain JSON (never pickle: a cache file cannot run code), one per answer, written atomically, at most
MAX_ENTRIES of a kind, the oldest dropped first.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

FORMAT = 1
MAX_ENTRIES = 64
RACY_S = 2.0
Signature = Optional[List[int]]
VOLATILE = ("_",)  # what the shell sets to the command just typed: read by no tool

_LOCK = threading.Lock()


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


def signature(path: str) -> Signature:
    """[size, mtime_ns, inode, ctime_ns] of what `path` names (links followed), None if nothing is there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def enabled(env: Mapping[str, str]) -> bool:
    return str(env.get("ENVDOCTOR_NO_CACHE", "")).strip().lower() in ("", "0", "false", "no")


def make_key(kind: str, parts: Sequence[Any], env: Mapping[str, str], cwd: Optional[str] = None) -> str:
    """A digest of what the command's answer may depend on besides its witness."""
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = ""
    items = sorted((str(k), str(v)) for k, v in env.items() if k not in VOLATILE)
    text = json.dumps([kind, list(parts), items, cwd],
                      separators=(",", ":"), ensure_ascii=True)
    return _sha256(text.encode("utf-8", "surrogatepass"))


def unchanged(witness: Iterable[Any]) -> bool:
    """Whether every [path, signature] of `witness` still holds (a malformed one never does)."""
    try:
        for path, sig in witness:
            if signature(path) != sig:
                return False
    except (TypeError, ValueError):
        return False
    return True


def is_racy(witness: Iterable[Tuple[str, Signature]], now: Optional[float] = None) -> bool:
    """Whether something in `witness` changed within RACY_S seconds of `now`: then it is not stored."""
    limit = int(((time.time() if now is None else now) - RACY_S) * 1e9)
    return any(sig is not None and (sig[1] > limit or sig[3] > limit) for _, sig in witness)


class Store:
    """One kind of answer: ``<cache root>/<name>/<key>.json``, one small file per answer ({"format", "witness",
    "value"}), so that a run reads only the answer it asks for and two runs never rewrite each other's."""

    def __init__(self, name: str, env: Mapping[str, str]) -> None:
        self.path: Optional[Path] = None  # the folder
        if enabled(env):
            from envdoctor.cachedir import default_cache_dir

            try:
                self.path = default_cache_dir(env).parent / name
            except (OSError, RuntimeError, KeyError):
                self.path = None
        self._read: Dict[str, Any] = {}  # key -> the entry read from its file (or None: none there)

    def _entry(self, key: str) -> Any:
        if key not in self._read:
            self._read[key] = _read(self.path / f"{key}.json") if self.path is not None else None
        return self._read[key]

    def get(self, key: str) -> Any:
        """The value stored under `key` while its witness holds, else None."""
        if self.path is None:
            return None
        hit = self._entry(key)
        if isinstance(hit, dict) and "value" in hit and isinstance(hit.get("witness"), list) and unchanged(hit["witness"]):
            return hit["value"]
        return None

    def put(self, key: str, witness: List[Tuple[str, Signature]], value: Any) -> bool:
        """Store `value` under `key`, the oldest answers going past MAX_ENTRIES. False when nothing was stored: no
        cache, a racy witness, an unwritable folder."""
        if self.path is None or is_racy(witness):
            return False
        text = json.dumps({"format": FORMAT, "witness": [[p, s] for p, s in witness], "value": value},
                          separators=(",", ":"))
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            tmp = self.path / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path / f"{key}.json")
        except OSError:
            return False
        self._read[key] = json.loads(text)  # what the file holds: never the caller's objects, which it may change
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


_STORES: dict = {}


def store(name: str, env: Mapping[str, str]) -> Store:
    """The Store of `name` for `env`'s cache folder, one per process (each answer's file is read once; every answer
    it gives is checked against its witness all the same)."""
    probe = Store(name, env)
    with _LOCK:
        return _STORES.setdefault((name, str(probe.path)), probe)


def _read(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) and raw.get("format") == FORMAT else None


__all__ = ["Store", "store", "enabled", "is_racy", "make_key", "signature", "unchanged"]
