"""What packaging made of each Requires-Dist line, remembered between runs.

Judging a framework's pins parses its Requires-Dist lines with packaging.requirements and evaluates their
markers; importing that parser (markers -> utils -> tags -> logging, sysconfig) costs a check ~12 ms, more than
the parsing itself. The same interpreter's lines give the same answer every time, so the answer is kept in
``<cache root>/compiled/pins.json``: for each marker environment (the inspected interpreter's), each line's
result -- ``null`` (garbage, or its marker does not hold there) or ``[name, specifier, extra, extras]``.

packaging stays the parser: an entry is only ever written from its result, and a line, an environment, a
packaging or envdoctor version or a change to this module or to envdoctor.facts.pins or .versions not seen
before is parsed again. The file is JSON (it cannot run code), read and written by envdoctor.cache's rules; one that is not
exactly that shape is ignored and rewritten. Best effort: an unreadable, unwritable or untrusted cache only means
parsing. ENVDOCTOR_NO_CACHE=1 (or ENVDOCTOR_NO_PARSE_CACHE=1) bypasses it (as it does the matrices' caches).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple, Union

FORMAT = 1
MAX_ENVS = 16  # interpreters remembered; more start the file afresh
MAX_LINES = 2048  # lines per environment

# a line's result: (normalized name, specifier text, normalized extra or None, normalized requested extras)
Entry = Optional[Tuple[str, str, Optional[str], Tuple[str, ...]]]
_Stored = Union[None, List[object]]

# The code whose answers are kept, beside this file: envdoctor.facts.pins (the parser) and envdoctor.facts.versions
# (its canonical_name normalizes the names kept). The key holds their sources' stat facts. Named by their paths, not
# imported: pins imports this module on first use, and neither needs the other to load.
PINS_SOURCE = str(Path(__file__).with_name("pins" + Path(__file__).suffix))
VERSIONS_SOURCE = str(Path(__file__).with_name("versions" + Path(__file__).suffix))


def cache_path() -> Path:
    from envdoctor.cachedir import default_cache_dir

    return default_cache_dir().parent / "compiled" / "pins.json"


def _key() -> str:
    """What the entries depend on besides the line and the environment: versions and this code, the code by its
    files' stat facts as Python's .pyc checks its source (not by reading and hashing both files at every start).
    A file that cannot be stat'ed: no key, so nothing is read back or stored."""
    import packaging

    from envdoctor import __version__
    from envdoctor.cache import stat_key

    facts = stat_key([str(__file__), PINS_SOURCE, VERSIONS_SOURCE], f"{FORMAT}\0{__version__}\0{packaging.__version__}", racy=False)
    if facts is None:
        raise OSError("cannot stat the pin memo's code")
    return facts


def _env_key(env: Optional[Mapping[str, str]]) -> str:
    return "none" if env is None else json.dumps(sorted(env.items()), separators=(",", ":"))


def _entry(value: _Stored) -> Tuple[bool, Entry]:
    """(valid?, the entry) for a stored value."""
    if value is None:
        return True, None
    if (isinstance(value, list) and len(value) == 4 and isinstance(value[0], str) and isinstance(value[1], str)
            and (value[2] is None or isinstance(value[2], str)) and isinstance(value[3], list)
            and all(isinstance(x, str) for x in value[3])):
        return True, (value[0], value[1], value[2], tuple(value[3]))
    return False, None


class PinMemo:
    """The remembered results for one marker environment; ``save()`` writes back what was added."""

    def __init__(self, env: Optional[Mapping[str, str]]) -> None:
        from envdoctor.cache import parse_enabled

        self.enabled = parse_enabled()
        self.env_key = _env_key(env)
        self.key = ""
        self.data: Dict[str, Dict[str, _Stored]] = {}
        self.added = False
        if self.enabled:
            self._read()

    def _read(self) -> None:
        from envdoctor import cache

        try:
            self.key = _key()
        except OSError:
            return
        top = cache.root()
        data = cache.read(cache_path(), top) if top is not None else None  # none, or not this user's: parsed again
        if (isinstance(data, dict) and data.get("format") == FORMAT and data.get("key") == self.key
                and isinstance(data.get("envs"), dict)
                and all(isinstance(v, dict) for v in data["envs"].values())):
            self.data = data["envs"]

    def get(self, line: str) -> Tuple[bool, Entry]:
        """(known?, its entry)."""
        lines = self.data.get(self.env_key)
        if lines is None or line not in lines:
            return False, None
        return _entry(lines[line])

    def put(self, line: str, entry: Entry) -> None:
        if not self.enabled or not self.key:
            return
        lines = self.data.setdefault(self.env_key, {})
        lines[line] = None if entry is None else [entry[0], entry[1], entry[2], list(entry[3])]
        self.added = True

    def save(self) -> None:
        if not self.added:
            return
        self.added = False
        envs = self.data
        if len(envs) > MAX_ENVS or len(envs.get(self.env_key, {})) > MAX_LINES:
            envs = {self.env_key: dict(list(envs[self.env_key].items())[-MAX_LINES:])}
        from envdoctor import cache

        cache.write(cache_path(), cache.root(), {"format": FORMAT, "key": self.key, "envs": envs})  # best effort


_MEMOS: Dict[str, PinMemo] = {}


def memo_for(env: Optional[Mapping[str, str]]) -> PinMemo:
    """The memo of this environment, read once per process."""
    k = _env_key(env)
    if k not in _MEMOS:
        _MEMOS[k] = PinMemo(env)
    return _MEMOS[k]
