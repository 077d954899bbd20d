"""``envdoctor matrices verify``: compare the tables with the metadata the package index publishes.

For every release a table covers, the Linux x86_64 wheel's core metadata is read and compared with
the table.  The metadata comes from the PEP 658 metadata file where the index offers one, else from
a ``file://`` copy of the wheel, else from the remote wheel's ``METADATA`` member read with HTTP range
requests (:mod:`envdoctor.knowledge.lazywheel`: a few kB per wheel, never the whole wheel), at most
``workers`` wheels at a time and within a total timeout:

* pytorch: per patch, ``Requires-Python``, the triton pin, and the PyPI-default variant's CUDA
  (``cuda-toolkit`` / ``nvidia-cuda-runtime-cuNN`` pin), cuDNN (``nvidia-cudnn-cuNN`` pin); the
  variant's ``nvidia_pins`` against the newest patch of the release.
* tensorflow: ``Requires-Python`` and the ``and-cuda`` extra's pins of the ``tested`` version, and the
  CUDA / cuDNN series those pins imply.
* jax: ``Requires-Python``, the jaxlib requirement, the plugin pin of each ``cudaNN`` extra, and the
  ``jax-cudaNN-plugin`` metadata (``with-cuda`` extra: cuDNN, CUDA runtime; the pjrt requirement).

Specifiers are compared by meaning: two agree when they admit the same versions among the versions
either one names and the releases the index lists for that project (``==0.4.31`` agrees with
``>=0.4.31,<=0.4.31``; ``>=0.4.30,<=0.4.31`` does not, 0.4.30 tells them apart).

A release the index does not have is reported as "not on index", not as a disagreement.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from . import lazywheel
from envdoctor.facts.versions import lower_bound, parse_version

from .index import (DistFile, IndexClient, Metadata, exact_pin, python_for, requirements, same_spec, spec_of,
                    wheel_platform)
from .tables import marker_holds

DEFAULT_TOTAL_TIMEOUT = 600.0
# Beyond each release's first wheel (Linux x86_64, lowest CPython), this many of the releases' other wheels (every
# platform and Python tag) are read too, drawn by a seeded generator: a defect only one Python's or one platform's
# wheel carries (a marker) is then found without reading every wheel of every release.
DEFAULT_SAMPLE = 48
DEFAULT_SEED = 0
NO_METADATA = "no metadata file (wheel not downloaded)"

TABLE_CHOICES = ("pytorch", "tensorflow", "jax")


@dataclass
class Disagreement:
    table: str
    release: str  # "torch 2.1.2"
    field: str  # "cudnn (variant cu121)"
    table_value: Optional[str]
    index_value: Optional[str]
    row: str  # file:line of the table row
    metadata: str  # where the index value was read

    def line(self) -> str:
        return (f"{self.table}: {self.release}: {self.field}: table says {self.table_value or '(nothing)'}, "
                f"index says {self.index_value or '(nothing)'}  [row {self.row}; metadata {self.metadata}]")


@dataclass
class Missing:
    table: str
    project: str
    version: str
    why: str  # "not on index" | "no metadata file" (remote wheel without a PEP 658 file: not downloaded)
    url: Optional[str] = None


@dataclass
class VerifyResult:
    index_urls: List[str]
    tables: List[str]
    disagreements: List[Disagreement] = field(default_factory=list)
    missing: List[Missing] = field(default_factory=list)
    notes: List[Disagreement] = field(default_factory=list)  # differences that need not be errors
    compared: int = 0  # number of field comparisons made
    releases_read: int = 0  # metadata files read
    range_reads: Optional[dict] = None  # lazywheel.Stats: wheels read by range requests, requests, bytes
    sample: Optional[dict] = None  # the other wheels drawn: size asked, population, drawn, read, seed

    def exit_code(self, strict: bool = False) -> int:
        if self.disagreements:
            return 1
        if self.releases_read == 0:
            return 2  # nothing could be compared: the index has none of the covered releases' metadata
        if strict and self.missing:
            return 1
        return 0

    def to_dict(self, strict: bool = False) -> dict:
        return {
            "index_urls": self.index_urls,
            "tables": self.tables,
            "releases_read": self.releases_read,
            "compared": self.compared,
            "range_reads": self.range_reads,
            "sample": self.sample,
            "disagreements": [asdict(d) for d in self.disagreements],
            "missing": [asdict(m) for m in self.missing],
            "notes": [asdict(n) for n in self.notes],
            "strict": strict,
            "exit_code": self.exit_code(strict),
        }


class _Verifier:
    def __init__(self, matrices, client: IndexClient, result: VerifyResult, collect: bool = False) -> None:
        self.m = matrices
        self.client = client
        self.r = result
        self.collect = collect  # first pass: only gather the wheels to read (for the concurrent prefetch)
        self.wanted: List[object] = []
        self.releases: List[Tuple[str, str]] = []  # (project, version) of every release read, in order
        self.drawn: Dict[Tuple[str, str], List[DistFile]] = {}  # the release's other wheels in the sample

    # ----------------------------------------------------------------- helpers

    def read(self, table: str, project: str, version: str) -> Tuple[Optional[DistFile], Optional[Metadata]]:
        if self.collect:
            self.wanted.append(self.client.pick_wheel(project, version))
            self.releases.append((project, version))
            return None, None
        dist, meta = self.client.release_metadata(project, version)
        if dist is None:
            self.r.missing.append(Missing(table, project, version, "not on index"))
            return None, None
        if meta is None:
            why = lazywheel.failure(self.client, dist) or NO_METADATA
            self.r.missing.append(Missing(table, project, version, why, dist.url))
            return dist, None
        self.r.releases_read += 1
        return dist, meta

    def wheels(self, table: str, project: str, version: str) -> List[Tuple[DistFile, Metadata, bool]]:
        """(wheel, metadata, first) of the release's first wheel, then of its wheels drawn into the sample."""
        dist, meta = self.read(table, project, version)
        out: List[Tuple[DistFile, Metadata, bool]] = []
        if dist is not None and meta is not None:
            out.append((dist, meta, True))
        if self.collect:
            return out
        for other in self.drawn.get((project, version), []):
            ometa = self.client.metadata(other)
            if ometa is None:
                why = lazywheel.failure(self.client, other) or NO_METADATA
                self.r.missing.append(Missing(table, project, f"{version} ({other.filename})", why, other.url))
                continue
            self.r.releases_read += 1
            if self.r.sample is not None:
                self.r.sample["read"] += 1
            out.append((other, ometa, False))
        return out

    def spec(self, table: str, release: str, fld: str, tval: Optional[str], ival: Optional[str], row, meta: Metadata,
             project: str = "") -> None:
        """Compare two specifiers (either may be absent: absent on the table side is not checked)."""
        if tval is None:
            return
        self.r.compared += 1
        if not self.same(tval, ival, project):
            self.r.disagreements.append(Disagreement(table, release, fld, tval, ival, row.origin, meta.source))

    def same(self, a: Optional[str], b: Optional[str], project: str) -> bool:
        """Same specifier by meaning, over the versions both name and the index's releases of ``project``."""
        return same_meaning(a, b, self._universe(project))

    def _universe(self, project: str) -> List[Version]:
        """The releases of ``project`` on the index pages already read (no page is fetched for this)."""
        files = getattr(self.client, "_pages", {}).get(canonicalize_name(project)) if project else None
        return sorted({Version(f.version.public) for f in files or []})

    def python(self, table: str, release: str, tval: Optional[str], project: str, version: str, row,
               meta: Metadata) -> None:
        """The table's Python range against the CPython tags of the release's manylinux x86_64 wheels."""
        have = wheel_pythons(self.client.project_files(project), version)
        if tval is None or not have:
            return
        self.r.compared += 1
        try:
            spec = SpecifierSet(tval)
        except InvalidSpecifier:
            spec = SpecifierSet("<0")
        said = [f"3.{n}" for n in range(0, 30) if spec.contains(f"3.{n}", prereleases=True)]
        got = [f"{a}.{b}" for a, b in have if a == 3]
        fld = "python (CPython tags of the manylinux x86_64 wheels)"
        if [p for p in got if p not in said]:  # wheels the table's range leaves out: the table is wrong
            self.r.disagreements.append(Disagreement(table, release, fld, tval, ", ".join(got), row.origin, meta.source))
        elif said != got:  # the table claims more: an index (or mirror) may list only some wheels
            self.r.notes.append(Disagreement(table, release, fld + " (the index lists fewer)", tval, ", ".join(got),
                                             row.origin, meta.source))

    def version(self, table: str, release: str, fld: str, tval: Optional[str], ival: object, row, meta: Metadata,
                depth: Optional[int] = None) -> None:
        """Compare two versions (``depth`` 2: only major.minor); `ival` may be a Version (a specifier's floor)."""
        if tval is None:
            return
        ival = None if ival is None else str(ival)
        self.r.compared += 1
        if ival is None or not _same_version(tval, ival, depth):
            self.r.disagreements.append(Disagreement(table, release, fld, tval, ival, row.origin, meta.source))

    # ----------------------------------------------------------------- pytorch

    def pytorch(self) -> None:
        for rel in self.m.pytorch_releases:
            newest = rel.newest_patch
            for patch in rel.patches:
                for dist, meta, first in self.wheels("pytorch", "torch", patch):
                    self._torch_wheel(rel, patch, patch == newest, dist, meta, first)

    def _torch_wheel(self, rel, patch: str, newest: bool, dist: DistFile, meta: Metadata, first: bool) -> None:
        """One torch wheel against the release: its Requires-Python, and, for its platform's default build, the
        CUDA / cuDNN pins; the triton pin and the variant's nvidia_pins are Linux x86_64 facts."""
        system, machine, key = wheel_platform(dist)
        release = f"torch {patch}" + ("" if first else f" ({dist.filename})")
        reqs = requirements(meta, python=python_for(dist), system=system, machine=machine)
        prow = rel.patch(patch)
        rp_row = prow if prow is not None and prow.requires_python else rel
        if first:
            py_row = prow if prow is not None and prow.python else rel
            self.python("pytorch", release, py_row.python, "torch", patch, py_row, meta)
        self.spec("pytorch", release, "requires_python", rp_row.requires_python, meta.requires_python, rp_row, meta)
        if prow is not None and prow.triton and key == "linux-x86_64":
            # the triton line may hold only below some Python (triton_marker): then the table expects none
            want = prow.triton if marker_holds(prow.triton_marker, python_for(dist), key) is not False else None
            self.r.compared += 1
            got = spec_of(reqs.get("triton"))
            if (want is None) != (got is None) or (want is not None and not self.same(want, got, "triton")):
                fld = "triton" + (f" (marker {prow.triton_marker})" if prow.triton_marker else "")
                self.r.disagreements.append(Disagreement("pytorch", release, fld, want, got, prow.origin, meta.source))
        if key is None:
            return
        dv = rel.default_variant(key)
        cuda_pin, toolkit_pin = _torch_cuda(reqs)
        cudnn_req = _first(reqs, "nvidia-cudnn-cu")
        if dv is None or dv.kind != "cuda":
            if cuda_pin is not None:
                self.r.compared += 1
                self.r.disagreements.append(Disagreement(
                    "pytorch", release, f"pypi_default[{key}]", dv.name if dv else None, _cu_name(cuda_pin),
                    rel.origin, meta.source))
            return
        label = f"(variant {dv.name})"
        if cuda_pin is None and not dv.nvidia_pins:
            return  # a build that bundles its CUDA (torch up to 1.12): its wheel pins nothing to compare
        if cuda_pin is None:
            self.r.compared += 1
            self.r.disagreements.append(Disagreement("pytorch", release, f"cuda {label}", dv.cuda,
                                                     "no CUDA runtime pin", dv.origin, meta.source))
            return
        self.version("pytorch", release, f"cuda {label}", dv.cuda, cuda_pin, dv, meta, depth=2)
        if dv.cuda_toolkit and toolkit_pin and not _same_version(dv.cuda_toolkit, toolkit_pin, None):
            # cuda_toolkit may name the toolkit the build used (RELEASE.md), which can differ from the
            # runtime wheels it pins: reported as a note, the pins themselves are compared below.
            self.r.notes.append(Disagreement("pytorch", release, f"cuda_toolkit {label} vs the cuda-toolkit pin",
                                             dv.cuda_toolkit, toolkit_pin, dv.origin, meta.source))
        self.version("pytorch", release, f"cudnn {label}", dv.cudnn, exact_pin(spec_of(cudnn_req)), dv, meta)
        if newest and dv.nvidia_pins and key == "linux-x86_64":
            index_pins = {k: str(v.specifier) for k, v in reqs.items() if k.startswith(("nvidia-", "cuda-"))}
            table_pins = {str(canonicalize_name(k)): v for k, v in dv.pins_for(python_for(dist), key).items()}
            for name in sorted(set(index_pins) | set(table_pins)):
                self.r.compared += 1
                if name not in table_pins or name not in index_pins or not self.same(
                        table_pins[name], index_pins[name], name):
                    self.r.disagreements.append(Disagreement(
                        "pytorch", release, f"nvidia_pins[{name}] {label}", table_pins.get(name),
                        index_pins.get(name), dv.origin, meta.source))

    # ----------------------------------------------------------------- tensorflow

    def tensorflow(self) -> None:
        for series in self.m.tensorflow_releases:
            for v in series.versions:  # the tested release and the [[patch]] rows, each with its own pins
                self._tensorflow(series.for_patch(v))

    def _tensorflow(self, rel) -> None:
        for dist, meta, first in self.wheels("tensorflow", "tensorflow", rel.tested):
            self._tensorflow_wheel(rel, dist, meta, first)

    def _tensorflow_wheel(self, rel, dist: DistFile, meta: Metadata, first: bool) -> None:
        """One tensorflow wheel: its Requires-Python; the and-cuda pins (a Linux x86_64 fact) on such wheels."""
        system, machine, key = wheel_platform(dist)
        release = f"tensorflow {rel.tested}" + ("" if first else f" ({dist.filename})")
        self.spec("tensorflow", release, "requires_python", rel.requires_python, meta.requires_python, rel, meta)
        if first:
            self.python("tensorflow", release, rel.python, "tensorflow", rel.tested, rel, meta)
        if key != "linux-x86_64":
            return
        pins = {k: str(v.specifier) for k, v in
                requirements(meta, extra="and-cuda", base=False, python=python_for(dist), system=system,
                             machine=machine).items()}
        table_pins = {str(canonicalize_name(k)): v for k, v in rel.and_cuda.items()}
        for name in sorted(set(pins) | set(table_pins)):
            self.r.compared += 1
            if name not in table_pins or name not in pins or not self.same(table_pins[name], pins[name], name):
                self.r.disagreements.append(Disagreement("tensorflow", release, f"and_cuda[{name}]",
                                                         table_pins.get(name), pins.get(name), rel.origin, meta.source))
        runtime = _first_spec(pins, "nvidia-cuda-runtime-cu")
        cudnn = _first_spec(pins, "nvidia-cudnn-cu")
        if runtime:
            self.version("tensorflow", release, "cuda", rel.cuda, lower_bound(runtime), rel, meta, depth=2)
        if cudnn:
            self.version("tensorflow", release, "cudnn", rel.cudnn, lower_bound(cudnn), rel, meta, depth=2)

    # ----------------------------------------------------------------- jax

    def jax(self) -> None:
        for rel in self.m.jax_releases:
            dist, meta = self.read("jax", "jax", rel.version)
            release = f"jax {rel.version}"
            extra_specs: Dict[str, Dict[str, str]] = {}  # jax's own cudaNN extra, by plugin name
            if meta is not None:
                py = python_for(dist)
                self.spec("jax", release, "requires_python", rel.requires_python, meta.requires_python, rel, meta)
                jaxlib = _jaxlib_requirement(meta, py)
                if jaxlib is not None:
                    self.spec("jax", release, "jaxlib", rel.jaxlib, jaxlib, rel, meta, "jaxlib")
                for name, plugin in rel.plugins.items():
                    ex = requirements(meta, extra=name, base=False, python=py)
                    preq = ex.get(canonicalize_name(plugin.package))
                    if preq is not None:
                        self.spec("jax", release, f"plugins.{name}.pin", plugin.pin, str(preq.specifier), plugin, meta,
                                  plugin.package)
                    extra_specs[name] = {k: str(v.specifier) for k, v in ex.items()}
            for name, plugin in rel.plugins.items():
                pversion = exact_pin(plugin.pin) or rel.version
                got: List[Tuple[Optional[DistFile], Optional[Metadata], bool]] = list(
                    self.wheels("jax", plugin.package, pversion))
                for pdist, pmeta, pfirst in (got or [(None, None, True)]):  # unread: jax's own extra still speaks
                    self._jax_plugin_wheel(rel, name, plugin, pversion, pdist, pmeta, pfirst, meta, extra_specs)

    def _jax_plugin_wheel(self, rel, name: str, plugin, pversion: str, pdist: Optional[DistFile],
                          pmeta: Optional[Metadata], first: bool, meta: Optional[Metadata],
                          extra_specs: Dict[str, Dict[str, str]]) -> None:
        """One wheel of a jax CUDA plugin (None: not read) against the plugin row: its with-cuda pins (or jax's own
        cudaNN extra's), and the pjrt requirement."""
        release = f"jax {rel.version}"
        prelease = f"{plugin.package} {pversion} (jax {rel.version})" + ("" if first or pdist is None
                                                                        else f" ({pdist.filename})")
        with_cuda: Dict[str, str] = {}
        base: Dict[str, Requirement] = {}
        if pmeta is not None:
            py = python_for(pdist)
            system, machine, _ = wheel_platform(pdist)
            with_cuda = {k: str(v.specifier) for k, v in
                         requirements(pmeta, extra="with-cuda", base=False, python=py, system=system,
                                      machine=machine).items()}
            base = requirements(pmeta, python=py, system=system, machine=machine)
        # the NVIDIA pins live in the plugin's with-cuda extra, or (jax <= 0.4.26) in jax's own cudaNN extra
        where, pins, src = (prelease, with_cuda, pmeta)
        if _first_spec(with_cuda, "nvidia-cudnn-cu") is None and meta is not None and \
                _first_spec(extra_specs.get(name, {}), "nvidia-cudnn-cu") is not None:
            if not first:
                return  # jax's own extra was compared with the plugin's first wheel
            where, pins, src = (f"{release} (extra {name})", extra_specs[name], meta)
        if src is None:
            return
        cudnn = _first_spec(pins, "nvidia-cudnn-cu")
        self.spec("jax", where, f"plugins.{name}.cudnn", plugin.cudnn, cudnn, plugin, src)
        self.version("jax", where, f"plugins.{name}.cudnn_min", plugin.cudnn_min, lower_bound(cudnn), plugin, src)
        runtime = pins.get(f"nvidia-cuda-runtime-cu{plugin.cuda_major}", pins.get("nvidia-cuda-runtime"))
        self.spec("jax", where, f"plugins.{name}.cuda_runtime", plugin.cuda_runtime, runtime, plugin, src)
        if pmeta is None:
            return
        if plugin.pjrt:
            pjrt_table = _req_or_none(plugin.pjrt)
            if pjrt_table is not None:
                got = base.get(canonicalize_name(pjrt_table.name))
                self.spec("jax", prelease, f"plugins.{name}.pjrt", str(pjrt_table.specifier),
                          str(got.specifier) if got is not None else None, plugin, pmeta)


def verify(matrices, client: IndexClient, tables: Sequence[str] = TABLE_CHOICES,
           workers: int = lazywheel.DEFAULT_WORKERS, total_timeout: Optional[float] = DEFAULT_TOTAL_TIMEOUT,
           status=None, sample: int = DEFAULT_SAMPLE, seed: int = DEFAULT_SEED) -> VerifyResult:
    """Compare ``tables`` with the index; raises IndexUnavailable when the index cannot be read; ``status(text,
    done, total)`` hears what it waits on.

    Each release's first wheel (Linux x86_64, lowest CPython) is read, and ``sample`` of the releases' other
    wheels, drawn by :func:`draw_sample` with ``seed``. Wheels without a PEP 658 file are first read concurrently
    (``workers`` at a time, all within ``total_timeout`` seconds); a wheel not read in time is reported as not
    checked, with the reason.
    """
    result = VerifyResult(index_urls=list(client.urls), tables=list(tables))
    first = _Verifier(matrices, client, VerifyResult(index_urls=[], tables=[]), collect=True)
    for i, t in enumerate(tables):
        if status is not None:
            status(f"matrices verify: reading the index's {t} pages", i + 1, len(tables))
        getattr(first, t)()
    population = other_wheels(client, first.releases, first.wanted)
    drawn = draw_sample(population, sample, seed)
    result.sample = {"size": sample, "seed": seed, "population": len(population), "drawn": len(drawn), "read": 0}
    lazywheel.prefetch(client, list(first.wanted) + drawn, workers=workers, total_timeout=total_timeout,
                       status=status)
    v = _Verifier(matrices, client, result)
    for d in drawn:
        v.drawn.setdefault((d.name, str(d.version.public)), []).append(d)
    for t in tables:
        if status is not None:
            status(f"matrices verify: comparing {t}")
        getattr(v, t)()
    st = lazywheel.stats(client)
    result.range_reads = {"wheels": st.wheels, "requests": st.requests, "bytes": st.bytes, "local_copies": st.local}
    return result


def other_wheels(client: IndexClient, releases: Sequence[Tuple[str, str]], first: Sequence[object]) -> List[DistFile]:
    """Every wheel of the ``releases`` (any platform, any Python tag) other than the ones read first; yanked wheels
    and local-label builds left out."""
    skip = {getattr(d, "url", None) for d in first}
    out: List[DistFile] = []
    seen = set()
    for project, version in releases:
        want = parse_version(version)
        if want is None:
            continue
        for f in client.project_files(project):
            if f.url in skip or f.url in seen or f.yanked or f.version.local or Version(f.version.public) != want:
                continue
            seen.add(f.url)
            out.append(f)
    return out


def draw_sample(population: Sequence[DistFile], size: int, seed: int) -> List[DistFile]:
    """``size`` wheels of ``population``, drawn with ``random.Random(seed)``: round-robin over the groups of one
    (project, platform, Python tag), so a small sample still reaches every platform and Python the releases have;
    random within each group. The same population, size and seed draw the same wheels."""
    if size <= 0 or not population:
        return []
    rng = random.Random(seed)
    groups: Dict[Tuple[str, str, str], List[DistFile]] = {}
    for f in sorted(population, key=lambda d: d.filename):
        tags = sorted({t.interpreter for t in f.tags})
        groups.setdefault((f.name, ",".join(f.platforms), ",".join(tags)), []).append(f)
    order = sorted(groups)
    rng.shuffle(order)
    for key in order:
        rng.shuffle(groups[key])
    drawn: List[DistFile] = []
    while len(drawn) < size and any(groups[k] for k in order):
        for key in order:
            if groups[key] and len(drawn) < size:
                drawn.append(groups[key].pop())
    return drawn


def wheel_pythons(files, version: str) -> List[Tuple[int, int]]:
    """CPython versions (free-threaded builds included) of the manylinux x86_64 wheels of ``version``."""
    want = parse_version(version)
    if want is None:
        return []
    out = set()
    for f in files:
        if Version(f.version.public) == Version(want.public) and f.is_manylinux_x86_64 and not f.yanked:
            out.update(f.cpython_versions())
    return sorted(out)


def same_meaning(a: Optional[str], b: Optional[str], universe: Iterable[Version] = ()) -> bool:
    """Two specifiers admit the same versions among those either names and ``universe``."""
    if same_spec(a, b):
        return True
    if a is None or b is None:
        return False
    try:
        sa, sb = SpecifierSet(str(a).strip("() ")), SpecifierSet(str(b).strip("() "))
    except InvalidSpecifier:
        return False
    probe = set(universe)
    for spec in list(sa) + list(sb):
        bound = parse_version(spec.version.replace(".*", ""))
        if bound is None:
            return False
        probe.add(bound)
    return all(sa.contains(v, prereleases=True) == sb.contains(v, prereleases=True) for v in probe)


def render_text(result: VerifyResult, strict: bool = False) -> str:
    lines = [f"index: {', '.join(result.index_urls)}",
             f"tables: {', '.join(result.tables)}; {result.releases_read} metadata files read, "
             f"{result.compared} values compared"]
    sm = result.sample or {}
    if sm:
        lines.append(f"sample: {sm.get('drawn', 0)} of the releases' {sm.get('population', 0)} other wheels (every "
                     f"platform and Python tag; --sample {sm.get('size', 0)}, --seed {sm.get('seed', 0)}), "
                     f"{sm.get('read', 0)} read")
    rr = result.range_reads or {}
    if rr.get("wheels") or rr.get("local_copies"):
        lines.append(f"wheels without a metadata file: {rr.get('wheels', 0)} read with {rr.get('requests', 0)} HTTP "
                     f"range requests ({rr.get('bytes', 0) / 1024:.0f} kB), {rr.get('local_copies', 0)} from local "
                     "file:// copies")
    if result.disagreements:
        lines.append(f"{len(result.disagreements)} disagreement(s):")
        lines.extend("  " + d.line() for d in result.disagreements)
    elif result.releases_read == 0:
        lines.append("nothing could be compared: the index has no metadata of any covered release")
    else:
        lines.append("no disagreements")
    if result.notes:
        lines.append(f"{len(result.notes)} note(s) (not counted as disagreements):")
        lines.extend("  " + n.line() for n in result.notes)
    if result.missing:
        groups: Dict[Tuple[str, str], List[str]] = {}
        for m in result.missing:
            groups.setdefault((m.why, m.project), []).append(m.version)
        lines.append(f"{len(result.missing)} release(s) not checked" + (" (--strict: counted as failures)" if strict else "") + ":")
        for (why, project), versions in sorted(groups.items()):
            lines.append(f"  {why}: {project} {', '.join(versions)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- helpers


def _same_version(a: str, b: str, depth: Optional[int]) -> bool:
    va, vb = parse_version(str(a)), parse_version(str(b))
    if va is None or vb is None:
        return str(a).strip() == str(b).strip()
    if depth:
        ra, rb = (va.release + (0,) * depth)[:depth], (vb.release + (0,) * depth)[:depth]
        return ra == rb
    return va == vb


def _cu_name(cuda: str) -> str:
    v = Version(cuda)
    return f"cu{v.major}{(v.release + (0,))[1]}"


def _first(reqs: Dict[str, Requirement], prefix: str) -> Optional[Requirement]:
    for name in sorted(reqs):
        if name.startswith(prefix):
            return reqs[name]
    return None


def _first_spec(specs: Dict[str, str], prefix: str) -> Optional[str]:
    for name in sorted(specs):
        if name.startswith(prefix):
            return specs[name]
    return None


def _torch_cuda(reqs: Dict[str, Requirement]) -> Tuple[Optional[str], Optional[str]]:
    """(CUDA version the runtime pin names, cuda-toolkit pin) of a torch wheel's requirements."""
    toolkit = exact_pin(spec_of(reqs.get("cuda-toolkit")))
    if toolkit:
        return toolkit, toolkit
    runtime = _first(reqs, "nvidia-cuda-runtime")
    pin = exact_pin(spec_of(runtime)) if runtime is not None else None
    return pin, None


def _jaxlib_requirement(meta: Metadata, python: str) -> Optional[str]:
    """jax's own jaxlib requirement; jax <= 0.4.26 had none outside extras: then the ``cpu`` extra's."""
    base = requirements(meta, python=python)
    if "jaxlib" in base:
        return str(base["jaxlib"].specifier)
    cpu = requirements(meta, extra="cpu", base=False, python=python)
    if "jaxlib" in cpu:
        return str(cpu["jaxlib"].specifier)
    return None


def _req_or_none(text: str) -> Optional[Requirement]:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None
