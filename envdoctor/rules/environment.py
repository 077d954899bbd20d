"""ED600-ED649: the process environment: the dynamic loader's search path and which CUDA toolkit is the default.

These rules read the snapshot only (never the matrices): the installed wheels' own pins
(Framework.requires, python.packages), the libraries the loader finds through LD_LIBRARY_PATH /
LD_PRELOAD (Loader.libraries) and the toolkits found on this machine.

How the loader picks a library matters here. A pip-installed framework finds the CUDA libraries of its
nvidia-* wheels through its RUNPATH ($ORIGIN/../../nvidia/<lib>/lib), and ld.so searches LD_LIBRARY_PATH
*before* RUNPATH; LD_PRELOAD is loaded before everything. So a directory on LD_LIBRARY_PATH that holds the
same soname (libcudnn.so.8, libcublasLt.so.11 ...) replaces the wheel's copy, while a library of another
major version (another soname) is not picked up by that framework at all.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor.facts.libraries import site_packages
from envdoctor.facts.pins import canonical_name, requirement
from envdoctor.facts.versions import major_minor, parse_version
from envdoctor.lazyre import lazy_re
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

# nvidia-* wheel (without its -cuNN suffix) -> (family, library name prefixes it ships)
_WHEEL_FAMILIES = {
    "nvidia-cudnn": ("cuDNN", ("libcudnn",)),
    "nvidia-cublas": ("cuBLAS", ("libcublas",)),
    "nvidia-cuda-runtime": ("CUDA runtime", ("libcudart",)),
    "nvidia-nccl": ("NCCL", ("libnccl",)),
    "nvidia-cufft": ("cuFFT", ("libcufft",)),
    "nvidia-cusparse": ("cuSPARSE", ("libcusparse",)),
    "nvidia-cusolver": ("cuSOLVER", ("libcusolver",)),
    "nvidia-curand": ("cuRAND", ("libcurand",)),
    "nvidia-cuda-nvrtc": ("NVRTC", ("libnvrtc",)),
    "nvidia-nvjitlink": ("nvJitLink", ("libnvJitLink",)),
}
_WHEEL_RE = lazy_re(r"^(nvidia-[a-z-]+?)(?:-cu(\d+))?$")
def _wheel_family(dist: str) -> Optional[Tuple[str, Tuple[str, ...]]]:
    m = _WHEEL_RE.match(canonical_name(dist))
    if not m:
        return None
    return _WHEEL_FAMILIES.get(m.group(1))


def _required_dists(fw) -> List[str]:
    out = []
    for line in fw.requires:
        req = requirement(line)
        if req is not None:
            out.append(canonical_name(req.name))
    return out


def _release(v: Optional[str]) -> Optional[Tuple[int, ...]]:
    pv = parse_version(v)
    return pv.release if pv is not None else None


def _cmp_common(ref: Tuple[int, ...], lib: Tuple[int, ...]) -> int:
    """Compare on the components both state: -1 lib older, 0 same, 1 lib newer."""
    n = min(len(ref), len(lib))
    a, b = Version(".".join(map(str, lib[:n]))), Version(".".join(map(str, ref[:n])))
    return (a > b) - (a < b)


def _cuda_fws(ctx) -> list:
    return [fw for fw in ctx.frameworks if fw.build == "cuda"]


def _is_wheel_dir(path: str) -> bool:
    return "-packages/nvidia/" in path or "/site-packages/torch/lib/" in path


def _without(items: List[str], drop: List[str]) -> List[str]:
    dropn = {d.rstrip("/") for d in drop}
    return [i for i in items if i.rstrip("/") not in dropn]


# the families ED600 judges (envdoctor.facts.libraries keys), in the order findings are listed
_SHADOW_FAMILIES = ("cudart", "cublas", "cudnn", "cufft", "curand", "cusolver", "cusparse", "nccl", "nvrtc", "nvjitlink")


def _references(ctx) -> Dict[Tuple[str, str, str], dict]:
    """For each CUDA library family a framework brings itself (its bundle or an nvidia-* wheel), what the resolver
    (envdoctor.facts.libraries.loaded) says it loads, grouped by (family, the copy it brings, the copy it loads)."""
    from envdoctor.facts.libraries import loaded

    refs: Dict[Tuple[str, str, str], dict] = {}
    for fw in _cuda_fws(ctx):
        for key in _SHADOW_FAMILIES:
            lib = loaded(ctx, fw, key)
            if lib is None:
                continue
            own = lib.own if lib.own is not None else (lib if lib.where in ("bundle", "wheel") else None)
            if own is None:
                continue  # the framework brings no copy of its own: nothing to shadow
            dist = own.package.split()[0] if own.package else None
            where = f"the {dist} wheel" if dist else f"{fw.name}'s bundled {lib.family.label}"
            entry = refs.setdefault((lib.family.label, own.version or f"{own.major}", lib.path or ""), {
                "version": own.version, "major": own.major, "where": where, "dist": dist, "users": [], "fws": [],
                "lib": lib, "source": own.version_source})
            label = f"{fw.name} {fw.version}"
            if label not in entry["users"]:
                entry["users"].append(label)
                entry["fws"].append(fw)
    return refs


@rule(
    id="ED600",
    name="ld-path-shadows-wheel-libs",
    title="LD_LIBRARY_PATH / LD_PRELOAD replaces a CUDA library a framework wheel brings",
    severity="warning",
    area="environment",
    rationale="""
pip builds of torch, tensorflow and jax load cuDNN, cuBLAS, the CUDA runtime and NCCL from the nvidia-*
wheels they pin, or (older torch wheels) from the copies bundled in torch/lib, through RUNPATH, which ld.so
consults only after LD_LIBRARY_PATH (LD_PRELOAD comes even before). envdoctor's library resolver
(envdoctor.facts.libraries) follows the loader's order for each family: LD_PRELOAD, the binaries scan's
answer, LD_LIBRARY_PATH, the framework's own bundle or wheel (RUNPATH), the conda env, the system. A
directory on LD_LIBRARY_PATH holding the same soname (libcudnn.so.8, libcublasLt.so.11 ...) of another
version therefore wins: an older one breaks at load time ("cuDNN version incompatibility: PyTorch was
compiled against (8, 3, 2) but found runtime version (8, 0, 3)", "undefined symbol:
cublasLtHSHMatmulAlgoInit, version libcublasLt.so.11"), and any other cuDNN 8.x mixes its sub-libraries
with the wheel's ("Could not load library libcudnn_cnn_train.so.8 ... undefined symbol"). A library of
another major version has another soname and is not used by that framework.
""",
    example="torch 2.2.0 with nvidia-cudnn-cu12 8.9.2.26 and LD_LIBRARY_PATH=/usr/local/cuda-12.3/lib64 holding "
            "libcudnn.so.8.9.7: ED600 error, drop that directory from LD_LIBRARY_PATH.",
    references=[
        "https://github.com/pytorch/pytorch/issues/119989",
        "https://github.com/pytorch/pytorch/issues/80637",
        "https://github.com/pytorch/pytorch/issues/104808",
        "https://github.com/pytorch/pytorch/pull/174320",
        "https://github.com/bmaltais/kohya_ss/issues/1096",
    ],
)
def ld_path_shadows_wheel_libs(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if ctx.os != "linux" or not snap.loader.libraries:
        return []
    out = []
    for (family, _, _), ref in sorted(_references(ctx).items(), key=lambda kv: kv[0]):
        lib = ref["lib"]
        users = ", ".join(ref["users"])
        brings = ref["version"] or f"{ref['major']} (its exact version unknown)"
        ref_desc = f"{family} {brings} ({ref['where']})"
        src = f"python:{ref['dist']}" if ref["dist"] else f"python:{ref['fws'][0].name}"
        if lib.where in ("LD_LIBRARY_PATH", "LD_PRELOAD"):
            if _is_wheel_dir(lib.path):
                continue  # the wheel's own directory comes first: that is the copy in use
            d = lib.path.rsplit("/", 1)[0]
            lib_rel = _release(lib.version)
            if lib_rel is None or len(lib_rel) < 3:
                continue  # only the soname's major is known: cannot tell whether it differs
            ref_rel = _release(ref["version"])
            via = lib.where
            what = f"{d} ({family} {lib.version})" if via == "LD_LIBRARY_PATH" else f"{lib.path}"
            if ref_rel is None:
                sev, why = "warning", (f"which {family} {ref['major']} {users} brings is not known, so whether "
                                       f"{lib.version} is older than what it was built against cannot be told")
            else:
                cmp = _cmp_common(ref_rel, lib_rel)
                if cmp == 0:
                    continue
                older = cmp < 0
                if family in ("cuDNN", "cuBLAS") and older:
                    sev, why = "error", (f"it is older than what {users} was built against, so loading fails "
                                         f"(missing symbols or a cuDNN version check)")
                elif family == "cuDNN" and str(ref["major"]) == ctx.matrices.fact_value("cudnn-infer-train-split"):
                    sev, why = "error", ("cuDNN 8 loads its sub-libraries (libcudnn_cnn_infer.so.8 ...) by soname, "
                                         "so two 8.x releases get mixed: \"Could not load library "
                                         "libcudnn_cnn_*.so.8 ... undefined symbol\"")
                else:
                    sev, why = "warning", (f"{users} then runs with {'an older' if older else 'a newer'} {family} "
                                           f"than the one it was built and tested with")
            msg = (f"{via} puts {what} ahead of {ref_desc} that {users} uses: the loader takes the same soname from "
                   f"there; {why}.")
            ev = [EvidenceItem(via, ":".join(snap.loader.ld_library_path) if via == "LD_LIBRARY_PATH"
                               else " ".join(snap.loader.ld_preload), f"env:{via}"),
                  EvidenceItem(f"{family} found first", f"{lib.path} ({lib.version})", lib.version_source),
                  EvidenceItem(f"{family} the framework brings", brings, ref["source"] or src),
                  EvidenceItem("loader order searched", " > ".join(lib.searched), "envdoctor.facts.libraries")]
            out.append(r.finding(msg, severity=sev, evidence=ev, fix=_fix_for(snap, lib, via, family, ref, d),
                                 cause=f"ld-shadow:{family}", subject=users.split(", ")[0]))
            continue
        other = [x for x in lib.other_majors if _release(x.version)]
        if not other:
            continue
        first = other[0]
        d = first.path.rsplit("/", 1)[0]
        if _is_wheel_dir(first.path):
            continue
        sev = "warning" if first.via == "LD_PRELOAD" else "info"
        where = f"{d}" if first.via == "LD_LIBRARY_PATH" else first.path
        msg = (f"{first.via} holds {family} {first.version} ({where}) while {users} uses {ref_desc}: another major "
               f"version (another soname), so {users} does not load it"
               + (", but LD_PRELOAD forces it into every process." if first.via == "LD_PRELOAD"
                  else "; other programs started from this shell will."))
        ev = [EvidenceItem(first.via, where, f"env:{first.via}"),
              EvidenceItem(f"{family} on the path", f"{first.path} ({first.version})", f"loader:{first.via}"),
              EvidenceItem(f"{family} the framework brings", brings, ref["source"] or src)]
        out.append(r.finding(msg, severity=sev, evidence=ev, fix=_fix_for(snap, first, first.via, family, ref, d),
                             cause=f"ld-shadow:{family}", subject=users.split(", ")[0]))
    return out


def _fix_for(snap, lib, via, family, ref, d) -> List[str]:
    fix: List[str] = []
    if via == "LD_PRELOAD":
        rest = [p for p in snap.loader.ld_preload if p != lib.path]
        fix.append(f"$ export LD_PRELOAD={' '.join(rest)}" if rest else "$ unset LD_PRELOAD")
        fix.append("$ grep -n LD_PRELOAD ~/.bashrc ~/.profile /etc/environment /etc/ld.so.preload   (where it is set)")
        return fix
    rest = _without(snap.loader.ld_library_path, [d])
    fix.append(f"$ export LD_LIBRARY_PATH={':'.join(rest)}" if rest else "$ unset LD_LIBRARY_PATH")
    fix.append("$ grep -n LD_LIBRARY_PATH ~/.bashrc ~/.profile /etc/environment   (where it is set)")
    site = None
    for fw in ref["fws"]:
        site = site_packages(fw)
        if site:
            break
    sub = ref["lib"].family.subdir
    if site and sub and ref["dist"]:
        fix.append(f"Or, if that directory must stay: $ export LD_LIBRARY_PATH={site}/nvidia/{sub}/lib:$LD_LIBRARY_PATH")
    return fix


# -- toolkits ---------------------------------------------------------------------------------------
def _cpp_extension_toolkit(snap):
    """The toolkit torch.utils.cpp_extension builds with: CUDA_HOME/CUDA_PATH, else nvcc on PATH, else /usr/local/cuda."""
    for key in ("CUDA_HOME", "CUDA_PATH", "PATH", "/usr/local/cuda"):
        for tk in snap.toolkits:
            if key in tk.found_by:
                return tk, key
    return None, ""


def _tk_mm(tk) -> Optional[str]:
    return major_minor(tk.version) if tk is not None and tk.version else None


def _tk_src(tk) -> str:
    if tk.evidence:
        return tk.evidence[0].source
    return f"toolkit:{tk.version_source or 'probe'}"


def _switch_fix(tk) -> List[str]:
    p = tk.path.rstrip("/")
    return [f"$ export CUDA_HOME={p}", f"$ export PATH={p}/bin:$PATH",
            f"$ export LD_LIBRARY_PATH={p}/lib64:$LD_LIBRARY_PATH   (only if programs load the toolkit's libraries)"]


def _matching(snap, want: str, exclude) -> list:
    """Toolkits other than `exclude` whose version matches `want` ("11.8" major.minor, or "12" major only)."""
    out = []
    for tk in snap.toolkits:
        if tk is exclude or not tk.version:
            continue
        tv = parse_version(tk.version)
        wv = parse_version(want)
        if tv is None or wv is None:
            continue
        n = len(wv.release)
        if tv.release[:n] == wv.release[:n]:
            out.append(tk)
    return out


def _uses_system_cuda(ctx, fw) -> bool:
    """No CUDA runtime/cuDNN wheel among what the framework requires and has installed: it loads the system's."""
    pk = {canonical_name(k) for k in ctx.snap.python.packages}
    for dist in _required_dists(fw):
        fam = _wheel_family(dist)
        if fam and fam[0] in ("CUDA runtime", "cuDNN", "cuBLAS") and dist in pk:
            return False
    return True


@rule(
    id="ED601",
    name="default-toolkit-not-frameworks",
    title="The default CUDA toolkit is not the one the frameworks were built for",
    severity="info",
    area="toolkit",
    rationale="""
When several CUDA toolkits are installed, nvcc on PATH, CUDA_HOME and the /usr/local/cuda link decide
which one builds extensions and JIT-compiles kernels, and (for frameworks that do not bring their own
CUDA wheels, such as tensorflow before 2.14) whose libraries are found. If a toolkit matching a
framework's CUDA is installed but not the default, pointing CUDA_HOME and PATH at it avoids version
mismatches; frameworks that bring their CUDA libraries as wheels only need it for compiling.
""",
    example="Toolkits 11.8 and 12.4 installed, 12.4 on PATH, tensorflow 2.12.0 built for CUDA 11.8 without CUDA wheels: "
            "ED601 warning, `export CUDA_HOME=/usr/local/cuda-11.8`.",
    references=[
        "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#post-installation-actions",
        "https://www.tensorflow.org/install/source#gpu",
    ],
)
def default_toolkit_not_frameworks(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if len(snap.toolkits) < 2:
        return []
    default = snap.default_toolkit
    if default is None or not default.version:
        return []
    dv = parse_version(default.version)
    out = []
    seen = set()
    for fw in _cuda_fws(ctx):
        if fw.name == "torch" or not fw.cuda_version:  # torch: ED602 says it precisely
            continue
        want = fw.cuda_version
        wv = parse_version(want)
        if wv is None or dv is None:
            continue
        n = min(len(wv.release), 2)
        if dv.release[:n] == wv.release[:n]:
            continue
        alt = _matching(snap, ".".join(map(str, wv.release[:n])), default)
        if not alt:
            continue
        key = (want, alt[0].path)
        if key in seen:
            continue
        seen.add(key)
        system = _uses_system_cuda(ctx, fw)
        sev = "warning" if system else "info"
        tks = ", ".join(f"{tk.version} at {tk.path}" for tk in snap.toolkits if tk.version)
        via = "/".join(default.found_by) or "default"
        tail = (f"{fw.name} loads CUDA from the system, so it may pick up the wrong toolkit's libraries" if system
                else f"{fw.name} brings its own CUDA libraries, so this matters only when compiling (extensions, kernels)")
        msg = (f"Several CUDA toolkits are installed ({tks}); the default one is {default.version} (via {via}), but "
               f"{fw.name} {fw.version} is built for CUDA {want} and {alt[0].path} matches it: {tail}.")
        ev = [EvidenceItem("default toolkit", f"{default.version} at {default.path} (via {via})", _tk_src(default)),
              EvidenceItem("matching toolkit", f"{alt[0].version} at {alt[0].path}", _tk_src(alt[0])),
              EvidenceItem(f"{fw.name} CUDA", want, fw.evidence[0].source if fw.evidence else "probe:python")]
        fix = _switch_fix(alt[0])
        if any(k == "/usr/local/cuda" for k in default.found_by) and ctx.os == "linux":
            fix.append("$ sudo update-alternatives --config cuda   (Debian/Ubuntu CUDA packages: which toolkit "
                       "/usr/local/cuda points to)")
        out.append(r.finding(msg, severity=sev, evidence=ev, fix=fix, subject=f"{fw.name} {fw.version}"))
    return out


@rule(
    id="ED602",
    name="nvcc-torch-cuda-mismatch",
    title="nvcc's CUDA differs from the CUDA torch was built with",
    severity="warning",
    area="toolkit",
    rationale="""
torch.utils.cpp_extension (used by `pip install` of packages with CUDA code: flash-attn, apex, xformers,
mmcv, torch-scatter ...) compiles with the toolkit in CUDA_HOME, else the nvcc on PATH, else
/usr/local/cuda, and compares its version with torch.version.cuda. A different major version is refused:
"RuntimeError: The detected CUDA version (12.3) mismatches the version that was used to compile PyTorch
(11.8). Please make sure to use the same CUDA versions." A different minor version only warns (older
torch releases, or setuptools without packaging's major/minor, refuse it too). Running torch itself is
not affected.
""",
    example="torch 1.10.2 built for CUDA 11.3 and nvcc 10.1 on PATH: ED602 warning, point CUDA_HOME at a CUDA 11.x toolkit.",
    references=[
        "https://github.com/pytorch/pytorch/issues/73047",
        "https://github.com/vllm-project/vllm/issues/1453",
        "https://pytorch.org/docs/stable/cpp_extension.html",
    ],
)
def nvcc_torch_cuda_mismatch(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    fw = ctx.framework("torch")
    if fw is None or fw.build != "cuda" or not fw.cuda_version:
        return []
    tk, how = _cpp_extension_toolkit(snap)
    tmm, fmm = _tk_mm(tk), major_minor(fw.cuda_version)
    if tk is None or tmm is None or fmm is None:
        return []
    tv, fv = Version(tmm), Version(fmm)
    if tv == fv:
        return []
    major = tv.major != fv.major
    alt = _matching(snap, fmm, tk)
    if not alt and major:
        alt = _matching(snap, str(fv.major), tk)  # same major: cpp_extension accepts it (with a warning)
    ev = [EvidenceItem("nvcc / toolkit", f"{tk.version} at {tk.path} (found via {how})", _tk_src(tk)),
          EvidenceItem("torch.version.cuda", fw.cuda_version, fw.evidence[0].source if fw.evidence else "probe:python")]
    label = f"torch {fw.version}"
    if major:
        msg = (f"nvcc {tmm} ({tk.path}, found via {how}) is a different major CUDA version than CUDA {fmm} that {label} "
               f"was built with: building CUDA extensions fails with \"The detected CUDA version ({tmm}) mismatches the "
               f"version that was used to compile PyTorch ({fmm})\".")
        sev = "warning"
    else:
        msg = (f"nvcc {tmm} ({tk.path}, found via {how}) differs in the minor version from CUDA {fmm} that {label} was "
               f"built with: torch.utils.cpp_extension only warns about this when building CUDA extensions.")
        sev = "info"
    fix: List[str] = []
    if alt:
        fix += _switch_fix(alt[0])[:2]
    elif not major:
        fix.append(f"Nothing to do unless an extension build refuses it; then install the CUDA {fmm} toolkit "
                   f"(https://developer.nvidia.com/cuda-toolkit-archive) and point CUDA_HOME and PATH at it")
    else:
        kind = snap.python.kind
        if kind == "conda":
            fix += [f"$ conda install -c nvidia cuda-nvcc={fmm}", "$ export CUDA_HOME=$CONDA_PREFIX"]
        fix.append(f"Install the CUDA {fmm} toolkit next to {tmm} (https://developer.nvidia.com/cuda-toolkit-archive), "
                   f"then point CUDA_HOME and PATH at it")
        fix.append(f"Or install a torch build for CUDA {tv.major}.x (https://pytorch.org/get-started/previous-versions/)")
    return [r.finding(msg, severity=sev, evidence=ev, fix=fix, cause=f"nvcc-vs-torch:{tk.path}", subject=label)]


__all__: List[str] = []
