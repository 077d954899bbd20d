"""Ask a real resolver what an install would put on the *target*: ``uv pip compile`` (the ``envdoctor[resolve]``
extra), else ``pip install --dry-run --report``, both told the target's Python and platform and allowed wheels only.

    resolver_for(env)        uv (the ``uv`` package's binary, or ``uv`` on PATH) or pip (``python -m pip``), or None
    resolve_unit(unit, ...)  -> Resolution: every package with its version, the index / file it comes from, its
                                Requires-Dist (pip's report) or "via" parents (uv's annotations); or the failure
    pinned_unit(...)         the input with each framework line pinned to what the resolver chose, for the planner

The resolver reads a requirements file gate writes from the input (its own index options, -c constraints, the
requirement lines as written, markers included, so the resolver evaluates them for the target) plus pip's
configuration: pip reads its own; uv is given pip's index-url / extra-index-url / find-links (read with
envdoctor.knowledge.index, never a host written here).  Direct wheel URLs, sdists, VCS and local paths are left out
(the planner judges wheel tags; the others need a build).  Every command runs through envdoctor/subproc.py.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from packaging.utils import canonicalize_name

from envdoctor.facts.platform import STATED_PLATFORMS, manylinux_tag, platform_facts, uv_python_platform
from envdoctor.gate.inputs import InputRequirement, InputUnit, Location
from envdoctor.gate.inputs.interface import read_text_file
from envdoctor.gate.trust import IndexPolicy, has_env_ref, refused_contacts

DEFAULT_TIMEOUT = 180.0
_RESOLVED_KINDS = ("requirements", "pyproject")
_NET_ERROR = re.compile(r"(error sending request|Failed to fetch|dns error|Connection refused|connection refused|"
                        r"Could not fetch URL|NewConnectionError|Max retries exceeded|timed out|Network is unreachable|"
                        r"Temporary failure in name resolution|Failed to download|Could not connect)", re.I)
_NAME = r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?(?:[=<>!~]{1,3}[0-9][0-9A-Za-z.*+!]*)?"
_NO_MATCH_PIP = re.compile(r"No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*)", re.I)
# What the resolver states as the cause, per package (uv's words; pip's "No matching distribution found" states none:
# it says the same for a release that does not exist and for one without a wheel for the target).
# uv says "has" of one release and "have" of several ("all versions of X have no wheels ...", "X>=1.0 have ...").
_UV_CAUSES = (
    ("python", re.compile(_NAME + r" ha(?:s|ve) no wheels with a matching Python (?:ABI|implementation|version) tag",
                          re.I)),
    ("python", re.compile(_NAME + r" depends? on Python\s*[<>=!~]", re.I)),
    ("platform", re.compile(_NAME + r" ha(?:s|ve) no wheels with a matching platform tag", re.I)),
    ("platform", re.compile(_NAME + r" only ha(?:s|ve) wheels for", re.I)),
    ("build", re.compile(_NAME + r" ha(?:s|ve) no usable wheels", re.I)),
    ("build", re.compile(r"building source distributions for `?" + _NAME + r"`? is disabled", re.I)),
    ("missing", re.compile(r"there (?:is|are) no versions? of " + _NAME, re.I)),
)
_BUILD_DISABLED = re.compile(r"building (?:from source|source distributions)(?: for \S+)? is disabled|ha(?:s|ve) no usable wheels|"
                             r"--only-binary|no binary distribution", re.I)
_CONFLICT = re.compile(r"unsatisfiable|ResolutionImpossible|conflict|are incompatible", re.I)


@dataclass
class ResolvedDist:
    name: str
    version: str
    source: str = ""  # the index (uv) or the file URL (pip) it comes from
    requires: List[str] = field(default_factory=list)  # Requires-Dist (pip's report)
    via: List[str] = field(default_factory=list)  # parents (uv's annotations); "-r" = asked for by the input
    requested: bool = False


@dataclass
class Resolution:
    tool: str  # "uv" | "pip"
    status: str  # ok | failed | unreachable | error
    dists: Dict[str, ResolvedDist] = field(default_factory=dict)
    message: str = ""  # the resolver's own words on a failure
    no_match: List[str] = field(default_factory=list)  # packages with no distribution for the target
    # why, per package of no_match, as the resolver stated it: python | platform | missing | build | unstated
    causes: Dict[str, str] = field(default_factory=dict)
    argv: List[str] = field(default_factory=list)
    duration_s: float = 0.0
    left_out: List[Tuple[InputRequirement, str]] = field(default_factory=list)  # lines not given to the resolver

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def parents(self, name: str) -> List[str]:
        d = self.dists.get(name)
        if d is None:
            return []
        if d.via:
            return [v for v in d.via if v != "-r"]
        return [n for n, other in self.dists.items() if any(_req_name(r) == name for r in other.requires)]

    def roots_of(self, name: str) -> List[str]:
        """The requested distributions that bring ``name`` in (itself when requested)."""
        seen, out, todo = set(), [], [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            d = self.dists.get(n)
            if d is not None and d.requested:
                out.append(n)
            todo.extend(self.parents(n))
        return sorted(out)


def _req_name(text: str) -> str:
    mm = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text or "")
    return str(canonicalize_name(mm.group(1))) if mm else ""


# --------------------------------------------------------------------------- which resolver


def resolver_for(env: Mapping[str, str]) -> Optional[Tuple[str, List[str]]]:
    """("uv", argv prefix) or ("pip", argv prefix), or None (``ENVDOCTOR_GATE_RESOLVER=off``, or neither found).
    ``ENVDOCTOR_GATE_RESOLVER`` = auto (default: uv, else pip) | uv | pip | off."""
    from envdoctor.subproc import Runner

    pref = (env.get("ENVDOCTOR_GATE_RESOLVER") or "auto").strip().lower()
    if pref in ("off", "none", "0", "offline"):
        return None
    if pref in ("auto", "uv"):
        uv = None
        try:
            from uv import find_uv_bin

            uv = find_uv_bin()
        except Exception:  # noqa: BLE001 - the extra is not installed: uv on PATH, else pip
            uv = Runner(env=dict(env)).which("uv")
        if uv:
            return "uv", [uv, "pip", "compile"]
        if pref == "uv":
            return None
    import importlib.util

    if importlib.util.find_spec("pip") is not None:
        return "pip", [sys.executable, "-m", "pip"]
    return None


# --------------------------------------------------------------------------- the target, for the resolver


def uv_platform(platform: Optional[str], glibc: str = "") -> Optional[str]:
    """uv's --python-platform for the target (no platform: Linux x86_64); None for one uv is not told of."""
    return uv_python_platform(platform or "linux-x86_64", glibc)


def pip_platforms(platform: Optional[str], glibc: str = "") -> List[str]:
    """pip's --platform tags for the target, newest first (no platform: Linux x86_64); none for a platform pip is
    not told of (an Intel Mac: no build table lists it)."""
    facts = platform_facts(platform or "linux-x86_64")
    if facts is None or facts.key not in STATED_PLATFORMS:
        return []
    arch = facts.wheel_arch
    if facts.wheel_os == "linux":
        top = int(manylinux_tag(glibc).split("_")[1])
        tags = [f"manylinux_2_{n}_{arch}" for n in range(top, 16, -1)]
        return tags + [f"manylinux2014_{arch}"] + ([f"manylinux2010_{arch}", f"manylinux1_{arch}"] if arch == "x86_64"
                                                   else []) + [f"linux_{arch}"]
    if facts.wheel_os == "macosx":
        return [f"macosx_{v}_0_{arch}" for v in range(15, 10, -1)] + ["macosx_11_0_universal2"]
    return [f"{facts.wheel_os}_{arch}"]


# --------------------------------------------------------------------------- what the resolver reads


def _is_wheel_or_build(req: InputRequirement) -> Optional[str]:
    if not req.url:
        return None
    if req.wheel_tags or req.url.lower().split("#", 1)[0].endswith(".whl"):
        return "a direct wheel URL: judged by its file name's tags"
    return "a source archive / VCS / local path: it has to be built (not given to the resolver)"


def resolver_input(unit: InputUnit, reqs: Sequence[InputRequirement]) -> Tuple[str, str, List[Tuple[InputRequirement, str]]]:
    """(requirements text, constraints text, lines left out with why) for the resolver."""
    lines: List[str] = []
    for o in unit.indexes:
        if o.kind == "index-url":
            lines.append(f"--index-url {o.url}")
        elif o.kind == "extra-index-url" or (o.kind == "uv-index" and not o.explicit):
            lines.append(f"--extra-index-url {o.url}")
        elif o.kind == "find-links":
            lines.append(f"--find-links {_local_to(o.url, o.loc.file)}")
        elif o.kind == "no-index":
            lines.append("--no-index")
    cons: List[str] = []
    left: List[Tuple[InputRequirement, str]] = []
    for r in reqs:
        if r.conda:
            continue
        why = _is_wheel_or_build(r)
        if not why and has_env_ref((r.raw or "") + (r.marker or "")):
            # pip and uv expand ${VAR} in a requirements file themselves: a variable gate did not expand never
            # reaches them
            why = "it names an environment variable gate does not expand (--env-var NAME)"
        if why:
            left.append((r, why))
            continue
        text = r.label + (f"; {r.marker}" if r.marker else "")
        (cons if r.constraint else lines).append(text)
    return "\n".join(lines) + "\n", "\n".join(cons) + ("\n" if cons else ""), left


def _uv_project(unit: InputUnit) -> bool:
    """Is the input a uv project, given to uv itself (its [tool.uv] indexes and sources are uv's to read)?"""
    return unit.kind == "pyproject" and bool(unit.sources or any(o.kind == "uv-index" for o in unit.indexes))


_FOLDER_ENTRIES = 5000  # a project folder's entries mirrored for uv, at most


def _pyproject_for_uv(path: str, tmp: str) -> str:
    """The project file under the name uv reads a project by (``pyproject.toml``; any other name is taken for a
    PEP 751 lock file). A renamed one (pyproject-cuda.toml) is given as ``pyproject.toml`` in a folder of links to its
    own folder's entries, so that its relative path sources are found where they are; nothing is written beside it."""
    path = os.path.abspath(path)
    if os.path.basename(path) == "pyproject.toml":
        return path
    folder, mirror = os.path.dirname(path), os.path.join(tmp, "project")
    os.mkdir(mirror)
    with os.scandir(folder) as it:
        for i, entry in enumerate(it):
            if i >= _FOLDER_ENTRIES:
                break
            if entry.name not in ("pyproject.toml", os.path.basename(path)):
                os.symlink(entry.path, os.path.join(mirror, entry.name))
    # the file is read again by the input reader's own rules (a regular file, bounded), as gate read it first: a
    # file swapped for a FIFO or a huge one since then is an error here, not a hang
    text = read_text_file(path)
    with open(os.path.join(mirror, "pyproject.toml"), "w", encoding="utf-8") as dst:
        dst.write(text)
    return os.path.join(mirror, "pyproject.toml")


def _local_to(url: str, written_in: str) -> str:
    """A relative find-links path as pip reads it: relative to the requirements file that names it when it exists
    there (the resolver reads a copy of the file elsewhere), else left as written."""
    if "://" in url or url.startswith("file:") or os.path.isabs(url):
        return url
    beside = os.path.join(os.path.dirname(os.path.abspath(written_in)), url)
    return beside if os.path.exists(beside) else url


def _uv_project_index_args(unit: InputUnit) -> List[str]:
    """A uv project's own indexes as uv options: --no-config (which keeps a repository's uv.toml out) also keeps
    uv from reading [tool.uv] of the project it compiles, so its [[tool.uv.index]] entries and index-url /
    extra-index-url / find-links are given on the command line (each already allowed by the index policy). A
    named index keeps its name (``name=URL``), so that [tool.uv.sources] naming it still find it."""
    out: List[str] = []
    for o in unit.indexes:
        if o.kind == "uv-index":
            url = f"{o.name}={o.url}" if o.name else o.url
            out += ["--default-index", url] if o.default else ["--index", url]
        elif o.kind == "index-url":
            out += ["--default-index", o.url]
        elif o.kind == "extra-index-url":
            out += ["--index", o.url]
        elif o.kind == "find-links":
            out += ["--find-links", _local_to(o.url, o.loc.file)]
    return out


def _pip_config_args(env: Mapping[str, str]) -> List[str]:
    """pip's configured indexes as uv options (uv does not read pip's configuration)."""
    from envdoctor.knowledge.index import read_pip_config

    try:
        conf = read_pip_config(env)
    except Exception:  # noqa: BLE001 - an unreadable pip configuration: uv's defaults
        return []
    out: List[str] = []
    if "index-url" in conf and conf["index-url"][0].strip():
        out += ["--default-index", conf["index-url"][0].split()[0]]
    for url in (conf.get("extra-index-url", ("", ""))[0] or "").split():
        out += ["--index", url]
    for url in (conf.get("find-links", ("", ""))[0] or "").split():
        out += ["--find-links", url]
    return out


# --------------------------------------------------------------------------- running it


def resolve_unit(unit: InputUnit, reqs: Sequence[InputRequirement], *, python: str, platform: Optional[str],
                 glibc: str = "", env: Optional[Mapping[str, str]] = None, pre: bool = False,
                 selected: Sequence[Tuple[str, str]] = (), timeout: Optional[float] = None) -> Optional[Resolution]:
    """What the resolver installs for ``reqs`` on the target (None: no resolver, or an input it does not read)."""
    from envdoctor.subproc import Runner

    environ = dict(os.environ if env is None else env)
    found = resolver_for(environ)
    if found is None or unit.kind not in _RESOLVED_KINDS:
        return None
    tool, prefix = found
    # uv wraps its report to COLUMNS (else 80 columns): one line per statement keeps its causes and its words whole
    environ["COLUMNS"] = "4000"
    limit = timeout or float(environ.get("ENVDOCTOR_GATE_RESOLVE_TIMEOUT") or DEFAULT_TIMEOUT)
    text, cons, left = resolver_input(unit, reqs)
    with tempfile.TemporaryDirectory(prefix="envdoctor-gate-") as tmp:
        req_file = os.path.join(tmp, "requirements.in")
        with open(req_file, "w", encoding="utf-8") as fh:
            fh.write(text)
        cons_file = None
        if cons:
            cons_file = os.path.join(tmp, "constraints.txt")
            with open(cons_file, "w", encoding="utf-8") as fh:
                fh.write(cons)
        if tool == "uv":
            src = [req_file]
            if _uv_project(unit):
                try:
                    project = _pyproject_for_uv(unit.path, tmp)
                except (OSError, ValueError) as exc:
                    return Resolution(tool, "error", message=f"{unit.path} cannot be read again for the resolver: {exc}")
                src = [project] + [f"--{k}={n}" for k, n in selected if k in ("extra", "group")]
            argv = prefix + src + ["--python-version", python, "--no-build", "--no-header", "--emit-index-annotation",
                                   "--no-config", "--no-python-downloads", "--python", sys.executable,
                                   "--index-strategy", "unsafe-best-match" if unit.strategy == "pip" else "first-index"]
            plat = uv_platform(platform, glibc)
            if plat:
                argv += ["--python-platform", plat]
            if pre:
                argv += ["--prerelease", "allow"]
            if cons_file:
                argv += ["-c", cons_file]
            if unit.strategy == "pip":  # a uv project ([tool.uv] indexes / sources) is installed by uv, which
                argv += _pip_config_args(environ)  # never reads pip's configuration
            if _uv_project(unit):
                argv += _uv_project_index_args(unit)
        else:
            report = os.path.join(tmp, "report.json")
            argv = prefix + ["install", "--dry-run", "--quiet", "--report", report, "--ignore-installed",
                             "--only-binary=:all:", "--target", os.path.join(tmp, "target"), "--python-version", python,
                             "--disable-pip-version-check", "--no-input", "-r", req_file]
            for p in pip_platforms(platform, glibc):
                argv += ["--platform", p]
            if platform is None or platform in STATED_PLATFORMS:
                argv += ["--implementation", "cp"]
            if pre:
                argv.append("--pre")
            if cons_file:
                argv += ["-c", cons_file]
        res = Runner(env=environ, timeout=limit).run(argv)
        out = Resolution(tool=tool, status="ok", argv=list(argv), duration_s=res.duration_s, left_out=left)
        if res.status in ("missing", "error"):
            out.status, out.message = "error", res.reason
            return out
        if res.status == "timeout":
            out.status, out.message = "unreachable", res.reason
            return out
        if res.status != "ok":
            said = (res.stderr or "") + "\n" + (res.stdout or "")
            if "Traceback (most recent call last)" in said:
                # the resolver itself crashed (pip before 23.2 on an index's PEP 691 metadata key): its words say
                # nothing about the requirements, so the input is judged offline, saying why
                last = [ln.strip() for ln in said.splitlines() if ln.strip()][-1:]
                out.status, out.message = "error", f"{tool} crashed ({last[0][:160] if last else 'a traceback'})"
                return out
            failed = _failure(out, said)
            if tool == "pip" and failed.status == "failed" and failed.causes and \
                    set(failed.causes.values()) == {"unstated"}:
                silent = _silent_indexes(environ, unit, sorted(failed.causes)[0])
                if silent:
                    # pip told to make no retries (retries = 0) prints no connection error, only "No matching
                    # distribution": an index that does not answer is the cause, not the target
                    failed.status = "unreachable"
                    failed.message += f"\n(no answer from {silent})"
            return failed
        if tool == "uv":
            out.dists = parse_uv_output(res.stdout)
        else:
            try:
                with open(report, encoding="utf-8") as fh:
                    out.dists = parse_pip_report(json.load(fh))
            except (OSError, ValueError) as exc:
                out.status, out.message = "error", f"pip's report cannot be read: {exc}"
        return out


def _silent_indexes(environ: Mapping[str, str], unit: InputUnit, project: str) -> Optional[str]:
    """The indexes pip read for the input (its own index options and pip's configuration), when none of them
    answers for ``project`` (one bounded request each, no retry); None when any answers or none is known."""
    from envdoctor.knowledge.index import IndexClient, IndexUnavailable, NoIndexConfigured, configured_indexes

    urls = [o.url for o in unit.indexes if o.kind in ("index-url", "extra-index-url", "uv-index") and o.url]
    try:
        urls += configured_indexes(env=environ).urls
    except NoIndexConfigured:
        pass
    urls = list(dict.fromkeys(urls))
    if not urls:
        return None
    for url in urls:
        try:
            IndexClient([url], timeout=5, retries=0).fetch(url.rstrip("/") + f"/{project}/")
        except IndexUnavailable:
            continue
        return None
    return ", ".join(urls)


def _canon(text: str) -> str:
    return str(canonicalize_name(re.split(r"[=<>!~\[;\s]", text.strip())[0]))


def _failure(out: Resolution, text: str) -> Resolution:
    """A failed resolution, with the cause of each package's failure only where the resolver states it (matched
    without regard to case: the resolvers' wording is not an interface)."""
    clean = "\n".join(line.rstrip() for line in text.splitlines() if line.strip() and not line.startswith("WARNING:"))
    out.message = clean.strip()
    # uv wraps its report to the width it finds (COLUMNS, else 80): a cause can be cut over two lines
    flat = re.sub(r"\s*\n\s*", " ", clean)
    causes: Dict[str, str] = {}
    for cause, rx in _UV_CAUSES:
        for m in rx.finditer(flat):
            name = _canon(m.group(1))
            if name and name not in causes:
                causes[name] = cause
    for m in _NO_MATCH_PIP.finditer(clean):
        causes.setdefault(_canon(m.group(1)), "unstated")
    out.causes = causes
    out.no_match = sorted(n for n, c in causes.items() if c != "build")
    conflict = bool(_CONFLICT.search(clean))
    if any(c == "build" for c in causes.values()) or (_BUILD_DISABLED.search(clean) and not out.no_match):
        # an sdist-only package: pip would build it; gate does not build (no code of the input runs), so this
        # input is judged offline, and the package is named as what stopped the resolution
        out.status = "needs-build"
        out.no_match = sorted(n for n, c in causes.items() if c == "build") or out.no_match
        return out
    stated = any(c in ("python", "platform", "missing") for c in causes.values())
    if _NET_ERROR.search(text) and not stated and (out.no_match or not conflict):
        # pip turns an index it cannot reach into "from versions: none": the index, not the target, is the cause
        out.status = "unreachable"
    else:
        out.status = "failed"
    return out


def parse_uv_output(text: str) -> Dict[str, ResolvedDist]:
    """``name==version`` lines with ``# via`` / ``# from`` annotations (uv pip compile, requirements.txt format)."""
    dists: Dict[str, ResolvedDist] = {}
    cur: Optional[ResolvedDist] = None
    in_via = False
    for raw in text.splitlines():
        line = raw.rstrip()
        mm = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", line)
        if mm:
            cur = ResolvedDist(str(canonicalize_name(mm.group(1))), mm.group(2))
            dists[cur.name] = cur
            in_via = False
            continue
        if cur is None or not line.lstrip().startswith("#"):
            continue
        body = line.lstrip()[1:].strip()
        if body.startswith("from "):
            cur.source = body[5:].strip()
            in_via = False
        elif body == "via":
            in_via = True
        elif body.startswith("via "):
            _add_via(cur, body[4:].strip())
            in_via = False
        elif in_via:
            _add_via(cur, body)
    return dists


def _add_via(d: ResolvedDist, text: str) -> None:
    if text.startswith(("-r ", "-c ")) or text.startswith("--override"):
        d.requested = d.requested or text.startswith("-r ")
        d.via.append("-r")
        return
    name = _req_name(text)
    if name:
        d.via.append(name)
        if "(pyproject.toml)" in text or text.endswith(".toml"):
            d.requested = True


def parse_pip_report(report: dict) -> Dict[str, ResolvedDist]:
    dists: Dict[str, ResolvedDist] = {}
    for item in report.get("install") or []:
        meta = item.get("metadata") or {}
        name = str(canonicalize_name(str(meta.get("name", ""))))
        if not name:
            continue
        dists[name] = ResolvedDist(name, str(meta.get("version", "")),
                                   source=str((item.get("download_info") or {}).get("url", "")),
                                   requires=list(meta.get("requires_dist") or []), requested=bool(item.get("requested")))
    return dists


# --------------------------------------------------------------------------- the resolved set, for the planner


def pinned_unit(unit: InputUnit, reqs: Sequence[InputRequirement], resolution: Resolution, is_framework) -> InputUnit:
    """A copy of the unit whose framework requirements are the resolver's choices (``name==version`` from the index
    it came from), each at the input line that asked for it -- or, for one pulled in by another package (torch via
    xformers), at the lines of the packages that bring it in."""
    by_name: Dict[str, List[InputRequirement]] = {}
    for r in reqs:
        by_name.setdefault(r.name, []).append(r)
    out = InputUnit(path=unit.path, kind=unit.kind, files=list(unit.files), indexes=list(unit.indexes),
                    strategy="first-index", python=unit.python, channels=list(unit.channels), notes=list(unit.notes),
                    extras=list(unit.extras), groups=list(unit.groups))
    kept = [r for r in reqs if r.conda or (r.url and r.wheel_tags)]
    out.requirements.extend(kept)
    for name, d in sorted(resolution.dists.items()):
        probe = InputRequirement(name=name, raw=name, loc=unit.requirements[0].loc if unit.requirements else Location(unit.path))
        if not is_framework(probe):
            continue
        asked = [r for r in by_name.get(name, []) if not r.url]
        if asked:
            base = asked[0]
            raw, loc, extras, group = base.raw, base.loc, tuple(sorted({x for r in asked for x in r.extras})), base.group
        else:
            roots = [r for n in resolution.roots_of(name) for r in by_name.get(n, [])]
            if not roots:
                continue
            base = roots[0]
            raw = f"{name}=={d.version} (required by {', '.join(sorted({r.name for r in roots}))})"
            loc, extras, group = base.loc, (), base.group
        out.requirements.append(InputRequirement(
            name=name, raw=raw, loc=loc, extras=extras, specifier=f"=={d.version}", version=d.version,
            index=d.source or None, group=group))
    return out


# --------------------------------------------------------------------------- one input, resolved or offline


def _requirements_for(unit: InputUnit, selected: Sequence[Tuple[str, str]]) -> List[InputRequirement]:
    """The requirements an install of this unit asks for: the chosen extras / groups (all but the conflicting ones
    when none is chosen), markers left to the resolver."""
    chosen = set(selected)
    blocked = {g for group in unit.conflicts for g in group} if not chosen else set()
    out = []
    for r in unit.requirements:
        if r.group and r.group[0] in ("extra", "group"):
            if (chosen and r.group not in chosen) or (not chosen and r.group in blocked):
                continue
        out.append(r)
    return out


def _linux_glibc(platform: Optional[str], snap) -> str:
    """The glibc the resolver's manylinux tags were built from (X.Y), for a Linux target; "" otherwise."""
    if uv_platform(platform, "") is None or "manylinux" not in (uv_platform(platform, "") or ""):
        return ""
    return manylinux_tag(getattr(snap.platform, "glibc", "") or "").replace("_", ".")


def _target_text(python: str, platform: Optional[str], glibc: str, tool: str) -> str:
    plat = uv_platform(platform, glibc) if tool == "uv" else (pip_platforms(platform, glibc) or ["?"])[0]
    return f"Python {python}, {platform or 'linux-x86_64'} ({plat})"


def plan_for_target(unit: InputUnit, snap, matrices, *, selected: Sequence[Tuple[str, str]] = (), pre: bool = False,
                    offline: bool = False, env: Optional[Mapping[str, str]] = None, policy=None, guard=None):
    """The Plan of one input: what the resolver installs on the target (judged as the planner judges a lock file),
    or, with ``offline`` / no resolver / no index reachable / an index the ``policy`` does not allow
    (envdoctor/gate/trust.py), the data-only planner's plan with what it could not resolve listed as not judged."""
    import time

    from envdoctor.gate.plan import Problem, family_of, plan_unit

    started = time.monotonic()
    base = plan_unit(unit, snap, matrices, selected=selected, pre=pre)
    _requires_python(base, unit)
    t = base.target
    python = t.python_xy if t.python is not None else ""
    why_offline = ""
    res: Optional[Resolution] = None
    if offline:
        why_offline = "--offline"
    elif unit.kind not in _RESOLVED_KINDS:
        why_offline = {"uv.lock": "a uv.lock states the versions", "pylock": "a pylock.toml states the versions",
                       "conda": "conda's solver is not run"}.get(unit.kind, unit.kind)
    elif not python:
        why_offline = "the target's Python is not known (state --python 3.X)"
    elif refused := _refused(unit, policy, guard, env):
        why_offline = "the input names a place gate may not contact"
        for loc, why in refused:
            base.not_judged.append((loc, f"not judged: {why}"))
    else:
        reqs = _requirements_for(unit, selected)
        res = resolve_unit(unit, reqs, python=python, platform=t.platform if not t.wsl else "wsl2",
                           glibc=getattr(snap.platform, "glibc", "") or "", env=env, pre=pre, selected=selected)
        sdist_only = [r for r in reqs if res is not None and res.status == "needs-build" and r.name in res.no_match]
        if sdist_only and len(sdist_only) < len(reqs) and not _uv_project(unit):
            # A line whose package has only a source distribution (pure-Python jax releases) is left out and the
            # rest resolved: the frameworks' wheels are still judged by the index's own files, and nothing is built.
            rest = [r for r in reqs if r not in sdist_only]
            again = resolve_unit(unit, rest, python=python, platform=t.platform if not t.wsl else "wsl2",
                                 glibc=getattr(snap.platform, "glibc", "") or "", env=env, pre=pre, selected=selected)
            if again is not None and again.status in ("ok", "failed"):
                res, reqs = again, rest
                res.left_out += [(r, "it has only a source distribution: gate builds nothing, so it is not judged")
                                 for r in sdist_only]
        if res is None:
            off = (dict(os.environ if env is None else env).get("ENVDOCTOR_GATE_RESOLVER") or "").strip().lower()
            why_offline = (f"ENVDOCTOR_GATE_RESOLVER={off}" if off in ("off", "none", "0", "offline")
                           else "no resolver (install envdoctor[resolve] for uv, or pip)")
        elif res.status in ("unreachable", "error"):
            why_offline = f"{res.tool} could not resolve: {_first(res.message)}"
        elif res.status == "needs-build":
            why_offline = (f"{', '.join(res.no_match) or 'a package'} has only a source distribution; gate builds "
                           f"nothing, so {res.tool} could not resolve")
    if res is None or res.status in ("unreachable", "error", "needs-build"):
        base.resolver = f"offline ({why_offline}): versions from envdoctor's data"
        _offline_honesty(base, unit, selected)
        return base
    where = _target_text(python, t.platform, getattr(snap.platform, "glibc", "") or "", res.tool)
    if res.status == "failed":
        base.resolver = f"{res.tool} for {where}: resolution failed ({time.monotonic() - started:.1f} s)"
        locs = _failure_locs(unit, reqs, res)
        kind = "resolve-no-match" if res.no_match else "resolve-conflict"
        # The data's own account of a line the resolver failed on is kept where it agrees with the cause the
        # resolver stated (the release is not on these indexes; no wheel for this Python / platform): it names
        # the index or the release that fixes it. A cause the resolver did not state is never put in its mouth.
        kept = [p for p in base.problems if set(p.locs) & set(locs) and kind == "resolve-no-match"
                and _agrees(p, res, unit)]
        for p in kept:
            p.facts["resolver_said"] = (res.tool, res.message)
        explained = {x for p in kept for x in p.locs}
        base.problems = [p for p in base.problems if not (set(p.locs) & set(locs))] + kept
        locs = [x for x in locs if x not in explained]
        for pkg in base.packages:  # the install stops here: nothing of it is laid over the target
            pkg.installable = False
            pkg.frameworks = []
            pkg.summary = (pkg.summary or pkg.name) + f" -- not installed: {res.tool} finds no solution"
        base.installed = {}
        if locs or not kept:
            named = [n for n in res.no_match if not any(r.name == n and r.loc in explained for r in reqs)]
            causes = sorted({res.causes.get(n, "unstated") for n in named}) or ["unstated"]
            base.problems.append(Problem(kind, "error", (_by_loc(unit, locs[0]) or unit.path) if locs else unit.path,
                                         locs, {"tool": res.tool, "message": res.message, "packages": named,
                                                "target": where, "cause": causes[0] if len(causes) == 1 else "unstated",
                                                "requirements": [(_by_loc(unit, x), str(x)) for x in locs],
                                                "package": ", ".join(named) or "the requirements",
                                                "glibc": _linux_glibc(t.platform, snap)}))
        _left_out(base, res)
        return base
    pinned = pinned_unit(unit, reqs, res, lambda r: family_of(r) is not None)
    plan = plan_unit(pinned, snap, matrices, selected=(), pre=True)
    plan.unit = unit
    plan.problems = [p for p in plan.problems if p.kind != "pins-unresolvable"]  # the resolver resolved them
    plan.problems.extend(p for p in base.problems if p.kind == "requires-python")
    for name, d in res.dists.items():
        plan.installed[name] = d.version
    plan.resolver = (f"{res.tool} for {where}: {len(res.dists)} packages resolved "
                     f"({time.monotonic() - started:.1f} s)")
    plan.not_judged.extend(base.not_judged)
    _left_out(plan, res)
    return plan


def _left_out(plan, res: Resolution) -> None:
    """The lines the resolver was not given, each listed as not judged with why (a direct wheel: its tags are)."""
    for r, why in res.left_out:
        if not any(loc == str(r.loc) for loc, _ in plan.not_judged) and not (r.url and r.wheel_tags):
            plan.not_judged.append((str(r.loc), f"{r.raw}: {why}"))


def _refused(unit: InputUnit, policy, guard, env: Optional[Mapping[str, str]]) -> List[Tuple[str, str]]:
    """(file:line, why) of each place the input would make the resolver contact that is not allowed."""

    if policy is None:
        policy = IndexPolicy.for_run(dict(os.environ if env is None else env))
    return refused_contacts(unit, policy, guard, uv_project=_uv_project(unit))


# the data's accounts of a line that agree with each cause a resolver states
_AGREES = {"missing": ("not-served", "variant-unpublished", "unknown-version"),
           "python": ("no-wheel-python", "requires-python"),
           "platform": ("no-wheel-platform", "wheel-tags"),
           "unstated": ("not-served", "variant-unpublished", "unknown-version", "no-wheel-python", "no-wheel-platform",
                        "wheel-tags")}


def _agrees(problem, res: Resolution, unit: InputUnit) -> bool:
    """Does the data's problem on a line explain the resolver's failure there, in the cause the resolver stated?"""
    if problem.severity != "error":
        return False
    names = {r.name for r in unit.requirements if r.loc in problem.locs}
    causes = {res.causes.get(n) for n in names if n in res.causes}
    return bool(causes) and all(problem.kind in _AGREES.get(c or "unstated", ()) for c in causes)


def _first(text: str) -> str:
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    return lines[0][:200] if lines else "no answer"


def _by_loc(unit: InputUnit, loc) -> str:
    return next((r.raw for r in unit.requirements if r.loc == loc), str(loc))


def _failure_locs(unit: InputUnit, reqs: Sequence[InputRequirement], res: Resolution) -> list:
    """The input lines a failed resolution is about: those naming a package the resolver found no distribution
    for, else every line whose package the resolver's message names."""
    names = set(res.no_match)
    locs = [r.loc for r in reqs if r.name in names]
    if not locs:
        said = {str(canonicalize_name(w)) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", res.message)}
        locs = [r.loc for r in reqs if r.name in said]
    out = []
    for x in locs:
        if x not in out:
            out.append(x)
    return out


def _requires_python(plan, unit: InputUnit) -> None:
    """A project's requires-python that excludes the target Python: pip / uv refuse to install the project."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from envdoctor.gate.inputs import Location
    from envdoctor.gate.plan import Problem
    from envdoctor.gate.sniff import requires_python

    t = plan.target
    got = requires_python(unit.path, unit.kind)
    if got is None or t.python is None:
        return
    spec, line = got
    try:
        ok = SpecifierSet(spec).contains(t.python, prereleases=True)
    except InvalidSpecifier:
        return
    if not ok:
        plan.problems.append(Problem("requires-python", "error", f"requires-python = \"{spec}\"",
                                     [Location(unit.path, line)],
                                     {"package": "the project", "python_spec": spec, "python": str(t.python),
                                      "kind": unit.kind}))


def _offline_honesty(plan, unit: InputUnit, selected: Sequence[Tuple[str, str]]) -> None:
    """Offline: a line whose package constrains a framework indirectly (xformers, triton ...) is unresolved."""
    from envdoctor.gate.indirect import indirect_row

    seen = {loc for loc, _ in plan.not_judged}
    for r in _requirements_for(unit, selected):
        row = indirect_row(r.name)
        if row is None or str(r.loc) in seen or plan.indirect.get(str(r.loc)) == "":  # "": judged from the data
            continue
        if plan.target.marker(r.marker) is False:
            continue
        gap = f" ({plan.indirect[str(r.loc)]})" if plan.indirect.get(str(r.loc)) else ""
        plan.not_judged.append((str(r.loc), f"{r.raw}: not resolved offline: {row.get('why', '')}{gap}; the "
                                            f"{row.get('constrains', 'framework')} it allows is not judged "
                                            f"(run gate with an index reachable)"))
        seen.add(str(r.loc))
        _unpin_assumed(plan, str(row.get("constrains", "")), r)


def _unpin_assumed(plan, constrains: str, by: InputRequirement) -> None:
    """A line that pins the framework release it installs with (tensorflow-text: one tensorflow minor), unresolved
    offline: a framework release the planner only assumed (the newest the data knows, no exact pin) may not be the
    one installed, so it is not judged -- its findings would be about a release the install may never get."""
    family = constrains.strip()
    if family not in ("torch", "tensorflow", "jax"):  # "torch, CUDA toolkit": built against it, not a pin
        return
    for pkg in plan.packages:
        if pkg.family != family or not pkg.frameworks:
            continue
        if any(sp.operator in ("==", "===") and "*" not in sp.version
               for q in pkg.requirements for sp in _specset(q.specifier)):
            continue  # the file pins it: the install gets that release or fails
        pkg.frameworks = []
        plan.not_judged.append((str(pkg.primary.loc), f"{pkg.primary.raw}: {pkg.name} {pkg.version} is only the "
                                                      f"newest release the data knows; {by.raw} ({by.loc}) decides "
                                                      f"which one installs, which the data cannot say offline"))


def _specset(text: str):
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return list(SpecifierSet(text or ""))
    except InvalidSpecifier:
        return []
