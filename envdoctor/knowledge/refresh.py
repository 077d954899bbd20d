"""``envdoctor matrices refresh``: rows for the releases the bundled data lacks, from index metadata.

Every release on the index that the data does not know is learned, from the oldest known release
on: newer releases, patch releases of known series (tensorflow ``[[patch]]`` rows, torch patches) and
skipped versions (jax); the cache is rebuilt from scratch, so refreshing twice writes the same rows.

For torch (with torchvision / torchaudio), tensorflow and jax (with jaxlib and the
jax-cuda12/13-plugin packages) the index is asked which releases exist; every release the bundled
tables do not know is read (core metadata of its Linux x86_64 wheel, never the wheel) and turned
into rows of the same schema:

* facts the metadata states (version, Requires-Python, the Python versions of the wheel tags, the
  default build's CUDA from the ``cuda-toolkit`` / ``nvidia-cuda-runtime`` pin, the cuDNN pin, the
  NVIDIA pins, tensorflow's ``and-cuda`` pins, jax's plugin pins) are copied;
* facts metadata cannot give (compiled arch lists, GPU platforms, driver / compute-capability floors)
  are copied from the newest known release of the same line, and the row says so:
  ``verified = "UNVERIFIED: derived by envdoctor matrices refresh from index metadata on DATE; ..."``,
  ``source`` = the URL of the metadata file read.

The rows are written to ``<cache>/<table>.toml`` (checked with the loader's strict reader first, then
installed with an atomic rename), where :func:`envdoctor.knowledge.load_matrices` overlays them.  The
cache is rebuilt from scratch each time: it holds exactly what the index has beyond the bundled data.
Nothing is written unless every read succeeded.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envdoctor.errors import EnvdoctorError
from envdoctor.frameworks import registry
from envdoctor.frameworks.base import FrameworkSpec, resolve_dotted

from . import load as L
from envdoctor.facts.versions import lower_bound
from envdoctor.facts.versions import major_minor as series

from .index import DistFile, IndexClient, exact_pin, python_for, python_markers, requirements, spec_of
from .verify import _first, _jaxlib_requirement, _torch_cuda

def refresh_specs() -> List[FrameworkSpec]:
    """The framework specs that name a refresh table and its learner, in the registry's order."""
    return [s for s in registry.SPECS.values() if s.refresh_table and s.refresh_learner]


REFRESH_TABLES: Tuple[str, ...] = tuple(str(s.refresh_table) for s in refresh_specs())
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class RefreshError(EnvdoctorError):
    """The cache could not be written."""


@dataclass
class TableUpdate:
    table: str
    rows: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)  # kind -> rows
    added: List[str] = field(default_factory=list)  # human-readable lines
    messages: List[str] = field(default_factory=list)  # skipped / assumed / notes
    newest_known: Optional[str] = None

    def add(self, kind: str, row: Dict[str, Any]) -> None:
        self.rows.setdefault(kind, []).append(row)

    @property
    def empty(self) -> bool:
        return not any(self.rows.values())


@dataclass
class RefreshResult:
    index_urls: List[str]
    date: str
    updates: Dict[str, TableUpdate]
    written: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict:
        return {
            "index_urls": self.index_urls,
            "date": self.date,
            "dry_run": self.dry_run,
            "tables": {t: {"newest_known": u.newest_known, "added": u.added, "messages": u.messages,
                           "rows": u.rows} for t, u in self.updates.items()},
            "written": self.written,
            "removed": self.removed,
        }


# --------------------------------------------------------------------------- helpers


def _learned(date: str) -> str:
    """``verified`` of a row whose every fact was read from the release's own metadata."""
    return f"learned by envdoctor matrices refresh from index metadata on {date}: every field read from it"


def _unverified(date: str, assumed: str = "") -> str:
    text = f"UNVERIFIED: derived by envdoctor matrices refresh from index metadata on {date}"
    return text + (f"; {assumed}" if assumed else "")


def _row_dict(table: str, kind: str, row: object) -> Dict[str, Any]:
    """A loaded row back as a TOML-ready dict of the schema's fields (no None / empty values)."""
    spec = L.SPECS[table][kind]
    names = list(spec.required) + [n for n in spec.optional if n not in spec.required]
    out: Dict[str, Any] = {}
    for name in names:
        value = getattr(row, name, None)
        if value is None or (isinstance(value, (list, dict)) and not value and name not in spec.required):
            continue
        out[name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _python_spec(files: Sequence[DistFile], version: Version, requires_python: Optional[str]) -> Optional[str]:
    """``">=3.11,<3.16"`` from the CPython tags of a release's Linux wheels; else Requires-Python."""
    cps = sorted({cp for f in files if Version(f.version.public) == version and f.is_manylinux_x86_64
                  for cp in f.cpython_versions() if cp[0] == 3})
    if cps:
        lo, hi = cps[0], cps[-1]
        return f">={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"
    if requires_python:
        try:
            SpecifierSet(requires_python)
            return requires_python
        except InvalidSpecifier:
            return None
    return None


def _spec_contains(spec: Optional[str], version: Version) -> bool:
    if not spec:
        return False
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return False


def _new_versions(index_versions: Sequence[Version], known: Sequence[Version], by_series: bool = True) -> List[Version]:
    """Every index version the data does not know, from its oldest known release on: newer releases,
    patch releases of known series and skipped versions alike (older releases are out of scope)."""
    if not known:
        return sorted(index_versions)
    known_set = set(known)
    oldest = min(known)
    return sorted(v for v in index_versions if v not in known_set and v > oldest)


# --------------------------------------------------------------------------- torch


def _newest_variant(releases, name: str, cuda_major: Optional[int], before: Version):
    """Newest known variant ``name`` (else the newest cuda variant of the same major) of a release <= before."""
    same, major = None, None
    for rel in releases:
        if Version(rel.version) > before:
            continue
        for v in rel.variants:
            if v.name == name:
                same = v
            elif v.kind == "cuda" and cuda_major is not None and v.cuda_major == cuda_major:
                major = v
    return same or major


def _torch(m, client: IndexClient, date: str) -> TableUpdate:
    up = TableUpdate("pytorch", newest_known=m.newest_known("torch"))
    releases = list(m.pytorch_releases)
    known = [Version(p) for r in releases for p in r.patches]
    new = _new_versions(client.versions("torch"), known)
    if not new:
        up.messages.append(f"nothing newer than torch {up.newest_known} on the index")
        return up
    files = client.project_files("torch")
    companions = {name: _Companions(client, name, releases, date) for name in ("torchvision", "torchaudio")}
    new_series: Dict[str, Dict[str, Any]] = {}
    extended: Dict[str, Dict[str, Any]] = {}
    prev_patch = _newest_patch_row(releases)
    for v in new:
        dist, meta = client.release_metadata("torch", str(v))
        if meta is None or dist is None:  # release_metadata gives no metadata without a wheel
            up.messages.append(f"torch {v}: the index offers no metadata file for {dist.filename if dist else 'its wheel'} "
                               "(the wheel is not downloaded); skipped")
            continue
        reqs = requirements(meta, python=python_for(dist))
        sv = series(v)
        source = meta.source
        cuda_pin, toolkit_pin = _torch_cuda(reqs)
        cudnn_pin = exact_pin(spec_of(_first(reqs, "nvidia-cudnn-cu")))
        vname = "cpu"
        if cuda_pin:
            cv = Version(cuda_pin)
            vname = f"cu{cv.major}{(cv.release + (0,))[1]}"
        # ---- patch row
        patch: Dict[str, Any] = {"version": str(v)}
        for comp in ("torchvision", "torchaudio"):
            got = companions[comp].for_torch(v, prev_patch)
            if got:
                patch[comp], patch[f"{comp}_requires"] = got
        if "triton" in reqs:
            patch["triton"] = str(reqs["triton"].specifier)
        markers = python_markers(meta)
        if "triton" in markers:
            patch["triton_marker"] = markers["triton"]
        if meta.requires_python:
            patch["requires_python"] = meta.requires_python
        patch["pypi_wheel"] = dist.filename
        patch["source"] = source
        patch["verified"] = _unverified(date, "companions: " + ", ".join(
            c.note_for(v) for c in companions.values()))
        up.add("patch", patch)
        prev_patch = _PatchLike(patch)
        # ---- release row
        known_rel = next((r for r in releases if r.version == sv), None)
        if known_rel is not None or sv in extended:
            base = extended.get(sv) or _row_dict("pytorch", "release", known_rel)
            base["patches"] = sorted(set(base.get("patches", [])) | {str(v)}, key=Version)
            note = f"patch {v} added by envdoctor matrices refresh on {date} from {source}"
            base["note"] = f"{base['note']}; {note}" if base.get("note") and note not in base["note"] else note
            extended[sv] = base
            dv = known_rel.default_variant("linux-x86_64") if known_rel is not None else None
            if dv is not None and cudnn_pin and dv.cudnn and Version(dv.cudnn) != Version(cudnn_pin):
                up.messages.append(f"torch {v} pins cuDNN {cudnn_pin}; the table's torch {sv} {dv.name} row says "
                                   f"{dv.cudnn} (row not changed)")
            up.added.append(f"torch {v} (patch of the known {sv} release; default build {vname})")
            continue
        if sv in new_series:
            known_row = new_series[sv]
            known_row["patches"] = sorted(set(known_row["patches"]) | {str(v)}, key=Version)
            up.added.append(f"torch {v} (patch of the new {sv} release)")
            continue
        prev_rel = releases[-1] if releases else None
        prev_var = _newest_variant(releases, vname, Version(cuda_pin).major if cuda_pin else None, v)
        pypi_default = dict(prev_rel.pypi_default) if prev_rel is not None else {}
        pypi_default["linux-x86_64"] = vname
        rel: Dict[str, Any] = {"version": sv, "patches": [str(v)]}
        py = _python_spec(files, v, meta.requires_python)
        if py:
            rel["python"] = py
        else:
            up.messages.append(f"torch {v}: no Python range in the wheel tags or Requires-Python; skipped")
            continue
        if meta.requires_python:
            rel["requires_python"] = meta.requires_python
        rel["python_note"] = f"from the CPython tags of the manylinux x86_64 wheels of {v} on the index"
        rel["pypi_default"] = pypi_default
        if prev_rel is not None:
            rel["pypi_default_note"] = (f"linux-x86_64 read from the metadata of torch {v}; the other platforms copied "
                                        f"from torch {prev_rel.version} (UNVERIFIED)")
        rel["source"] = source
        rel["verified"] = _unverified(date, "python range from the wheel tags")
        new_series[sv] = rel
        # ---- variant rows: the PyPI default build, and a cpu build like every release before
        if cuda_pin:
            var = _torch_cuda_variant(sv, vname, cuda_pin, toolkit_pin, cudnn_pin, reqs, prev_var, source, date)
            held = {k: mk for k, mk in markers.items() if k in var.get("nvidia_pins", {})}
            if held:
                var["pin_markers"] = held
            up.add("variant", var)
            assumed = f"arch list assumed from torch {prev_var.torch} {prev_var.name}" if prev_var else "arch list unknown"
            up.messages.append(f"torch {sv} {vname}: {assumed} (UNVERIFIED)")
        prev_cpu = _newest_variant(releases, "cpu", None, v)
        if prev_cpu is not None and vname != "cpu":
            cpu = _row_dict("pytorch", "variant", prev_cpu)
            cpu["torch"] = sv
            cpu.pop("pypi_default", None)
            cpu["source"] = source
            cpu["verified"] = _unverified(date, f"the cpu build assumed like torch {prev_cpu.torch} cpu "
                                                "(published for every release so far)")
            up.add("variant", cpu)
        elif vname == "cpu":
            cpu = _row_dict("pytorch", "variant", prev_cpu) if prev_cpu is not None else {
                "name": "cpu", "kind": "cpu", "platforms": ["linux-x86_64"]}
            cpu.update({"torch": sv, "pypi_default": True, "source": source,
                        "verified": _unverified(date, "the metadata pins no CUDA runtime: the default build is cpu")})
            up.add("variant", cpu)
        up.added.append(f"torch {v} (new release {sv}; default build {vname}"
                        + (f", CUDA {cuda_pin}, cuDNN {cudnn_pin}" if cuda_pin else "") + ")")
    for sv in sorted(new_series, key=Version):
        up.add("release", new_series[sv])
    for sv in sorted(extended, key=Version):
        up.add("release", extended[sv])
    return up


def _torch_cuda_variant(sv: str, vname: str, cuda_pin: str, toolkit_pin: Optional[str], cudnn_pin: Optional[str],
                        reqs, prev, source: str, date: str) -> Dict[str, Any]:
    cv = Version(cuda_pin)
    var: Dict[str, Any] = {"torch": sv, "name": vname, "kind": "cuda", "cuda": f"{cv.major}.{(cv.release + (0,))[1]}"}
    if toolkit_pin:
        var["cuda_toolkit"] = toolkit_pin
    if prev is not None and prev.status:
        var["status"] = prev.status
    if prev is not None and prev.name == vname:
        for k in ("index_url", "local_label", "platforms", "platforms_note"):
            value = getattr(prev, k, None)
            if value:
                var[k] = _plain(value)
    else:
        var["local_label"] = "+" + vname
        var["platforms"] = ["linux-x86_64"]
    var["pypi_default"] = True
    if cudnn_pin:
        var["cudnn"] = cudnn_pin
    if prev is not None and prev.arch_list:
        var["arch_list"] = list(prev.arch_list)
        if prev.ptx is not None:
            var["ptx"] = prev.ptx
        if prev.arch_list_aarch64:
            var["arch_list_aarch64"] = list(prev.arch_list_aarch64)
        var["arch_source"] = f"copied from torch {prev.torch} {prev.name} ({os.path.basename(prev.origin)})"
        var["arch_verified"] = f"UNVERIFIED: assumed from torch {prev.torch} {prev.name}"
    pins = {k: str(r.specifier) for k, r in reqs.items() if k.startswith(("nvidia-", "cuda-"))}
    if pins:
        var["nvidia_pins"] = pins
    tk = reqs.get("cuda-toolkit")
    if tk is not None and tk.extras:
        var["cuda_toolkit_extras"] = sorted(tk.extras)
    var["source"] = source
    assumed = f"arch list assumed from torch {prev.torch} {prev.name}" if prev is not None and prev.arch_list else \
        "arch list unknown"
    var["verified"] = _unverified(date, assumed)
    return var


class _PatchLike:
    """The torchvision / torchaudio fields of a patch row (loaded or just derived)."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.version = data.get("version")
        for comp in ("torchvision", "torchaudio"):
            setattr(self, comp, data.get(comp))
            setattr(self, f"{comp}_requires", data.get(f"{comp}_requires"))


def _newest_patch_row(releases):
    rows = [p for r in releases for p in r.patch_rows]
    return max(rows, key=lambda p: Version(p.version)) if rows else None


class _Companions:
    """torchvision / torchaudio releases newer than the data knows, with the torch they require."""

    def __init__(self, client: IndexClient, project: str, releases, date: str) -> None:
        self.client = client
        self.project = project
        known = [Version(getattr(p, project)) for r in releases for p in r.patch_rows if getattr(p, project, None)]
        self.newest_known = max(known) if known else None
        self._new: Optional[List[Tuple[Version, Optional[str]]]] = None
        self._notes: Dict[Version, str] = {}

    def _load(self) -> List[Tuple[Version, Optional[str]]]:
        if self._new is None:
            out = []
            for v in self.client.versions(self.project):
                if self.newest_known is not None and v <= self.newest_known:
                    continue
                dist, meta = self.client.release_metadata(self.project, str(v))
                if meta is None:
                    continue
                req = requirements(meta, python=python_for(dist)).get(canonicalize_name("torch"))
                out.append((v, str(req.specifier) if req is not None else None))
            self._new = out
        return self._new

    def for_torch(self, torch: Version, prev_patch) -> Optional[Tuple[str, str]]:
        new = self._load()
        exact = [(v, s) for v, s in new if s and (pin := exact_pin(s)) and Version(pin) == torch]
        if exact:
            v, s = max(exact)
            self._notes[torch] = f"{self.project} {v} pins torch {s}"
            return str(v), s
        fits = [(v, s) for v, s in new if s and _spec_contains(s, torch)]
        if fits:
            v, s = max(fits)
            self._notes[torch] = f"{self.project} {v} requires torch {s}"
            return str(v), s
        if prev_patch is not None:
            pv, ps = getattr(prev_patch, self.project, None), getattr(prev_patch, f"{self.project}_requires", None)
            if pv and _spec_contains(ps, torch):
                self._notes[torch] = f"{self.project} {pv} (as for torch {prev_patch.version}; requires torch {ps})"
                return str(pv), str(ps)
        self._notes[torch] = f"no {self.project} release found for it"
        return None

    def note_for(self, torch: Version) -> str:
        return self._notes.get(torch, f"{self.project} not looked up")


# --------------------------------------------------------------------------- tensorflow


def _tensorflow(m, client: IndexClient, date: str) -> TableUpdate:
    up = TableUpdate("tensorflow", newest_known=m.newest_known("tensorflow"))
    releases = list(m.tensorflow_releases)
    known_series = {Version(r.version) for r in releases}
    newest_series = max(known_series) if known_series else None
    known_versions = {Version(v) for r in releases for v in r.versions}
    oldest = min(known_versions) if known_versions else None
    by_series: Dict[Version, Version] = {}
    patches: List[Version] = []
    for v in client.versions("tensorflow"):
        s = Version(series(v))
        if v in known_versions or (oldest is not None and v < oldest):
            continue
        if s in known_series:
            patches.append(v)
            continue
        if newest_series is not None and s <= newest_series:
            continue
        by_series[s] = min(by_series.get(s, v), v)
    files = client.project_files("tensorflow") if (by_series or patches) else []
    for v in patches:
        _tf_patch(client, files, v, date, up, next(r for r in releases if Version(r.version) == Version(series(v))))
    if not by_series:
        if not patches:
            up.messages.append(f"nothing newer than tensorflow {up.newest_known} on the index")
        return up
    prev = releases[-1] if releases else None
    for s in sorted(by_series):
        v = by_series[s]
        dist, meta, pins = _tf_metadata(client, v, up)
        if meta is None:
            continue
        row: Dict[str, Any] = {"version": str(s), "tested": str(v)}
        py = _python_spec(files, v, meta.requires_python)
        if not py:
            up.messages.append(f"tensorflow {v}: no Python range in the wheel tags or Requires-Python; skipped")
            continue
        row["python"] = py
        assumed = []
        runtime = next((p for k, p in sorted(pins.items()) if k.startswith("nvidia-cuda-runtime")), None)
        cudnn = next((p for k, p in sorted(pins.items()) if k.startswith("nvidia-cudnn")), None)
        low_rt, low_dnn = lower_bound(runtime), lower_bound(cudnn)
        if low_rt:
            row["cuda"] = series(low_rt)
        elif prev is not None:
            row["cuda"] = prev.cuda
            assumed.append(f"cuda assumed from tensorflow {prev.version}")
        if low_dnn:
            row["cudnn"] = series(low_dnn)
        elif prev is not None:
            row["cudnn"] = prev.cudnn
            assumed.append(f"cudnn assumed from tensorflow {prev.version}")
        if "cuda" not in row or "cudnn" not in row:
            up.messages.append(f"tensorflow {v}: no CUDA / cuDNN pins and no earlier release to copy; skipped")
            continue
        if meta.requires_python:
            row["requires_python"] = meta.requires_python
        if pins:
            row["and_cuda"] = pins
        if prev is not None:
            for k in ("gpu_platforms", "compute_capabilities", "compiler", "build_tool"):
                value = getattr(prev, k, None)
                if value:
                    row[k] = _plain(value)
            if prev.compute_capabilities:
                row["cc_verified"] = f"UNVERIFIED: assumed from tensorflow {prev.version}"
            assumed.append(f"gpu platforms, compute capabilities and compiler assumed from tensorflow {prev.version}")
        row["note"] = ("cuda / cudnn are the lower bounds of the and-cuda pins (the tested build configuration is not "
                       "in the metadata)")
        row["source"] = meta.source
        row["verified"] = _unverified(date, "; ".join(assumed))
        up.add("release", row)
        up.added.append(f"tensorflow {v} (new release {s}; and-cuda: CUDA {row['cuda']}, cuDNN {row['cudnn']})")
        up.messages.extend(f"tensorflow {s}: {a} (UNVERIFIED)" for a in assumed)
    return up


def _tf_metadata(client: IndexClient, v: Version, up: TableUpdate):
    """(wheel, metadata, the and-cuda extra's pins) of tensorflow ``v``; metadata None (said in ``up``) when unreadable."""
    dist, meta = client.release_metadata("tensorflow", str(v))
    if meta is None:
        up.messages.append(f"tensorflow {v}: its metadata could not be read; skipped")
        return dist, None, {}
    return dist, meta, {k: str(r.specifier) for k, r in
                        requirements(meta, extra="and-cuda", base=False, python=python_for(dist)).items()}


def _tf_patch(client: IndexClient, files, v: Version, date: str, up: TableUpdate, rel) -> None:
    """A ``[[patch]]`` row for a tensorflow release of a known series: its own pins and Python range."""
    dist, meta, pins = _tf_metadata(client, v, up)
    if meta is None:
        return
    row: Dict[str, Any] = {"version": str(v)}
    if pins:
        row["and_cuda"] = pins
    if meta.requires_python:
        row["requires_python"] = meta.requires_python
    py = _python_spec(files, v, meta.requires_python)
    if py:
        row["python"] = py
    row["pypi_wheel"] = dist.filename
    if rel.and_cuda and not pins:
        row["note"] = "this release's metadata has no and-cuda extra"
    row["source"] = meta.source
    row["verified"] = _learned(date)
    up.add("patch", row)
    up.added.append(f"tensorflow {v} (patch of the known {rel.version} release)")


# --------------------------------------------------------------------------- jax


def _jax(m, client: IndexClient, date: str) -> TableUpdate:
    up = TableUpdate("jax", newest_known=m.newest_known("jax"))
    releases = list(m.jax_releases)
    known = [Version(r.version) for r in releases]
    new = _new_versions(client.versions("jax"), known)
    if not new:
        up.messages.append(f"nothing newer than jax {up.newest_known} on the index")
        return up
    jaxlib_versions = set(client.versions("jaxlib"))
    for v in new:
        dist, meta = client.release_metadata("jax", str(v))
        if meta is None:
            up.messages.append(f"jax {v}: the index offers no metadata file; skipped")
            continue
        py = python_for(dist)
        jaxlib = _jaxlib_requirement(meta, py)
        if not jaxlib:
            up.messages.append(f"jax {v}: no jaxlib requirement in its metadata; skipped")
            continue
        row: Dict[str, Any] = {"version": str(v), "jaxlib": jaxlib}
        if meta.requires_python:
            row["requires_python"] = meta.requires_python
        cuda_extra = requirements(meta, extra="cuda", base=False, python=py)
        for name in ("cuda12", "cuda13"):
            if canonicalize_name(f"jax-{name}-plugin") in cuda_extra:
                row["cuda_extra"] = name
                break
        notes = []
        if not any(_spec_contains(jaxlib, jv) for jv in jaxlib_versions):
            notes.append(f"no jaxlib matching {jaxlib} on the index")
        if notes:
            row["note"] = "; ".join(notes)
        row["source"] = meta.source
        row["verified"] = _learned(date)
        plugins = []
        for name in ("cuda12", "cuda13"):
            package = f"jax-{name}-plugin"
            preq = requirements(meta, extra=name, base=False, python=py).get(canonicalize_name(package))
            if preq is None:
                continue
            own = {k: str(r.specifier) for k, r in requirements(meta, extra=name, base=False, python=py).items()}
            prow = _jax_plugin(m, client, v, name, package, str(preq.specifier), date, up, own)
            if prow is not None:
                up.add("plugin", prow)
                plugins.append(f"{name}: cuDNN {prow['cudnn']}")
        up.add("release", row)
        up.added.append(f"jax {v} (jaxlib {jaxlib}" + ("; " + "; ".join(plugins) if plugins else "") + ")")
    return up


def _jax_plugin(m, client: IndexClient, v: Version, name: str, package: str, pin: str, date: str,
                up: TableUpdate, own_extra: Optional[Dict[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The plugin row of jax ``v``; the NVIDIA pins are read where they live: the plugin's with-cuda extra,
    or (jax <= 0.4.29) jax's own ``cudaNN`` extra (``own_extra``)."""
    major = int(name[len("cuda"):])
    prev = None  # the nearest earlier release's plugin row (skipped versions sit between known ones)
    for rel in m.jax_releases:
        if name in rel.plugins and Version(rel.version) < v:
            prev = rel.plugins[name]
    pversion = exact_pin(pin) or str(v)
    pdist, pmeta = client.release_metadata(package, pversion)
    row: Dict[str, Any] = {"jax": str(v), "name": name, "package": package, "pin": pin, "cuda_major": major}
    assumed = []
    if pmeta is not None:
        py = python_for(pdist)
        with_cuda = {k: str(r.specifier) for k, r in requirements(pmeta, extra="with-cuda", base=False, python=py).items()}
        base = requirements(pmeta, python=py)
        pjrt = base.get(canonicalize_name(f"jax-{name}-pjrt"))
        if pjrt is not None:
            row["pjrt"] = f"jax-{name}-pjrt{pjrt.specifier}"
        cudnn = next((s for k, s in sorted(with_cuda.items()) if k.startswith("nvidia-cudnn")), None)
        runtime = with_cuda.get(f"nvidia-cuda-runtime-cu{major}", with_cuda.get("nvidia-cuda-runtime"))
        source = pmeta.source
    else:
        cudnn, runtime, source = None, None, None
        up.messages.append(f"jax {v} {name}: {package} {pversion} not on the index"
                           + (f"; its cuDNN assumed from jax {prev.jax} (UNVERIFIED)" if prev is not None else "; skipped"))
    own = own_extra or {}
    own_cudnn = next((s for k, s in sorted(own.items()) if k.startswith("nvidia-cudnn")), None)
    if not cudnn and own_cudnn:
        cudnn = own_cudnn
        runtime = runtime or own.get(f"nvidia-cuda-runtime-cu{major}")
    if cudnn and lower_bound(cudnn):
        row["cudnn"], row["cudnn_min"] = cudnn, str(lower_bound(cudnn))
    elif prev is not None:
        row["cudnn"], row["cudnn_min"] = prev.cudnn, prev.cudnn_min
        assumed.append(f"cuDNN assumed from jax {prev.jax} {name}")
    else:
        return None
    if runtime:
        row["cuda_runtime"] = runtime
    if prev is None:
        up.messages.append(f"jax {v} {name}: no earlier {name} plugin row to take driver_min / cc_min from; skipped")
        return None
    row["driver_min"], row["cc_min"] = prev.driver_min, prev.cc_min
    assumed.append(f"driver_min / cc_min assumed from jax {prev.jax} {name}")
    row["source"] = source or f"jax {v} metadata (extra {name}); {package} {pversion} not on the index"
    row["verified"] = _unverified(date, "; ".join(assumed))
    return row


# --------------------------------------------------------------------------- orchestration


def bundled_matrices(bundled_dir: Optional[Path] = None):
    """The bundled tables alone (no cache overlay): what refresh compares the index with."""
    from . import load_matrices

    with tempfile.TemporaryDirectory(prefix="envdoctor-nocache-") as empty:
        return load_matrices(cache_dir=Path(empty), bundled_dir=bundled_dir)


def refresh(client: IndexClient, date: Optional[str] = None, bundled_dir: Optional[Path] = None) -> RefreshResult:
    """Read the index and derive the rows (writes nothing).  Raises IndexUnavailable when offline."""
    day = date or _dt.date.today().isoformat()
    m = bundled_matrices(bundled_dir)
    # each spec's learner ("module:function", taking (matrices, client, date) and returning a TableUpdate)
    updates: Dict[str, TableUpdate] = {
        str(s.refresh_table): resolve_dotted(str(s.refresh_learner))(m, client, day) for s in refresh_specs()}
    for up in updates.values():
        for kind, rows in list(up.rows.items()):
            good = []
            for row in rows:
                errors = L.validate_row(up.table, kind, row)
                if errors:
                    up.messages.append(f"derived [[{kind}]] row {row.get('version') or row.get('torch') or row.get('jax')} "
                                       f"is not valid ({errors[0][1]}); not written")
                else:
                    good.append(row)
            up.rows[kind] = good
    return RefreshResult(index_urls=list(client.urls), date=day, updates=updates)


def write_cache(result: RefreshResult, cache_dir: Path) -> RefreshResult:
    """Install the derived tables in ``cache_dir`` (atomic per file); remove stale ones."""
    cache_dir = Path(cache_dir)
    staged: List[Tuple[Path, Path]] = []
    try:
        for table, up in result.updates.items():
            target = cache_dir / f"{table}.toml"
            if up.empty:
                continue
            cache_dir.mkdir(parents=True, exist_ok=True)
            text = dump_table(table, result.date, up.rows, result.index_urls)
            fd, tmp = tempfile.mkstemp(prefix=f".{table}.", suffix=".toml.tmp", dir=str(cache_dir))
            tmp_path = Path(tmp)
            staged.append((tmp_path, target))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            raw, warnings = L.read_table_file(tmp_path, table, strict=True)
            if raw is None:
                raise RefreshError(f"derived {table} table would be rejected by the loader: "
                                   f"{warnings[0] if warnings else 'unknown reason'}; nothing written")
        for tmp_path, target in staged:
            os.replace(tmp_path, target)
            result.written.append(str(target))
        staged = []
    except OSError as exc:
        raise RefreshError(f"cannot write the cache in {cache_dir}: {exc.strerror or exc}; nothing written") from None
    finally:
        for tmp_path, _ in staged:
            try:
                tmp_path.unlink()
            except OSError:
                pass
    for table, up in result.updates.items():
        target = cache_dir / f"{table}.toml"
        if up.empty and target.exists():
            try:
                target.unlink()
                result.removed.append(str(target))
            except OSError:
                pass
    return result


# --------------------------------------------------------------------------- TOML output


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else _toml_str(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dump_table(table: str, collected: str, rows: Dict[str, List[Dict[str, Any]]], index_urls: Sequence[str]) -> str:
    lines = [
        f"# Written by `envdoctor matrices refresh` on {collected} from {', '.join(index_urls)}.",
        "# Rows here replace bundled rows with the same key and add new ones (see docs/matrices.md).",
        "# Derived rows are marked UNVERIFIED; rebuilt from scratch on every refresh.",
        f"schema = {_toml_str(f'{table}/{L.SCHEMA_VERSION}')}",
        f"collected = {_toml_str(collected)}",
    ]
    for kind in L.SPECS[table]:
        for row in rows.get(kind, []):
            lines.append("")
            lines.append(f"[[{kind}]]")
            keys = [k for k in row if k not in ("source", "verified")] + [k for k in ("source", "verified") if k in row]
            for k in keys:
                lines.append(f"{_toml_key(k)} = {_toml_value(row[k])}")
    return "\n".join(lines) + "\n"


def render_text(result: RefreshResult) -> str:
    out = [f"index: {', '.join(result.index_urls)}"]
    for table, up in result.updates.items():
        if up.added:
            out.append(f"{table}: added " + "; ".join(up.added))
        for msg in up.messages:
            out.append(f"  {table}: {msg}")
    if result.written:
        out.extend(f"wrote {p}" for p in result.written)
    if result.removed:
        out.extend(f"removed {p} (nothing newer than the bundled data)" for p in result.removed)
    if result.dry_run:
        out.append("dry run: nothing written")
    elif not result.written and not result.removed:
        out.append("nothing to write: the bundled data knows every release on the index")
    return "\n".join(out)


__all__ = ["REFRESH_TABLES", "RefreshError", "RefreshResult", "TableUpdate", "bundled_matrices", "dump_table",
           "refresh", "render_text", "write_cache"]
