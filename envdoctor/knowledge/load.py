"""Read, validate and merge the matrix tables (bundled data + user cache overlay).

Each table is one TOML file ``<table>.toml`` with ``schema = "<table>/v1"``, ``collected = "YYYY-MM-DD"``
and arrays of tables (``[[release]]``, ``[[gpu]]`` ...).  Loading never raises:

* bundled file: a row that violates the schema is skipped with a ``file:line`` warning;
* cache file (``<cache_dir>/<table>.toml``, written by a future ``envdoctor matrices refresh``): bad TOML,
  a wrong schema or any broken row makes the whole cache file ignored (warning with ``file:line``),
  and the bundled table is used;
* a valid cache file overrides bundled rows with the same key and adds new ones.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.cachedir import default_cache_dir  # re-exported: where the user cache lives
from envdoctor.facts.versions import parse_version
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field

class _LazyToml:
    """tomllib (tomli before 3.11), imported only when a table's text is not in the parse cache."""

    def __getattr__(self, name: str) -> Any:
        if sys.version_info >= (3, 11):
            import tomllib as mod
        else:  # pragma: no cover - Python < 3.11
            import tomli as mod
        return getattr(mod, name)


_toml = _LazyToml()

from . import tables as T

SCHEMA_VERSION = "v1"
TABLES: Tuple[str, ...] = ("cuda_driver", "gpus", "pytorch", "tensorflow", "jax", "cudnn", "incompatibilities",
                           "gpu_support", "amd_gpus")

# --------------------------------------------------------------------------- field kinds

_DATE = lazy_re(r"^\d{4}-\d{2}-\d{2}$")
_SM = lazy_re(r"^(sm|compute)_\d+[af]?$")
_CC = lazy_re(r"^\d+\.\d+$")
_VARIANT = lazy_re(r"^(cpu|cu\d{2,3}|rocm\d+(\.\d+)+)$")  # cu90 / cu92: the CUDA 9 builds of torch 1.0-1.1
_KINDS_ENUM = ("cuda", "cpu", "rocm")
_SEGMENTS = ("geforce", "geforce-laptop", "workstation", "workstation-laptop", "datacenter", "jetson", "desktop")
_PLUGINS = ("cuda12", "cuda13")
_GFX = lazy_re(r"^gfx[0-9a-f]{3,4}$")


def _is_version(x: Any) -> bool:
    return isinstance(x, str) and parse_version(x) is not None


def _is_spec(x: Any) -> bool:
    if not isinstance(x, str) or not x.strip():
        return False
    try:
        SpecifierSet(x)
        return True
    except InvalidSpecifier:
        return False


def _str_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(i, str) for i in x)


def _str_dict(x: Any) -> bool:
    return isinstance(x, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in x.items())


_CHECKS: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "str": (lambda x: isinstance(x, str) and x.strip() != "", "a non-empty string"),
    "text": (lambda x: isinstance(x, str), "a string"),
    "bool": (lambda x: isinstance(x, bool), "true or false"),
    "int": (lambda x: isinstance(x, int) and not isinstance(x, bool), "an integer"),
    "version": (_is_version, "a PEP 440 version string"),
    "spec": (_is_spec, "a PEP 440 specifier string"),
    "cc": (lambda x: isinstance(x, str) and bool(_CC.match(x)), "a compute capability like \"8.6\""),
    "date": (lambda x: isinstance(x, str) and bool(_DATE.match(x)), "a YYYY-MM-DD date"),
    "list_str": (_str_list, "a list of strings"),
    "list_int": (lambda x: isinstance(x, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in x),
                 "a list of integers"),
    "list_version": (lambda x: isinstance(x, list) and all(_is_version(i) for i in x), "a list of version strings"),
    "list_sm": (lambda x: isinstance(x, list) and all(isinstance(i, str) and bool(_SM.match(i)) for i in x),
                "a list of \"sm_XY\" / \"compute_XY\" strings"),
    "list_platform": (lambda x: isinstance(x, list) and all(i in T.PLATFORMS for i in x),
                      "a list of platforms " + ", ".join(T.PLATFORMS)),
    "dict_str": (_str_dict, "a table of strings"),
    "dict_cc": (lambda x: _str_dict(x) and all(_CC.match(v) for v in x.values()), "a table of compute capabilities"),
    "dict_version": (lambda x: _str_dict(x) and all(_is_version(v) for v in x.values()), "a table of versions"),
    "dict_spec": (lambda x: _str_dict(x) and all(_is_spec(v) for v in x.values()), "a table of specifiers"),
    "dict_platform": (lambda x: _str_dict(x) and all(k in T.PLATFORMS and _VARIANT.match(v) for k, v in x.items()),
                      "a table platform -> variant name"),
    "variant": (lambda x: isinstance(x, str) and bool(_VARIANT.match(x)), "a variant name (cpu, cu124, rocm6.2)"),
    "kind": (lambda x: x in _KINDS_ENUM, "one of " + ", ".join(_KINDS_ENUM)),
    "segment": (lambda x: x in _SEGMENTS, "one of " + ", ".join(_SEGMENTS)),
    "plugin": (lambda x: x in _PLUGINS, "one of " + ", ".join(_PLUGINS)),
    "gfx": (lambda x: isinstance(x, str) and bool(_GFX.match(x)), "an LLVM AMDGPU target like \"gfx942\""),
    "amd_status": (lambda x: x in T.AMD_STATUSES, "one of " + ", ".join(T.AMD_STATUSES)),
    "amd_segment": (lambda x: x in T.AMD_SEGMENTS, "one of " + ", ".join(T.AMD_SEGMENTS)),
}


@dataclass(frozen=True)
class RowSpec:
    required: Dict[str, str]
    optional: Dict[str, str]
    key: Tuple[str, ...]
    keyfn: Optional[Callable[[Dict[str, Any]], Any]] = None

    def key_of(self, row: Dict[str, Any]) -> Any:
        if self.keyfn is not None:
            return self.keyfn(row)
        return tuple(row.get(k) for k in self.key)


def _vkey(field_name: str) -> Callable[[Dict[str, Any]], Any]:
    return lambda r: (Version(r[field_name]),)


_SRC = {"source": "str", "verified": "str"}


def _req(**kw: str) -> Dict[str, str]:
    d = dict(kw)
    d.update(_SRC)
    return d


SPECS: Dict[str, Dict[str, RowSpec]] = {
    "cuda_driver": {
        "release": RowSpec(
            _req(version="version", label="str", ga="bool"),
            dict(driver_linux="version", driver_windows="version", bundled_driver_linux="version",
                 windows_note="text", note="text"),
            ("version",), _vkey("version")),
        "mvc": RowSpec(
            _req(cuda_major="int", min_driver_linux="version"),
            dict(min_driver_windows="version", min_driver_windows_alt="version", min_driver_branch="int", note="text"),
            ("cuda_major",)),
    },
    "gpus": {
        "arch": RowSpec(
            _req(cc="cc", sm="str", name="str"),
            dict(chips="list_str", first_cuda="version", last_cuda="version", deprecated_in="version",
                 renamed_to="cc", renamed_from="cc", note="text"),
            ("cc",)),
        "gpu": RowSpec(
            _req(name="str", cc="cc"),
            dict(segment="segment", aliases="list_str", note="text"),
            ("name",), lambda r: (str(r["name"]).strip().lower(),)),
    },
    "pytorch": {
        "release": RowSpec(
            _req(version="version", patches="list_version", python="spec"),
            dict(released="text", requires_python="spec", python_note="text", pypi_default="dict_platform",
                 pypi_default_note="text", note="text"),
            ("version",), _vkey("version")),
        "patch": RowSpec(
            _req(version="version"),
            dict(torchvision="version", torchvision_requires="spec", torchaudio="version", torchaudio_requires="spec",
                 triton="spec", triton_marker="str", requires_python="spec", python="spec", pypi_wheel="text",
                 note="text"),
            ("version",), _vkey("version")),
        "variant": RowSpec(
            _req(torch="version", name="variant", kind="kind"),
            dict(status="text", index_url="str", local_label="str", pypi_default="bool", platforms="list_platform",
                 cuda="version", cuda_toolkit="version", rocm="version", cudnn="version", arch_list="list_sm",
                 ptx="bool", arch_list_aarch64="list_sm", arch_source="text", arch_verified="text",
                 nvidia_pins="dict_spec", pin_markers="dict_str", cuda_toolkit_extras="list_str",
                 platforms_note="text", note="text"),
            ("torch", "name"), lambda r: (Version(r["torch"]), r["name"])),
        "conda": RowSpec(
            _req(channel="str"),
            dict(first="version", last="version", note="text"),
            ("channel",)),
    },
    "tensorflow": {
        "release": RowSpec(
            _req(version="version", tested="version", python="spec", cuda="version", cudnn="version"),
            dict(python_tested="text", requires_python="spec", and_cuda="dict_spec", gpu_platforms="list_platform",
                 compute_capabilities="list_sm", cc_verified="text", compiler="text", build_tool="text",
                 gpu_distribution="str", note="text"),
            ("version",), _vkey("version")),
        "patch": RowSpec(
            _req(version="version"),
            dict(and_cuda="dict_spec", requires_python="spec", python="spec", pypi_wheel="text", note="text"),
            ("version",), _vkey("version")),
    },
    "jax": {
        "release": RowSpec(
            _req(version="version", jaxlib="spec"),
            dict(requires_python="spec", cuda_extra="plugin", note="text"),
            ("version",), _vkey("version")),
        "plugin": RowSpec(
            _req(jax="version", name="plugin", package="str", pin="spec", cuda_major="int", cudnn="spec",
                 cudnn_min="version", driver_min="version", cc_min="cc"),
            dict(pjrt="str", cuda_runtime="spec", note="text"),
            ("jax", "name"), lambda r: (Version(r["jax"]), r["name"])),
        "jaxlib": RowSpec(
            _req(version="version", last="version", python="spec"),
            dict(cuda="list_version", cudnn="dict_version", arch_list="list_sm", arch_source="text",
                 arch_verified="text", note="text"),
            ("version",), _vkey("version")),
    },
    "cudnn": {
        "release": RowSpec(
            _req(versions="spec", label="str", cuda_majors="list_int", cc_min="cc", header="str",
                 version_multiplier="int"),
            dict(cc_min_by_cuda="dict_cc", driver_min_linux="dict_version", driver_min_windows="dict_version",
                 note="text"),
            ("versions",)),
    },
    "gpu_support": {
        # the driver branches that drive GPUs of `ccs`: from branch_min (the first CUDA's toolkit driver) to
        # branch_last (retired architectures only)
        "branch": RowSpec(
            _req(family="str", ccs="list_str"),
            dict(branch_min="int", branch_last="int", first_cuda="version", note="text"),
            ("family", "ccs"), lambda r: (r["family"], tuple(r["ccs"]))),
    },
    "amd_gpus": {
        # an LLVM target and the ROCm series AMD's Linux compatibility matrix lists it in
        "target": RowSpec(
            _req(gfx="gfx", arch="str", status="amd_status", read_from="version", listed_through="version"),
            dict(rocm_first="version", rocm_last="version", note="text"),
            ("gfx",)),
        "gpu": RowSpec(
            _req(name="str", gfx="gfx"),
            dict(segment="amd_segment", aliases="list_str", note="text"),
            ("name",), lambda r: (str(r["name"]).strip().lower(),)),
    },
    "incompatibilities": {
        "fact": RowSpec(
            _req(key="str", value="str", summary="str"),
            dict(applies_to="list_str", message="text", note="text"),
            ("key",)),
        # a distribution name that, for `versions`, installs no framework (renamed or emptied): use `replacement`
        "deprecated_distribution": RowSpec(
            _req(name="str", versions="spec", replacement="str", summary="str"),
            dict(gpu_extra="str", note="text"),
            ("name", "versions")),
    },
}


def validate_row(table: str, kind: str, row: Any) -> List[Tuple[Optional[str], str]]:
    """Schema problems of one row as ``(field or None, message)``; empty when the row is valid."""
    spec = SPECS[table][kind]
    if not isinstance(row, dict):
        return [(None, "not a table")]
    errors: List[Tuple[Optional[str], str]] = []
    for name, ftype in spec.required.items():
        if name not in row:
            errors.append((None, f"missing required field {name!r}"))
            continue
        check, what = _CHECKS[ftype]
        if not check(row[name]):
            errors.append((name, f"field {name!r} must be {what}, got {row[name]!r}"))
    for name, ftype in spec.optional.items():
        if name in row:
            check, what = _CHECKS[ftype]
            if not check(row[name]):
                errors.append((name, f"field {name!r} must be {what}, got {row[name]!r}"))
    return errors


# --------------------------------------------------------------------------- locations


def bundled_dir() -> Path:
    """``envdoctor/_data/matrices`` inside an installed wheel, else ``<repo>/matrices``."""
    from envdoctor.resources import data_dir

    return data_dir("matrices")


def cache_file(table: str, cache_dir: Optional[Path] = None) -> Path:
    """Where a refreshed copy of ``table`` lives (same schema as the bundled file)."""
    return Path(cache_dir if cache_dir is not None else default_cache_dir()) / f"{table}.toml"


# --------------------------------------------------------------------------- reading one file


def sha256(data: bytes = b"") -> Any:
    """hashlib.sha256, from CPython's own module when there is one: importing hashlib loads OpenSSL
    (~3 ms of every start); the digests are the same."""
    try:
        from _sha256 import sha256 as impl  # CPython <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as impl  # CPython 3.12+
        except ImportError:
            from hashlib import sha256 as impl  # another Python: hashlib's
    return impl(data)


def parse_toml_cached(text: str, warnings: Optional[List[str]] = None) -> Dict[str, Any]:
    """tomllib.loads, memoised on disk by content hash.

    Parsing the bundled tables with the pure-Python TOML parser costs more than
    the whole rest of `envdoctor check`; the parsed form of the exact same text
    is kept as JSON under the cache dir (`<cache root>/parsed/`), best effort,
    as ``{"key": <content hash>, "data": <parsed table>}``, by envdoctor.cache's
    rules (this user's file in this user's folder, bounded in size and depth).
    An entry that breaks them, is not that shape or holds another key is
    deleted, named in ``warnings`` as the cache's file, and the text is parsed
    again.  An unwritable or untrusted cache only means parsing again.
    ENVDOCTOR_NO_CACHE=1 (or ENVDOCTOR_NO_PARSE_CACHE=1) bypasses it.
    """
    from envdoctor import cache

    if not cache.parse_enabled():
        return _toml.loads(text)
    key = sha256(text.encode("utf-8")).hexdigest()[:40]
    top = cache.root()
    if top is None:
        return _toml.loads(text)
    cached = top / "parsed" / f"{key}.v2.json"  # v2: {"key", "data"}; older entries unread
    problem = cache.folder_problem(cached.parent, top)
    if problem:
        cache.note(f"{problem}: its kept answers are not used")
        return _toml.loads(text)
    try:
        entry = cache.read_file(cached)
        if entry is not None:
            if isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("data"), dict):
                return entry["data"]
            raise cache.BadEntry("not a parse-cache entry of this text")
    except cache.BadEntry as exc:
        if warnings is not None:
            warnings.append(f"envdoctor's cache file {cached}: parse cache entry discarded ({exc}); the table was "
                            "parsed again")
        cache.discard(cached)
    data = _toml.loads(text)
    cache.write(cached, top, {"key": key, "data": data})  # a TOML date or time value: not JSON, not kept
    return data


_HEADER = lazy_re(r"^\s*\[\[\s*([A-Za-z0-9_.\-]+)\s*\]\]")
_TOP_KEY = lazy_re(r"^\s*([A-Za-z0-9_\-]+)\s*=")
_TOML_LINE = lazy_re(r"line (\d+)")


@dataclass
class RawRow:
    key: Any
    data: Dict[str, Any]
    origin: str  # "path:line"


@dataclass
class RawTable:
    table: str
    path: Path
    collected: Optional[str]
    rows: Dict[str, List[RawRow]] = field(default_factory=dict)


def _header_lines(lines: List[str]) -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = {}
    for i, line in enumerate(lines, start=1):
        m = _HEADER.match(line)
        if m:
            out.setdefault(m.group(1), []).append(i)
    return out


def _field_line(lines: List[str], start: Optional[int], name: Optional[str]) -> Optional[int]:
    """Line of ``name = ...`` inside the row starting at ``start`` (1-based), else ``start``."""
    if start is None or name is None:
        return start
    for i in range(start, len(lines)):
        line = lines[i]
        if _HEADER.match(line) or line.lstrip().startswith("["):
            break
        m = _TOP_KEY.match(line)
        if m and m.group(1) == name:
            return i + 1
    return start


def _top_line(lines: List[str], name: str) -> Optional[int]:
    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith("["):
            return None
        m = _TOP_KEY.match(line)
        if m and m.group(1) == name:
            return i
    return None


def _loc(path: Path, line: Optional[int]) -> str:
    return f"{path}:{line}" if line else str(path)


def read_table_file(path: Path, table: str, strict: bool) -> Tuple[Optional[RawTable], List[str]]:
    """Parse and validate one table file.

    ``strict`` (cache files): any problem rejects the whole file (returns None).
    Not strict (bundled files): broken rows are skipped, the rest is kept.
    """
    warnings: List[str] = []
    what = "cache file ignored, bundled data used" if strict else "row skipped"
    from envdoctor.infile import read_text as read_input, why

    try:
        text = read_input(path)  # a regular file only, bounded: a FIFO in the cache folder never blocks
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: cannot read: {why(exc)}" + ("; cache file ignored, bundled data used" if strict else ""))
        return None, warnings
    try:
        data = parse_toml_cached(text, warnings)
    except RecursionError:
        warnings.append(f"{path}: nested too deeply to read"
                        + ("; cache file ignored, bundled data used" if strict else "; table not loaded"))
        return None, warnings
    except _toml.TOMLDecodeError as exc:
        m = _TOML_LINE.search(str(exc))
        line = int(m.group(1)) if m else (max(1, len(text.splitlines())) if "end of document" in str(exc) else None)
        warnings.append(f"{_loc(path, line)}: invalid TOML: {exc}"
                        + ("; cache file ignored, bundled data used" if strict else "; table not loaded"))
        return None, warnings
    lines = text.splitlines()
    expected = f"{table}/{SCHEMA_VERSION}"
    if data.get("schema") != expected:
        warnings.append(f"{_loc(path, _top_line(lines, 'schema'))}: schema is {data.get('schema')!r}, expected "
                        f"{expected!r}" + ("; cache file ignored, bundled data used" if strict else "; table not loaded"))
        return None, warnings
    collected = data.get("collected")
    if not (isinstance(collected, str) and _DATE.match(collected)):
        warnings.append(f"{_loc(path, _top_line(lines, 'collected'))}: 'collected' must be a YYYY-MM-DD date, got "
                        f"{collected!r}" + ("; cache file ignored, bundled data used" if strict else ""))
        if strict:
            return None, warnings
        collected = None
    headers = _header_lines(lines)
    raw = RawTable(table=table, path=path, collected=collected)
    for kind, spec in SPECS[table].items():
        items = data.get(kind, [])
        if not isinstance(items, list):
            warnings.append(f"{_loc(path, _top_line(lines, kind))}: {kind!r} must be an array of tables"
                            + ("; cache file ignored, bundled data used" if strict else "; ignored"))
            if strict:
                return None, warnings
            continue
        seen = set()
        out: List[RawRow] = []
        starts = headers.get(kind, [])
        for i, item in enumerate(items):
            start = starts[i] if i < len(starts) else None
            errors = validate_row(table, kind, item)
            label = _row_label(item, spec)
            if not errors:
                try:
                    key = spec.key_of(item)
                except (KeyError, InvalidVersion, TypeError) as exc:  # pragma: no cover - validated above
                    errors = [(None, f"bad key: {exc}")]
            if errors:
                fld, msg = errors[0]
                more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
                warnings.append(f"{_loc(path, _field_line(lines, start, fld))}: [[{kind}]] {label}: {msg}{more}; {what}")
                if strict:
                    return None, warnings
                continue
            if key in seen:
                warnings.append(f"{_loc(path, start)}: [[{kind}]] {label}: duplicate key; {what}")
                if strict:
                    return None, warnings
                continue
            seen.add(key)
            out.append(RawRow(key=key, data=item, origin=_loc(path, start)))
        raw.rows[kind] = out
    return raw, warnings


def _row_label(item: Any, spec: RowSpec) -> str:
    if not isinstance(item, dict):
        return "?"
    parts = [str(item.get(k)) for k in spec.key if k in item]
    return " ".join(parts) if parts else "?"


# --------------------------------------------------------------------------- merging


@dataclass
class MergedTable:
    table: str
    collected: Optional[str]
    source: str  # path(s) it was loaded from
    rows: Dict[str, List[RawRow]]


def load_table(table: str, bundled: Path, cache_dir: Optional[Path]) -> Tuple[MergedTable, List[str]]:
    warnings: List[str] = []
    bpath = bundled / f"{table}.toml"
    base: Optional[RawTable] = None
    if bpath.is_file():
        base, w = read_table_file(bpath, table, strict=False)
        warnings.extend(w)
    else:
        warnings.append(f"{bpath}: bundled table missing")
    over: Optional[RawTable] = None
    if cache_dir is not None:
        cpath = Path(cache_dir) / f"{table}.toml"
        if cpath.is_file():
            try:
                over, w = read_table_file(cpath, table, strict=True)
            except Exception as exc:  # noqa: BLE001 - a broken overlay never costs the bundled table
                over, w = None, [f"{cpath}: could not load ({type(exc).__name__}); cache file ignored, bundled data used"]
            warnings.extend(w)
    rows: Dict[str, List[RawRow]] = {}
    for kind in SPECS[table]:
        merged: Dict[Any, RawRow] = {}
        for src in (base, over):
            if src is None:
                continue
            for r in src.rows.get(kind, []):
                merged[r.key] = r
        rows[kind] = list(merged.values())
    sources = [str(s.path) for s in (base, over) if s is not None]
    collected = over.collected if over is not None else (base.collected if base is not None else None)
    return MergedTable(table=table, collected=collected, source=" + ".join(sources), rows=rows), warnings


# --------------------------------------------------------------------------- building typed rows


def _kw(cls: type, data: Dict[str, Any], origin: str, **extra: Any) -> Any:
    names = set(getattr(cls, "__dataclass_fields__", {}))
    kw = {k: v for k, v in data.items() if k in names}
    kw.update(extra)
    kw["origin"] = origin
    return cls(**kw)


def build_cuda(mt: MergedTable) -> Tuple[List[T.CudaRelease], Dict[int, T.MvcRange]]:
    rel = [_kw(T.CudaRelease, r.data, r.origin) for r in mt.rows.get("release", [])]
    rel.sort(key=lambda r: Version(r.version))
    mvc = {r.data["cuda_major"]: _kw(T.MvcRange, r.data, r.origin) for r in mt.rows.get("mvc", [])}
    return rel, mvc


def build_gpus(mt: MergedTable) -> Tuple[Dict[str, T.ArchInfo], List[T.GpuInfo]]:
    archs = {}
    for r in mt.rows.get("arch", []):
        a = _kw(T.ArchInfo, r.data, r.origin)
        archs[a.cc] = a
    gpus = [_kw(T.GpuInfo, r.data, r.origin) for r in mt.rows.get("gpu", [])]
    return archs, gpus


def build_pytorch(mt: MergedTable, warnings: List[str]) -> Tuple[List[T.TorchRelease], List[T.CondaChannel]]:
    releases = {Version(r.data["version"]): r for r in mt.rows.get("release", [])}
    patches: Dict[Version, List[T.TorchPatch]] = {v: [] for v in releases}
    variants: Dict[Version, List[T.TorchVariant]] = {v: [] for v in releases}
    for r in mt.rows.get("patch", []):
        pv = Version(r.data["version"])
        series = Version(f"{pv.major}.{pv.minor}")
        if series not in releases:
            warnings.append(f"{r.origin}: [[patch]] {pv}: no [[release]] {series}; row skipped")
            continue
        patches[series].append(_kw(T.TorchPatch, r.data, r.origin))
    for r in mt.rows.get("variant", []):
        tv = Version(r.data["torch"])
        if tv not in releases:
            warnings.append(f"{r.origin}: [[variant]] {r.data['torch']} {r.data['name']}: no [[release]] {tv}; row skipped")
            continue
        variants[tv].append(_kw(T.TorchVariant, r.data, r.origin))
    out = []
    for v in sorted(releases):
        r = releases[v]
        vs = sorted(variants[v], key=_variant_order)
        ps = sorted(patches[v], key=lambda p: Version(p.version))
        out.append(_kw(T.TorchRelease, r.data, r.origin, patch_rows=ps, variants=vs))
    conda = [_kw(T.CondaChannel, r.data, r.origin) for r in mt.rows.get("conda", [])]
    return out, conda


def _variant_order(v: T.TorchVariant) -> Tuple[int, Any]:
    if v.kind == "cpu":
        return (0, Version("0"))
    if v.kind == "cuda":
        return (1, Version(v.cuda or "0"))
    return (2, Version(v.rocm or "0"))


def build_tensorflow(mt: MergedTable, warnings: Optional[List[str]] = None) -> List[T.TfRelease]:
    releases = {Version(r.data["version"]): r for r in mt.rows.get("release", [])}
    patches: Dict[Version, List[T.TfPatch]] = {v: [] for v in releases}
    for r in mt.rows.get("patch", []):
        pv = Version(r.data["version"])
        series = Version(f"{pv.major}.{pv.minor}")
        if series not in releases:
            if warnings is not None:
                warnings.append(f"{r.origin}: [[patch]] {pv}: no [[release]] {series}; row skipped")
            continue
        patches[series].append(_kw(T.TfPatch, r.data, r.origin))
    return [_kw(T.TfRelease, releases[v].data, releases[v].origin,
                patch_rows=sorted(patches[v], key=lambda p: Version(p.version))) for v in sorted(releases)]


def build_jax(mt: MergedTable, warnings: List[str]) -> List[T.JaxRelease]:
    plugins: Dict[Version, Dict[str, T.JaxPlugin]] = {}
    for r in mt.rows.get("plugin", []):
        plugins.setdefault(Version(r.data["jax"]), {})[r.data["name"]] = _kw(T.JaxPlugin, r.data, r.origin)
    out = []
    known = set()
    for r in mt.rows.get("release", []):
        v = Version(r.data["version"])
        known.add(v)
        out.append(_kw(T.JaxRelease, r.data, r.origin, plugins=dict(sorted(plugins.get(v, {}).items()))))
    for v, ps in plugins.items():
        if v not in known:
            for p in ps.values():
                warnings.append(f"{p.origin}: [[plugin]] {p.jax} {p.name}: no [[release]] {p.jax}; row skipped")
    out.sort(key=lambda r: Version(r.version))
    return out


def build_jaxlib(mt: MergedTable) -> List[T.JaxlibSeries]:
    """The [[jaxlib]] rows (jaxlib releases that carried their CUDA build themselves), ascending."""
    out = [_kw(T.JaxlibSeries, r.data, r.origin) for r in mt.rows.get("jaxlib", [])]
    out.sort(key=lambda r: Version(r.version))
    return out


def build_cudnn(mt: MergedTable) -> List[T.CudnnRelease]:
    out = [_kw(T.CudnnRelease, r.data, r.origin) for r in mt.rows.get("release", [])]
    out.sort(key=lambda r: min((Version(s.version) for s in SpecifierSet(r.versions)), default=Version("0")))
    return out


def build_gpu_support(mt: MergedTable) -> List[T.DriverBranchSupport]:
    return [_kw(T.DriverBranchSupport, r.data, r.origin) for r in mt.rows.get("branch", [])]


def build_amd_gpus(mt: MergedTable) -> Tuple[List[T.AmdTarget], List[T.AmdGpu]]:
    targets = [_kw(T.AmdTarget, r.data, r.origin) for r in mt.rows.get("target", [])]
    return targets, [_kw(T.AmdGpu, r.data, r.origin) for r in mt.rows.get("gpu", [])]


def build_incompatibilities(mt: MergedTable) -> List[T.Incompatibility]:
    return [_kw(T.Incompatibility, r.data, r.origin) for r in mt.rows.get("fact", [])]


def build_deprecated_distributions(mt: MergedTable) -> List[T.DeprecatedDistribution]:
    return [_kw(T.DeprecatedDistribution, r.data, r.origin) for r in mt.rows.get("deprecated_distribution", [])]
