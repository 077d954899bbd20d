"""ED510-ED549: framework packages whose versions are out of step with each other.

ED510: jax, jaxlib, the jax CUDA plugin and its PJRT plugin are released in lock-step. jax pins the
jaxlib it accepts in its Requires-Dist (`jaxlib<=0.4.30,>=0.4.27`); the plugin pins its PJRT
(`jax-cuda12-pjrt==0.4.30`) and must equal jaxlib's version. jax refuses a jaxlib outside its range at
import ("jaxlib version 0.4.14 is newer than and incompatible with jax version 0.4.6"), and disables a
plugin of another version ("JAX plugin jax_cuda12_plugin version 0.9.2 is installed, but it is not
compatible with the installed jaxlib version 0.9.0.1"), or, since 0.4.32, may segfault.

ED520: torchvision / torchaudio carry compiled operators built against one torch release and one CUDA
major: another torch gives "operator torchvision::nms does not exist", another CUDA major gives
"Detected that PyTorch and torchvision were compiled with different CUDA major versions".

Pins come from the installed metadata first (Framework.requires), the matrices second.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.facts.labels import fw_label, row_src
from envdoctor.facts.labels import fw_source as fw_src
from envdoctor.facts.pins import jax_plugin, marker_extras, parse_pins, spec
from envdoctor.facts.versions import lower_bound, parse_version, public
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.snapshot import Framework

JAX_CAUSE = "jax-version-step"


def _contains(sp: Optional[SpecifierSet], version: Optional[str]) -> Optional[bool]:
    v = public(version)
    if sp is None or v is None:
        return None
    return sp.contains(v, prereleases=True)


def _upper_bound(sp: Optional[SpecifierSet]) -> Optional[Version]:
    best = None
    for s in sp or ():
        if s.operator in ("<=", "==", "===", "<") and "*" not in s.version:
            v = parse_version(s.version)
            if v is not None and (best is None or v < best):
                best = v
    return best


def _jaxlib_spec(ctx, jax: Framework) -> Tuple[Optional[SpecifierSet], str, str]:
    """jax's requirement on jaxlib: its own unconditional Requires-Dist line, else the matrices' row,
    else (old jax, pins only behind extras) jax's import-time rule: minimum-jaxlib <= jaxlib <= jax."""
    pins = [p for p in parse_pins(jax, ctx.snap) if p.name == "jaxlib"]
    plain = [p for p in pins if p.extra is None and str(p.specifier)]
    if plain:
        return plain[0].specifier, plain[0].line, fw_src(jax)
    m = ctx.matrices
    rel = m.jax_release(jax.version)
    if rel is not None and public(rel.version) == public(jax.version):
        sp = spec(rel.jaxlib)
        if sp is not None:
            return sp, f"jaxlib{sp} (jax {rel.version} row)", row_src(ctx, rel)
    minimum = [p for p in pins if p.extra == "minimum-jaxlib" and str(p.specifier)]
    jv = public(jax.version)
    if minimum and jv is not None:
        lb = lower_bound(minimum[0].specifier)
        if lb is not None:
            sp = spec(f">={lb},<={jv}")
            return sp, f"jaxlib>={lb} (extra minimum-jaxlib), <= jax {jv}", fw_src(jax)
    return None, "", ""


def _jax_parts(ctx):
    jax = ctx.framework("jax")
    jaxlib = ctx.framework("jaxlib")
    plugins: Dict[int, Framework] = {}  # CUDA major -> the jax-cudaN-plugin
    pjrts: Dict[int, Framework] = {}  # CUDA major -> the jax-cudaN-pjrt
    for fw in ctx.frameworks:
        p = jax_plugin(fw)
        if p is None:
            continue
        (plugins if p[1] == "plugin" else pjrts)[p[0]] = fw
    return jax, jaxlib, plugins, pjrts


def _jax_fix(jax: Framework, jaxlib: Optional[Framework], plugins, target: Optional[Version], *, plus_jaxlib=False) -> List[str]:
    """Pin everything to one version: jax's extra pins jaxlib and the plugin (and the plugin its PJRT)."""
    if target is None:
        return []
    cmds = []
    extras = {x for line in jax.requires for x in marker_extras(line)}
    if plugins:
        for major in sorted(plugins):
            if f"cuda{major}" in extras:
                cmds.append(f'$ pip install "jax[cuda{major}]=={target}"')
            else:
                cmds.append(f'$ pip install "jax=={target}" "jaxlib=={target}" "jax-cuda{major}-plugin=={target}" '
                            f'"jax-cuda{major}-pjrt=={target}"')
    else:
        cmds.append(f'$ pip install "jax=={target}" "jaxlib=={target}"')
    return cmds


# ----------------------------------------------------------------------------------------------
# ED510
# ----------------------------------------------------------------------------------------------
@rule(
    id="ED510",
    name="jax-versions-out-of-step",
    title="jax, jaxlib and the jax CUDA plugins are out of step",
    severity="error",
    area="jax",
    rationale="""
jax (pure Python), jaxlib (the compiled runtime), jax-cudaNN-plugin (CUDA kernels) and
jax-cudaNN-pjrt (the PJRT backend) are released together. jax declares the jaxlib range it accepts in
its Requires-Dist and checks it at import ("jaxlib version 0.4.14 is newer than and incompatible with
jax version 0.4.6. Please update your jax and/or jaxlib packages"); a CUDA plugin of another version
than jaxlib is rejected ("JAX plugin jax_cuda12_plugin version 0.9.2 is installed, but it is not
compatible with the installed jaxlib version 0.9.0.1") or, since 0.4.32, crashes; the plugin pins its
PJRT exactly. pip lets these drift when another package asks for an older jax. Two CUDA plugins
(cuda12 and cuda13) at once register two backends for the same GPUs.
""",
    example="jax 0.4.6 with jaxlib 0.4.14: `ED510 error` 'jaxlib 0.4.14 is newer than and incompatible with jax 0.4.6'.",
    references=[
        "https://github.com/jax-ml/jax/issues/17638",
        "https://github.com/ma-gilles/recovar/issues/64",
        "https://github.com/jax-ml/jax/issues/24901",
        "https://docs.jax.dev/en/latest/installation.html",
    ],
)
def jax_versions_out_of_step(ctx: Context, r: Rule) -> List[Finding]:
    jax, jaxlib, plugins, pjrts = _jax_parts(ctx)
    findings = []
    if jax is not None and jaxlib is not None:
        sp, line, src = _jaxlib_spec(ctx, jax)
        ok = _contains(sp, jaxlib.version)
        if ok is False:
            jv, lv = public(jax.version), public(jaxlib.version)
            upper = _upper_bound(sp)
            newer = upper is not None and lv is not None and lv > upper
            if newer:
                msg = (f"jaxlib {jaxlib.version} is newer than and incompatible with jax {jax.version} "
                       f"(jax requires jaxlib{sp}): `import jax` fails.")
            else:
                msg = (f"jaxlib {jaxlib.version} is older than jax {jax.version} accepts (jaxlib{sp}): "
                       f"`import jax` fails (\"jaxlib is version {lv}, but this version of jax requires version >= "
                       f"{lower_bound(sp)}\").")
            ev = [EvidenceItem("jax", fw_label(jax), fw_src(jax)), EvidenceItem("jaxlib", fw_label(jaxlib), fw_src(jaxlib)),
                  EvidenceItem("jax's jaxlib requirement", line, src)]
            fix = ["Bring jaxlib (and the CUDA plugin) to jax's version:"] + _jax_fix(jax, jaxlib, plugins, jv)
            if newer and lv is not None:
                fix += ["Or upgrade jax to jaxlib's version:", f'$ pip install "jax=={lv}"']
            findings.append(r.finding(msg, evidence=ev, fix=fix, cause=JAX_CAUSE, subject=fw_label(jax)))
    if jaxlib is not None:
        for major, plugin in sorted(plugins.items()):
            pv, lv = public(plugin.version), public(jaxlib.version)
            if pv is None or lv is None or pv == lv:
                continue
            ev = [EvidenceItem("jaxlib", fw_label(jaxlib), fw_src(jaxlib)),
                  EvidenceItem("CUDA plugin", fw_label(plugin), fw_src(plugin))]
            target = public(jax.version) if jax is not None else lv
            fix = ["Install the plugin (and its PJRT) of the same version as jaxlib:"]
            fix += _jax_fix(jax, jaxlib, {major: plugin}, target) if jax is not None else \
                [f'$ pip install "jax-cuda{major}-plugin=={lv}" "jax-cuda{major}-pjrt=={lv}"']
            findings.append(r.finding(
                f"{plugin.distribution} {plugin.version} does not match jaxlib {jaxlib.version}: jax disables the "
                f"plugin (\"JAX plugin jax_cuda{major}_plugin version {plugin.version} is installed, but it is not "
                f"compatible with the installed jaxlib version {jaxlib.version}\") or crashes, and runs on the CPU.",
                evidence=ev, fix=fix, cause=JAX_CAUSE, subject=fw_label(plugin)))
    for major, plugin in sorted(plugins.items()):
        pin = next((p for p in parse_pins(plugin, ctx.snap) if p.name == f"jax-cuda{major}-pjrt" and str(p.specifier)), None)
        pjrt = pjrts.get(major)
        if pjrt is None:
            if not ctx.snap.python.packages or pin is None:
                continue  # only the plugin's own pin says it needs a separate PJRT distribution
            need = pin.text
            findings.append(r.finding(
                f"{plugin.distribution} {plugin.version} is installed without its PJRT plugin ({need}): jax finds no "
                f"CUDA backend and runs on the CPU.",
                evidence=[EvidenceItem("CUDA plugin", fw_label(plugin), fw_src(plugin)),
                          EvidenceItem("plugin's PJRT pin", pin.line, fw_src(plugin))],
                fix=[f'$ pip install "{need}"'], cause=JAX_CAUSE, subject=fw_label(plugin)))
            continue
        sp = pin.specifier if pin is not None else spec(f"=={public(plugin.version)}")
        if _contains(sp, pjrt.version) is False:
            line = pin.line if pin is not None else f"jax-cuda{major}-pjrt=={public(plugin.version)} (same version)"
            findings.append(r.finding(
                f"{pjrt.distribution} {pjrt.version} does not match {plugin.distribution} {plugin.version}, which "
                f"requires jax-cuda{major}-pjrt{sp}: the CUDA backend fails to initialise (\"Mismatched PJRT plugin "
                f"PJRT API version\") and jax runs on the CPU.",
                evidence=[EvidenceItem("CUDA plugin", fw_label(plugin), fw_src(plugin)),
                          EvidenceItem("PJRT plugin", fw_label(pjrt), fw_src(pjrt)),
                          EvidenceItem("plugin's PJRT pin", line, fw_src(plugin))],
                fix=[f'$ pip install "jax-cuda{major}-pjrt{sp}"'], cause=JAX_CAUSE, subject=fw_label(pjrt)))
    if len(plugins) >= 2:
        majors = sorted(plugins)
        names = ", ".join(fw_label(plugins[mj]) for mj in majors)
        keep = majors[-1]
        findings.append(r.finding(
            f"Several jax CUDA plugins are installed at once ({names}): both register a CUDA backend for the same "
            f"GPUs and jax picks one of them unpredictably.",
            severity="warning",
            evidence=[EvidenceItem("CUDA plugin", fw_label(plugins[mj]), fw_src(plugins[mj])) for mj in majors],
            fix=[f"Keep one CUDA major; e.g. to keep CUDA {keep}:"] +
                [f"$ pip uninstall -y jax-cuda{mj}-plugin jax-cuda{mj}-pjrt" for mj in majors if mj != keep],
            subject="jax CUDA plugins"))
    return findings


# ----------------------------------------------------------------------------------------------
# ED520
# ----------------------------------------------------------------------------------------------
def _torch_requirement(ctx, comp: Framework) -> Tuple[Optional[SpecifierSet], str, str]:
    """The torch requirement of torchvision/torchaudio: its own Requires-Dist, else the matrices' patch rows."""
    pins = [p for p in parse_pins(comp, ctx.snap) if p.name == "torch" and p.extra is None and str(p.specifier)]
    if pins:
        return pins[0].specifier, pins[0].line, fw_src(comp)
    if comp.requires:
        return None, "", ""  # the metadata is there and names no torch pin (torchaudio 2.11.0): nothing to judge
    m = ctx.matrices
    cv = public(comp.version)
    if cv is None:
        return None, "", ""
    for rel in m.pytorch_releases:
        for p in rel.patch_rows:
            mine = getattr(p, comp.name, None)
            req = getattr(p, f"{comp.name}_requires", None)
            if mine and parse_version(mine) == cv and req:
                sp = spec(req)
                if sp is not None:
                    return sp, f"torch{sp} ({comp.name} {mine}, torch {p.version} row)", row_src(ctx, p)
    return None, "", ""


def _companion_for(ctx, torch: Framework, name: str) -> Optional[str]:
    m = ctx.matrices
    rel = m.torch_release(torch.version)
    row = rel.patch(torch.version) if rel is not None else None
    return getattr(row, name, None) if row is not None else None


def _install_companion(ctx, torch: Framework, name: str, version: str) -> str:
    local = torch_local(torch)
    label = "+" + local if local else ""
    cmd = f'$ pip install "{name}=={version}{label}"'
    m = ctx.matrices
    if label:
        var = m.torch_variant(torch.version, torch_local(torch))
        if var is not None and var.index_url:
            cmd += f" --index-url {var.index_url}"
    return cmd


def _old_torchvision(version: str, last: str) -> bool:
    """Is torchvision ``version`` at or below ``last`` (X.Y, the data's torchvision-cuda-minor-check-last)?"""
    v, lv = parse_version(version), parse_version(last)
    return v is not None and lv is not None and (v.major, v.minor) <= (lv.major, lv.minor)


def _no_load(name: str) -> str:
    if name == "torchvision":
        return "its compiled operators do not load (\"operator torchvision::nms does not exist\")"
    return f"its compiled {name} extension does not load against this torch"


def torch_local(fw: Framework) -> Optional[str]:
    v = parse_version(fw.version)
    return v.local if v is not None and v.local else None


def _cuda_of(ctx, fw: Framework) -> Tuple[Optional[str], str]:
    """(build kind, CUDA version) of a torch-family build: its local label / build facts."""
    if fw.build in ("cuda", "cpu", "rocm"):
        return fw.build, fw.cuda_version or ""
    return "unknown", ""


@rule(
    id="ED520",
    name="torch-companion-mismatch",
    title="torchvision / torchaudio do not match the installed torch",
    severity="error",
    area="torch",
    rationale="""
torchvision and torchaudio ship C++/CUDA operators compiled against one torch release (their wheels
pin it: torchvision 0.21.0 requires torch==2.6.0; from 0.29.1 torchvision asks torch>=2.14.0) and one
CUDA major. With another torch the operators do not register and the import fails with "operator
torchvision::nms does not exist"; with a torch of another CUDA major torchvision refuses to load:
"Detected that PyTorch and torchvision were compiled with different CUDA major versions". It happens
when torch is upgraded or reinstalled from another index without its companions.
""",
    example="torch 2.6.0+cu124 with torchvision 0.23.0 (requires torch==2.8.0): `ED520 error` with "
            "`pip install \"torchvision==0.21.0+cu124\" --index-url https://download.pytorch.org/whl/cu124`.",
    references=[
        "https://github.com/pytorch/vision/issues/9174",
        "https://github.com/deforum/deforum-stable-diffusion/issues/348",
        "https://github.com/pytorch/vision/issues/9077",
        "https://pytorch.org/get-started/previous-versions/",
    ],
)
def torch_companion_mismatch(ctx: Context, r: Rule) -> List[Finding]:
    torch = ctx.framework("torch")
    if torch is None:
        return []
    findings = []
    for name in ("torchvision", "torchaudio"):
        comp = ctx.framework(name)
        if comp is None:
            continue
        label, tlabel = fw_label(comp), fw_label(torch)
        ev_base = [EvidenceItem("torch", tlabel, fw_src(torch)), EvidenceItem(name, label, fw_src(comp))]
        sp, line, src = _torch_requirement(ctx, comp)
        want = _companion_for(ctx, torch, name)
        if _contains(sp, torch.version) is False:
            ev = ev_base + [EvidenceItem(f"{name}'s torch requirement", line, src)]
            fix: List[str] = []
            if want:
                fix += [f"Install the {name} built for torch {public(torch.version)}:",
                        _install_companion(ctx, torch, name, want)]
            target = lower_bound(sp)
            if target is not None:
                fix += [f"Or move torch to the release {name} {comp.version} was built for:",
                        f'$ pip install "torch=={target}" "{name}=={public(comp.version)}"']
            findings.append(r.finding(
                f"{label} requires torch{sp} but {tlabel} is installed: {_no_load(name)}.",
                evidence=ev, fix=fix, cause=f"torch-companion:{name}", subject=label))
            continue
        # same release: do they agree on the CUDA build?
        tk, tc = _cuda_of(ctx, torch)
        ck, cc = _cuda_of(ctx, comp)
        if tk == "unknown" or ck == "unknown":
            continue
        tv, cv = parse_version(tc), parse_version(cc)
        fix = []
        if want or public(comp.version):
            fix += [f"Reinstall {name} from torch's index (same build as torch):",
                    _install_companion(ctx, torch, name, want or str(public(comp.version)))]
        if tk == "cuda" and ck == "cuda" and tv is not None and cv is not None:
            if tv.major != cv.major:
                findings.append(r.finding(
                    f"{tlabel} is built for CUDA {tc} but {label} for CUDA {cc}: {name} refuses to load (\"Detected that "
                    f"PyTorch and {name} were compiled with different CUDA major versions\").",
                    evidence=ev_base, fix=fix, cause=f"torch-companion:{name}", subject=label))
            elif tv != cv:
                # old torchvision compares the CUDA major.minor and refuses to load: that is an error
                last = ctx.matrices.fact_value("torchvision-cuda-minor-check-last")
                old = name == "torchvision" and _old_torchvision(comp.version, last)
                findings.append(r.finding(
                    f"{tlabel} is built for CUDA {tc} but {label} for CUDA {cc}: "
                    + (f"{label} (<= {last}) refuses to load (\"Detected that PyTorch and torchvision were compiled "
                       f"with different CUDA versions\")." if old else
                       f"recent {name} releases accept a minor-version difference, older ones (torchvision <= {last}) "
                       f"refuse to load."),
                    severity="error" if old else "warning", evidence=ev_base, fix=fix,
                    cause=f"torch-companion:{name}", subject=label))
        elif tk == "cpu" and ck == "cuda":
            findings.append(r.finding(
                f"{tlabel} is a CPU build but {label} is built for CUDA {cc}: {_no_load(name)}.",
                evidence=ev_base, fix=fix, cause=f"torch-companion:{name}", subject=label))
        elif tk != ck and "rocm" in (tk, ck):
            findings.append(r.finding(
                f"{tlabel} ({tk}) and {label} ({ck}) are builds for different GPU platforms: {name}'s compiled "
                f"operators do not load.", evidence=ev_base, fix=fix, cause=f"torch-companion:{name}", subject=label))
        elif tk == "cuda" and ck == "cpu":
            findings.append(r.finding(
                f"{tlabel} is a CUDA build but {label} is a CPU build: {name}'s operators run on the CPU only "
                f"(\"Could not run '{name}::...' with arguments from the 'CUDA' backend\").",
                severity="warning", evidence=ev_base, fix=fix, cause=f"torch-companion:{name}", subject=label))
    return findings
