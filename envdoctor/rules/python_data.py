"""ED500-ED509: the target Python against the Pythons a framework release supports;
ED900-ED909: how current envdoctor's compatibility data is for what is installed.

ED500 trusts the installed distribution's own Requires-Python (METADATA) first: pip never installs a
release whose Requires-Python excludes the interpreter, so such an install came from elsewhere (a Python
upgraded in place, a copied site-packages, PYTHONPATH, --ignore-requires-python) and its compiled
modules are built for another interpreter. The matrices second: torch and TensorFlow publish binary
wheels for a fixed range of CPython versions only (their Requires-Python has no upper bound), so a torch
or TensorFlow release outside that range for this Python did not come from PyPI/download.pytorch.org for
this interpreter. conda and source builds exist for other Pythons (conda-forge built torch 2.1 for 3.12),
so conda environments and local/dev builds are left alone there.

ED900/ED901 thresholds: a framework release whose X.Y series the data does not know is a warning (the
rules judge it with older rows); a newer patch of a known series is an info (the series row still
applies). The data is called old when it was collected more than 180 days before the snapshot was
taken: torch, TensorFlow and JAX each publish a minor release every one to three months, so by then at
least one new series is likely missing.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import List, Optional

from packaging.version import Version

from envdoctor.facts.labels import fw_label, fw_source, row_source
from envdoctor.facts.pins import norm, spec_contains
from envdoctor.facts.platform import python_version
from envdoctor.facts.versions import parse_version
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

DATA_MAX_AGE_DAYS = 180

# Distributions with compiled extension modules (a wrong interpreter cannot import them).
_BINARY = ("torch", "tensorflow", "jaxlib")
_CHECKED = ("torch", "tensorflow", "jax", "jaxlib")


def _py_evidence(ctx) -> EvidenceItem:
    py = ctx.snap.python
    src = next((e.source for e in py.evidence if e.source), "") or (f"python:{py.executable}" if py.executable else "probe:pyenv")
    return EvidenceItem("target Python", f"{py.version} ({py.executable})" if py.executable else py.version, src)


def _data_python_spec(ctx, fw):
    """(spec text, row) of the CPython versions the release published wheels / declared support for."""
    m = ctx.matrices
    if fw.name == "torch":
        rel = m.torch_release(fw.version)
        if rel is None or not rel.has_patch(fw.version):
            return None, None
        patch = rel.patch(fw.version)
        text = patch.python if patch is not None and patch.python else rel.python
        return text, rel
    if fw.name == "tensorflow":
        rel = m.tf_release(fw.version)
        if rel is None:
            return None, None
        return rel.python, rel
    if fw.name in ("jax", "jaxlib"):
        rel = m.jax_release(fw.version)
        if rel is None or Version(rel.version) != Version(Version(fw.version).public):
            series = m.jaxlib_row(fw.version) if fw.name == "jaxlib" else None
            return (series.python, series) if series is not None else (None, None)
        return rel.requires_python, rel
    return None, None


def _supported_release(ctx, fw, py: Version) -> Optional[str]:
    """The closest release supporting `py`: the first newer one, else the newest older one."""
    m = ctx.matrices
    cur = Version(Version(fw.version).base_version)
    rows = []
    if fw.name == "torch":
        for rel in m.pytorch_releases:
            if spec_contains(rel.python, py) and rel.newest_patch:
                rows.append(Version(rel.newest_patch))
    elif fw.name == "tensorflow":
        for rel in m.tensorflow_releases:
            if spec_contains(rel.python, py):
                rows.append(Version(rel.tested))
    else:
        for rel in m.jax_releases:
            if spec_contains(rel.requires_python, py) is not False:
                rows.append(Version(rel.version))
        if fw.name == "jaxlib":  # the jaxlib releases before the plugins: the last of each row
            rows += [Version(s.last) for s in m.jaxlib_series if spec_contains(s.python, py) is not False]
    newer = sorted(v for v in rows if v > cur)
    if newer:
        return str(newer[0])
    older = sorted(v for v in rows if v < cur)
    return str(older[-1]) if older else None


def _reinstall_cmd(ctx, fw, alt: str) -> str:
    """pip command for release `alt` of the same distribution, keeping a torch build's variant when published."""
    m = ctx.matrices
    # tensorflow-gpu 2.12+ is an empty stub: name tensorflow instead
    name = m.install_name(fw.distribution or fw.name, alt)
    cmd = f"$ pip install --force-reinstall {name}=={alt}"
    v = parse_version(fw.version)
    if fw.name == "torch" and v is not None and v.local:
        var = m.torch_variant(alt, v.local.split(".")[0])
        if var is not None and var.index_url:
            cmd += f" --index-url {var.index_url}"
    return cmd


@rule(
    id="ED500",
    name="python-outside-release-range",
    title="A framework release does not support the target Python",
    severity="error",
    area="python",
    rationale="""
torch, TensorFlow and jaxlib ship compiled extension modules built per CPython version; a release has
wheels only for the Pythons that existed and were supported when it came out (TensorFlow 2.15: 3.9-3.11;
torch 2.1: 3.8-3.11). pip refuses such installs ("No matching distribution found"), so finding one means
it was installed for another interpreter - a Python upgraded in place, a copied or shared site-packages,
PYTHONPATH - and `import` fails (e.g. "No module named 'torch._C'"). A Requires-Python in the installed
METADATA that excludes the interpreter is an error; a release outside the published wheel range is a
warning (conda and source builds exist for other Pythons and are not judged).
""",
    example="""
tensorflow 2.15.0 found in a Python 3.12 environment (wheels exist for 3.9-3.11): `ED500 warning`;
fix: `pip install --force-reinstall tensorflow==2.16.1`, the first release with Python 3.12 wheels.
""",
    references=[
        "https://github.com/tensorflow/tensorflow/issues/62003",
        "https://github.com/tensorflow/tensorflow/issues/85298",
        "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-python",
        "https://pytorch.org/get-started/previous-versions/",
    ],
)
def python_outside_release_range(ctx: Context, r: Rule) -> List[Finding]:
    py = python_version(ctx)
    if py is None:
        return []
    impl = (ctx.snap.python.implementation or "cpython").lower()
    out = []
    seen = set()
    for fw in ctx.frameworks:
        if fw.name not in _CHECKED or fw.name in seen:
            continue
        v = parse_version(fw.version)
        if v is None:
            continue
        seen.add(fw.name)
        ev = [_py_evidence(ctx), EvidenceItem(f"{fw.name} installed", fw.version, fw_source(fw))]
        declared = spec_contains(fw.requires_python, py)
        if declared is False:
            ev.append(EvidenceItem(f"{fw_label(fw)} Requires-Python (METADATA)", str(fw.requires_python), fw_source(fw)))
            severity = "error" if fw.name in _BINARY else "warning"
            alt = _supported_release(ctx, fw, py)
            msg = (f"{fw_label(fw)} declares Requires-Python {fw.requires_python}, which excludes this Python "
                   f"{ctx.snap.python.version}: pip would not have installed it for this interpreter"
                   + (", and its compiled modules are built for another Python." if fw.name in _BINARY else "."))
            fixes = []
            if alt:
                fixes.append(f"Reinstall a {fw.name} release that supports Python {py.major}.{py.minor}:")
                fixes.append(_reinstall_cmd(ctx, fw, alt))
            fixes.append(f"or run it with a Python that {fw.requires_python} allows.")
            out.append(r.finding(msg, severity=severity, evidence=ev, fix=fixes, subject=fw_label(fw)))
            continue
        if fw.name not in _BINARY or impl not in ("cpython", ""):
            continue
        if ctx.snap.python.kind == "conda":
            continue  # conda-forge builds exist for Pythons PyPI never had
        if v.is_prerelease or v.is_devrelease or (v.local and not v.local.startswith(("cu", "cpu", "rocm"))):
            continue  # nightly or source build
        spec, row = _data_python_spec(ctx, fw)
        if not spec or spec_contains(spec, py) is not False:
            continue
        m = ctx.matrices
        ev.append(EvidenceItem(f"{fw.name} {row.version} wheels for Python", spec, row_source(m, row)))
        alt = _supported_release(ctx, fw, py)
        msg = (f"{fw_label(fw)} published wheels only for Python {spec}, but this environment runs Python "
               f"{ctx.snap.python.version}: it was installed for another interpreter (or copied), and importing "
               f"its compiled modules is likely to fail.")
        fixes = []
        if alt:
            fixes.append(f"Reinstall {fw.name} {alt}, the nearest release with Python {py.major}.{py.minor} wheels:")
            fixes.append(_reinstall_cmd(ctx, fw, alt))
        fixes.append(f"or recreate the environment with a Python in {spec}.")
        out.append(r.finding(msg, severity="warning", evidence=ev, fix=fixes, subject=fw_label(fw)))
    return out


# --------------------------------------------------------------------------- data staleness

_TABLE_OF = {"torch": "pytorch", "tensorflow": "tensorflow", "jax": "jax"}


def _series_known(m, name: str, version: str) -> bool:
    v = parse_version(version)
    if v is None:
        return False
    if name == "torch":
        return m.torch_release(version) is not None
    if name == "tensorflow":
        return m.tf_release(version) is not None
    return any((Version(r.version).major, Version(r.version).minor) == (v.major, v.minor) for r in m.jax_releases)


@rule(
    id="ED900",
    name="framework-newer-than-data",
    title="An installed framework is newer than envdoctor's compatibility data",
    severity="warning",
    area="data",
    rationale="""
envdoctor judges a framework build by what the build itself says (its CUDA version, its archs) and by
its compatibility data (arch lists, Python ranges, pins) for that release. A release the data does not
know is judged with older rows, so changes it brought (a dropped GPU generation, a new CUDA default)
can be missed. A whole new X.Y series is a warning; a newer patch of a known series an info. Refreshing
the data fixes it.
""",
    example="torch 2.16.0 installed, data knows up to 2.15.0 (collected 2026-11-29): `ED900 warning`; "
            "fix: `envdoctor matrices refresh`.",
    references=["https://pytorch.org/get-started/previous-versions/", "https://github.com/pytorch/pytorch/releases"],
)
def framework_newer_than_data(ctx: Context, r: Rule) -> List[Finding]:
    m = ctx.matrices
    out = []
    for name in ("torch", "tensorflow", "jax"):
        fw = ctx.framework(name)
        if fw is None:
            continue
        v = parse_version(fw.version)
        newest = m.newest_known(name)
        top = parse_version(newest)
        if v is None or top is None:
            continue
        if Version(v.base_version) <= top:
            continue
        table = _TABLE_OF[name]
        src = m.sources.get(table, "matrices")
        collected = m.table_collected.get(table) or m.collected
        ev = [EvidenceItem(f"{name} installed", fw.version, fw_source(fw)),
              EvidenceItem(f"newest {name} in envdoctor's data", str(top), f"{src} (collected {collected})")]
        pre = v.is_prerelease or v.is_devrelease
        known = _series_known(m, name, fw.version)
        if pre or known:
            why = ("a pre-release build" if pre else f"a newer patch of the {v.major}.{v.minor} series the data knows")
            msg = (f"{fw_label(fw)} is newer than envdoctor's data (newest known {name} {newest}, collected "
                   f"{collected}): {why}, judged with the {v.major}.{v.minor} rows where they exist.")
            severity = "info"
        else:
            msg = (f"{fw_label(fw)} is newer than envdoctor's data, which knows {name} up to {newest} "
                   f"(collected {collected}): findings about this release rest on older rows.")
            severity = "warning"
        out.append(r.finding(msg, severity=severity, evidence=ev, fix=["$ envdoctor matrices refresh"],
                             subject=fw_label(fw), cause="data-stale"))
    return out


def _parse_date(text: Optional[str]) -> Optional[datetime]:
    if not text:
        return None
    t = str(text).strip()
    for cut in (t, t[:19], t[:10]):
        try:
            d = datetime.fromisoformat(cut.replace("Z", "+00:00"))
        except ValueError:
            continue
        return d if d.tzinfo else d.replace(tzinfo=timezone.utc)
    return None


@rule(
    id="ED901",
    name="data-old",
    title="envdoctor's compatibility data is old",
    severity="info",
    area="data",
    rationale=f"""
The compatibility data (driver floors, arch lists, Python ranges) is a snapshot of the published
releases on the day it was collected. More than {DATA_MAX_AGE_DAYS} days before the machine snapshot was taken,
at least one new torch, TensorFlow or JAX series has usually appeared, and newer GPUs or drivers may
be missing. `envdoctor matrices refresh` fetches the current data.
""",
    example="Data collected 2026-03-01, snapshot taken 2026-11-29 (273 days): `ED901 info`.",
    references=["https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"],
)
def data_old(ctx: Context, r: Rule) -> List[Finding]:
    m = ctx.matrices
    collected = _parse_date(m.collected)
    if collected is None:
        return []
    taken = _parse_date(ctx.snap.created) or datetime.now(timezone.utc)
    age = (taken - collected).days
    if age <= DATA_MAX_AGE_DAYS:
        return []
    ev = [EvidenceItem("compatibility data collected", str(m.collected), "matrices (oldest table date)"),
          EvidenceItem("snapshot created", ctx.snap.created or taken.date().isoformat(), "snapshot:created")]
    dates = {t: _parse_date(d) for t, d in m.table_collected.items() if d}
    olds = [f"{t} {m.table_collected[t]}" for t, day in sorted(dates.items())
            if day is not None and (taken - day).days > DATA_MAX_AGE_DAYS]
    if olds:
        ev.append(EvidenceItem("tables older than the limit", ", ".join(olds), "matrices"))
    msg = (f"envdoctor's compatibility data was collected on {m.collected}, {age} days before this snapshot "
           f"({taken.date().isoformat()}): releases, GPUs and drivers since then are unknown to it.")
    return [r.finding(msg, evidence=ev, fix=["$ envdoctor matrices refresh"], subject="matrices", cause="data-stale")]


# --------------------------------------------------------------------------- releases the data has no row for

_AREA_OF = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}


def _gpu_build_facts(ctx):
    """BuildFacts of each torch / tensorflow / jaxlib build that would use a GPU (a CUDA or ROCm build, or a
    jaxlib with a CUDA plugin beside it)."""
    from envdoctor.facts.builds import build_facts
    from envdoctor.facts.pins import is_cudnn_wheel, jax_plugin, parse_pins

    out = []
    plugins = [f for f in ctx.frameworks if jax_plugin(f) is not None]
    for fw in ctx.frameworks:
        if fw.name not in ("torch", "tensorflow", "jaxlib"):
            continue
        gpu = fw.build in ("cuda", "rocm") or (fw.name == "jaxlib" and plugins)
        if not gpu:
            continue
        pins = [p for p in parse_pins(fw, ctx.snap) if is_cudnn_wheel(p.name) and p.extra is None]
        bf = build_facts(ctx.matrices, fw, cudnn_pin=pins[0].text if pins else None)
        if bf is not None:
            if fw.name == "jaxlib" and not bf.cuda and plugins:
                bf.cuda = plugins[0].cuda_version
            out.append(bf)
    return out


def _unrowed_torch_variant(ctx, bf) -> str:
    """For a CUDA torch of a release the data knows, labelled with a CUDA tag (+cu113) the release has no variant row
    for (a download-index build nobody recorded): the release's variants the data does hold; "" otherwise (a known
    variant, a source build or a pre-release: those the data is not expected to describe)."""
    from envdoctor.facts.builds import torch_variant_of

    fw = bf.fw
    v = parse_version(fw.version)
    if bf.family != "torch" or fw.build != "cuda" or v is None or not v.local or not v.local.startswith("cu"):
        return ""
    if bf.arch_list or torch_variant_of(ctx, fw) is not None:
        return ""
    rel = ctx.matrices.torch_release(fw.version)  # known: only a build of a release in the data is asked about
    if rel is None:
        return ""
    return f"torch {rel.version} rows: {', '.join(sorted({var.name for var in rel.variants})) or 'none'}"


def _own_gpu_code(ctx, fw) -> list:
    """The binaries probe's readable CUDA binaries of the framework's own distribution (libtorch_cuda.so,
    xla_extension.so, _pywrap_tensorflow_internal.so)."""
    name = norm(fw.distribution or fw.name)
    return [b for b in ctx.snap.binaries.binaries
            if b.package and norm(b.package) == name and (b.sass or b.ptx) and not b.unreadable]


@rule(
    id="ED902",
    name="release-not-in-data",
    title="A framework release is not in envdoctor's data: part of it was not judged",
    severity="warning",
    area="data",
    rationale="""
Rules that need a release's row in the compatibility data (the compiled arch list of a torch or
TensorFlow release, the cuDNN a release was built with, its Python range) have nothing to read for a
release older than the data or absent from it (torch 1.3, jaxlib 0.1.x, a source build). envdoctor
still judges what the build states about itself: the CUDA version in torch/version.py, jaxlib's local
version (+cuda112, +cuda12.cudnn89), TensorFlow's build_info, its nvidia-* pins, against the driver
tables (ED100) and the CUDA-to-compute-capability table (ED200), which need no release row, and the GPU code in
its own binaries where the binaries probe read their fatbins (a GPU none of their targets serves: ED250). What it
could not judge is said here, on the framework's line of the report, which is then not shown as fine:
such a release has failed on real machines for exactly the facts that were skipped (torch 1.3's
binaries dropped sm_35 and failed on a Tesla K40m; jax 0.4.9 on a Tesla K80).
""",
    example="torch 1.3.0+cu101 on a Tesla K40m, driver 418.87.01: `ED902 warning` 'torch 1.3.0+cu101 is older than "
            "envdoctor's data (oldest torch it knows: 1.13.0): judged from what the build states about itself "
            "(CUDA 10.1 against the driver and the GPUs); not judged: its compiled GPU arch list, ...'.",
    references=[
        "https://github.com/pytorch/pytorch/issues/30532",
        "https://github.com/jax-ml/jax/issues/15961",
        "https://github.com/mit-han-lab/bevfusion/issues/283",
        "https://github.com/jax-ml/jax/issues/5464",
    ],
)
def release_not_in_data(ctx: Context, r: Rule) -> List[Finding]:
    m = ctx.matrices
    out = []
    for bf in _gpu_build_facts(ctx):
        unrowed = bf.in_data and _unrowed_torch_variant(ctx, bf)
        if not unrowed and (bf.in_data or bf.position in ("", "newer")):
            continue  # known, or newer than the data (ED900)
        fw = bf.fw
        label = fw_label(fw)
        judged, skipped = [], []
        if bf.cuda:
            judged.append(f"CUDA {bf.cuda} against the driver and the GPUs")
        elif bf.rocm:
            judged.append(f"ROCm {bf.rocm} against the machine's GPU vendor")
        own = _own_gpu_code(ctx, fw)
        if bf.arch_list:
            judged.append("its own compiled arch list")
        elif own:
            # its fatbins hold at least the targets its kernels were built for (linked-in code may add more): a GPU
            # none of them serves has no kernel (ED250 says so, naming the files); the data's row is not needed
            targets = sorted({t for b in own for t in b.sass + b.ptx})
            judged.append(f"the GPU code in its own binaries ({len(own)} file{'s' if len(own) != 1 else ''}: "
                          f"{' '.join(targets)})")
        elif bf.family != "jax":
            skipped.append("its compiled GPU arch list")
        if bf.family == "jax":
            skipped.append("the oldest GPU generation its kernels support")
        if bf.cudnn:
            judged.append(f"cuDNN {bf.cudnn}")
        elif bf.family != "torch" or fw.requires:
            skipped.append("the cuDNN it needs")
        skipped.append("its Python range")
        # jaxlib's own rows (before the plugins) start the jax family's data: name jaxlib, whose version it is
        named = fw.name if bf.family == "jax" else bf.family
        if unrowed:
            where = f"a build envdoctor's data has no row for ({unrowed})"
            skipped = [x for x in skipped if x != "its Python range"]  # the release's row states it
        elif bf.position == "older":
            where = f"older than envdoctor's data (oldest {named} it knows: {bf.oldest})"
        else:
            where = f"not a release envdoctor's data knows ({named} {bf.oldest} to {bf.newest})"
        msg = (f"{label} is {where}: "
               + (f"judged from what the build states about itself ({'; '.join(judged)}); " if judged else
                  "the build states nothing envdoctor can judge; ")
               + f"not judged: {', '.join(skipped)}.")
        ev = [EvidenceItem(f"{fw.name} installed", label, fw_source(fw)),
              EvidenceItem(f"{bf.family} releases in envdoctor's data", f"{bf.oldest} to {bf.newest}",
                           m.sources.get(_TABLE_OF[bf.family], "matrices") if isinstance(getattr(m, "sources", None), dict)
                           else "matrices")]
        fix = ["Run `envdoctor smoke`: it runs real kernels on the GPU and tests what the data cannot."]
        if bf.oldest and bf.position == "older":
            fix.append(f"or upgrade to a {named} release envdoctor knows (>= {bf.oldest}) if this GPU and driver "
                       "support it.")
        out.append(r.finding(msg, evidence=ev, fix=fix, subject=label, area=_AREA_OF[bf.family]))
    return out
