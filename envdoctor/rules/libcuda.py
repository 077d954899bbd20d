"""ED120-ED122: the libcuda the dynamic loader really picks, against the kernel module that runs the GPU.

The first libcuda.so.1 on the loader's path (LD_PRELOAD, LD_LIBRARY_PATH, the ld.so cache: snapshot.loader.libraries,
version from the real file's name) is the user-space driver every framework talks to; the kernel module's version is
/proc/driver/nvidia/version (snapshot.driver.kernel_module_version). A newer libcuda of another branch over an older
module is CUDA forward compatibility (a cuda-compat package, /usr/local/cuda-X.Y/compat on LD_LIBRARY_PATH), which has
its own rules: only some GPU classes and base branches (data with sources: matrices/forward_compat.toml). Any other
difference is a user-space/kernel mismatch. Under WSL 2, cuDNN 8 opens the unversioned libcuda.so, which the ld.so
cache there does not list.
"""
from __future__ import annotations

import functools
import posixpath
import re
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor.facts.gpu_support import driver_supports_gpu
from envdoctor.facts.loader import DRIVER_CAUSE, is_mismatch, libcuda_resolution, under_wsl_lib, wsl2
from envdoctor.facts.versions import parse_version
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

DATA = "matrices/forward_compat.toml"
_REFS_FC = [
    "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
    "https://github.com/NVIDIA/nvidia-docker/issues/1294",
    "https://github.com/NVIDIA/nvidia-docker/issues/1515",
    "https://github.com/NVIDIA/nvidia-container-toolkit/issues/1426",
]


@functools.lru_cache(maxsize=1)
def forward_compat_data() -> dict:
    """{"gpu_class": [(id, served, [compiled patterns], source)], "base_branch": {branch: row}, "problems": [...]}."""
    from envdoctor.knowledge.extra_tables import _read

    raw = _read("forward_compat.toml")
    out: Dict[str, Any] = {"gpu_class": [], "base_branch": {}, "problems": []}
    for i, row in enumerate(raw.get("gpu_class", [])):
        try:
            pats = [re.compile(p, re.I) for p in row["patterns"]]
            if not isinstance(row["served"], bool) or not row["source"] or not row["verified"]:
                raise ValueError("served/source/verified")
            out["gpu_class"].append((row["id"], row["served"], pats, row["source"], row["verified"]))
        except (KeyError, TypeError, ValueError, re.error) as exc:
            out["problems"].append(f"gpu_class #{i}: {exc}")
    for i, row in enumerate(raw.get("base_branch", [])):
        try:
            if not isinstance(row["branch"], int) or not isinstance(row["served"], bool) \
                    or not row["source"] or not row["verified"] or row["designation"] not in ("LTSB", "PB", "NFB"):
                raise ValueError("branch/served/designation/source/verified")
            out["base_branch"][row["branch"]] = row
        except (KeyError, TypeError, ValueError) as exc:
            out["problems"].append(f"base_branch #{i}: {exc}")
    return out


def gpu_class(name: str) -> Optional[Tuple[str, bool, str, str]]:
    """(class id, served, source, verified) of the first class whose pattern the GPU name matches, else None."""
    for cid, served, pats, source, verified in forward_compat_data()["gpu_class"]:
        if any(p.search(name or "") for p in pats):
            return cid, served, source, verified
    return None


def _v(text: Optional[str]) -> Optional[Version]:
    if not text or text.count(".") < 1:
        return None  # "1" (libcuda.so.1 unresolved) says nothing about the release
    return parse_version(text)


def _pair(ctx):
    """(first libcuda on the loader path, its version, kernel module version) or None when either is unknown."""
    snap = ctx.snap
    if ctx.os != "linux" or snap.platform.wsl is not None or not snap.gpus:
        return None
    kernel = _v(snap.driver.kernel_module_version)
    order = [lib for lib in libcuda_resolution(snap) if not under_wsl_lib(lib.path)]
    if kernel is None or not order:
        return None
    first = order[0]
    uv = _v(first.version)
    if uv is None:
        return None
    return first, uv, kernel


def _is_forward_compat(uv: Version, kernel: Version) -> bool:
    return uv > kernel and uv.release[0] != kernel.release[0]


def _evidence(first, kernel: str) -> List[EvidenceItem]:
    return [EvidenceItem("libcuda the loader finds first", f"{first.path} ({first.version})", f"loader:{first.via}"),
            EvidenceItem("kernel module version", kernel, "file:/proc/driver/nvidia/version")]


def _branch_retires_gpu(ctx, first) -> List[Tuple[Any, Any]]:
    """(GPU, problem) for each GPU whose last driver branch is older than the compat libcuda's own branch
    (matrices/gpu_support.toml: a Kepler GPU ends at R470)."""
    out = []
    for g in ctx.snap.gpus:
        prob = driver_supports_gpu(ctx.matrices, str(first.version), ctx.gpu_cc(g))
        if prob is not None and prob.key == "driver-too-new":
            out.append((g, prob))
    return out


def _drop_fix(ctx, first) -> List[str]:
    snap = ctx.snap
    if first.via == "LD_LIBRARY_PATH":
        d = first.path.rsplit("/", 1)[0].rstrip("/")
        rest = [p for p in snap.loader.ld_library_path if p.rstrip("/") != d]
        return [f"$ export LD_LIBRARY_PATH={':'.join(rest)}" if rest else "$ unset LD_LIBRARY_PATH"]
    if first.via == "LD_PRELOAD":
        rest = [p for p in snap.loader.ld_preload if p != first.path]
        return [f"$ export LD_PRELOAD={' '.join(rest)}" if rest else "$ unset LD_PRELOAD"]
    return [f"Remove the package that put {first.path} into the ld.so cache (a cuda-compat-* package: "
            "`apt-get remove 'cuda-compat-*'` / `dnf remove 'cuda-compat-*'`), then `sudo ldconfig`."]


@rule(
    id="ED120",
    name="forward-compat-unsupported",
    title="A CUDA forward-compatibility libcuda runs over a GPU or driver branch that forward compatibility does not serve",
    severity="error",
    area="driver",
    rationale="""
The libcuda of a cuda-compat package (/usr/local/cuda-X.Y/compat, conda's cuda-compat, a container image that ships
it, or a host package the container runtime injects) is newer than the kernel module and lets a newer CUDA run on an
older driver branch. NVIDIA serves this only for data-centre GPUs (and select NGC-ready RTX SKUs and Jetson boards),
and only over supported base branches. Anywhere else cuInit fails with CUDA error 804 "forward compatibility was
attempted on non supported HW" and every framework loses the GPU, although nvidia-smi (which uses the host's NVML,
not this libcuda) looks fine. envdoctor takes the first libcuda.so.1 on the loader path (LD_PRELOAD, LD_LIBRARY_PATH,
the ld.so cache; its version from the real file's name), compares it with the kernel module, and judges a newer one
of another branch by forward compatibility's own rules (matrices/forward_compat.toml: GPU classes by name, base
branches by designation, each with its source). A GPU class that is not served is an error; a base branch that the
data marks not served is a warning (that row is not verified as a refusal). The compat libcuda is also a newer
branch's user space: where that branch no longer drives the GPU (matrices/gpu_support.toml: a Kepler GPU's last branch
is R470), it is an error however the GPU is classed, and no driver upgrade helps.
""",
    example="GeForce GTX 1080 Ti, kernel module 440.33.01, /usr/local/cuda-11.3/compat/libcuda.so.465.19.01 first on "
            "LD_LIBRARY_PATH: `ED120 error` 'forward compatibility was attempted on non supported HW'.",
    references=_REFS_FC,
)
def forward_compat_unsupported(ctx: Context, r: Rule) -> List[Finding]:
    got = _pair(ctx)
    if got is None:
        return []
    first, uv, kernel = got
    if not _is_forward_compat(uv, kernel):
        return []
    module = str(ctx.snap.driver.kernel_module_version)  # the vendor's string, never re-formatted from `kernel`
    ev = _evidence(first, module)
    retired = _branch_retires_gpu(ctx, first)
    if retired:
        # the compat libcuda is a newer driver branch's user space: a GPU that branch no longer drives gets no
        # CUDA from it, and no driver upgrade helps (the GPU's last branch is older than the libcuda's)
        ev += [EvidenceItem(f"GPU {g.index}", f"{g.name}: {prob.message}", prob.row.source) for g, prob in retired]
        g, prob = retired[0]
        runs = ctx.matrices.max_cuda_for_driver(module, "linux")
        return [r.finding(
            f"The loader picks the forward-compatibility libcuda {first.path} ({first.version}) over kernel module "
            f"{module}, but its branch R{uv.release[0]} no longer drives {prob.row.family} GPUs ({g.name}, compute "
            f"capability {ctx.gpu_cc(g)}): R{prob.row.branch_last} is their last branch, so forward compatibility "
            f"cannot serve them, cuInit fails and no framework can use the GPU.",
            evidence=ev, cause="libcuda-not-the-driver", subject=f"libcuda {first.version}",
            fix=_drop_fix(ctx, first) + [
                f"Then use builds for the CUDA the R{prob.row.branch_last} driver runs itself"
                + (f" (up to CUDA {runs} natively, {runs.split('.')[0]}.x through minor-version compatibility)"
                   if runs else "") + "; no newer driver branch drives this GPU."])]
    bad = []
    for g in ctx.snap.gpus:
        cls = gpu_class(g.name)
        if cls is not None and not cls[1]:
            bad.append((g, cls))
    fix = _drop_fix(ctx, first) + [
        f"Or upgrade the host's NVIDIA driver to a branch that supports the CUDA you need natively "
        f"(>= {uv.release[0]} for this libcuda's CUDA), and drop the compat libraries."]
    if bad:
        ev += [EvidenceItem(f"GPU {g.index} class", f"{g.name}: {cls[0]} (forward compatibility not served)", cls[2])
               for g, cls in bad]
        names = ", ".join(sorted({g.name for g, _ in bad}))
        return [r.finding(
            f"The loader picks the forward-compatibility libcuda {first.path} ({first.version}) over kernel module "
            f"{module}, but forward compatibility is only for data-centre GPUs and {names} is not one: cuInit fails "
            f"with CUDA error 804 'forward compatibility was attempted on non supported HW' and no framework can use "
            f"the GPU.",
            evidence=ev, fix=fix, cause="libcuda-not-the-driver", subject=f"libcuda {first.version}")]
    row = forward_compat_data()["base_branch"].get(kernel.release[0])
    if row is not None and not row["served"]:
        ev.append(EvidenceItem(f"driver branch R{row['branch']}", f"{row['designation']} (not served)", row["source"]))
        return [r.finding(
            f"The loader picks the forward-compatibility libcuda {first.path} ({first.version}) over kernel module "
            f"{module}, whose branch R{row['branch']} is a {row['designation']} that envdoctor's data does not list as "
            f"a forward-compatibility base: cuInit may fail with CUDA error 804.",
            severity="warning", evidence=ev, fix=fix, cause="libcuda-not-the-driver", subject=f"libcuda {first.version}")]
    return []


@rule(
    id="ED121",
    name="libcuda-differs-from-kernel-module",
    title="The libcuda the loader picks is another release than the kernel module, and not forward compatibility",
    severity="error",
    area="driver",
    rationale="""
libcuda and the kernel module must be the same driver release, except for a forward-compatibility libcuda, which
must be newer and of a later branch (ED120). A libcuda that is older than the module (a cuda-compat package of an
older CUDA left on LD_LIBRARY_PATH or in the ld.so cache after the driver was upgraded, a container image that
baked in its own driver libraries), or another release of the same branch, makes cuInit fail: CUDA error 803
"system has unsupported display driver / cuda driver combination", or "Driver/library version mismatch". nvidia-smi
may still work, because NVML is another library. Compared: the first libcuda.so.1 on the loader path (version from
the real file's name) and /proc/driver/nvidia/version. Not judged when NVML itself reports the mismatch (ED013).
""",
    example="Kernel module 595.45.04, /usr/local/cuda/compat/libcuda.so.580.173.02 on LD_LIBRARY_PATH: `ED121 error` "
            "'CUDA error 803 ... unsupported display driver / cuda driver combination'.",
    references=[
        "https://github.com/NVIDIA-NeMo/labs-molt/pull/44",
        "https://github.com/NVIDIA/nvidia-container-toolkit/pull/1055",
        "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
    ],
)
def libcuda_differs(ctx: Context, r: Rule) -> List[Finding]:
    got = _pair(ctx)
    if got is None or is_mismatch(ctx.snap):
        return []
    first, uv, kernel = got
    if uv == kernel or _is_forward_compat(uv, kernel):
        return []
    compat = "/compat/" in first.path
    what = ("an older forward-compatibility libcuda than the driver (cuda-compat)" if compat and uv < kernel
            else "another driver release than the kernel module")
    module = str(ctx.snap.driver.kernel_module_version)  # the vendor's string, never re-formatted from `kernel`
    return [r.finding(
        f"The loader picks {first.path} ({first.version}, via {first.via}), {what} {module}: cuInit fails with CUDA "
        f"error 803 'system has unsupported display driver / cuda driver combination' (or 'Driver/library version "
        f"mismatch'), so no framework can use the GPU.",
        evidence=_evidence(first, module),
        fix=_drop_fix(ctx, first) + ["$ ldconfig -p | grep libcuda.so.1   (the driver's own libcuda must come first)"],
        cause=DRIVER_CAUSE, subject=f"libcuda {first.version}")]


def _cudnn8_users(ctx) -> List[str]:
    out = [f"{fw.distribution} {fw.version} (cuDNN {fw.cudnn_version})" for fw in ctx.frameworks
           if fw.build == "cuda" and str(fw.cudnn_version or "").split(".")[0] == "8"]
    for name, version in sorted(ctx.snap.python.packages.items()):
        if name.startswith("nvidia-cudnn-cu") and str(version).split(".")[0] == "8":
            out.append(f"{name} {version}")
    # a conda environment's own cuDNN (the cudnn package in $CONDA_PREFIX/lib) is what a conda CUDA build loads,
    # though the build itself does not state its cuDNN (conda's pytorch, cudatoolkit + cudnn)
    py = ctx.snap.python
    lib_dir = (py.prefix or "").rstrip("/") + "/lib"
    loads_env = [fw for fw in ctx.frameworks if fw.build == "cuda" and
                 str(fw.cudnn_version or "8").split(".")[0] == "8"]
    if py.kind == "conda" and py.prefix and loads_env:
        for c in ctx.snap.cudnn:
            if c.kind == "library" and posixpath.dirname(c.path) == lib_dir and str(c.version or "").split(".")[0] == "8":
                out.append(f"{c.path} (cuDNN {c.version}, the conda environment's own)")
    return out


@rule(
    id="ED122",
    name="wsl-unversioned-libcuda-missing",
    title="Under WSL 2 cuDNN 8 opens libcuda.so, which the loader cannot find",
    severity="error",
    area="driver",
    rationale="""
cuDNN 8's sub-libraries (libcudnn_cnn_infer.so.8 and its siblings) dlopen the unversioned name libcuda.so. Under
WSL 2 the Windows driver maps libcuda.so, libcuda.so.1 and libcuda.so.1.1 into /usr/lib/wsl/lib as plain files, and
the ld.so cache there lists only libcuda.so.1; so unless /usr/lib/wsl/lib is on LD_LIBRARY_PATH, the first
convolution aborts the process with "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open
shared object file". Judged from the loader record (no unversioned libcuda.so on LD_LIBRARY_PATH, LD_PRELOAD or in the
cache) when a CUDA build with cuDNN 8, an nvidia-cudnn 8 wheel, or (in a conda environment with a CUDA build) the
environment's own libcudnn.so.8 is installed.
""",
    example="WSL 2, torch 2.0.1+cu118 (cuDNN 8.7), ldconfig lists only /usr/lib/wsl/lib/libcuda.so.1: `ED122 error`, "
            "`export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH`.",
    references=[
        "https://github.com/facebookresearch/nougat/issues/115",
        "https://github.com/facebookresearch/nougat/issues/105",
        "https://github.com/microsoft/WSL/issues/8587",
        "https://github.com/NVIDIA/cuda-python/issues/17",
    ],
)
def wsl_unversioned_libcuda(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if not wsl2(snap) or not snap.driver.wsl_libcuda or not snap.gpus:
        return []
    if any(p.name == "loader" and p.status != "ok" for p in snap.probes):
        return []
    libs = [lib for lib in snap.loader.libraries if lib.name == "libcuda"]
    if not libs or any(lib.version is None and "/stubs/" not in lib.path for lib in libs):
        return []  # no record of libcuda at all (incomplete), or an unversioned libcuda.so is found
    users = _cudnn8_users(ctx)
    if not users:
        return []
    ev = [EvidenceItem("libcuda on the loader path", ", ".join(lib.path for lib in libs[:3]), f"loader:{libs[0].via}"),
          EvidenceItem("unversioned libcuda.so", "not found", "loader"),
          *[EvidenceItem("cuDNN 8 user", u, "probe:python") for u in users[:3]]]
    return [r.finding(
        f"Under WSL 2 the loader finds only {libs[0].path}, not the unversioned libcuda.so that cuDNN 8 opens "
        f"({users[0]}): the first convolution aborts with \"Could not load library libcudnn_cnn_infer.so.8. Error: "
        f"libcuda.so: cannot open shared object file\".",
        evidence=ev,
        fix=["$ export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH   (add it to ~/.bashrc)",
             "Or link it next to cuDNN (the workaround in the reports): "
             "$ ln -s /usr/lib/wsl/lib/libcuda.so.1 <site-packages>/nvidia/cudnn/lib/libcuda.so"],
        cause="wsl-libcuda-so", subject="WSL libcuda.so")]
