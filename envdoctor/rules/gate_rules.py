"""ED800-ED849: an install that fails before anything runs (``envdoctor gate`` only).

These rules read the plan ``envdoctor gate`` puts in ``Context.extra["gate"]`` (an envdoctor.gate.plan.Plan) and
stay silent without one, so ``envdoctor check`` never shows them.  The plan already knows what pip / uv / conda
would do with each input line (envdoctor/gate/plan.py); a Problem there is a line whose install fails or does not
do what it says.  Every finding cites the offending input line as an evidence item whose ``source`` is
``<file>:<line>`` -- the renderers of ``envdoctor gate`` read the location from there -- and its ``subject`` is the
requirement as written.

Everything else (driver vs build CUDA, GPU archs, cuDNN / nvidia-* pins, Python support, CPU builds on GPU
machines) is judged by the rules ``envdoctor check`` runs, on the target snapshot with the plan laid over it.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.version import Version

from envdoctor.facts.labels import row_source
from envdoctor.facts.versions import parse_version
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

PIP_REQ_FILE_DOC = "https://pip.pypa.io/en/stable/reference/requirements-file-format/"
TORCH_PREVIOUS = "https://pytorch.org/get-started/previous-versions/"


def _plan(ctx):
    plan = (getattr(ctx, "extra", None) or {}).get("gate")
    return plan if plan is not None and hasattr(plan, "problems") else None


def _problems(ctx, *kinds: str) -> list:
    plan = _plan(ctx)
    if plan is None:
        return []
    return [p for p in plan.problems if p.kind in kinds]


def _line_evidence(plan, p) -> List[EvidenceItem]:
    by_loc = {str(r.loc): r for r in plan.unit.requirements}
    out = []
    for loc in p.locs:
        r = by_loc.get(str(loc))
        out.append(EvidenceItem("input line", r.raw if r is not None else p.subject, str(loc)))
    said = p.facts.get("resolver_said")
    if said and p.kind != "resolve-no-match":  # the data's account, kept where the resolver's failure agrees
        out.append(EvidenceItem(f"{said[0]} says", _first_cause(said[1]), "resolver"))
    return out


def _row_src(ctx, row) -> str:
    return row_source(ctx.matrices, row)


def _install_name(ctx, package: str, version: str) -> str:
    """The name to pin `package` `version` under: its replacement where that release is only a stub."""
    m = ctx.matrices
    return m.install_name(package, version)


def _file_of(p) -> str:
    return p.locs[0].file if p.locs else "the requirements file"


def _driver_runs(ctx, cuda: Optional[str]) -> Optional[bool]:
    m = ctx.matrices
    d = ctx.snap.driver
    if not cuda or d.state != "ok" or not d.version:
        return None
    try:
        return bool(m.driver_runs_cuda(d.version, cuda, "windows" if ctx.snap.platform.wsl or ctx.os == "windows" else "linux"))
    except Exception:  # noqa: BLE001
        return None


# ----------------------------------------------------------------------------------------------
# ED800
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED800",
    name="index-does-not-serve",
    title="No package index in effect serves the build a line asks for",
    severity="error",
    area="environment",
    rationale="""
PyPI carries one build of each torch release per platform, without a local label (torch 2.1.2 on Linux is the
CUDA 12.1 build); every other build (+cu118, +cu121, +cpu, +rocm) lives only on download.pytorch.org/whl/<variant>.
A pin with a local label therefore installs only when that index is in effect: without it pip stops with "No
matching distribution found for torch==2.1.2+cu121". pip reads --index-url / --extra-index-url / --find-links only
on lines of their own (an option after a requirement on the same line is ignored), and an --index-url that
replaces PyPI hides packages only PyPI has (tensorflow, jax). The gate reports it before the download starts.
""",
    example="requirements.txt with `torch==2.1.2+cu121` and no PyTorch index: `ED800 error` at requirements.txt:1, "
            "fix: add `--extra-index-url https://download.pytorch.org/whl/cu121` on a line of its own.",
    references=[
        "https://github.com/jianchang512/stt/issues/4",
        "https://github.com/gzxiong/MedRAG/issues/1",
        "https://github.com/liu-qingyuan/faster_whisper_gradio/issues/1",
        PIP_REQ_FILE_DOC,
        TORCH_PREVIOUS,
    ],
)
def index_does_not_serve(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "not-served"):
        f = p.facts
        package, version = f.get("package"), f.get("version") or ""
        sources = f.get("sources") or []
        reading = "; ".join(s.describe() for s in sources) or "no index at all (--no-index)"
        ev = _line_evidence(plan, p) + [EvidenceItem("index in effect", s.describe(), str(s.loc) if s.loc else "default")
                                        for s in sources]
        fix: List[str] = []
        var, rel = f.get("variant"), f.get("release")
        wanted = f"{package}=={version}" if version and not str(version)[:1] in "<>=!~" else f"{package}{version}"
        if package == "torch" and var is not None:
            served = var.index_url or f.get("serving")
            ev.append(EvidenceItem(f"torch {rel.version if rel else ''} {var.name} published on", served or "?",
                                   _row_src(ctx, var)))
            label = "+" in version
            if label:
                why = f"torch {version} is published only on {served}"
            else:
                why = f"torch {version} is not on the index{'es' if len(sources) > 1 else ''} in effect"
            msg = (f"pip cannot install {p.subject}: {why}, and this install reads {reading}: "
                   f"\"No matching distribution found for {wanted}\".")
            if f.get("ignored"):
                opts = ", ".join(f"{opt} {val}" for _, opt, val in f["ignored"])
                msg += f" ({opts} on that line is ignored: pip reads index options only on lines of their own.)"
            if served:
                if f.get("strategy") == "first-index" and _file_of(p).endswith(".toml"):
                    fix += [f"Declare the index and pin torch to it in {_file_of(p)}:",
                            f'[[tool.uv.index]] name = "pytorch-{var.name}", url = "{served}", explicit = true',
                            f'[tool.uv.sources] torch = {{ index = "pytorch-{var.name}" }}']
                else:
                    fix += [f"Add the index that serves it on a line of its own in {_file_of(p)}:",
                            f"--extra-index-url {served}",
                            "or install it directly:",
                            f"$ pip install {wanted} --index-url {served}"]
        elif f.get("serving_option"):
            serving, opt = f.get("serving"), f["serving_option"]
            msg = (f"pip cannot install {p.subject}: {package} {version} is published only on {serving} ({opt}), and "
                   f"this install reads {reading}: \"No matching distribution found for {wanted}\".")
            fix += [f"Add it on a line of its own in {_file_of(p)}:", f"{opt} {serving}"]
        else:
            serving = f.get("serving") or "the default index"
            msg = (f"pip cannot install {p.subject}: {package} is published on {serving}, but this install reads only "
                   f"{reading}: \"No matching distribution found for {package}\".")
            fix += [f"Keep PyPI in effect: turn the --index-url in {_file_of(p)} into --extra-index-url, or add on a "
                    f"line of its own:", f"--extra-index-url {serving}"]
        out.append(r.finding(msg, evidence=ev, fix=fix, subject=p.subject, cause=f"gate-install:{p.subject}"))
    return out


# ----------------------------------------------------------------------------------------------
# ED801
# ----------------------------------------------------------------------------------------------
def _closest_variant(ctx, rel, label: str):
    """The published variant of the same release nearest to the one asked for, preferring one the driver runs."""
    want = label.lower()
    same_kind = [v for v in rel.variants if (v.kind == "cuda") == want.startswith("cu") and v.index_url]
    if not same_kind:
        return None
    if want.startswith("cu"):
        wv = parse_version(f"{want[2:-1]}.{want[-1]}")
        runs = [v for v in same_kind if _driver_runs(ctx, v.cuda) is not False]
        pool = runs or same_kind
        if wv is not None:
            return min(pool, key=lambda v: (abs(Version(v.cuda).major - wv.major), abs(Version(v.cuda) > wv),
                                             -Version(v.cuda).minor if Version(v.cuda) > wv else Version(v.cuda).minor))
        return pool[-1]
    return same_kind[0]


def _last_release_with(ctx, label: str):
    m = ctx.matrices
    best = None
    for rel in m.pytorch_releases:
        if rel.variant(label) is not None and (best is None or Version(rel.version) > Version(best.version)):
            best = rel
    return best


@rule(
    id="ED801",
    name="build-never-published",
    title="A pinned framework build (or extra) was never published",
    severity="error",
    area="environment",
    rationale="""
Each torch release is built for a handful of CUDA versions only, and the set moves with every release (2.6 dropped
cu121; 2.9 ships cu126, cu128, cu130). A pin such as torch==2.6.0+cu121 names a wheel that no index has, so pip
fails with "No matching distribution found" whatever index is in effect. The same holds for an extra a release
does not define (tensorflow[and-cuda] before 2.14, jax[cuda13] before 0.7.2): pip only warns that the extra does
not exist and installs the framework without its CUDA libraries, so it runs on the CPU.
""",
    example="`torch==2.6.0+cu121` on a driver-535 machine: `ED801 error`, fix `pip install torch==2.6.0+cu124 "
            "--index-url https://download.pytorch.org/whl/cu124`.",
    references=[
        "https://github.com/ogkalu2/comic-translate/issues/215",
        TORCH_PREVIOUS,
        "https://pip.pypa.io/en/stable/cli/pip_install/",
    ],
)
def build_never_published(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "variant-unpublished", "no-extra"):
        f = p.facts
        ev = _line_evidence(plan, p)
        if p.kind == "no-extra":
            msg = (f"{p.subject}: {f.get('package')} {f.get('version')} does not define the [{f.get('extra')}] extra: "
                   f"{f.get('consequence')}.")
            out.append(r.finding(msg, severity=p.severity, evidence=ev, subject=p.subject,
                                 fix=["Pick a release that has the extra (see the framework's install guide) or drop it."]))
            continue
        rel, label = f["release"], f["label"]
        published = f.get("published") or []
        ev.append(EvidenceItem(f"torch {rel.version} builds", ", ".join(published), _row_src(ctx, rel)))
        where = "conda's pytorch channel" if f.get("conda") else "any index"
        msg = (f"{p.subject}: torch {f['version']} was never published as a {label} build (torch {rel.version} builds: "
               f"{', '.join(published)}), so no package is found on {where}: \"No matching distribution found\".")
        fix: List[str] = []
        alt = _closest_variant(ctx, rel, label)
        patch = str(Version(f["version"]).public) if not f.get("conda") else rel.newest_patch
        if alt is not None:
            fix += [f"Use a {rel.version} build that exists (CUDA {alt.cuda or alt.name}):",
                    f"$ pip install torch=={patch}{alt.local_label or '+' + alt.name} --index-url {alt.index_url}"]
        last = _last_release_with(ctx, label)
        if last is not None and last is not rel:
            lv = last.variant(label)
            fix += [f"or keep {label} with torch {last.newest_patch}, a release that has it:",
                    f"$ pip install torch=={last.newest_patch}{lv.local_label or '+' + label} --index-url {lv.index_url}"]
        out.append(r.finding(msg, evidence=ev, fix=fix, subject=p.subject, cause=f"gate-install:{p.subject}"))
    return out


# ----------------------------------------------------------------------------------------------
# ED802
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED802",
    name="framework-version-unknown",
    title="A pinned framework version is not a release envdoctor's data knows",
    severity="error",
    area="data",
    rationale="""
envdoctor knows every patch of each torch series it covers. A pin to a patch the series never had (torch==2.1.5:
2.1 ended with 2.1.2) fails with "No matching distribution found" -- an error. A version newer than the data may be
a release that came out after the data was collected: the gate cannot judge it and says so (warning; `envdoctor
matrices refresh` updates the data). A version older than the data covers is only noted (info).
""",
    example="`torch==2.1.5`: `ED802 error` (the 2.1 series has 2.1.0, 2.1.1, 2.1.2); `torch==2.20.0` with data up to "
            "2.15: `ED802 warning`.",
    references=[TORCH_PREVIOUS, "https://www.tensorflow.org/install/source#gpu"],
)
def framework_version_unknown(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "unknown-version"):
        f = p.facts
        ev = _line_evidence(plan, p)
        if f.get("newest"):
            ev.append(EvidenceItem(f"newest {f['package']} in envdoctor's data", str(f["newest"]),
                                   f"matrices (collected {f.get('collected') or '?'})"))
        if p.severity == "error":
            msg = (f"{p.subject}: {f['package']} {f['version']} is {f['why']}: pip fails with \"No matching distribution "
                   f"found for {p.subject}\".")
            fix = [f"Pin a release that exists (newest {f['package']} in envdoctor's data: {f.get('newest')})."]
        elif p.severity == "warning" and f.get("older"):
            offline = (not plan.resolver or plan.resolver.startswith("offline")) and not f.get("conda")
            failed = "resolution failed" in (plan.resolver or "")
            msg = (f"{p.subject}: {f['package']} {f['version']} is {f['why']}: "
                   + ("not judged offline (whether the index has wheels of it for the target is not known here)."
                      if offline else "conda's solver is not run, so its build is not judged." if f.get("conda") else
                      "its build is not judged." if failed else
                      "the resolver installs it, but the gate cannot judge its build."))
            fix = (["Run gate with an index reachable (without --offline): the resolver judges it by the index's own "
                    "files."] if offline else
                   [f"Pin a release envdoctor's data knows (from {f['package']} {f.get('oldest') or '?'}) to have its "
                    f"build judged."])
        elif p.severity == "warning":
            msg = (f"{p.subject}: {f['package']} {f['version']} is {f['why']} (newest known {f.get('newest')}, collected "
                   f"{f.get('collected') or '?'}): the gate cannot judge it.")
            fix = ["$ envdoctor matrices refresh"]
        else:
            msg = f"{p.subject}: {f['package']} {f['version']} is {f['why']}: not judged."
            fix = []
        out.append(r.finding(msg, severity=p.severity, evidence=ev, fix=fix, subject=p.subject))
    return out


# ----------------------------------------------------------------------------------------------
# ED803
# ----------------------------------------------------------------------------------------------
def _pinned_version(subject: str) -> str:
    import re

    mm = re.search(r"===?\s*([0-9][^\s,;]*)", subject or "")
    return mm.group(1) if mm else "0"


def _first_cause(message: str) -> str:
    lines = [x.strip() for x in (message or "").splitlines() if x.strip()]
    causes = [x[len("cause:"):].strip() for x in lines if x.startswith("cause:")] or lines[-1:]
    return " ".join(causes)[:400]


def _python_alternative(ctx, family: str, version: str, py) -> Optional[str]:
    m = ctx.matrices
    if py is None:
        return None
    given = parse_version(version)
    if given is None:
        return None
    cur = Version(given.base_version)
    rows: List[Version] = []
    if family == "torch":
        for rel in m.pytorch_releases:
            spec = rel.python_spec()
            if spec is not None and spec.contains(py, prereleases=True) and rel.newest_patch:
                rows.append(Version(rel.newest_patch))
    elif family == "tensorflow":
        from packaging.specifiers import SpecifierSet

        for rel in m.tensorflow_releases:
            if rel.python and SpecifierSet(rel.python).contains(py, prereleases=True):
                rows.append(Version(rel.tested))
    elif family == "jax":
        from packaging.specifiers import SpecifierSet

        for rel in m.jax_releases:
            if not rel.requires_python or SpecifierSet(rel.requires_python).contains(py, prereleases=True):
                rows.append(Version(rel.version))
    newer = sorted(v for v in rows if v > cur)
    if newer:
        return str(newer[0])
    older = sorted(v for v in rows if v < cur)
    return str(older[-1]) if older else None


@rule(
    id="ED803",
    name="no-wheel-for-target",
    title="The planned build has no wheel for the target's Python or platform",
    severity="error",
    area="python",
    rationale="""
torch, TensorFlow and jaxlib publish compiled wheels for a fixed set of CPython versions and platforms (torch 2.1:
CPython 3.8-3.11; the +cu builds: Linux x86_64 and Windows only; TensorFlow 2.15: 3.9-3.11). Their Requires-Python
has no upper bound, so pip looks for a wheel, finds none for the target and stops with "No matching distribution
found"; a direct wheel URL built for another interpreter or platform fails with "is not a supported wheel on this
platform". The fix is a release that has wheels for the target, or the Python it supports.
""",
    example="`torch==2.1.2+cu118` (extra index cu118) on Python 3.12: `ED803 error`, fix `pip install torch==2.2.0+cu118`.",
    references=[
        "https://github.com/Nerogar/OneTrainer/issues/138",
        "https://github.com/zhoudaquan/ChatAnything/issues/3",
        "https://github.com/ogkalu2/comic-translate/issues/215",
        TORCH_PREVIOUS,
        "https://www.tensorflow.org/install/pip",
    ],
)
def no_wheel_for_target(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "no-wheel-python", "no-wheel-platform", "wheel-tags", "resolve-no-match", "requires-python"):
        f = p.facts
        ev = _line_evidence(plan, p)
        fix: List[str] = []
        if p.kind == "resolve-no-match":  # the real resolver (envdoctor/gate/resolve.py) found no distribution
            ev.append(EvidenceItem(f"{f.get('tool')} says", f.get("message", ""), "resolver"))
            cause, pkg, py = f.get("cause") or "unstated", str(f.get("package", "")), plan.target.python_xy
            said = _first_cause(f.get("message", ""))
            if cause == "python":
                msg = (f"{p.subject}: {pkg} has no wheel for Python {py} on the target ({f.get('target')}): "
                       f"{f.get('tool')} says: {said}")
                alt = _python_alternative(ctx, "tensorflow" if pkg.startswith(("tensorflow", "tf-")) else pkg,
                                          _pinned_version(p.subject), plan.target.python)
                fix += ([f"Pin {pkg} {alt}, the nearest release with wheels for Python {py}, or build the environment "
                         f"with a Python that release supports."] if alt else
                        [f"Pin a release of {pkg} that publishes wheels for Python {py}, or build the environment with "
                         f"a Python its wheels cover."])
            elif cause == "platform":
                msg = (f"{p.subject}: {pkg} has no wheel for the target's platform ({f.get('target')}): "
                       f"{f.get('tool')} says: {said}")
                fix += [f"Pin a release of {pkg} that publishes wheels for {plan.target.platform or 'this platform'} "
                        f"(and the target's glibc), or install it where it has wheels."]
                if f.get("glibc"):
                    msg += (f" The target's glibc is taken as {f['glibc']} (manylinux wheels up to manylinux_"
                            f"{f['glibc'].replace('.', '_')}); if its Linux wheels need a newer glibc, state the "
                            f"target's with --glibc X.Y.")
            elif cause == "missing":
                msg = (f"{p.subject}: the indexes this install reads have no such release of {pkg}: "
                       f"{f.get('tool')} says: {said}")
                fix += [f"Pin a release of {pkg} the index has, or add the index that publishes this one."]
            else:
                msg = (f"{p.subject}: {f.get('tool')} finds no distribution of {pkg} for the target "
                       f"({f.get('target')}) and does not say why: {said}")
                if f.get("glibc"):  # a possible cause, not a known one: the resolver does not say which tag failed
                    msg += (f" The target's glibc is taken as {f['glibc']}; if its Linux wheels need a newer glibc, "
                            f"state the target's with --glibc X.Y.")
                fix += [f"Run the install for the target to see why, or pin a release of {pkg} that publishes wheels "
                        f"for Python {py} on {plan.target.platform or 'this platform'}."]
            out.append(r.finding(msg, evidence=ev, fix=fix, subject=p.subject, cause=f"gate-install:{p.subject}"))
            continue
        if p.kind == "requires-python":
            ev.append(EvidenceItem("target Python", f"{f.get('python')} ({plan.target.python_from})", "target"))
            msg = (f"{p.subject}: the project requires Python {f.get('python_spec')}; the target runs Python "
                   f"{plan.target.python_xy}: pip and uv refuse to install it.")
            fix += [f"Build the environment with a Python in {f.get('python_spec')}."]
            out.append(r.finding(msg, evidence=ev, fix=fix, subject=p.subject, cause=f"gate-install:{p.subject}"))
            continue
        if p.kind == "no-wheel-python":
            rel = f.get("release")
            ev.append(EvidenceItem(f"{f['package']} {getattr(rel, 'version', '') or f.get('version', '')} wheels for Python", str(f.get("python_spec")),
                                   _row_src(ctx, rel) if rel is not None else str(f.get("source") or "matrices")))
            ev.append(EvidenceItem("target Python", f"{f.get('python')} ({plan.target.python_from})", "target"))
            fails_how = (f"pip falls back to its source distribution, whose build fails on Python "
                         f"{plan.target.python_xy}" if f.get("sdist") else
                         f"pip fails with \"No matching distribution found for {p.subject}\"")
            msg = (f"{p.subject}: {f['package']} {f['version']} has no wheel for Python {plan.target.python_xy} (its "
                   f"wheels cover Python {f.get('python_spec')}): {fails_how}.")
            alt = f.get("alternative") or _python_alternative(ctx, f.get("family") or f["package"], f["version"],
                                                              plan.target.python)
            if alt:
                name = _install_name(ctx, f["package"], alt)  # never a stub (tensorflow-gpu 2.12+)
                fix += [f"Pin {name} {alt}, the nearest release with Python {plan.target.python_xy} wheels, "
                        f"or build the environment with a Python in {f.get('python_spec')}."]
            else:
                fix += [f"Build the environment with a Python in {f.get('python_spec')}."]
        elif p.kind == "no-wheel-platform":
            msg = (f"{p.subject}: {f['package']} {f['version']} has no wheel for {f.get('platform')} (published for "
                   f"{', '.join(f.get('platforms') or [])}): pip fails with \"No matching distribution found\".")
            fix += ["Install the build published for this platform (plain `pip install torch` on macOS / aarch64)."]
        else:
            msg = (f"{p.subject}: the wheel cannot be installed on the target: {f.get('why')} "
                   f"(pip: \"is not a supported wheel on this platform\").")
            ev.append(EvidenceItem("wheel tags", " ".join(f.get("tags") or []), f.get("url") or ""))
            fix += [f"Use the wheel built for the target (cp{plan.target.python_xy.replace('.', '')}, "
                    f"{plan.target.platform}), or pin {f['package']}=={f['version']} with its index instead of a URL."]
        out.append(r.finding(msg, evidence=ev, fix=fix, subject=p.subject, cause=f"gate-install:{p.subject}"))
    return out


# ----------------------------------------------------------------------------------------------
# ED804
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED804",
    name="requirements-contradict",
    title="The inputs ask for incompatible versions of one framework",
    severity="error",
    area="environment",
    rationale="""
pip resolves every requirement and constraint of an install together: two lines that pin one framework to
versions no release satisfies at once (torch==2.1.2 in requirements.txt, torch>=2.2 in a -c constraints file, or in
an included file) make the whole install fail with ResolutionImpossible, even though each line alone is fine.
""",
    example="`torch==2.1.2` and, in an included file, `torch>=2.2`: `ED804 error` naming both lines.",
    references=["https://pip.pypa.io/en/stable/topics/dependency-resolution/", PIP_REQ_FILE_DOC],
)
def requirements_contradict(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "contradict", "resolve-conflict"):
        reqs = p.facts.get("requirements") or []
        listed = ", ".join(f"{raw} ({loc})" for raw, loc in reqs)
        msg = (f"The requirements on {p.facts.get('package')} contradict each other: {listed} admit no common release: "
               f"pip fails with ResolutionImpossible.")
        if p.kind == "resolve-conflict":
            msg = (f"{p.facts.get('tool')} finds no set of versions for {p.facts.get('target')} that satisfies "
                   f"{listed or 'the requirements'}: {_first_cause(p.facts.get('message', ''))}")
        out.append(r.finding(msg, evidence=_line_evidence(plan, p), subject=p.subject,
                             fix=[f"Keep one pin for {p.facts.get('package')} (or a range every line allows)."]))
    return out


# ----------------------------------------------------------------------------------------------
# ED805
# ----------------------------------------------------------------------------------------------
def _pin_fix(ctx, package: str, names: Sequence[str]) -> List[str]:
    try:
        from envdoctor.facts.clashes import pair_fix, pin_clashes  # check's concrete ways out (ED320)

        for c in pin_clashes(ctx):
            if c.package == package:
                return pair_fix(ctx, c.broken, c.kept, list(names))
    except Exception:  # noqa: BLE001 - the generic advice below still applies
        pass
    return ["Pick framework releases whose nvidia-* pins agree, or install them in separate environments."]


@rule(
    id="ED805",
    name="planned-pins-unresolvable",
    title="Frameworks planned for one environment pin different nvidia-* wheels",
    severity="error",
    area="cudnn",
    rationale="""
torch's PyPI wheels, tensorflow[and-cuda] and the jax CUDA plugin pin exact nvidia-* wheels (cuDNN, cuBLAS, NCCL
...). When the frameworks one install asks for pin different versions of the same wheel, pip cannot satisfy both
and stops with ResolutionImpossible ("Cannot install torch==2.1.2 and tensorflow[and-cuda]==2.15.0 because these
package versions have conflicting dependencies"); installed one after the other, the second install breaks the
first (ED320). The fix is a pair of releases whose pins agree, or one environment per framework.
""",
    example="torch==2.1.2 (nvidia-cudnn-cu12==8.9.2.26) with tensorflow[and-cuda]==2.15.0 (nvidia-cudnn-cu12==8.9.4.25): "
            "`ED805 error` naming both lines.",
    references=[
        "https://github.com/TencentARC/Moto/issues/2",
        "https://pip.pypa.io/en/stable/topics/dependency-resolution/",
    ],
)
def planned_pins_unresolvable(ctx: Context, r: Rule) -> List[Finding]:
    from envdoctor.facts.pins import is_cudnn_wheel

    plan = _plan(ctx)
    if plan is None:
        return []
    groups: Dict[Tuple[str, ...], List[Any]] = {}
    for p in _problems(ctx, "pins-unresolvable"):
        owners = tuple(sorted({owner for _, owner, _, _ in p.facts["pins"]}))
        groups.setdefault(owners, []).append(p)
    out = []
    for owners, items in groups.items():
        items.sort(key=lambda p: (0 if is_cudnn_wheel(p.facts["package"]) else 1, p.facts["package"]))
        head = items[0]
        parts = []
        ev: List[EvidenceItem] = []
        for p in items[:3]:
            pins = ", ".join(f"{owner} pins {spec}" for spec, owner, _, _ in p.facts["pins"])
            parts.append(f"{p.facts['package']}: {pins}")
        for p in items:
            for spec, owner, loc, _ in p.facts["pins"]:
                ev.append(EvidenceItem(f"{owner} pin", f"{p.facts['package']}{spec}", str(loc) if loc else "plan"))
        more = f" (+{len(items) - 3} more wheels)" if len(items) > 3 else ""
        msg = (f"pip cannot install {' and '.join(owners)} together: {'; '.join(parts)}{more}: ResolutionImpossible "
               f"(\"conflicting dependencies\"), and installed one after the other the second breaks the first.")
        names = [p.facts["package"] for p in items]
        locs = []
        for p in items:
            for loc in p.locs:
                if loc not in locs:
                    locs.append(loc)
        ev = [EvidenceItem("input line", next((q.raw for q in plan.unit.requirements if q.loc == loc), ""), str(loc))
              for loc in locs] + ev
        out.append(r.finding(msg, evidence=ev, fix=_pin_fix(ctx, head.facts["package"], names),
                             subject=" / ".join(owners)))
    return out


# ----------------------------------------------------------------------------------------------
# ED806
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED806",
    name="index-option-on-requirement-line",
    title="An index option written after a requirement is ignored by pip",
    severity="warning",
    area="environment",
    rationale="""
In a requirements file pip accepts only per-requirement options (--hash, --config-settings, --global-option) after
a requirement. `torch==2.1.0 --index-url https://download.pytorch.org/whl/cu121` on one line is read as the
requirement alone: the index is silently ignored, so pip installs PyPI's default build, or fails for a pin with a
local label (ED800). Index options work only on lines of their own, and then apply to the whole install.
""",
    example="`torch==2.1.0+cu121 --index-url https://download.pytorch.org/whl/cu121`: `ED806 warning` (and ED800 "
            "error, since PyPI has no +cu121 build).",
    references=["https://github.com/pypa/pip/issues/7050", "https://github.com/pypa/pipenv/issues/3181", PIP_REQ_FILE_DOC],
)
def index_option_on_requirement_line(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "ignored-option"):
        opt, value = p.facts.get("option"), p.facts.get("value")
        msg = (f"{p.subject}: pip ignores `{opt} {value}` written after the requirement on this line: index options "
               f"apply only on lines of their own, so this line installs from the indexes the rest of the file sets.")
        fix = [f"Move it to a line of its own in {_file_of(p)} (it then applies to the whole install):",
               f"{'--extra-index-url' if opt in ('-i', '--index-url', '--extra-index-url') else opt} {value}"]
        out.append(r.finding(msg, evidence=_line_evidence(plan, p), fix=fix, subject=p.subject))
    return out


# ----------------------------------------------------------------------------------------------
# ED807
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED807",
    name="deprecated-distribution",
    title="The requirement names a distribution that installs no framework",
    severity="error",
    area="tensorflow",
    rationale="""
Some names stay on the index after their project moved: from 2.12, tensorflow-gpu is an empty 2.6 kB sdist whose
setup.py only raises "The tensorflow-gpu package has been removed! Please install tensorflow instead" (pip cannot
even build its metadata), and there never was a CUDA build under that name after 2.11. A requirement that can only
get such a release fails before anything runs. tensorflow and tensorflow-gpu have been the same package since 2.1,
so the fix is the real name: tensorflow[and-cuda] (the pip-installed CUDA libraries, 2.14+) or tensorflow.
The names and releases are data (matrices/incompatibilities.toml, [[deprecated_distribution]]).
""",
    example="`tensorflow-gpu==2.12.0`: `ED807 error`, fix `tensorflow==2.12.0`; `tensorflow-gpu` on a Linux GPU target: "
            "fix `tensorflow[and-cuda]==2.21.0`.",
    references=["https://github.com/opendatahub-io/notebooks/issues/42",
                "https://github.com/dionhaefner/pyhpc-benchmarks/issues/17"],
)
def deprecated_distribution(ctx: Context, r: Rule) -> List[Finding]:
    plan = _plan(ctx)
    out = []
    for p in _problems(ctx, "deprecated-dist"):
        f = p.facts
        row = f.get("row")
        ev = _line_evidence(plan, p) + [EvidenceItem(f"{f['package']} {getattr(row, 'versions', '')}",
                                                     str(getattr(row, "summary", "")), _row_src(ctx, row))]
        msg = (f"{p.subject}: {f['package']} {getattr(row, 'versions', '')} is an empty stub, not a framework build, "
               f"so pip fails on this line. {getattr(row, 'summary', '')}")
        fix = [f"Replace the line in {_file_of(p)} with:", str(f["replacement"]),
               f"$ pip install '{f['replacement']}'"]
        out.append(r.finding(msg, evidence=ev, fix=fix, subject=p.subject, cause=f"gate-install:{p.subject}"))
    return out
