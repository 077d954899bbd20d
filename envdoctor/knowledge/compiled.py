"""The matrices' compiled cache: the typed rows of every table as plain JSON, keyed by the data's hash.

Reading, validating and building the TOML tables costs a third of `envdoctor check`.  The
result of doing it once (Matrices' keyword arguments: the rows, the warnings about the data, the
sources) is kept in ``<cache root>/compiled/matrices.json`` as
``{"format": N, "key": <hash>, "parts": ...}``, every row an object ``{"__row__": "<class>", <fields>}``.
The key hashes every input of the build: the bytes of each bundled table and of each overlay file in
the cache folder (present or not), both folders' paths, this package's version and the source of the
modules that read, build and encode the rows. Any change to them is another key, and the cache is built again.
Hashing those bytes costs more than the rest of a hit, so the entry also keeps a key of the same inputs'
signatures -- (path, device, inode, size, mtime_ns, ctime_ns) each, envdoctor.cache.stat_key -- and a run
whose files stat the same trusts the entry without reading them; when any differs, the content key decides
(a match only refreshes the stat key: a copied or touched tree is not rebuilt).

The TOML stays the source: the cache is only ever written from it, and validation happens then, not on
a hit.  It cannot run code: it is JSON, and a row is made only from a class of
:mod:`envdoctor.knowledge.tables` named in a fixed table, from its fields as keyword arguments; a file
that is not exactly that shape (wrong key, unknown class or field, broken JSON) is ignored and rebuilt.
Best effort throughout: an unreadable, unwritable or untrusted cache only means building from the TOML
(envdoctor.cache's rules). ENVDOCTOR_NO_CACHE=1 (or ENVDOCTOR_NO_PARSE_CACHE=1) bypasses it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from envdoctor.records import NO_DEFAULT, default_of

from . import load as L
from . import tables as T

FORMAT = 2  # 2: stat keys of five fields (envdoctor.cache.stat_key)
MAX_BYTES = 32 * 1024 * 1024
_ROW = "__row__"
# The only classes a cache file can name: the matrix row classes, by name.
ROW_CLASSES: Dict[str, type] = {name: obj for name, obj in vars(T).items()
                                if isinstance(obj, type) and issubclass(obj, T._Row) and obj is not T._Row}
_NOT_DATA = "parse cache entry discarded"  # a warning about the parse cache, not the data: never stored


def cache_path() -> Path:
    return L.default_cache_dir().parent / "compiled" / "matrices.json"


def _sources() -> List[str]:
    """The source files of the modules whose code decides what a build yields (part of the key). matrices.py, beside
    this file, is named by its path, not imported: it imports this module on first use."""
    here = Path(__file__)
    return [str(L.__file__), str(T.__file__), str(here.with_name("matrices" + here.suffix)), str(here)]


def _tables(bundled: Path, cache: Path) -> Iterator[Path]:
    for table in L.TABLES:
        yield bundled / f"{table}.toml"
        yield cache / f"{table}.toml"


def _header(bundled: Path, cache: Path) -> bytes:
    from envdoctor import __version__

    return f"{FORMAT}\0{__version__}\0{bundled}\0{cache}\0".encode()


def _digest(bundled: Path, cache: Path) -> Optional[str]:
    """The key of a build from these folders, or None when a file cannot be read (no caching then)."""
    from envdoctor.infile import Unreadable, read_bytes

    h = L.sha256(_header(bundled, cache))
    try:
        for source in _sources():
            h.update(read_bytes(source))
        for path in _tables(bundled, cache):
            if path.is_file():
                data = read_bytes(path)
                h.update(f"\0{path.name}:{len(data)}\0".encode())
                h.update(data)
            else:
                h.update(f"\0{path.name}:none\0".encode())
    except (OSError, Unreadable):
        return None
    return h.hexdigest()


def _stat_key(bundled: Path, cache: Path) -> Optional[str]:
    """A key of the same inputs as :func:`_digest` from their signatures alone (envdoctor.cache.stat_key: nothing
    is read), or None when one cannot be stat'ed or changed a moment ago."""
    from envdoctor.cache import stat_key

    return stat_key(_sources() + [str(p) for p in _tables(bundled, cache)],
                    _header(bundled, cache).decode())


def _encode(value: Any) -> Any:
    cls = type(value)
    if cls.__name__ in ROW_CLASSES and ROW_CLASSES[cls.__name__] is cls:
        out: Dict[str, Any] = {_ROW: cls.__name__}
        for name, f in cls.__dataclass_fields__.items():
            v = getattr(value, name)
            default = default_of(f)
            if default is NO_DEFAULT or type(v) is not type(default) or v != default:  # a default is left out
                out[name] = _encode(v)
        return out
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value) or _ROW in value:
            raise TypeError("not encodable as the compiled cache")
        return {k: _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"not encodable as the compiled cache: {cls.__name__}")


def _row(obj: Dict[str, Any]) -> Any:
    name = obj.pop(_ROW, None)
    if name is None:
        return obj
    return ROW_CLASSES[name](**obj)  # KeyError / TypeError: not a cache this code wrote


def _parts_to_json(parts: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(parts)
    out["mvc"] = list(parts["mvc"].values())  # int keys: a list, keyed again by cuda_major on reading
    out["warnings"] = [w for w in parts["warnings"] if _NOT_DATA not in w]
    return _encode(out)


def _parts_from_json(data: Dict[str, Any]) -> Dict[str, Any]:
    parts = dict(data)
    parts["mvc"] = {row.cuda_major: row for row in data["mvc"]}
    return parts


# What lookup hands store: (content key, stat key); store writes both, so the next run can trust the stat key.
Key = Tuple[str, Optional[str]]


def lookup(bundled: Path, cache: Path) -> Tuple[Optional[Key], Optional[Dict[str, Any]]]:
    """(key, Matrices' keyword arguments from the cache, or None on a miss); key None: do not store."""
    from envdoctor import cache as C

    if not C.parse_enabled():
        return None, None
    fast = _stat_key(bundled, cache)  # taken before any content is read: a file changed later is another stat key
    entry: Any = C.read(cache_path(), C.root(), limit=MAX_BYTES, object_hook=_row)
    if not (isinstance(entry, dict) and entry.get("format") == FORMAT and isinstance(entry.get("key"), str)
            and isinstance(entry.get("parts"), dict)):
        entry = None  # none, or not a cache this code wrote for these files: built again and overwritten
    elif fast is not None and entry.get("stat") == fast:
        try:
            return (entry["key"], fast), _parts_from_json(entry["parts"])
        except (KeyError, TypeError, AttributeError):
            entry = None
    key = _digest(bundled, cache)
    if key is None:
        return None, None
    if entry is not None and entry["key"] == key:
        try:
            parts = _parts_from_json(entry["parts"])
        except (KeyError, TypeError, AttributeError):
            return (key, fast), None
        if fast is not None:  # the same bytes under other stat facts (copied, touched): remember these
            store((key, fast), parts)
        return (key, fast), parts
    return (key, fast), None


def store(key: Key, parts: Dict[str, Any]) -> None:
    """Write the cache, best effort (an unwritable or untrusted folder, a row that is not plain data: not cached)."""
    from envdoctor import cache as C

    try:
        encoded = _parts_to_json(parts)
    except (TypeError, ValueError):
        return
    C.write(cache_path(), C.root(), {"format": FORMAT, "key": key[0], "stat": key[1], "parts": encoded})
