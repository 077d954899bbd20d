"""What an install would put on the target, worked out from the pins and the matrices (no download), as Framework
entries laid over the target snapshot.  Everything here is pure: InputUnit + Snapshot + Matrices in, Plan out.

How a version is chosen (the way pip / uv / conda would):

* torch / torchvision / torchaudio: every (patch, build) the data knows that an index *in effect* serves -- PyPI
  serves each release's default build for the platform without a local label (``2.1.2`` = cu121 on Linux x86_64),
  ``https://download.pytorch.org/whl/<variant>`` serves that variant with its label (``2.1.2+cu118``), the root
  ``/whl/`` index and ``torch_stable.html`` serve every variant -- is a candidate; the requirement specifiers and the
  target Python (the release's wheel range) filter them; pip takes the highest version, and a local label sorts
  above none, so ``torch==2.1.2`` with an extra index for cu118 installs ``2.1.2+cu118``; uv (pyproject with uv
  indexes, uv.lock) takes the first index that has the package at all.
* tensorflow (tensorflow-cpu, tf-nightly ...): the data's release rows (their tested patch, or the pinned patch of a
  known series); [and-cuda] adds the release's nvidia-* pins.
* jax: the data's rows; [cuda12] / [cuda13] (also cuda12_pip / cuda12_local / cuda) add jaxlib, the plugin and its
  PJRT, [with-cuda] pins included unless *_local.
* conda: ``pytorch`` from the pytorch channel with ``pytorch-cuda=X.Y`` / ``cudatoolkit`` / ``cpuonly``.

A range resolves to the newest matching release the data knows; the plan says so in ``assumptions``.  What cannot
be installed becomes a :class:`Problem` (read by envdoctor/rules/gate_rules.py, ED800-ED849).
"""
from __future__ import annotations

import datetime
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlparse

from packaging.markers import InvalidMarker, Marker
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.default_index import DEFAULT_INDEX_LABEL, default_index, is_default_index
from envdoctor.facts.platform import STATED_PLATFORMS, marker_env_for, platform_facts, platform_of, wheel_tag_fits
from envdoctor.facts.versions import parse_version
from envdoctor.frameworks import jax as jax_fw, registry, tensorflow as tf_fw, torch as torch_fw
from envdoctor.frameworks.base import Target as FrameworkTarget, python_fits
from envdoctor.frameworks.jax import jax_candidate
from envdoctor.gate.constraints import companion_rows, plan_effects, torch_constraints, torch_patch_pythons
from envdoctor.gate.inputs import IndexOption, InputRequirement, InputUnit, Location
from envdoctor.gate.trust import known_index, known_indexes
from envdoctor.snapshot import GPU, Driver, Evidence, Framework, Platform, ProbeStatus, PythonEnv, Snapshot
from envdoctor.target_options import resolve_gpu

PYPI = default_index() or DEFAULT_INDEX_LABEL  # asked from pip: envdoctor never names a registry host itself
TARGET_PLATFORMS = STATED_PLATFORMS  # what --platform may name (envdoctor.facts.platform owns the keys)
TORCH_FAMILY = tuple(torch_fw.SPEC.distributions)  # torch and its companions, as the torch spec owns them
TF_DISTS = tuple(tf_fw.SPEC.distributions)  # tensorflow, tensorflow-cpu, tensorflow-gpu, tf-nightly ...
_PLUGIN = re.compile(r"^jax-cuda(\d+)-(plugin|pjrt)$")
_VARIANT = re.compile(r"^(cpu|cu\d{2,3}|rocm\d+(\.\d+)*)$")
_INDEX_SPELLINGS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--no-index")


def _v(text: Any) -> Optional[Version]:
    return parse_version(text)


def _spec(text: Optional[str]) -> Optional[SpecifierSet]:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        return None


def _public(text: str) -> str:
    v = _v(text)
    return v.public if v is not None else text


# --------------------------------------------------------------------------- the target


@dataclass
class Target:
    platform: Optional[str]  # linux-x86_64 | linux-aarch64 | win-amd64 | macos-arm64 | macos-x86_64 | None
    wsl: bool
    python: Optional[Version]
    python_from: str  # "target" or the input line that pins it (conda)
    env: Dict[str, str]
    platform_known: bool

    @property
    def tf_platform(self) -> Optional[str]:
        return "wsl2" if self.wsl else self.platform

    @property
    def python_xy(self) -> str:
        if self.python is None:
            return "?"
        rel = self.python.release + (0,)
        return f"{rel[0]}.{rel[1]}"

    def marker(self, text: Optional[str], extras: Sequence[str] = ()) -> Optional[bool]:
        """Does a PEP 508 marker hold on the target?  None when it reads a fact the target does not state."""
        if not text:
            return True
        try:
            mk = Marker(text)
        except InvalidMarker:
            return None
        if self.python is None and re.search(r"python_(full_)?version|implementation_version", text):
            return None
        if not self.platform_known and re.search(r"sys_platform|platform_system|platform_machine|os_name", text):
            return None
        values = [""]
        if "extra" in text or "group" in text:
            encoded = re.findall(r"""['"]((?:extra|group)-\d+-[^'"]+)['"]""", text)
            for x in extras:
                values.append(x)
                values.extend(e for e in encoded if e.endswith("-" + x))
        results = []
        for value in values:
            env = dict(self.env)
            env["extra"] = value
            try:
                results.append(bool(mk.evaluate(env)))
            except Exception:  # noqa: BLE001 - an odd marker: unknown
                return None
        return any(results)


def target_of(snap: Snapshot, python: Optional[str] = None, python_from: str = "target") -> Target:
    plat = platform_of(snap)
    pv = _v(python if python is not None else snap.python.version)
    if pv is not None and (pv.is_prerelease or pv.local):
        pv = Version(pv.base_version)
    system = (snap.platform.system or "").lower()
    # the one marker environment check and lock use too, so a PyPy target reads implementation_name as "pypy" here
    env = marker_env_for(snap.platform.system, snap.platform.machine, str(pv) if pv is not None else None,
                         snap.python.implementation or "cpython")
    return Target(plat, bool(snap.platform.wsl), pv, python_from, env, platform_known=bool(system))


# --------------------------------------------------------------------------- a stated target (--driver / --gpu ...)


def stated_snapshot(matrices: Any, *, driver: Optional[str] = None, gpus: Sequence[str] = (),
                    python: Optional[str] = None, platform: Optional[str] = None, cpu: bool = False,
                    base: Optional[Snapshot] = None, cuda: Optional[str] = None,
                    glibc: Optional[str] = None) -> Snapshot:
    """A Snapshot from stated facts (over ``base`` when given: the stated facts replace its parts).
    What is not stated stays unknown (probe status "skipped"), so rules stay silent about it.
    ``cuda`` is the CUDA line the target's driver runs (as nvidia-smi's "CUDA Version")."""
    from envdoctor import __version__

    if cpu and (driver or gpus or cuda):
        raise ValueError("--cpu cannot be combined with --driver, --gpu or --cuda (a CPU-only target has none)")
    if driver is not None and _v(driver) is None:
        raise ValueError(f"--driver {driver!r} is not a driver version (e.g. 535.104.05)")
    if python is not None and (_v(python) is None or not re.match(r"^\s*3\.\d{1,2}(\.\d+)?\s*$", python)):
        raise ValueError(f"--python-version {python!r} is not a Python version (e.g. 3.11)")
    if platform is not None and platform not in TARGET_PLATFORMS:
        raise ValueError(f"--platform {platform!r}: one of {', '.join(TARGET_PLATFORMS)}")
    stated_all = base is None
    snap = Snapshot.from_dict(base.to_dict()) if base is not None else Snapshot(
        envdoctor_version=__version__, root="(stated)",
        created=datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat())
    statuses = {p.name: p for p in snap.probes}

    def status(name: str, ok: bool, why: str = "") -> None:
        statuses[name] = ProbeStatus(name, "ok" if ok else "skipped", "" if ok else why)  # not stated: not probed

    if platform is not None or stated_all:
        facts = platform_facts(platform or "linux-x86_64")
        assert facts is not None  # a stated platform is one of TARGET_PLATFORMS, each a key with facts
        snap.platform = Platform(system=facts.system, machine=facts.machine, wsl=facts.wsl,
                                 evidence=[Evidence("stated:--platform", platform or "linux-x86_64 (default)")])
        snap.python.platform_tag = facts.tag
        status("platform", True)
    platform_stated = platform is not None or stated_all
    if glibc is not None or (platform_stated and snap.platform.system == "Linux"):
        from envdoctor.target_options import GLIBC_DEFAULT

        # one value for the header, the snapshot and the resolver's manylinux tags; a stated Linux platform
        # without --glibc gets the documented default, not the base snapshot's machine's
        snap.platform.glibc = glibc or GLIBC_DEFAULT
        snap.platform.evidence.append(Evidence("stated:--glibc", glibc or f"{GLIBC_DEFAULT} (default)"))
    if gpus or driver is not None or cuda is not None or cpu or stated_all:
        gpu_list = []
        for i, g in enumerate(gpus):
            name, cc = resolve_gpu(matrices, g)
            gpu_list.append(GPU(index=i, name=name, compute_capability=cc, source="nvml"))
        if cpu or (driver is None and cuda is None and not gpu_list):
            snap.driver = Driver(state="not_installed", nvml="missing", nvidia_smi="missing", source="stated",
                                 evidence=[Evidence("stated:--cpu" if cpu else "stated", "no NVIDIA driver")])
            snap.gpus = []
            status("nvidia", True)
        elif driver is not None or cuda is not None:
            snap.driver = Driver(state="ok", version=driver.strip() if driver else None, cuda_version=cuda,
                                 source="stated:--driver" if driver else "stated:--cuda", nvml="ok", nvidia_smi="ok",
                                 evidence=[Evidence("stated:--driver", driver.strip())] if driver else [])
            if cuda is not None:
                snap.driver.evidence.append(Evidence("stated:--cuda", cuda))
            if gpu_list or stated_all:
                snap.gpus = gpu_list
            status("nvidia", True)
        else:
            snap.driver = Driver(state="unknown", source="stated", evidence=[Evidence("stated", "driver not stated")])
            snap.gpus = gpu_list
            status("nvidia", False, "driver not stated")
    if python is not None or stated_all:
        snap.python = PythonEnv(version=(python or "").strip(), implementation="cpython", kind="venv",
                                platform_tag=snap.python.platform_tag,
                                evidence=[Evidence("stated:--python", python.strip())] if python else [])
        status("python", python is not None, "Python not stated")
    if stated_all:
        for name in ("toolkits", "cudnn", "loader", "rocm"):
            status(name, False, "stated target: not stated")
    snap.probes = list(statuses.values())
    return snap


# --------------------------------------------------------------------------- sources (indexes)


@dataclass
class Source:
    url: str
    kind: str  # pypi | mirror | torch-variant | torch-all | torch-nightly | jax-releases | other | unknown | direct
    variant: Optional[str] = None
    via: str = ""
    loc: Optional[Location] = None

    def describe(self) -> str:
        where = f", {self.loc}" if self.loc else ""
        return f"{self.url} ({self.via}{where})" if self.via else self.url

    @property
    def pypi_like(self) -> bool:
        return self.kind in ("pypi", "mirror")


def classify_url(url: str) -> Tuple[str, Optional[str]]:
    """What an index / find-links URL serves, as far as the data can tell (matrices/gate_indexes.toml)."""
    try:
        u = urlparse(url.strip())
    except ValueError:
        return "unknown", None
    if is_default_index(url):
        return "pypi", None
    known = known_index(url)
    if known is not None and known.kind == "pytorch":
        # PyTorch's index: /whl/ (all variants), /whl/torch_stable.html, /whl/torch/, /whl/<variant>, /whl/nightly
        base = urlparse(known.url).path.rstrip("/")
        parts = [p for p in (u.path or "").rstrip("/")[len(base):].split("/") if p]
        if not parts or parts[0] in ("torch_stable.html", "torch"):
            return "torch-all", None
        if parts[0] in ("nightly", "test"):
            return "torch-nightly", None
        if _VARIANT.match(parts[0]):
            return "torch-variant", parts[0]
        return "unknown", None
    if known is not None:
        return ("jax-releases" if known.kind == "jax-releases" else "other"), None
    host = (u.hostname or "").lower()
    if "pypi" in host or "/pypi" in (u.path or "").lower():
        return "mirror", None
    return "unknown", None


def jax_releases_page() -> str:
    """The find-links page JAX's guide names for its CUDA jaxlib wheels (matrices/gate_indexes.toml)."""
    return next((k.serving or k.url for k in known_indexes() if k.kind == "jax-releases"), "")


def _source(url: str, via: str, loc: Optional[Location]) -> Source:
    kind, variant = classify_url(url)
    return Source(url, kind, variant, via, loc)


@dataclass
class Sources:
    items: List[Source]
    strategy: str  # pip | first-index
    notes: List[str] = field(default_factory=list)
    local: bool = False  # built from a local path / VCS: not judged

    @property
    def unknown(self) -> List[Source]:
        """Indexes whose content the data cannot tell: unknown hosts, and PyPI mirrors other than the default index (a
        private "pypi" repository may proxy the PyTorch index too) -- no error is built on what they lack."""
        return [s for s in self.items if s.kind in ("unknown", "mirror")]


def pip_sources(indexes: Sequence[IndexOption]) -> Sources:
    primary: Optional[IndexOption] = None
    extra: List[Source] = []
    links: List[Source] = []
    no_index = False
    for o in indexes:
        if o.kind == "index-url":
            primary = o
        elif o.kind == "extra-index-url":
            extra.append(_source(o.url, "--extra-index-url", o.loc))
        elif o.kind == "find-links":
            links.append(_source(o.url, "--find-links", o.loc))
        elif o.kind == "no-index":
            no_index = True
    items: List[Source] = []
    if not no_index:
        items.append(_source(primary.url, "--index-url", primary.loc) if primary is not None
                     else Source(PYPI, "pypi", None, "default index"))
        items.extend(extra)
    items.extend(links)
    return Sources(items, "pip")


def uv_sources(unit: InputUnit, req: InputRequirement, target: Target, selected: Sequence[Tuple[str, str]]) -> Sources:
    """uv: a [tool.uv.sources] entry that applies pins the index; otherwise the non-explicit [[tool.uv.index]]
    entries in order, then the default index (PyPI unless one is marked default) -- the first that has it wins."""
    named = {o.name: o for o in unit.indexes if o.kind == "uv-index" and o.name}
    notes: List[str] = []
    entries = unit.sources.get(req.name) or []
    sel_extras = [n for k, n in selected if k == "extra"]
    sel_groups = [n for k, n in selected if k == "group"]
    for e in entries:
        if "extra" in e and not (e["extra"] in sel_extras or req.group == ("extra", e["extra"])):
            continue
        if "group" in e and not (e["group"] in sel_groups or req.group == ("group", e["group"])):
            continue
        if "marker" in e:
            ok = target.marker(e["marker"])
            if ok is False:
                continue
            if ok is None:
                notes.append(f"[tool.uv.sources] {req.name} marker {e['marker']!r} cannot be evaluated for the target; used")
        if "index" in e:
            o = named.get(e["index"])
            if o is None:
                notes.append(f"[tool.uv.sources] {req.name} names index {e['index']!r}, which no [[tool.uv.index]] defines")
                return Sources([], "first-index", notes)
            return Sources([_source(o.url, f"uv index {o.name!r}", o.loc)], "first-index", notes)
        if "url" in e:
            return Sources([Source(e["url"], "direct", None, "uv source url")], "first-index", notes)
        return Sources([], "first-index", notes + [f"{req.name} comes from a local path / git source: not judged"], local=True)
    items: List[Source] = []
    default = None
    for o in unit.indexes:
        if o.kind == "uv-index" and not o.explicit:
            if o.default:
                default = o
            else:
                items.append(_source(o.url, f"uv index {o.name!r}" if o.name else "uv index", o.loc))
        elif o.kind == "extra-index-url":
            items.append(_source(o.url, "extra-index-url", o.loc))
        elif o.kind == "index-url":
            default = o
    items.append(_source(default.url, "default index", default.loc) if default is not None
                 else Source(PYPI, "pypi", None, "default index"))
    return Sources(items, "first-index", notes)


# --------------------------------------------------------------------------- the plan model


@dataclass
class Problem:
    """Why (part of) the install cannot work as written; gate_rules.py turns it into a finding."""

    kind: str  # not-served | variant-unpublished | unknown-version | no-wheel-python | no-wheel-platform | contradict |
    #            wheel-tags | ignored-option | pins-unresolvable | no-extra | deprecated-dist
    severity: str
    subject: str
    locs: List[Location]
    facts: Dict[str, Any] = field(default_factory=dict)


@dataclass
class PlannedPackage:
    family: str  # torch | torchvision | torchaudio | tensorflow | jax | jaxlib | jax-plugin | nvidia
    name: str  # distribution
    requirements: List[InputRequirement] = field(default_factory=list)
    constraints: List[InputRequirement] = field(default_factory=list)
    version: Optional[str] = None
    source: Optional[Source] = None
    frameworks: List[Framework] = field(default_factory=list)
    summary: str = ""  # "torch 2.1.2+cu121 (CUDA 12.1, cuDNN 8.9.2.26)"
    assumptions: List[str] = field(default_factory=list)
    installable: bool = True

    @property
    def primary(self) -> InputRequirement:
        """The first line that names the package (a constraint where only constraints do); ``_Planner._package``
        makes every planned package from at least one."""
        reqs = self.requirements or self.constraints
        if not reqs:
            raise ValueError(f"planned package {self.name} has no requirement")
        return reqs[0]

    @property
    def locs(self) -> List[Location]:
        return [r.loc for r in self.requirements + self.constraints]


#: one nvidia-* pin on the plan: (specifier, who pins it, the input line behind it, the planned framework that pins it)
PlannedPin = Tuple[SpecifierSet, str, Optional[Location], Optional[Framework]]


@dataclass
class Plan:
    unit: InputUnit
    target: Target
    packages: List[PlannedPackage] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    assumptions: List[str] = field(default_factory=list)
    installed: Dict[str, str] = field(default_factory=dict)  # distribution -> version the install leaves
    pins: Dict[str, List[PlannedPin]] = field(default_factory=dict)  # package -> [(spec, owner, loc, Framework)]
    resolver: str = ""  # how the versions were found: "uv 0.x for Python 3.10 on ..." or "offline: why"
    not_judged: List[Tuple[str, str]] = field(default_factory=list)  # (input line, why it was not judged)
    indirect: Dict[str, str] = field(default_factory=dict)  # input line -> why gate/constraints.py could not judge it ("": judged)

    @property
    def frameworks(self) -> List[Framework]:
        return [fw for p in self.packages for fw in p.frameworks]

    def input_locations(self) -> Dict[str, Location]:
        return {str(r.loc): r.loc for r in self.unit.requirements}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "input": self.unit.path,
            "kind": self.unit.kind,
            "files": list(self.unit.files),
            "target_python": str(self.target.python) if self.target.python is not None else None,
            "target_python_from": self.target.python_from,
            "target_platform": self.target.platform,
            "packages": [{
                "name": p.name, "family": p.family, "version": p.version, "summary": p.summary,
                "installable": p.installable,
                "source": p.source.describe() if p.source else None,
                "locations": [str(x) for x in p.locs],
                "requirements": [r.raw for r in p.requirements + p.constraints],
                "frameworks": [{"name": f.name, "distribution": f.distribution, "version": f.version, "build": f.build,
                                "cuda_version": f.cuda_version, "cudnn_version": f.cudnn_version,
                                "requires": list(f.requires)} for f in p.frameworks],
                "assumptions": list(p.assumptions),
            } for p in self.packages],
            "installed": dict(sorted(self.installed.items())),
            "assumptions": list(self.assumptions),
            "resolver": self.resolver,
            "not_judged": [{"location": loc, "why": why} for loc, why in self.not_judged],
        }


# --------------------------------------------------------------------------- planning


def family_of(req: InputRequirement) -> Optional[str]:
    n = req.name
    if req.conda:
        return "conda-torch" if n in ("pytorch", "pytorch-gpu") else None
    if n in TORCH_FAMILY:
        return n
    if n in TF_DISTS:
        return "tensorflow"
    if n in ("jax", "jaxlib"):
        return n
    if _PLUGIN.match(n):
        return "jax-plugin"
    owner = _module_framework(n)
    if owner is not None:
        return "spec:" + owner
    if n.startswith("nvidia-") and n not in ("nvidia-ml-py", "nvidia-ml-py3"):
        return "nvidia"
    return None


def _module_framework(dist: str) -> Optional[str]:
    """The framework whose module of envdoctor/frameworks/ plans ``dist`` from its own table (onnxruntime-gpu,
    paddlepaddle-gpu), or None (torch, tensorflow and jax have their planners here)."""
    spec = registry.spec_of_distribution(dist)
    return spec.name if spec is not None and hasattr(spec, "installed_candidate") else None


class _Planner:
    def __init__(self, unit: InputUnit, snap: Snapshot, matrices: Any, selected: Sequence[Tuple[str, str]],
                 pre: bool) -> None:
        self.unit = unit
        self.m = matrices
        self.selected = list(selected)
        self.pre = pre
        py, py_from = None, "target"
        self.python_note = ""
        if unit.python is not None:
            spec_text, loc = unit.python
            py, py_from = self._conda_python(spec_text, loc, snap)
        self.t = target_of(snap, python=py, python_from=py_from)
        self.cpu_only = not snap.gpus and snap.driver.state == "not_installed"  # --cpu or a probed CPU machine
        self.plan = Plan(unit, self.t)
        self.torch_extra = SpecifierSet("")  # what lines such as xformers==0.0.20 allow of torch (constraints.py)
        if self.python_note:
            self.plan.assumptions.append(self.python_note)

    # -- helpers ---------------------------------------------------------------------------------
    def _conda_python(self, spec_text: str, loc: Location, snap: Snapshot) -> Tuple[Optional[str], str]:
        mm = re.match(r"^==(\d+\.\d+(?:\.\d+)?)(\.\*)?$", spec_text or "")
        if mm:
            return mm.group(1), str(loc)
        sp = _spec(spec_text)
        tv = _v(snap.python.version)
        if sp is not None and tv is not None and sp.contains(Version(tv.base_version), prereleases=True):
            return None, "target"
        self.python_note = (f"{loc}: python{spec_text or ''} does not say which Python conda picks: "
                            f"Python support not judged")
        return "", str(loc)

    def note(self, text: str) -> None:
        if text not in self.plan.assumptions:
            self.plan.assumptions.append(text)

    def problem(self, kind: str, severity: str, subject: str, reqs: Sequence[InputRequirement], **facts: Any) -> Problem:
        p = Problem(kind, severity, subject, [r.loc for r in reqs], facts)
        self.plan.problems.append(p)
        return p

    def sources(self, req: InputRequirement) -> Sources:
        if req.url:
            return Sources([Source(req.url, "direct", None, "direct URL", req.loc)], "pip")
        if req.index:
            return Sources([_source(req.index, "lock file", req.loc)], "first-index")
        if self.unit.kind == "pyproject" and self.unit.strategy == "first-index":
            return uv_sources(self.unit, req, self.t, self.selected)
        if self.unit.kind == "pylock":
            return Sources([Source(PYPI, "pypi", None, "default index")], "pip")
        return pip_sources([o for o in self.unit.indexes if o.kind != "uv-index"])

    def spec_target(self) -> FrameworkTarget:
        """The target as the frameworks/ specs read it (the builds they list depend on platform and CPU-only)."""
        return FrameworkTarget(frameworks=[], platform=self.t.platform or "linux-x86_64", wsl=self.t.wsl,
                               cpu=self.cpu_only, python=str(self.t.python) if self.t.python is not None else None,
                               companions=[])

    def python_ok(self, spec_text: Optional[str]) -> Optional[bool]:
        if self.t.python is None or not spec_text:
            return None
        sp = _spec(spec_text)
        if sp is None:
            return None
        return sp.contains(self.t.python, prereleases=True)

    def spec_of(self, reqs: Sequence[InputRequirement]) -> SpecifierSet:
        texts = [r.specifier for r in reqs if r.specifier]
        return _spec(",".join(texts)) or SpecifierSet("")

    # -- requirements ------------------------------------------------------------------------------
    def selected_requirements(self) -> List[InputRequirement]:
        chosen = set(self.selected)
        unit = self.unit
        blocked: set = set()
        if not chosen:
            for group in unit.conflicts:
                blocked.update(group)
            if blocked:
                names = ", ".join(f"{k} {n}" for k, n in sorted(blocked))
                self.note(f"{unit.path}: {names} are declared as conflicting ([tool.uv] conflicts): judged without them; "
                          f"name one with --extra / --group")
        out = []
        for r in unit.requirements:
            if r.group and r.group[0] in ("extra", "group"):
                if chosen and r.group not in chosen:
                    continue
                if not chosen and r.group in blocked:
                    continue
            ok = self.t.marker(r.marker, [n for _, n in chosen] or ([r.group[1]] if r.group else []))
            if ok is False:
                continue
            if ok is None:
                self.note(f"{r.loc}: marker {r.marker!r} cannot be evaluated for the target; {r.name} assumed to install")
            out.append(r)
        return out

    # -- the whole unit --------------------------------------------------------------------------------
    def run(self) -> Plan:
        by_family: Dict[str, List[InputRequirement]] = {}
        for r in self.selected_requirements():
            fam = family_of(r)
            if fam is not None:
                by_family.setdefault(fam, []).append(r)
        for line in self.unit.notes:
            self.note(line)
        self.plan.not_judged.extend(self.unit.not_judged)
        torch_pkg = None
        self.torch_extra = self.indirect_constraints(by_family)
        self.compiled_packages()
        if "torch" in by_family:
            torch_pkg = self.resolve_torch(by_family["torch"])
        for comp in ("torchvision", "torchaudio"):
            if comp in by_family:
                self.resolve_companion(comp, by_family[comp], torch_pkg)
                if torch_pkg is None:
                    torch_pkg = self.implied_torch(comp)
        if "conda-torch" in by_family:
            self.resolve_conda_torch(by_family["conda-torch"])
        if "tensorflow" in by_family:
            for dist in sorted({r.name for r in by_family["tensorflow"]}):
                self.resolve_tensorflow(dist, [r for r in by_family["tensorflow"] if r.name == dist])
        if "jax" in by_family or "jaxlib" in by_family or "jax-plugin" in by_family:
            self.resolve_jax(by_family.get("jax", []), by_family.get("jaxlib", []), by_family.get("jax-plugin", []))
        for fam in sorted(f for f in by_family if f.startswith("spec:")):
            self.resolve_module_framework(fam[len("spec:"):], by_family[fam])
        if any(p.facts.get("indirect") for p in self.plan.problems):  # pip stops there: nothing is installed
            for pkg in self.plan.packages:
                pkg.frameworks, pkg.installable, pkg.assumptions = [], False, []
        self.resolve_pins(by_family.get("nvidia", []))
        for pkg in self.plan.packages:
            if not pkg.frameworks:
                pkg.installable = False
                failing = any(p.severity == "error" and (set(p.locs) & set(pkg.locs) or p.facts.get("indirect"))
                              for p in self.plan.problems)
                pkg.summary = f"{pkg.primary.raw} (" + (
                    "cannot be installed" if failing else "not judged") + ")"
        self.direct_references()
        for r in self.selected_requirements():
            for opt, value in r.ignored_options:
                if opt in _INDEX_SPELLINGS and family_of(r) is not None:
                    self.problem("ignored-option", "warning", r.raw, [r], option=opt, value=value, requirement=r)
        return self.plan

    def indirect_constraints(self, by_family: Dict[str, List[InputRequirement]]) -> SpecifierSet:
        """The torch that lines such as xformers==0.0.20 / triton==2.0.0 allow (gate/constraints.py), as a specifier
        on the torch line; a torch line of its own where only they bring torch in."""

        known = [Version(p) for rel in (self.m.pytorch_releases if self.m is not None else []) for p in rel.patches
                 if _v(p) is not None]
        c = torch_constraints(self.selected_requirements(), known, self.t.python, companion_rows(self.m))
        for kind, subject, reqs, facts in plan_effects(c, self.t):
            self.problem(kind, "error", subject, reqs, **facts)
        for r, why in c.unresolved:
            self.plan.indirect[str(r.loc)] = why
        for r in c.judged + [x.req for x in c.no_wheel]:
            self.plan.indirect[str(r.loc)] = ""
        if c.applies:
            self.note("; ".join(c.because) + f" (envdoctor's data): the torch line is planned within "
                      f"{c.specifier}")
        # where only such lines bring torch in, the install gets a torch all the same: planned at the first of them
        first = (c.judged if c.applies else []) + c.brings
        if "torch" not in by_family and "conda-torch" not in by_family and first:
            by_family["torch"] = [InputRequirement(name="torch", raw=f"torch (required by {first[0].raw})",
                                                   loc=first[0].loc, group=first[0].group)]
            if c.brings and not c.applies:
                self.note(f"{first[0].loc}: {first[0].raw} installs torch (its Requires-Dist, envdoctor's data): "
                          f"planned as the newest torch the target's Python allows")
        return c.specifier

    def compiled_packages(self) -> None:
        """Lines naming a compiled package of matrices/gate_wheel_pythons.toml (numpy, tensorflow-addons, ...) that
        no allowed release has a wheel for on the target's Python, and no source build can stand in for: ED803, and
        pip installs nothing of the file (an indirect problem). Where only a source build could install it: not
        judged (gate builds nothing)."""
        from envdoctor.gate import wheel_pythons

        py = self.t.python
        if py is None:
            return
        by_name: Dict[str, List[InputRequirement]] = {}
        for r in self.selected_requirements():
            if family_of(r) is None and not (r.url or r.conda or r.wheel_tags or r.index) and r.name in wheel_pythons.table():
                by_name.setdefault(r.name, []).append(r)
        for name, reqs in sorted(by_name.items()):
            own = [r for r in reqs if not r.constraint]
            if not own:
                continue
            v = wheel_pythons.judge_line(name, self.spec_of(reqs), py, self.pre)
            if v is None:
                continue
            if not v.fails:
                self.plan.not_judged.append((str(own[0].loc), f"{own[0].raw}: no release it allows has a wheel for "
                                                              f"Python {py.major}.{py.minor} (wheels cover {v.covered}); "
                                                              f"only a source build could install it, and gate builds "
                                                              f"nothing"))
                continue
            self.problem("no-wheel-python", "error", own[0].raw, own, package=name, version=v.version,
                         python=str(py), python_spec=v.covered, release=None, family=name, source=v.source,
                         alternative=v.alternative, sdist=v.sdist, indirect=True)

    # -- direct references (other than framework wheels, which the framework planners read) ------------------
    def direct_references(self) -> None:
        """A wheel URL / path is judged by its file name: Python, ABI and platform tags against the target, and a
        ``+cuXYZ`` local version against the target's driver; an sdist / VCS / local reference is not judged, and
        the plan says what building it needs."""
        for r in self.selected_requirements():
            if not r.url or family_of(r) is not None:
                continue
            if r.wheel_tags:
                bad = wheel_tag_mismatch(r.wheel_tags, self.t)
                if bad:
                    self.problem("wheel-tags", "error", r.raw, [r], package=r.name, version=r.version or "",
                                 url=r.url, tags=list(r.wheel_tags), why=bad)
                    continue
                rv = _v(r.version)
                label = (rv.local or "") if rv is not None else ""
                mm = re.match(r"^cu(\d+)(\d)$", label.split(".")[0])
                if mm and self.cpu_only:
                    self.plan.not_judged.append((str(r.loc), f"{r.raw}: a CUDA {mm.group(1)}.{mm.group(2)} build "
                                                              f"({label}) on a target without an NVIDIA GPU: it installs, "
                                                              f"its CUDA code cannot run"))
                continue
            self.plan.not_judged.append((str(r.loc), f"{r.raw}: {build_needs(r)}"))

    # -- generic choice ----------------------------------------------------------------------------
    def choose(self, cands: List[Dict[str, Any]], spec: SpecifierSet, srcs: Sources):
        """(chosen, matching, viable): candidates the specifiers allow, those with a wheel for the target Python."""
        if srcs.strategy == "first-index":
            for s in srcs.items:
                mine = [c for c in cands if c["source"] is s]
                if mine:
                    cands = mine
                    break
        matching = [c for c in cands if spec.contains(c["version"], prereleases=True if self.pre else None)]
        viable = [c for c in matching if c["python_ok"] is not False and c.get("platform_ok", True)]
        chosen = max(viable, key=lambda c: c["version"]) if viable else None
        return chosen, matching, viable

    # -- torch -----------------------------------------------------------------------------------------
    def _plat_ok(self, var) -> bool:
        return self.t.platform is None or not var.platforms or self.t.platform in var.platforms

    def torch_candidates(self, srcs: Sources) -> List[Dict[str, Any]]:
        out: List[Dict[str, Any]] = []
        if self.m is None:
            return out
        for s in srcs.items:
            for rel in self.m.pytorch_releases:
                variants = []
                if s.pypi_like:
                    var = rel.default_variant(self.t.platform or "linux-x86_64")
                    if var is not None:
                        variants.append((var, ""))
                elif s.kind == "torch-variant":
                    var = rel.variant(s.variant or "")
                    if var is not None and self._plat_ok(var):
                        variants.append((var, var.local_label or "+" + var.name))
                elif s.kind == "torch-all":
                    variants.extend((var, var.local_label or "+" + var.name) for var in rel.variants if self._plat_ok(var))
                for var, label in variants:
                    for patch in rel.patches:
                        prow = rel.patch(patch)
                        py = prow.python if prow is not None and prow.python else rel.python
                        out.append({"version": Version(patch + label), "text": patch + label, "release": rel,
                                    "variant": var, "patch": patch, "source": s, "python_ok": self.python_ok(py),
                                    "python_spec": py})
        return out

    def resolve_torch(self, reqs: List[InputRequirement]) -> Optional[PlannedPackage]:
        pkg = self._package("torch", "torch", reqs)
        primary = pkg.primary
        direct = next((r for r in reqs if r.url and r.version), None)
        if direct is not None:
            return self._torch_direct(pkg, direct)
        srcs = self.sources(primary)
        for n in srcs.notes:
            self.note(n)
        if srcs.local:
            return None
        spec = self.spec_of(reqs) & self.torch_extra
        cands = self.torch_candidates(srcs)
        chosen, matching, viable = self.choose(cands, spec, srcs)
        if chosen is not None:
            self._torch_chosen(pkg, chosen, spec, srcs, cands)
            return pkg
        return self._torch_failed(pkg, reqs, spec, srcs, matching)

    def _torch_chosen(self, pkg: PlannedPackage, c: Dict[str, Any], spec: SpecifierSet, srcs: Sources, cands) -> None:
        var, rel = c["variant"], c["release"]
        pkg.version, pkg.source = c["text"], c["source"]
        exact = [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]
        if not exact or (exact and Version(exact[0].version).local is None and c["text"] != exact[0].version):
            why = []
            if not exact:
                why.append(f"the newest release envdoctor's data knows that matches {spec or 'any version'}"
                           + (f" and has a wheel for Python {self.t.python_xy}" if self.t.python is not None else ""))
            others = sorted({str(x["text"]) for x in cands if x["source"] is not c["source"]
                             and Version(x["version"].public) == Version(c["version"].public)})
            if c["source"].kind != "pypi" and others:
                why.append(f"from {c['source'].describe()}; pip prefers it to {', '.join(others)} because a local "
                           f"version label sorts higher")
            elif c["source"].kind != "pypi":
                why.append(f"from {c['source'].describe()}")
            pkg.assumptions.append(f"{pkg.primary.loc}: {pkg.primary.raw} -> torch {c['text']} ({'; '.join(why)})")
        if srcs.unknown and c["source"] not in srcs.unknown:
            pkg.assumptions.append(f"{pkg.primary.loc}: {', '.join(s.url for s in srcs.unknown)} not known to "
                                   f"envdoctor's data: assumed not to serve another torch build")
        pkg.frameworks = [self.torch_framework(pkg, var, rel, c["text"], c["patch"])]
        pkg.summary = self._torch_summary(c["text"], var)

    def _torch_summary(self, text: str, var) -> str:
        if var.kind == "cuda":
            return f"torch {text} (CUDA {var.cuda}" + (f", cuDNN {var.cudnn}" if var.cudnn else "") + ")"
        if var.kind == "rocm":
            return f"torch {text} (ROCm {var.rocm or var.name[4:]})"
        return f"torch {text} (CPU only)"

    def torch_framework(self, pkg: PlannedPackage, var, rel, text: str, patch: str, conda: bool = False) -> Framework:
        prow = rel.patch(patch)
        requires: List[str] = []
        linux = 'platform_system == "Linux" and platform_machine == "x86_64"'
        if not conda and var.kind == "cuda" and var.pypi_default and var.nvidia_pins:
            for name, sp in var.nvidia_pins.items():
                sp = sp if sp[:1] in "<>=!~" else f"=={sp}"
                # a pin that holds only below some Python keeps its marker, as the wheel's Requires-Dist does
                extra = var.pin_markers.get(name)
                requires.append(f"{name}{sp}; {linux}" + (f" and ({extra})" if extra else ""))
        elif not conda and var.kind == "cuda" and var.cudnn and var.cuda_major:
            # another index's build: its cuDNN pin, as frameworks/torch.py's candidate (and so lock) states it
            requires.append(f"nvidia-cudnn-cu{var.cuda_major}=={var.cudnn}; {linux}")
        if not conda and var.kind == "cuda" and prow is not None and prow.triton:
            requires.append(f"triton{prow.triton}; {linux}" + (f" and ({prow.triton_marker})" if prow.triton_marker
                                                                  else ""))
        arch = None
        if var.kind == "cuda" and var.arch_list and var.ptx is not None and not var.arch_unverified:
            arch = list(var.arch_list_aarch64 or var.arch_list) if self.t.platform == "linux-aarch64" else list(var.arch_list)
            if var.ptx and arch:
                arch.append("compute_" + arch[-1].split("_", 1)[1])
        return Framework(
            name="torch", distribution="torch", version=text, build=var.kind,
            cuda_version=var.cuda if var.kind == "cuda" else None,
            cudnn_version=var.cudnn if var.kind == "cuda" else None,
            rocm_version=(var.rocm or var.name[4:]) if var.kind == "rocm" else None,
            arch_list=arch, requires=requires,
            requires_python=(prow.requires_python if prow is not None and prow.requires_python else rel.requires_python),
            location="(planned)", evidence=self._evidence(pkg))

    def _evidence(self, pkg: PlannedPackage) -> List[Evidence]:
        return [Evidence(str(r.loc), r.raw) for r in pkg.requirements + pkg.constraints]

    def _torch_failed(self, pkg: PlannedPackage, reqs, spec: SpecifierSet, srcs: Sources, matching) -> Optional[PlannedPackage]:
        primary = pkg.primary
        m = self.m
        if m is None:
            return None
        subject = primary.raw
        if matching:  # versions exist on the indexes but have no wheel for this Python
            best = max(matching, key=lambda c: c["version"])
            self.problem("no-wheel-python", "error", subject, reqs, package="torch", version=best["text"],
                         python=str(self.t.python), python_spec=best["python_spec"], release=best["release"],
                         family="torch")
            self._torch_chosen(pkg, best, spec, srcs, matching)
            pkg.installable = False
            return pkg
        contradiction = self._contradiction(reqs, lambda sp: any(sp.contains(c["version"], prereleases=True)
                                                               for c in self.torch_candidates(Sources(
                                                                   [Source("", "torch-all"), Source(PYPI, "pypi")], "pip"))))
        if contradiction:
            return None
        exact = [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]
        if not exact:
            self._range_unknown(pkg, reqs, spec, "torch")
            return None
        ev = _v(exact[0].version)
        if ev is None:
            return None
        rel = m.torch_release(str(ev))
        if rel is None or not rel.has_patch(str(ev)):
            self._unknown_version(pkg, reqs, "torch", str(ev), rel)
            return None
        label = ev.local
        if label and not _VARIANT.match(label.split(".")[0]):
            self.note(f"{primary.loc}: torch {ev} is a local build label envdoctor's data does not describe: not judged")
            return None
        var = rel.variant(label) if label else None
        if label and var is None:
            self.problem("variant-unpublished", "error", subject, reqs, package="torch", version=str(ev), label=label,
                         release=rel, published=[v.name for v in rel.variants], family="torch")
            return None
        if var is not None and not self._plat_ok(var):
            self.problem("no-wheel-platform", "error", subject, reqs, package="torch", version=str(ev),
                         platform=self.t.platform, platforms=list(var.platforms), family="torch")
            return None
        if var is None:
            var = rel.default_variant(self.t.platform or "linux-x86_64")
            if var is None:
                return None
        text = f"{ev.public}{(var.local_label or '+' + var.name) if label else ''}"
        if srcs.unknown:
            pkg.assumptions.append(f"{primary.loc}: assumed {', '.join(s.url for s in srcs.unknown)} serves torch {text}")
            c = {"text": text, "variant": var, "release": rel, "patch": ev.public, "source": srcs.unknown[0],
                 "version": Version(text), "python_ok": True}
            self._torch_chosen(pkg, c, spec, srcs, [c])
            return pkg
        ignored = [(r, opt, val) for r in reqs for opt, val in r.ignored_options]
        self.problem("not-served", "error", subject, reqs, package="torch", version=text, variant=var, release=rel,
                     sources=list(srcs.items), serving=var.index_url, ignored=ignored, family="torch",
                     strategy=srcs.strategy)
        c = {"text": text, "variant": var, "release": rel, "patch": ev.public, "source": None, "version": Version(text),
             "python_ok": True}
        pkg.version = text
        pkg.frameworks = [self.torch_framework(pkg, var, rel, text, ev.public)]
        pkg.summary = self._torch_summary(text, var)
        pkg.installable = False
        return pkg

    def _torch_direct(self, pkg: PlannedPackage, req: InputRequirement) -> Optional[PlannedPackage]:
        ev = _v(req.version)
        m = self.m
        if ev is None or m is None:
            return None
        rel = m.torch_release(str(ev))
        label = ev.local
        var = None
        if rel is not None:
            var = rel.variant(label) if label else rel.default_variant(self.t.platform or "linux-x86_64")
        if rel is None or var is None or not rel.has_patch(str(ev)):
            self.note(f"{req.loc}: torch {ev} from a direct URL is not in envdoctor's data: not judged")
            return None
        self._check_tags(req, "torch", str(ev))
        pkg.version, pkg.source = str(ev), Source(req.url or "", "direct", None, "direct URL", req.loc)
        pkg.frameworks = [self.torch_framework(pkg, var, rel, str(ev), ev.public)]
        pkg.summary = self._torch_summary(str(ev), var)
        return pkg

    def _check_tags(self, req: InputRequirement, package: str, version: str) -> None:
        if not req.wheel_tags:
            return
        bad = wheel_tag_mismatch(req.wheel_tags, self.t)
        if bad:
            self.problem("wheel-tags", "error", req.raw, [req], package=package, version=version, url=req.url,
                         tags=list(req.wheel_tags), why=bad)

    def _contradiction(self, reqs: Sequence[InputRequirement], exists) -> bool:
        """Each requirement alone matches something but together nothing: pip's ResolutionImpossible."""
        own = [(r, _spec(r.specifier)) for r in reqs if r.specifier]
        if len(own) < 2 or not all(sp is not None and exists(sp) for _, sp in own):
            return False
        self.problem("contradict", "error", reqs[0].raw, [r for r, _ in own], package=reqs[0].name,
                     requirements=[(r.raw, str(r.loc)) for r, _ in own])
        return True

    def _old_no_wheel(self, package: str, spec: SpecifierSet, reqs) -> bool:
        """A pin of releases older than the data whose series have no wheel for the target's Python at all, as the
        index's own file names show (matrices/gate_old_releases.toml): ED803, said as for a release the data knows.
        Inside the Pythons a series covers, nothing is claimed."""
        py = self.t.python
        if py is None:
            return False
        rows = [r for r in _old_releases() if r["package"] == package]
        matching = [(Version(v), r) for r in rows for v in r.get("releases", []) if spec.contains(Version(v), prereleases=True)]
        if not matching:
            return False
        target = f"{py.major}.{py.minor}"
        series = {id(r): r for _, r in matching}.values()
        if any(target in r.get("pythons", []) for r in series):
            return False
        best, row = max(matching, key=lambda x: x[0])
        covered = sorted({p for r in series for p in r.get("pythons", [])}, key=lambda t: tuple(int(x) for x in t.split(".")))
        self.problem("no-wheel-python", "error", reqs[0].raw, reqs, package=package, version=str(best),
                     python=str(py), python_spec=", ".join(covered), release=None, family=package.split("-")[0],
                     source=row.get("source", ""))
        return True

    def _unknown_version(self, pkg: PlannedPackage, reqs, package: str, version: str, rel) -> None:
        m = self.m
        v0 = _v(version)
        if rel is None and v0 is not None and self._old_no_wheel(package, SpecifierSet(f"=={v0.public}"), reqs):
            return
        newest = m.newest_known(package) if m is not None else None
        v = _v(version)
        level, why = "warning", "newer than envdoctor's data"
        if rel is not None and v is not None:
            series_newest = rel.newest_patch
            later = [r for r in (m.pytorch_releases if package == "torch" else []) if Version(r.version) > Version(rel.version)]
            why = (f"not a {rel.version} release envdoctor's data knows (the {rel.version} series has "
                   f"{', '.join(rel.patches)})")
            # The data lists every patch of a series up to the day it was collected; a series that a newer one
            # followed gets no new patches, so a patch it lacks does not exist.
            if series_newest and (Version(v.public) < Version(series_newest) or later):
                level = "error"
        older = False
        oldest = m.oldest_known(package) if (m is not None and rel is None) else None
        if v is not None and oldest and Version(v.public) < Version(oldest):
            # below the data's first release: not "newer", and not judged from rows the data does not have; the
            # resolver (gate without --offline) judges it by the index's own files
            older, why = True, f"older than envdoctor's data (it starts at {package} {oldest})"
        self.problem("unknown-version", level, reqs[0].raw, reqs, package=package, version=version, newest=newest,
                     why=why, collected=getattr(m, "collected", ""), older=older, oldest=oldest)

    def _range_unknown(self, pkg: PlannedPackage, reqs, spec: SpecifierSet, package: str) -> None:
        if self._old_no_wheel(package, spec, reqs):
            return
        self.problem("unknown-version", "warning", reqs[0].raw, reqs, package=package, version=str(spec),
                     newest=self.m.newest_known(package) if self.m is not None else None,
                     why="no release envdoctor's data knows matches it, on the indexes in effect",
                     collected=getattr(self.m, "collected", ""))

    def _package(self, family: str, name: str, reqs: List[InputRequirement]) -> PlannedPackage:
        pkg = PlannedPackage(family, name, [r for r in reqs if not r.constraint], [r for r in reqs if r.constraint])
        if not pkg.requirements:
            pkg.requirements, pkg.constraints = pkg.constraints, []
        self.plan.packages.append(pkg)
        return pkg

    # -- torchvision / torchaudio ----------------------------------------------------------------------------
    def companion_candidates(self, name: str, srcs: Sources) -> List[Dict[str, Any]]:
        out: List[Dict[str, Any]] = []
        if self.m is None:
            return out
        for s in srcs.items:
            for rel in self.m.pytorch_releases:
                pairs = []
                if s.pypi_like:
                    var = rel.default_variant(self.t.platform or "linux-x86_64")
                    if var is not None:
                        pairs.append((var, ""))
                elif s.kind == "torch-variant":
                    var = rel.variant(s.variant or "")
                    if var is not None and self._plat_ok(var):
                        pairs.append((var, var.local_label or "+" + var.name))
                elif s.kind == "torch-all":
                    pairs.extend((var, var.local_label or "+" + var.name) for var in rel.variants if self._plat_ok(var))
                for prow in rel.patch_rows:
                    cv = getattr(prow, name, None)
                    if not cv or _v(cv) is None:
                        continue
                    requires = getattr(prow, f"{name}_requires", None)
                    py = prow.python or rel.python
                    ok = self.python_ok(py)
                    if ok is False and requires:
                        # A companion that accepts a range of torch releases installs on a Python one of those
                        # releases has wheels for: the row it shares is only the newest torch it pairs with.
                        ok, py = self._companion_python(requires, py)
                    for var, label in pairs:
                        out.append({"version": Version(cv + label), "text": cv + label, "release": rel, "variant": var,
                                    "patch": prow.version, "requires": requires,
                                    "source": s, "python_ok": ok, "python_spec": py})
        return out

    def _companion_python(self, requires: str, fallback: Optional[str]) -> Tuple[Optional[bool], Optional[str]]:
        """(fits the target's Python, the Pythons covered) of a companion through the torch releases it accepts."""
        sp = _spec(requires if requires[:1] in "<>=!~" else f"=={requires}")
        if sp is None or self.m is None:
            return self.python_ok(fallback), fallback
        for _, py in torch_patch_pythons(self.m, sp):
            if self.python_ok(py or None) is not False:
                return (True if py else None), (py or None)
        return False, fallback

    def resolve_companion(self, name: str, reqs: List[InputRequirement], torch_pkg: Optional[PlannedPackage]) -> None:
        pkg = self._package(name, name, reqs)
        srcs = self.sources(pkg.primary)
        if srcs.local:
            return
        spec = self.spec_of(reqs)
        cands = self.companion_candidates(name, srcs)
        tver = _v(torch_pkg.version) if torch_pkg is not None and torch_pkg.version else None
        if tver is not None:
            fitting = [c for c in cands
                       if c["requires"] and (_spec(c["requires"]) or SpecifierSet("")).contains(tver, prereleases=True)]
            chosen, _, _ = self.choose(fitting, spec, srcs)
            if chosen is None:
                chosen, _, _ = self.choose(cands, spec, srcs)
        else:
            chosen, _, _ = self.choose(cands, spec, srcs)
        if chosen is None:
            self.note(f"{pkg.primary.loc}: {pkg.primary.raw}: no {name} build in envdoctor's data fits; not judged")
            self.plan.packages.remove(pkg)
            return
        var = chosen["variant"]
        pkg.version, pkg.source = chosen["text"], chosen["source"]
        pkg.summary = f"{name} {chosen['text']}" + (f" (CUDA {var.cuda})" if var.kind == "cuda" else f" ({var.kind})")
        if not [s for s in spec if s.operator in ("==", "===")]:
            pkg.assumptions.append(f"{pkg.primary.loc}: {pkg.primary.raw} -> {name} {chosen['text']}"
                                   + (f" (the release built for torch {tver})" if tver
                                      else " (the newest fitting release in the data)"))
        pkg.frameworks = [Framework(
            name=name, distribution=name, version=chosen["text"], build=var.kind,
            cuda_version=var.cuda if var.kind == "cuda" else None,
            requires=[f"torch{chosen['requires']}"] if chosen["requires"] else [],
            location="(planned)", evidence=self._evidence(pkg))]

    def implied_torch(self, comp: str) -> Optional[PlannedPackage]:
        cpkg = next((p for p in self.plan.packages if p.family == comp), None)
        if cpkg is None or not cpkg.frameworks or not cpkg.frameworks[0].requires:
            return None
        req_text = cpkg.frameworks[0].requires[0]
        primary = cpkg.primary
        synthetic = InputRequirement(name="torch", raw=primary.raw, loc=primary.loc, specifier=req_text[len("torch"):],
                                     group=primary.group)
        srcs = self.sources(primary)
        cands = self.torch_candidates(srcs)
        cv = _v(cpkg.version)
        label = cv.local if cv is not None else None
        if label:
            cands = [c for c in cands if c["version"].local == label]
        chosen, _, _ = self.choose(cands, self.spec_of([synthetic]), srcs)
        if chosen is None:
            return None
        pkg = self._package("torch", "torch", [synthetic])
        self._torch_chosen(pkg, chosen, self.spec_of([synthetic]), srcs, cands)
        pkg.assumptions = [f"{primary.loc}: torch {chosen['text']} comes in as a dependency of {comp} {cpkg.version} "
                           f"({req_text})"]
        return pkg

    # -- conda pytorch ---------------------------------------------------------------------------------
    def resolve_conda_torch(self, reqs: List[InputRequirement]) -> None:
        m = self.m
        primary = reqs[0]
        conda_reqs = {r.name: r for r in self.unit.requirements if r.conda}
        channel = primary.conda_channel or ("pytorch" if "pytorch" in self.unit.channels else None)
        if channel != "pytorch":
            self.note(f"{primary.loc}: {primary.raw} from {channel or 'the default / conda-forge channels'}: those "
                      f"builds are not in envdoctor's data; not judged")
            return
        cuda = None
        kind = None
        build = primary.conda_build or ""
        mm = re.search(r"cuda(\d+)\.(\d+)", build)
        if mm:
            kind, cuda = "cuda", f"{mm.group(1)}.{mm.group(2)}"
        elif "cpu" in build:
            kind = "cpu"
        for sel in ("pytorch-cuda", "cudatoolkit"):
            if kind is None and sel in conda_reqs:
                mm = re.match(r"^==(\d+)\.(\d+)", conda_reqs[sel].specifier or "")
                if mm:
                    kind, cuda = "cuda", f"{mm.group(1)}.{mm.group(2)}"
        if kind is None and ("cpuonly" in conda_reqs or primary.name == "pytorch-cpu"):
            kind = "cpu"
        if kind is None or m is None:
            named = [conda_reqs[n].raw for n in ("pytorch-cuda", "cudatoolkit") if n in conda_reqs]
            said = (f"with {', '.join(named)} (no CUDA X.Y pinned)" if named
                    else "without pytorch-cuda / cudatoolkit / cpuonly")
            self.note(f"{primary.loc}: {primary.raw} {said}: the build conda picks depends on the solver; not judged")
            return
        vname = "cpu" if kind == "cpu" or cuda is None else "cu" + cuda.replace(".", "")  # kind "cuda" sets cuda
        last = next((c.last for c in m.conda if c.channel == "pytorch"), None)
        spec = self.spec_of([primary])
        pkg = self._package("torch", "torch", [primary] + [conda_reqs[n] for n in ("pytorch-cuda", "cudatoolkit", "cpuonly")
                                                          if n in conda_reqs])
        pkg.source = Source("https://conda.anaconda.org/pytorch", "conda", vname, "conda channel pytorch")
        best = None
        for rel in m.pytorch_releases:
            if last and Version(rel.version) > Version(last):
                continue
            var = rel.variant(vname)
            if var is None:
                continue
            for patch in rel.patches:
                if spec.contains(Version(patch), prereleases=True) and (best is None or Version(patch) > Version(best[2])):
                    best = (rel, var, patch)
        if best is None:
            exact = [s for s in spec if s.operator == "=="]
            rel = m.torch_release(exact[0].version.rstrip(".*")) if exact else None
            if rel is not None and rel.variant(vname) is None:
                self.problem("variant-unpublished", "error", primary.raw, pkg.requirements, package="torch",
                             version=rel.version, label=vname, release=rel, published=[v.name for v in rel.variants],
                             family="torch", conda=True)
            elif exact and _v(exact[0].version.rstrip(".*")) is not None and m.oldest_known("torch") and (
                    Version(exact[0].version.rstrip(".*")) < Version(m.oldest_known("torch") or "0")):
                # older than the data: not judged, and said as a warning (never an all-clear)
                self.problem("unknown-version", "warning", primary.raw, pkg.requirements, package="torch",
                             version=exact[0].version.rstrip(".*"), newest=m.newest_known("torch"), conda=True,
                             why=f"older than envdoctor's data (it starts at torch {m.oldest_known('torch')})",
                             older=True, oldest=m.oldest_known("torch"), collected=getattr(m, "collected", ""))
            else:
                self.note(f"{primary.loc}: no pytorch-channel build in envdoctor's data matches {primary.raw} with {vname}"
                          + (f" (the pytorch channel ends with {last})" if last else ""))
            self.plan.packages.remove(pkg)
            return
        rel, var, patch = best
        pkg.version = patch
        pkg.frameworks = [self.torch_framework(pkg, var, rel, patch, patch, conda=True)]
        pkg.summary = self._torch_summary(patch, var) + " from the conda pytorch channel"
        if not [s for s in spec if s.operator == "==" and "*" not in s.version]:
            pkg.assumptions.append(f"{primary.loc}: {primary.raw} -> pytorch {patch} ({vname}), the newest the pytorch "
                                   f"channel has in envdoctor's data" + (f" (the channel ends with {last})" if last else ""))
        pkg.assumptions.append(f"{primary.loc}: conda build assumed to have the arch list and cuDNN of the pip {vname} build")

    # -- frameworks planned by their module (envdoctor/frameworks/onnxruntime.py, paddle.py) -------------
    def resolve_module_framework(self, name: str, reqs: List[InputRequirement]) -> None:
        """The newest build of the framework's table that the specifiers allow (one with wheels for the target's
        platform and Python when there is one) becomes the planned framework; check's ED690 judges it on the
        overlaid target with the same ``fits`` lock uses."""
        spec = registry.get(name)
        for dist in sorted({r.name for r in reqs}):
            mine = [r for r in reqs if r.name == dist]
            pkg = self._package(name, dist, mine)
            primary = pkg.primary
            if spec.classify(dist) != "gpu" or self.m is None or self.sources(primary).local:
                self.note(f"{primary.loc}: {primary.raw}: a CPU-only build or a local source; not judged")
                self.plan.packages.remove(pkg)
                continue
            sp = self.spec_of(mine)
            matching = [c for c in spec.candidates(self.m, FrameworkTarget(frameworks=[]))
                        if sp.contains(Version(c.version), prereleases=True if self.pre else None)]
            viable = [c for c in matching if self.python_ok(c.python) is not False
                      and (self.t.platform is None or self.t.platform in c.platforms)]
            chosen = (viable or matching)[0] if (viable or matching) else None
            if chosen is None:
                self.note(f"{primary.loc}: {primary.raw}: no {dist} release in envdoctor's data matches; not judged")
                self.plan.packages.remove(pkg)
                continue
            pkg.version = chosen.version
            pkg.summary = f"{dist} {chosen.version} (CUDA {chosen.cuda}" + (f", cuDNN {chosen.cudnn})" if chosen.cudnn else ")")
            if not [s for s in sp if s.operator in ("==", "===") and "*" not in s.version]:
                pkg.assumptions.append(f"{primary.loc}: {primary.raw} -> {dist} {chosen.version} (the newest release "
                                       "envdoctor's data knows that matches)")
            pkg.frameworks = [Framework(name=name, distribution=dist, version=chosen.version, build="cuda",
                                        cuda_version=chosen.cuda, cudnn_version=chosen.cudnn,
                                        requires_python=chosen.python, location="(planned)",
                                        evidence=self._evidence(pkg))]

    # -- tensorflow -------------------------------------------------------------------------------------
    def resolve_tensorflow(self, dist: str, reqs: List[InputRequirement]) -> None:
        m = self.m
        if m is None:
            return
        pkg = self._package("tensorflow", dist, reqs)
        primary = pkg.primary
        srcs = self.sources(primary)
        if srcs.local:
            self.plan.packages.remove(pkg)
            return
        spec = self.spec_of(reqs)
        usable = [s for s in srcs.items if s.pypi_like or s.kind in ("unknown", "direct")]
        if not usable:
            self.problem("not-served", "error", primary.raw, reqs, package=dist, version=str(spec) or "",
                         sources=list(srcs.items), serving=PYPI, ignored=[], family="tensorflow", strategy=srcs.strategy)
            self.plan.packages.remove(pkg)
            return
        src = usable[0]
        cands = []
        exact = [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]
        # the builds the TensorFlow spec lists (each release with its own patch row: pins, Python range), as lock
        tf_spec = registry.get("tensorflow")
        py = str(self.t.python) if self.t.python is not None else None
        for cand in tf_spec.candidates(m, self.spec_target()):
            cands.append({"version": Version(cand.version), "text": cand.version, "release": cand.row, "source": src,
                          "python_ok": python_fits(cand, py), "python_spec": cand.python})
        for s in exact:  # a patch release newer than the data: judged by its series' row
            ev = _v(s.version)
            got = m.tf_release(s.version) if ev is not None else None
            if got is not None and not any(Version(c["text"]) == ev for c in cands):
                cands.append({"version": ev, "text": s.version, "release": got, "source": src,
                              "python_ok": self.python_ok(got.python), "python_spec": got.python})
        pre = self.pre or any(ev is not None and ev.is_prerelease for ev in (_v(s.version) for s in exact))
        matching = [c for c in cands if spec.contains(c["version"], prereleases=True if pre else None)]
        if self._deprecated_tf(pkg, reqs, dist, spec, exact, matching, cands):
            return
        viable = [c for c in matching if c["python_ok"] is not False]
        subject = primary.raw
        if not viable:
            if matching:
                best = max(matching, key=lambda c: c["version"])
                self.problem("no-wheel-python", "error", subject, reqs, package=dist, version=best["text"],
                             python=str(self.t.python), python_spec=best["python_spec"], release=best["release"],
                             family="tensorflow")
                self._tf_chosen(pkg, best, dist, spec)
                pkg.installable = False
                return
            if self._contradiction(reqs, lambda sp: any(sp.contains(c["version"], prereleases=True) for c in cands)):
                self.plan.packages.remove(pkg)
                return
            if exact:
                self._unknown_version(pkg, reqs, "tensorflow", exact[0].version, None)
            else:
                self._range_unknown(pkg, reqs, spec, "tensorflow")
            self.plan.packages.remove(pkg)
            return
        best = max(viable, key=lambda c: c["version"])
        self._tf_chosen(pkg, best, dist, spec)

    def _deprecated_tf(self, pkg: PlannedPackage, reqs, dist: str, spec: SpecifierSet, exact, matching, cands) -> bool:
        """A line that can only get a stub release of a deprecated name (tensorflow-gpu 2.12+: an empty sdist that
        fails to build, never a CUDA build): a problem with the replacement to pin, and no planned package."""
        lookup = getattr(self.m, "deprecated_distribution", None)
        stub = lookup(dist) if lookup is not None else None
        if stub is None:
            return False
        hit = [s.version for s in exact if stub.covers(s.version)] or [c["text"] for c in matching if stub.covers(c["text"])]
        if not hit:
            return False  # e.g. tensorflow-gpu<2.12: a real (old) release under the old name
        # the replacement: the pinned release under its real name, else the newest one the target's Python can use
        fits = [c for c in cands if c["python_ok"] is not False]
        pinned = [c for c in fits if exact and c["text"] == hit[0]]
        best = pinned or sorted([c for c in fits if spec.contains(c["version"], prereleases=True)] or fits,
                                key=lambda c: c["version"])
        extras = ""
        if best:
            rel, text = best[-1]["release"], best[-1]["text"]
            plat = self.t.tf_platform
            if stub.gpu_extra and rel.and_cuda and plat is not None and rel.gpu_on(plat) and not self.cpu_only:
                extras = f"[{stub.gpu_extra}]"
            replacement = f"{stub.replacement}{extras}=={text}"
        else:
            replacement = stub.replacement
        self.problem("deprecated-dist", "error", pkg.primary.raw, reqs, package=dist, version=hit[0], row=stub,
                     replacement=replacement, family="tensorflow")
        self.plan.packages.remove(pkg)
        return True

    def _tf_chosen(self, pkg: PlannedPackage, c: Dict[str, Any], dist: str, spec: SpecifierSet) -> None:
        rel = c["release"]
        text = c["text"]
        primary = pkg.primary
        extras = {x for r in pkg.requirements + pkg.constraints for x in r.extras}
        plat = self.t.tf_platform
        if dist.endswith("-cpu"):
            build = "cpu"
        elif plat is None:
            build = "unknown"
        else:
            build = "cuda" if rel.gpu_on(plat) else "cpu"
        requires = []
        if build == "cuda":
            requires = [f'{n}{sp}; extra == "and-cuda"' for n, sp in rel.and_cuda.items()]
        pkg.version, pkg.source = text, c["source"]
        if not [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]:
            pkg.assumptions.append(f"{primary.loc}: {primary.raw} -> {dist} {text} (the newest release envdoctor's data "
                                   f"knows that matches" + (f" and supports Python {self.t.python_xy}" if self.t.python else "")
                                   + f"; the data knows the {rel.version} series by its tested release "
                                   f"{(self.m.tf_release(rel.version) or rel).tested})")
        if "and-cuda" in extras:
            if not rel.and_cuda:
                self.problem("no-extra", "warning", primary.raw, pkg.requirements, package=dist, version=text,
                             extra="and-cuda", family="tensorflow",
                             consequence=f"pip installs {dist} {text} without the CUDA libraries (the [and-cuda] extra "
                                         f"exists from TensorFlow {self.m.fact_value('tf-and-cuda-first')})")
            elif build == "cuda":
                pkg.assumptions.append(f"{primary.loc}: [and-cuda] installs the nvidia-* wheels {dist} {text} pins")
        fw = Framework(name="tensorflow", distribution=dist, version=text, build=build,
                       cuda_version=rel.cuda if build == "cuda" else None,
                       cudnn_version=rel.cudnn if build == "cuda" else None,
                       requires=requires, requires_python=rel.requires_python, location="(planned)",
                       evidence=self._evidence(pkg))
        pkg.frameworks = [fw]
        pkg.summary = f"{dist} {text}" + (f" (CUDA {rel.cuda}, cuDNN {rel.cudnn})" if build == "cuda" else f" ({build} build)")

    # -- jax ---------------------------------------------------------------------------------------------
    def resolve_jax(self, jax_reqs: List[InputRequirement], jaxlib_reqs: List[InputRequirement],
                    plugin_reqs: List[InputRequirement]) -> None:
        m = self.m
        if m is None:
            return
        if not jax_reqs:
            if jaxlib_reqs:
                self._jaxlib_only(jaxlib_reqs)
            for r in plugin_reqs:
                self.note(f"{r.loc}: {r.raw} without jax: not judged")
            return
        pkg = self._package("jax", "jax", jax_reqs)
        primary = pkg.primary
        srcs = self.sources(primary)
        if srcs.local:
            self.plan.packages.remove(pkg)
            return
        if not [s for s in srcs.items if s.pypi_like or s.kind in ("unknown", "direct")]:
            self.problem("not-served", "error", primary.raw, jax_reqs, package="jax", version="",
                         sources=list(srcs.items), serving=PYPI, ignored=[], family="jax", strategy=srcs.strategy)
            self.plan.packages.remove(pkg)
            return
        spec = self.spec_of(jax_reqs)
        exact = [s for s in spec if s.operator in ("==", "===") and "*" not in s.version]
        cands = []
        py = str(self.t.python) if self.t.python is not None else None
        for rel in jax_fw.SPEC.releases(m):  # the jax spec's releases, judged for Python as lock judges them
            cands.append({"version": Version(rel.version), "text": rel.version, "row": rel,
                          "python_ok": python_fits(jax_candidate(m, rel, None), py)})
        for s in exact:
            row = m.jax_release(s.version)
            if row is not None and not any(c["text"] == s.version for c in cands):
                cands.append({"version": Version(s.version), "text": s.version, "row": row,
                              "python_ok": self.python_ok(row.requires_python), "approx": True})
        matching = [c for c in cands if spec.contains(c["version"], prereleases=True if self.pre else None)]
        viable = [c for c in matching if c["python_ok"] is not False]
        if not viable:
            if matching:
                best = max(matching, key=lambda c: c["version"])
                self.problem("no-wheel-python", "error", primary.raw, jax_reqs, package="jax", version=best["text"],
                             python=str(self.t.python), python_spec=best["row"].requires_python, release=best["row"],
                             family="jax")
                self._jax_chosen(pkg, best, spec, jaxlib_reqs, plugin_reqs)
                pkg.installable = False
                return
            if self._contradiction(jax_reqs, lambda sp: any(sp.contains(c["version"], prereleases=True) for c in cands)):
                self.plan.packages.remove(pkg)
                return
            # jax itself is pure Python: the jaxlib lines beside it say which Pythons an older release can have
            lib = [r for r in jaxlib_reqs if not r.url]
            if lib and self._old_no_wheel("jaxlib", self.spec_of(lib), lib):
                self.plan.packages.remove(pkg)
                return
            if exact:
                self._unknown_version(pkg, jax_reqs, "jax", exact[0].version, None)
            else:
                self._range_unknown(pkg, jax_reqs, spec, "jax")
            self.plan.packages.remove(pkg)
            return
        best = max(viable, key=lambda c: c["version"])
        self._jax_chosen(pkg, best, spec, jaxlib_reqs, plugin_reqs)

    def _jax_chosen(self, pkg: PlannedPackage, c: Dict[str, Any], spec: SpecifierSet, jaxlib_reqs, plugin_reqs) -> None:
        row = c["row"]
        text = c["text"]
        approx = bool(c.get("approx"))
        primary = pkg.primary
        extras = [x for r in pkg.requirements for x in r.extras]
        major: Optional[int] = None
        with_cuda = True
        wanted = None
        for x in extras:
            mm = re.match(r"^cuda(\d+)?(?:-(pip|local))?$", x)
            if mm:
                wanted = x
                if mm.group(1):
                    major = int(mm.group(1))
                elif row.cuda_extra:
                    major = int(re.sub(r"\D", "", row.cuda_extra) or 0) or None
                with_cuda = mm.group(2) != "local"
        pl = row.plugins.get(f"cuda{major}") if major is not None else None
        if pl is not None and with_cuda and self.t.platform is not None:
            # the plugin wheels exist only where the jax spec's candidate is published (no CUDA on native Windows)
            cand = jax_candidate(self.m, row, pl)
            if self.t.platform not in cand.platforms:
                self.problem("no-wheel-platform", "error", primary.raw, pkg.requirements, package=pl.package,
                             version=_lower_or(pl.pin, text), platform=self.t.platform, platforms=list(cand.platforms))
                pkg.installable = False
        if wanted and pl is None:
            self.problem("no-extra", "warning", primary.raw, pkg.requirements, package="jax", version=text,
                         extra=wanted, family="jax",
                         consequence=f"jax {text} has no CUDA {major or ''} plugin in envdoctor's data: pip installs "
                                     f"jax and a CPU-only jaxlib")
        pkg.version, pkg.source = text, Source(PYPI, "pypi", None, "default index")
        if approx:
            pkg.assumptions.append(f"{primary.loc}: jax {text} is judged with the data's jax {row.version} row "
                                   f"(jaxlib and plugin assumed to be {text})")
        elif not [s for s in spec if s.operator in ("==", "===")]:
            pkg.assumptions.append(f"{primary.loc}: {primary.raw} -> jax {text} (the newest release envdoctor's data "
                                   f"knows that matches"
                                   + (f" and supports Python {self.t.python_xy}" if self.t.python else "") + ")")
        jaxlib_v = text if approx else _upper_or(row.jaxlib, text)
        for r in jaxlib_reqs:
            ev = _v((r.specifier or "").lstrip("=")) if (r.specifier or "").startswith("==") else None
            if ev is not None:
                jaxlib_v = str(ev)
        fws = [Framework(name="jax", distribution="jax", version=text, build="cuda" if pl else "cpu",
                         cuda_version=str(major) if pl else None,
                         # a version the data knows only by an older row: no pins are invented for it
                         requires=([] if approx else [f"jaxlib{row.jaxlib}"])
                         + ([f'jax-cuda{major}-plugin[with-cuda]{"" if approx else pl.pin}; extra == "cuda{major}"']
                            if pl else []),
                         requires_python=row.requires_python, location="(planned)", evidence=self._evidence(pkg))]
        jl = _v(jaxlib_v)
        jl_cuda = re.match(r"^cuda(\d+)", jl.local or "") if jl is not None else None
        fws.append(Framework(name="jaxlib", distribution="jaxlib", version=jaxlib_v,
                             build="cuda" if jl_cuda else "cpu", cuda_version=jl_cuda.group(1) if jl_cuda else None,
                             requires_python=row.requires_python, location="(planned)", evidence=self._evidence(pkg)))
        summary = f"jax {text} + jaxlib {jaxlib_v}"
        if pl is not None:
            pv = text if approx else str(_lower_or(pl.pin, text))
            pin_spec = _spec(pl.pin)
            if not approx and pin_spec is not None and _v(jaxlib_v) is not None and \
                    pin_spec.contains(jaxlib_v, prereleases=True):
                pv = jaxlib_v  # pip installs plugin and jaxlib of one release where the pins allow it
            for r in plugin_reqs:
                if (r.specifier or "").startswith("=="):
                    pv = r.specifier[2:]
            req_lines = [f'nvidia-cudnn-cu{major}{pl.cudnn}; extra == "with-cuda"', f"jax-cuda{major}-pjrt=={pv}"]
            fws.append(Framework(name=pl.package, distribution=pl.package, version=pv, build="cuda",
                                 cuda_version=str(major), requires=req_lines, location="(planned)",
                                 evidence=self._evidence(pkg)))
            fws.append(Framework(name=f"jax-cuda{major}-pjrt", distribution=f"jax-cuda{major}-pjrt", version=pv,
                                 build="cuda", cuda_version=str(major), location="(planned)", evidence=self._evidence(pkg)))
            summary += f" + {pl.package} {pv} (CUDA {major}" + (f", cuDNN {pl.cudnn}" if with_cuda else ", system CUDA") + ")"
            if with_cuda:
                self._pin(f"nvidia-cudnn-cu{major}", pl.cudnn, f"{pl.package} {pv} [with-cuda]", primary.loc, fws[2])
        else:
            summary += " (CPU only)"
        pkg.frameworks = fws
        pkg.summary = summary

    def _jaxlib_only(self, reqs: List[InputRequirement]) -> None:
        pkg = self._package("jaxlib", "jaxlib", reqs)
        primary = pkg.primary
        exact = [s for s in self.spec_of(reqs) if s.operator == "=="]
        ev = _v(exact[0].version) if exact else None
        if ev is None:
            self.plan.packages.remove(pkg)
            return
        mm = re.match(r"^cuda(\d+)(?:\.cudnn(\d)(\d+))?", ev.local or "")
        if mm:
            srcs = self.sources(primary)
            if not [s for s in srcs.items if s.kind in ("jax-releases", "unknown", "direct")]:
                self.problem("not-served", "error", primary.raw, reqs, package="jaxlib", version=str(ev),
                             sources=list(srcs.items),
                             serving=jax_releases_page(),
                             serving_option="--find-links",
                             ignored=[(r, o, v) for r in reqs for o, v in r.ignored_options], family="jax",
                             strategy=srcs.strategy)
                pkg.installable = False
        cudnn = None
        if mm and mm.group(2):  # "cudnn86" -> 8.6; "cudnn805" -> major 8 only
            cudnn = f"{mm.group(2)}.{mm.group(3)}" if len(mm.group(3)) == 1 else mm.group(2)
        pkg.version = str(ev)
        pkg.frameworks = [Framework(name="jaxlib", distribution="jaxlib", version=str(ev), build="cuda" if mm else "cpu",
                                    cuda_version=mm.group(1) if mm else None, cudnn_version=cudnn, location="(planned)",
                                    evidence=self._evidence(pkg))]
        pkg.summary = f"jaxlib {ev}"

    # -- nvidia-* pins ------------------------------------------------------------------------------------
    def _pin(self, name: str, spec_text: str, owner: str, loc: Optional[Location], fw: Optional[Framework]) -> None:
        sp = _spec(spec_text if spec_text[:1] in "<>=!~" else f"=={spec_text}")
        if sp is None or not str(sp):
            return
        self.plan.pins.setdefault(name, []).append((sp, owner, loc, fw))

    def resolve_pins(self, user_pins: List[InputRequirement]) -> None:
        env_ok = self.t.platform in ("linux-x86_64", None)
        for pkg in self.plan.packages:
            extras = {x for r in pkg.requirements for x in r.extras}
            for fw in pkg.frameworks:
                if fw.name == "torch" and env_ok:
                    for line in fw.requires:
                        name, spec_text = _split_pin(line)
                        if name:
                            self._pin(name, spec_text, f"{fw.distribution} {fw.version}", pkg.primary.loc, fw)
                elif fw.name == "tensorflow" and "and-cuda" in extras and fw.build == "cuda":
                    for line in fw.requires:
                        name, spec_text = _split_pin(line)
                        if name:
                            self._pin(name, spec_text, f"{fw.distribution}[and-cuda] {fw.version}", pkg.primary.loc, fw)
        for r in user_pins:
            if r.specifier:
                self._pin(r.name, r.specifier, r.raw, r.loc, None)
        for pkg in self.plan.packages:
            for fw in pkg.frameworks:
                self.plan.installed[fw.distribution] = fw.version
        for name, pins in sorted(self.plan.pins.items()):
            cands = sorted({v for sp, *_ in pins for v in _named_versions(sp)}, reverse=True)
            good = [v for v in cands if all(sp.contains(v, prereleases=True) for sp, *_ in pins)]
            if good:
                self.plan.installed[name] = str(good[0])
                continue
            first = pins[0][0]
            chosen = next((v for v in cands if first.contains(v, prereleases=True)), None)
            if chosen is not None:
                self.plan.installed[name] = str(chosen)
            self.problem("pins-unresolvable", "error", name, [], package=name, chosen=str(chosen) if chosen else None,
                         pins=[(str(sp), owner, loc, fw) for sp, owner, loc, fw in pins])
            self.plan.problems[-1].locs = [loc for _, _, loc, _ in pins if loc is not None]


def build_needs(r: InputRequirement) -> str:
    """What installing a non-wheel direct reference takes (pip builds it from source)."""
    from envdoctor.gate.indirect import indirect_row

    what = "a VCS checkout" if re.match(r"^(git|hg|svn|bzr)\+", r.url or "") else (
        "a local path" if not re.match(r"^[a-z]+://", r.url or "") or (r.url or "").startswith("file:") else "a source archive")
    row = indirect_row(r.name)
    cuda = " and the CUDA toolkit (nvcc) matching the installed torch" if row is not None and "CUDA" in row.get(
        "constrains", "") else ""
    return (f"{what}: pip builds it from source, which needs a C/C++ compiler{cuda} and its build dependencies; "
            f"not judged (no wheel metadata to read)")


def _split_pin(line: str) -> Tuple[Optional[str], str]:
    head = line.split(";", 1)[0].strip()
    mm = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$", head)
    if not mm or not mm.group(1).startswith(("nvidia-", "triton")):
        return None, ""
    return mm.group(1).lower(), mm.group(3).strip()


def _named_versions(sp: SpecifierSet) -> List[Version]:
    out = []
    for s in sp:
        if "*" in s.version:
            continue
        v = _v(s.version)
        if v is not None and s.operator in ("==", "===", ">=", "~=", "<="):
            out.append(v)
    return out


def _upper_or(spec_text: str, default: str) -> str:
    sp = _spec(spec_text)
    best = None
    for s in sp or []:
        if s.operator in ("<=", "==", "===") and "*" not in s.version:
            v = _v(s.version)
            if v is not None and (best is None or v < best):
                best = v
    return str(best) if best is not None else default


def _lower_or(spec_text: str, default: str) -> str:
    sp = _spec(spec_text)
    best = None
    for s in sp or []:
        if s.operator in (">=", "==", "===", "~=") and "*" not in s.version:
            v = _v(s.version)
            if v is not None and (best is None or v > best):
                best = v
    return str(best) if best is not None else default


def wheel_tag_mismatch(tags: Sequence[str], t: Target) -> Optional[str]:
    """Why a wheel with these tags does not install on the target (None: it does, or unknown)."""
    py_ok = plat_ok = None
    want_py = f"cp{t.python.release[0]}{(t.python.release + (0,))[1]}" if t.python is not None else None
    known_platform = platform_facts(t.platform) is not None
    interps, plats = set(), set()
    for tag in tags:
        parts = tag.split("-")
        if len(parts) != 3:
            continue
        interp, abi, plat = parts
        interps.add(interp)
        plats.add(plat)
        if want_py is not None:
            if interp == want_py or interp in ("py3", "py2.py3") or (abi == "abi3" and interp.startswith("cp3")
                                                                   and int(interp[3:] or 0) <= int(want_py[3:])):
                py_ok = True
            elif py_ok is None:
                py_ok = False
        if known_platform:
            if wheel_tag_fits(plat, t.platform):
                plat_ok = True
            elif plat_ok is None:
                plat_ok = False
    if py_ok is False:
        return f"it is built for {', '.join(sorted(interps))}, the target runs Python {t.python_xy}"
    if plat_ok is False:
        return f"it is built for {', '.join(sorted(plats))}, the target is {t.platform}"
    return None


def plan_unit(unit: InputUnit, snap: Snapshot, matrices: Any, selected: Sequence[Tuple[str, str]] = (),
              pre: bool = False) -> Plan:
    """The plan of one input unit against a target snapshot (pure)."""
    return _Planner(unit, snap, matrices, selected, pre).run()


def merge_units(units: Sequence[InputUnit]) -> InputUnit:
    """All inputs as one install (``--together``): requirements and index options of every unit."""
    merged = InputUnit(path=" + ".join(u.path for u in units), kind="requirements" if len({u.kind for u in units}) > 1
                       else units[0].kind)
    for u in units:
        merged.files.extend(f for f in u.files if f not in merged.files)
        merged.requirements.extend(u.requirements)
        merged.indexes.extend(u.indexes)
        merged.notes.extend(u.notes)
        merged.not_judged.extend(u.not_judged)
        merged.channels.extend(c for c in u.channels if c not in merged.channels)
        merged.sources.update(u.sources)
        merged.conflicts.extend(u.conflicts)
        merged.extras.extend(u.extras)
        merged.groups.extend(u.groups)
        if u.python is not None and merged.python is None:
            merged.python = u.python
        if u.strategy == "first-index":
            merged.strategy = "first-index" if len(units) == 1 else merged.strategy
    return merged


# --------------------------------------------------------------------------- laying the plan over the target


def overlay(snap: Snapshot, plan: Plan, fresh: bool = False) -> Snapshot:
    """The target as the install would leave it: planned frameworks replace installed ones of the same name, the
    planned distributions and pinned wheels replace the installed versions (``fresh``: an empty environment)."""
    out = Snapshot.from_dict(snap.to_dict())
    planned = plan.frameworks
    if fresh:
        out.python.frameworks = []
        out.python.packages = {}
    names = {fw.name for fw in planned}
    gone = [fw for fw in out.python.frameworks if fw.name in names]
    out.python.frameworks = [fw for fw in out.python.frameworks if fw.name not in names] + list(planned)
    pk = dict(out.python.packages)
    for fw in gone:
        pk.pop(fw.distribution, None)
    pk.update(plan.installed)
    out.python.packages = pk
    replaced_wheels = set(plan.installed)
    out.cudnn = [c for c in out.cudnn if not (c.kind == "wheel" and c.evidence and
                                               (c.evidence[0].excerpt.split() or [""])[0].lower() in replaced_wheels)]
    if plan.target.python_from != "target":
        out.python.version = str(plan.target.python) if plan.target.python is not None else ""
    return out


# --------------------------------------------------------------------------- judging the overlaid target

# A gate finding that says the install itself fails supersedes check's findings about the same input lines that
# describe the installed state (ED500: "installed for another interpreter"; ED320: "pip kept one of the pins"):
# those are folded into the gate finding's consequences.
# A line whose install fails (no wheel for the target: ED803) installs nothing: what its build would then do on the
# target's driver and GPU is folded into that one cause, not said beside it.
@functools.lru_cache(maxsize=1)
def _old_releases() -> Tuple[Dict[str, Any], ...]:
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    try:
        text = (data_dir("matrices") / "gate_old_releases.toml").read_text(encoding="utf-8")
        return tuple(dict(r) for r in parse_toml_cached(text).get("series", []))
    except (OSError, ValueError):
        return ()


SUPERSEDES = {"ED803": ("ED500", "ED100", "ED200", "ED250", "ED520"), "ED805": ("ED320",)}


@dataclass
class Located:
    """A finding and the input lines it points at (empty: it is about the target machine as a whole)."""

    finding: Any
    locs: List[Location]

    def to_dict(self) -> Dict[str, Any]:
        d = self.finding.to_dict()
        d["locations"] = [{"file": x.file, "line": x.line} for x in self.locs]
        return d


def locate(finding: Any, plan: Plan) -> List[Location]:
    """The input lines a finding is about: its evidence sources that name an input line (the gate sets each planned
    Framework's evidence source to ``file:line``), else the planned framework its subject names."""
    known = {str(r.loc): r.loc for r in plan.unit.requirements}
    known.update({str(loc): loc for p in plan.problems for loc in p.locs if str(loc) not in known})  # requires-python
    out: List[Location] = []
    for ev in getattr(finding, "evidence", []) or []:
        loc = known.get(str(getattr(ev, "source", "")))
        if loc is not None and loc not in out:
            out.append(loc)
    if out:
        return out
    subject = str(getattr(finding, "subject", "") or "")
    parts = [s.strip() for s in subject.split(" / ")]
    for pkg in plan.packages:
        for fw in pkg.frameworks:
            label = f"{fw.distribution or fw.name} {fw.version}"
            if any(p == label or p.startswith(label + " ") for p in parts):
                for loc in pkg.locs[:1]:
                    if loc not in out:
                        out.append(loc)
    return out


def judge(plan: Plan, snap: Snapshot, matrices: Any, rules: Optional[list] = None,
          fresh: bool = False) -> Tuple[Snapshot, List[Located]]:
    """Run the rules (check's and the gate's) on the target with the plan laid over it."""
    from envdoctor.context import Context
    from envdoctor.rules.engine import run_rules

    over = overlay(snap, plan, fresh)
    findings = run_rules(Context(over, matrices, extra={"gate": plan}), rules)
    located = [Located(f, locate(f, plan)) for f in findings]
    kept: List[Located] = []
    heads = [x for x in located if x.finding.id in SUPERSEDES]
    for x in located:
        head = next((h for h in heads if x.finding.id in SUPERSEDES[h.finding.id] and set(x.locs) & set(h.locs)), None)
        if head is not None:
            note = f"{x.finding.id}: {x.finding.message}"
            if note not in head.finding.consequences:
                head.finding.consequences.append(note)
            continue
        kept.append(x)
    return over, kept
