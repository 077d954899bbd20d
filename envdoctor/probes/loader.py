"""The dynamic loader's view: LD_LIBRARY_PATH, LD_PRELOAD, the ldconfig cache, GPU env vars.

`libraries` lists, for libcudart, libcudnn, libcublas, libnccl, libcuda, libnvrtc,
libcusparse and libnvJitLink, one entry per real file (symlinks resolved, so libcudart.so.12 ->
libcudart.so.12.4.127 reports "12.4.127"):
  via "LD_LIBRARY_PATH": what each LD_LIBRARY_PATH dir holds;
  via "LD_PRELOAD": what LD_PRELOAD names;
  via "ldconfig": on a live root, what `ldconfig -p` lists (with a timeout). On an image
  (or when ldconfig cannot run) the cache cannot be asked, so the probe reads the image's
  /etc/ld.so.conf (following `include` globs), adds the trusted dirs (/lib, /usr/lib, their
  64-bit and multiarch variants) and globs those dirs: what ldconfig would put in the cache.
  The evidence says which of the two was used.
`gpu_env`: only the variables that are set, among the GPU-related ones (see GPU_ENV_*).
"""
from __future__ import annotations

import posixpath
import re
from typing import Dict, List, Optional, Set, Tuple

from envdoctor.parsers import ParseError
from envdoctor.parsers.ldconfig import LdconfigEntry, parse_ld_so_conf, parse_ldconfig_p
from envdoctor.parsers.libname import more_precise, split_libname
from envdoctor.probes._parsed import parsed
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.toolkits import is_dir, is_file, read_text, resolve_path
from envdoctor.snapshot import Evidence, Library, Loader, Snapshot
from envdoctor.subproc import CmdResult
from envdoctor.lazyre import lazy_re

LIB_NAMES = ("libcudart", "libcudnn", "libcublas", "libnccl", "libcuda", "libnvrtc", "libcusparse", "libnvJitLink")

GPU_ENV_NAMES = (
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_REQUIRE_CUDA", "NVIDIA_DISABLE_REQUIRE", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NVML_BASED_CUDA_CHECK", "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR",
    "JAX_PLATFORMS", "JAX_PLATFORM_NAME", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL", "HSA_OVERRIDE_GFX_VERSION",
)
GPU_ENV_PREFIXES = ("TF_", "CUDA_", "NCCL_")
# never copy a credential into a snapshot, whatever its prefix
_SECRET_RE = lazy_re(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
# Terraform also uses TF_*: its variables (TF_VAR_* may hold secrets) are not TensorFlow's
_TERRAFORM_RE = lazy_re(
    r"^TF_(VAR_|CLI_|TOKEN_|LOG|INPUT$|DATA_DIR$|WORKSPACE$|IN_AUTOMATION$|REGISTRY_|PLUGIN_|STATE_|IGNORE$)"
)

TRUSTED_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64",
                "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
MAX_CONF_FILES = 200


def gpu_env(env) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for name in sorted(env):
        if not isinstance(name, str):
            continue
        wanted = name in GPU_ENV_NAMES or (
            name.startswith(GPU_ENV_PREFIXES) and not _SECRET_RE.search(name) and not _TERRAFORM_RE.match(name)
        )
        if wanted:
            value = env.get(name)
            if value is not None:
                out[name] = str(value)
    return out


def ldconfig_entries(ctx: ProbeContext, res: CmdResult) -> Tuple[List[LdconfigEntry], Optional[ParseError]]:
    """parse_ldconfig_p(res.stdout) of the run's `ldconfig -p` (ctx.ldconfig_p()), parsed once per probing run:
    the loader and cudnn probes both read its ~1200 lines. (entries, None), or ([], the ParseError)."""
    def parse() -> Tuple[List[LdconfigEntry], Optional[ParseError]]:
        try:
            return parse_ldconfig_p(res.stdout), None
        except ParseError as exc:
            return [], exc

    return ctx.memo("ldconfig -p entries", parse)


def _split_preload(value: str) -> List[str]:
    return [p for p in re.split(r"[\s:]+", value) if p]


class _Collector:
    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx
        self.libraries: List[Library] = []
        self.seen: Set[Tuple[str, str]] = set()

    def add_file(self, path: str, via: str, names: Tuple[str, ...] = LIB_NAMES) -> Optional[Library]:
        base = posixpath.basename(path)
        if not base.startswith(names):
            return None  # the common case (most of ldconfig's ~600 rows): no regex for it
        parts = split_libname(base)
        if not parts or parts[0] not in names:
            return None
        real = resolve_path(self.ctx.root, path)
        shown, version = path, parts[1]
        if is_file(self.ctx.root, real):
            real_parts = split_libname(posixpath.basename(real))
            if real_parts and real_parts[0] == parts[0]:
                version = more_precise(real_parts[1], version)
            shown = real
        key = (via, shown)
        if key in self.seen:
            # another name of the same file: keep the most precise version
            for lib in self.libraries:
                if lib.via == via and lib.path == shown:
                    lib.version = more_precise(lib.version, version)
            return None
        self.seen.add(key)
        lib = Library(name=parts[0], path=shown, version=version, via=via)
        self.libraries.append(lib)
        return lib

    def add_dir(self, d: str, via: str) -> int:
        n = 0
        for p in self.ctx.root.glob_in(d, [f"{name}.so*" for name in LIB_NAMES]):  # one listing, names in turn
            if self.add_file(p, via):
                n += 1
        return n


# native Windows: the CUDA DLLs a build that loads the system CUDA asks for (rule ED340), looked up on PATH
DLL_PREFIXES = ("cudart64_", "cublas64_", "cudnn64_")
DLL_SCAN = "dll-scan:PATH"


def windows_dlls(path_value: str, listdir) -> List[Library]:
    """The CUDA runtime, cuBLAS and cuDNN DLLs in the folders of a Windows PATH value (`listdir(folder)` lists one;
    an unreadable folder lists nothing). In PATH order: the first folder that holds a name is the one recorded."""
    out: List[Library] = []
    seen: Set[str] = set()
    for d in [p for p in path_value.split(";") if p.strip()]:
        for name in listdir(d):
            low = name.lower()
            if low.endswith(".dll") and low.startswith(DLL_PREFIXES) and low not in seen:
                seen.add(low)
                stem = low[:-4]
                lib, _, version = stem.rpartition("_")
                out.append(Library(name=lib, path=d.rstrip("\\/") + "\\" + name, version=version or None, via="PATH"))
    return out


def _listdir(d: str) -> List[str]:
    import os

    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


def _ld_so_conf_dirs(ctx: ProbeContext) -> Tuple[List[str], List[str]]:
    """Dirs from /etc/ld.so.conf (and its includes) inside the root, plus the trusted dirs."""
    dirs: List[str] = []
    read: List[str] = []
    pending = ["/etc/ld.so.conf"]
    done: Set[str] = set()
    while pending and len(done) < MAX_CONF_FILES:
        conf = pending.pop(0)
        if conf in done:
            continue
        done.add(conf)
        text = read_text(ctx.root, conf)
        if text is None:
            continue
        read.append(conf)
        ds, includes = parsed([], conf, parse_ld_so_conf, text, default=([], []))
        dirs += ds
        for inc in includes:
            pattern = inc if inc.startswith("/") else posixpath.join(posixpath.dirname(conf), inc)
            pending += ctx.root.glob(pattern)
    dirs += list(TRUSTED_DIRS)
    out: List[str] = []
    seen: Set[str] = set()
    for d in dirs:
        if not is_dir(ctx.root, d):
            continue
        key = resolve_path(ctx.root, d)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out, read


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    env = ctx.env
    loader = Loader()
    raw_llp = env.get("LD_LIBRARY_PATH", "")
    loader.ld_library_path = [p for p in raw_llp.split(":") if p]
    if raw_llp:
        loader.evidence.append(Evidence("env:LD_LIBRARY_PATH", raw_llp[:1000]))
        if "" in raw_llp.split(":"):
            loader.evidence.append(Evidence("check:LD_LIBRARY_PATH", "empty entry: the loader also searches the current directory"))
    raw_pre = env.get("LD_PRELOAD", "")
    loader.ld_preload = _split_preload(raw_pre)
    if raw_pre:
        loader.evidence.append(Evidence("env:LD_PRELOAD", raw_pre[:1000]))
    loader.gpu_env = gpu_env(env)

    col = _Collector(ctx)
    for d in loader.ld_library_path:
        if d.startswith("/") and is_dir(ctx.root, d):
            col.add_dir(resolve_path(ctx.root, d), "LD_LIBRARY_PATH")
    for p in loader.ld_preload:
        if p.startswith("/"):
            col.add_file(p, "LD_PRELOAD")
        # a bare name in LD_PRELOAD is searched like a dlopen name; nothing to resolve here

    used_cache = False
    if ctx.root.is_live:
        res = ctx.ldconfig_p()
        if res is not None and res.ok:
            entries, error = ldconfig_entries(ctx, res)
            if error is not None:  # as probes._parsed.parsed says it
                loader.evidence.append(Evidence(f"cmd:{res.cmdline}", f"could not read: {error}"))
            header = res.stdout.splitlines()[0][:200] if res.stdout else ""
            loader.evidence.append(Evidence(f"cmd:{res.cmdline}", header or f"{len(entries)} entries"))
            for e in entries:
                col.add_file(e.path, "ldconfig")
            used_cache = True
        elif res is not None:
            loader.evidence.append(Evidence(f"cmd:{res.cmdline}", f"{res.status}: {res.reason}"[:300]))
    if not used_cache:
        dirs, read = _ld_so_conf_dirs(ctx)
        for d in dirs:
            col.add_dir(d, "ldconfig")
        why = "the root is an image" if not ctx.root.is_live else "ldconfig -p gave no answer"
        loader.evidence.append(Evidence(
            "ld.so.conf",
            f"{why}: globbed the dirs of {', '.join(read) or 'no ld.so.conf'} and the trusted dirs "
            f"({len(dirs)} dirs)",
        ))
    loader.libraries = col.libraries
    if (snap.platform.system or "").lower().startswith("win") and ctx.root.is_live:
        dlls = windows_dlls(env.get("PATH", ""), _listdir)
        loader.libraries.extend(dlls)
        loader.evidence.append(Evidence(DLL_SCAN, f"{len(dlls)} CUDA DLLs on PATH: "
                                                  + ", ".join(posixpath.basename(x.path.replace("\\", "/")) for x in dlls)[:500]))
    snap.loader = loader
