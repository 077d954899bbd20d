"""ED340: a build that loads the *system* CUDA runtime finds the libraries it asks for.

TensorFlow's pip wheels up to 2.13 (and later ones installed without the [and-cuda] extra) carry no CUDA
libraries: at start they dlopen the CUDA runtime, cuBLAS and cuDNN by soname (libcudart.so.11.0, libcublas.so.11,
libcudnn.so.8) on Linux, or load the DLLs (cudart64_110.dll, cublas64_11.dll, cudnn64_8.dll) from PATH on Windows;
each one missing is a "Could not load dynamic library" warning and then no GPU. Which names a build asks for is data
(matrices/system_runtime.toml, by the CUDA and cuDNN version its build_info states); what the machine offers is the
loader probe's record (snapshot.loader.libraries: LD_LIBRARY_PATH, LD_PRELOAD, the ld.so cache; on Windows the DLLs
on PATH). On Linux cuDNN is judged by ED300, so this rule asks for cudart and cuBLAS there.
"""
from __future__ import annotations

import ntpath
from typing import Any, List, Optional, Tuple

from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.snapshot import Framework


def _serves_tf_from_system(ctx, fw) -> bool:
    """A TensorFlow CUDA build that will look for a system CUDA: no [and-cuda] wheels serve it, pip installed it."""
    if fw.name != "tensorflow" or fw.build != "cuda" or not fw.cuda_version:
        return False
    if (ctx.snap.installers.dists or {}).get("tensorflow") == "conda":
        return False  # a conda build finds the env's CUDA through its RPATH
    from envdoctor.facts.libraries import extras_in_effect

    return extras_in_effect(fw, ctx.snap, ctx.frameworks).get("and-cuda") is not True


def _loader_known(ctx) -> bool:
    if any(p.name == "loader" and p.status != "ok" for p in ctx.snap.probes):
        return False
    if ctx.os == "windows":
        # the loader probe records DLL_SCAN when it looked for CUDA DLLs on PATH; imported here so that
        # `envdoctor rules` / `explain` (which import every rule module) load no probe
        from envdoctor.probes.loader import DLL_SCAN

        return any(e.source == DLL_SCAN for e in ctx.snap.loader.evidence)
    # a working driver's libcuda.so.1 is always on the loader's record (ld.so cache, WSL's /usr/lib/wsl/lib, the
    # container runtime's mounts): a record without it is incomplete (an old snapshot, an unreadable cache)
    return any(lib.name == "libcuda" for lib in ctx.snap.loader.libraries)


def _wanted(fw: Framework, os_name: str) -> List[Tuple[Any, str]]:
    from envdoctor.knowledge.extra_tables import system_libraries

    out = []
    for row in system_libraries().rows:
        version = fw.cudnn_version if row.family == "cudnn" else fw.cuda_version
        if not row.serves(version):
            continue
        if os_name == "windows" and row.windows:
            out.append((row, row.windows))
        elif os_name == "linux" and row.linux and row.family != "cudnn":
            out.append((row, row.linux))
    return out


def _prefix(version: Optional[str], match: str) -> bool:
    want = match.split(".")
    return str(version or "").split(".")[:len(want)] == want


def _provided(ctx, row, name: str, os_name: str) -> Optional[str]:
    """The path of a library on the loader's record that provides `name`, or None."""
    for lib in ctx.snap.loader.libraries:
        if os_name == "windows":
            if ntpath.basename(lib.path).lower() == name.lower():
                return lib.path
        elif lib.name == f"lib{row.family}" and _prefix(lib.version, row.match):
            return lib.path
    return None


@rule(
    id="ED340",
    name="system-cuda-runtime-missing",
    title="A build that loads the system CUDA runtime will not find a library it needs",
    severity="error",
    area="toolkit",
    rationale="""
TensorFlow pip wheels up to 2.13, and later ones installed without [and-cuda], bring no CUDA libraries: they open
the CUDA runtime, cuBLAS and cuDNN of the system by name when they start (libcudart.so.11.0, libcublas.so.11,
libcudnn.so.8 for a CUDA 11 / cuDNN 8 build on Linux; cudart64_110.dll, cublas64_11.dll, cudnn64_8.dll from PATH on
native Windows). A CUDA toolkit of another major, or one whose lib64 folder is neither on LD_LIBRARY_PATH nor in the
ld.so cache, leaves TensorFlow logging "Could not load dynamic library ..." and then "Skipping registering GPU
devices": the GPU goes unused although import works. The names per CUDA and cuDNN version are data
(matrices/system_runtime.toml, from TensorFlow's own loader messages in public reports); the build's versions come
from its build_info. Judged only on a machine with a usable NVIDIA GPU, only when the loader probe ran (on Windows:
when it looked for the DLLs on PATH; on Linux: when its record holds the driver's libcuda, as every complete one does),
and for pip builds (a conda build finds the env's CUDA by its RPATH). On Linux
cuDNN is ED300's; this rule names the CUDA runtime and cuBLAS.
""",
    example="tensorflow 2.10.0 (CUDA 11.2, cuDNN 8) on Windows with CUDA 10.1 on PATH: `ED340 error` "
            "'tensorflow 2.10.0 was built against the system CUDA 11.2: cudart64_110.dll, cublas64_11.dll ... not found'.",
    references=[
        "https://github.com/tensorflow/tensorflow/issues/61438",
        "https://github.com/tensorflow/tensorflow/issues/72097",
        "https://github.com/NVIDIA/tensorflow/issues/110",
        "https://www.tensorflow.org/install/source#gpu",
    ],
)
def system_cuda_runtime_missing(ctx: Context, r: Rule) -> List[Finding]:
    if not ctx.has_nvidia_gpu or ctx.os == "macos" or not _loader_known(ctx):
        return []
    os_name = "windows" if ctx.os == "windows" else "linux"
    where = "PATH" if os_name == "windows" else "LD_LIBRARY_PATH, LD_PRELOAD or the ld.so cache"
    out = []
    for fw in ctx.frameworks:
        if not _serves_tf_from_system(ctx, fw):
            continue
        wanted = _wanted(fw, os_name)
        missing = [(row, name) for row, name in wanted if _provided(ctx, row, name, os_name) is None]
        if not missing:
            continue
        names = ", ".join(name for _row, name in missing)
        build = f"CUDA {fw.cuda_version}" + (f", cuDNN {fw.cudnn_version}" if fw.cudnn_version else "")
        # the toolkits the machine has (their folders, as the probe found them): one of the build's major whose
        # DLLs are simply not on PATH is fixed by a PATH line, not by another install
        major = str(fw.cuda_version).split(".")[0]
        same = [tk for tk in ctx.snap.toolkits if str(tk.version or "").split(".")[0] == major] \
            if os_name == "windows" else []
        other = [tk for tk in ctx.snap.toolkits if tk.version and tk not in same] if os_name == "windows" else []
        installed = ""
        if same:
            installed = f" CUDA {same[0].version} is installed at {same[0].path}, but its bin folder is not on PATH."
        elif other:
            installed = (" The CUDA installed here is " + ", ".join(f"{tk.version} ({tk.path})" for tk in other[:2])
                         + f": another major, whose DLLs are not the CUDA {major} ones the build opens.")
        cudnn_missing = any(row.family == "cudnn" for row, _ in missing)
        path_fix = [f'$ set "PATH={ntpath.join(same[0].path, "bin")};%PATH%"   (cmd; for good: System Properties > '
                    'Environment Variables > Path)'] if same else []
        install_fix = [] if same and not cudnn_missing else [
            f"Install the CUDA {major}.x runtime"
            + (f" and cuDNN {fw.cudnn_version.split('.')[0]}" if cudnn_missing and fw.cudnn_version else "")
            + " the build names (TensorFlow's tested build configurations) and put its "
            + ("bin folder on PATH" if os_name == "windows" else "lib64 folder on LD_LIBRARY_PATH or in the "
                                                                  "ld.so cache (ldconfig)")]
        out.append(r.finding(
            f"{fw.distribution} {fw.version} was built against the system {build} and loads it by name at start: "
            f"{names} not found on {where}.{installed} TensorFlow logs \"Could not load dynamic library "
            f"'{missing[0][1]}'\" and then runs without the GPU.",
            area="tensorflow", subject=f"{fw.distribution} {fw.version}", cause=f"system-runtime:{fw.distribution}",
            fix=path_fix + install_fix + [f"Or, from TensorFlow {ctx.matrices.fact_value('tf-and-cuda-first')} on Linux, take the CUDA "
                 "libraries as wheels: `pip install 'tensorflow[and-cuda]'`"
                 if os_name == "linux" else f"TensorFlow {ctx.matrices.fact_value('tf-native-windows-gpu-last')} is "
                                            "the last release with GPU support on native Windows; newer ones need WSL 2"],
            evidence=[EvidenceItem("build", build, fw.evidence[0].source if fw.evidence else ""),
                      *[EvidenceItem("needed library", name, row.source) for row, name in missing]],
        ))
    return out
