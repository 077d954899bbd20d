"""CUDA toolkits: every one on the machine, its version and which one is the default.

Where it looks (each hit is recorded in `found_by`):
  CUDA_HOME / CUDA_PATH / CUDA_ROOT (ctx.env), `nvcc` on PATH (symlinks resolved and small
  `exec /path/bin/nvcc "$@"` wrapper scripts followed), /usr/local/cuda, /usr/local/cuda-*,
  /opt/cuda, the active conda env (CONDA_PREFIX), and pip wheels in site-packages
  (`nvidia/cuda_nvcc` for the CUDA 12 `-cu12` wheels, `nvidia/cu13` for the CUDA 13 wheels).
  The same toolkit reached through several paths (/usr/local/cuda -> cuda-13.0) is one
  entry: the key is the symlink-resolved path.

Version sources, in order of preference at equal precision: version.json, `nvcc --version`
(only run when the root is live; an image's binaries are never executed), version.txt,
wheel dist-info names (`nvidia_cuda_nvcc-13.0.88.dist-info`), conda-meta, include/cuda.h.
The most precise version wins; sources that disagree on major.minor are recorded in evidence.

The default toolkit: the one `nvcc` on PATH belongs to, else CUDA_HOME's, else /usr/local/cuda's.
"""
from __future__ import annotations

import os
import posixpath
import re
import sys
from typing import Dict, List, Optional, Tuple

from envdoctor.fsroot import Root
from envdoctor.parsers.cuda_version import (
    major_minor,
    parse_conda_meta_name,
    parse_cuda_h,
    parse_dist_info_name,
    parse_nvcc_version,
    parse_version_json,
    parse_version_txt,
)
from envdoctor.probes._parsed import parsed as _parsed
from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Evidence, Snapshot, Toolkit
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field

ENV_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
CUDA_H_MAX = 256 * 1024  # CUDA_VERSION sits near the top of cuda.h (line ~263 of a 1 MiB file)
WRAPPER_MAX = 4096

# (source, priority) - higher priority wins between versions of equal precision
_PRIORITY = {"version.json": 6, "nvcc": 5, "version.txt": 4, "dist-info": 3, "conda": 2, "cuda.h": 1}

# ---------------------------------------------------------------------------
# path helpers shared with the cudnn and loader probes


def resolve_path(root: Root, path: str) -> str:
    """Resolve symlinks of an absolute machine path, inside the root for an image (Root.realpath).

    Absolute link targets inside an image point into the image, never to the host.
    Returns the machine path (it may not exist).
    """
    return root.realpath(path)


def is_file(root: Root, path: str) -> bool:
    return root.is_file(path if root.is_live else resolve_path(root, path))


def is_dir(root: Root, path: str) -> bool:
    return root.is_dir(path if root.is_live else resolve_path(root, path))


def read_text(root: Root, path: str, max_bytes: Optional[int] = None) -> Optional[str]:
    """root.read_text, with the image's symlinks resolved inside the image."""
    target = path if root.is_live else resolve_path(root, path)
    return root.read_text(target) if max_bytes is None else root.read_text(target, max_bytes)


def _python_prefixes(ctx: ProbeContext, extra: Optional[str] = None) -> List[str]:
    prefixes: List[str] = []
    if extra:
        prefixes.append(extra)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        val = ctx.env.get(var, "")
        if val.startswith("/"):
            prefixes.append(val)
    if ctx.target_python and ctx.target_python.startswith("/"):
        prefixes.append(posixpath.dirname(posixpath.dirname(ctx.target_python)))
    elif ctx.root.is_live and sys.prefix.startswith("/"):
        prefixes.append(sys.prefix)  # the pyenv probe falls back to this interpreter too
    out: List[str] = []
    for p in prefixes:
        p = p.rstrip("/") or "/"
        if p not in out:
            out.append(p)
    return out


def site_package_dirs(ctx: ProbeContext, prefix: Optional[str] = None) -> List[str]:
    """site-packages / dist-packages dirs (machine paths) that may hold nvidia-* wheels:
    those of `prefix` (snap.python.prefix), the active venv / conda env, the target python,
    and the system ones (/usr/local/lib/python3.*/dist-packages ...)."""
    patterns: List[str] = []
    for p in _python_prefixes(ctx, prefix):
        patterns += [f"{p}/lib/python3*/site-packages", f"{p}/lib/python3*/dist-packages",
                     f"{p}/lib64/python3*/site-packages"]
    patterns += ["/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                 "/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages"]
    out: List[str] = []
    seen = set()
    for pat in patterns:
        for d in ctx.root.glob(pat):
            key = resolve_path(ctx.root, d)
            if key in seen or not is_dir(ctx.root, d):
                continue
            seen.add(key)
            out.append(key)
    return out


def _path_dirs(ctx: ProbeContext) -> List[str]:
    return [d for d in ctx.env.get("PATH", "").split(os.pathsep) if d.startswith("/")]


def find_on_path(ctx: ProbeContext, name: str) -> Optional[str]:
    """First `name` in the PATH directories, looked up inside the root."""
    for d in _path_dirs(ctx):
        cand = posixpath.join(d, name)
        if not ctx.root.is_live:  # an image's file is never run, so its mode does not matter
            if is_file(ctx.root, cand):
                return cand
            continue
        try:
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
        except OSError:
            continue
    return None


_WRAPPER_RE = lazy_re(r"""(?:^|[\s"'])(/[^\s"'$;|&<>()]*/bin/nvcc)(?=$|[\s"';])""", re.MULTILINE)


def follow_nvcc(root: Root, nvcc: str, depth: int = 3) -> Tuple[str, List[str]]:
    """The real nvcc behind `nvcc`: symlinks resolved, small shell wrappers that exec
    another absolute .../bin/nvcc followed. Returns (path, chain of hops)."""
    chain: List[str] = []
    current = resolve_path(root, nvcc)
    if current != nvcc:
        chain.append(f"{nvcc} -> {current}")
    for _ in range(depth):
        text = read_text(root, current, WRAPPER_MAX)
        if not text or not text.startswith("#!"):
            break
        m = _WRAPPER_RE.search(text)
        if not m or m.group(1) == current:
            break
        target = resolve_path(root, m.group(1))
        if not is_file(root, target):
            break
        chain.append(f"{current} (script) -> {target}")
        current = target
    return current, chain


def toolkit_dir_of_nvcc(nvcc_real: str) -> Optional[str]:
    parent = posixpath.dirname(nvcc_real)
    if posixpath.basename(parent) != "bin":
        return None
    return posixpath.dirname(parent) or "/"


# ---------------------------------------------------------------------------
# discovery


@dataclass
class _Cand:
    path: str  # resolved machine path
    found_by: List[str] = field(default_factory=list)
    evidence: List[Evidence] = field(default_factory=list)
    site_dir: Optional[str] = None  # for pip toolkits: the site-packages dir (dist-info lives there)


def _looks_like_toolkit(root: Root, path: str) -> bool:
    for rel in ("bin/nvcc", "version.json", "version.txt", "include/cuda.h", "include/cuda_runtime_api.h"):
        if is_file(root, posixpath.join(path, rel)):
            return True
    return bool(root.glob(posixpath.join(path, "targets/*/include/cuda.h")))


class _Registry:
    def __init__(self, root: Root) -> None:
        self.root = root
        self.items: Dict[str, _Cand] = {}
        self.order: List[str] = []

    def add(self, path: str, found_by: str, evidence: Optional[Evidence] = None,
            site_dir: Optional[str] = None, check: bool = True) -> Optional[str]:
        path = path.rstrip("/") or "/"
        if not path.startswith("/") or not is_dir(self.root, path):
            return None
        real = resolve_path(self.root, path).rstrip("/") or "/"
        if check and not _looks_like_toolkit(self.root, real):
            return None
        cand = self.items.get(real)
        if cand is None:
            cand = self.items[real] = _Cand(real, site_dir=site_dir)
            self.order.append(real)
        if found_by not in cand.found_by:
            cand.found_by.append(found_by)
        if evidence is not None:
            cand.evidence.append(evidence)
        if path != real:
            alias = Evidence("alias", f"{path} -> {real}")
            if all(e.excerpt != alias.excerpt for e in cand.evidence):
                cand.evidence.append(alias)
        return real


def _discover(ctx: ProbeContext) -> Tuple[_Registry, Dict[str, Optional[str]]]:
    root = ctx.root
    reg = _Registry(root)
    keys: Dict[str, Optional[str]] = {"PATH": None, "CUDA_HOME": None, "/usr/local/cuda": None}

    nvcc = find_on_path(ctx, "nvcc")
    if nvcc:
        real, chain = follow_nvcc(root, nvcc)
        tk_dir = toolkit_dir_of_nvcc(real)
        if tk_dir:
            ev = Evidence("env:PATH", f"nvcc on PATH: {nvcc}" + (f" ({'; '.join(chain)})" if chain else ""))
            keys["PATH"] = reg.add(tk_dir, "PATH", ev, check=False)

    for var in ENV_VARS:
        val = ctx.env.get(var, "").strip()
        if not val:
            continue
        got = reg.add(val, var, Evidence(f"env:{var}", val))
        if var == "CUDA_HOME":
            keys["CUDA_HOME"] = got

    keys["/usr/local/cuda"] = reg.add("/usr/local/cuda", "/usr/local/cuda")
    for p in root.glob("/usr/local/cuda-*"):
        reg.add(p, p)
    reg.add("/opt/cuda", "/opt/cuda")

    conda = ctx.env.get("CONDA_PREFIX", "").strip()
    if conda.startswith("/") and is_dir(root, conda):
        has_cuda = (
            is_file(root, posixpath.join(conda, "bin/nvcc"))
            or bool(root.glob(posixpath.join(conda, "targets/*/include/cuda.h")))
            or bool(_conda_cuda_meta(root, conda))
        )
        if has_cuda:
            reg.add(conda, "conda", Evidence("env:CONDA_PREFIX", conda), check=False)

    for sp in site_package_dirs(ctx):
        for sub in ["nvidia/cuda_nvcc"] + root.glob(posixpath.join(sp, "nvidia/cu1[0-9]")):
            d = sub if sub.startswith("/") else posixpath.join(sp, sub)
            if is_file(root, posixpath.join(d, "bin/nvcc")) or (
                d.endswith("cuda_nvcc") and is_dir(root, posixpath.join(d, "bin"))
            ):
                reg.add(d, "pip", Evidence(f"file:{d}", "pip wheel layout"), site_dir=sp, check=False)
    return reg, keys


def _conda_cuda_meta(root: Root, prefix: str) -> List[Tuple[str, str, str]]:
    out = []
    for f in root.glob(posixpath.join(prefix, "conda-meta/*.json")):
        parsed = parse_conda_meta_name(posixpath.basename(f))
        if parsed and parsed[0] in ("cuda-nvcc", "cuda-version", "cudatoolkit", "cuda-cudart"):
            out.append((parsed[0], parsed[1], f))
    return out


# ---------------------------------------------------------------------------
# versions


def _versions(ctx: ProbeContext, cand: _Cand) -> Tuple[List[Tuple[str, str]], List[Evidence], Optional[str]]:
    root = ctx.root
    path = cand.path
    found: List[Tuple[str, str]] = []
    ev: List[Evidence] = []

    vj_path = posixpath.join(path, "version.json")
    text = read_text(root, vj_path)
    if text is not None:
        vj = _parsed(ev, f"file:{vj_path}", parse_version_json, text)
        if vj and vj.sdk:
            found.append(("version.json", vj.sdk))
            extra = f", cuda_nvcc {vj.nvcc}" if vj.nvcc else ""
            ev.append(Evidence(f"file:{vj_path}", f'"cuda" version {vj.sdk_raw}{extra}'))
        else:
            ev.append(Evidence(f"file:{vj_path}", "unreadable: no CUDA SDK version"))

    vt_path = posixpath.join(path, "version.txt")
    text = read_text(root, vt_path)
    if text is not None:
        v = _parsed(ev, f"file:{vt_path}", parse_version_txt, text)
        if v:
            found.append(("version.txt", v))
        ev.append(Evidence(f"file:{vt_path}", text.strip()[:200] if v else "unreadable: no 'CUDA Version'"))

    nvcc_path = posixpath.join(path, "bin/nvcc")
    nvcc: Optional[str] = nvcc_path if is_file(root, nvcc_path) else None
    if nvcc and root.is_live:
        res = ctx.runner.run_fixed([nvcc, "--version"], timeout=ctx.timeout)
        src = f"cmd:{nvcc} --version"
        if res.ok:
            nvcc_version = _parsed(ev, src, parse_nvcc_version, res.stdout)
            if nvcc_version:
                found.append(("nvcc", nvcc_version.version))
                line = next((ln for ln in res.stdout.splitlines() if "release" in ln), "")
                ev.append(Evidence(src, line.strip()[:200]))
            else:
                ev.append(Evidence(src, "garbage: " + res.stdout.strip()[:200]))
        else:
            ev.append(Evidence(src, f"{res.status}: {res.reason}"[:300]))

    # wheel metadata: <toolkit>/dist-info/*.dist-info (toolkits assembled from wheels) or
    # the site-packages dir of a pip toolkit
    dist_dirs = [posixpath.join(path, "dist-info")]
    if cand.site_dir:
        dist_dirs.append(cand.site_dir)
    best: Dict[str, Tuple[str, str]] = {}
    for dd in dist_dirs:
        for f in root.glob_in(dd, ("nvidia_cuda_*.dist-info",)):
            parsed = parse_dist_info_name(posixpath.basename(f))
            if not parsed:
                continue
            dist, ver = parsed
            suffix = re.search(r"-cu([0-9]+)$", dist)
            base = dist[: suffix.start()] if suffix else dist
            if cand.site_dir and dd == cand.site_dir:
                # a shared site-packages may hold several CUDA majors: only the wheel of
                # this layout counts (nvidia/cuda_nvcc <- *-cu11/-cu12, nvidia/cu13 <- unsuffixed 13.x)
                cu = re.search(r"/nvidia/cu([0-9]+)$", path)
                if cu and (suffix or ver.split(".")[0] != cu.group(1)):
                    continue
                if not cu and not suffix:
                    continue
            if base in ("nvidia-cuda-nvcc", "nvidia-cuda-runtime") and base not in best:
                best[base] = (ver, f)
    for base in ("nvidia-cuda-nvcc", "nvidia-cuda-runtime"):
        if base in best:
            ver, f = best[base]
            found.append(("dist-info", ver))
            ev.append(Evidence(f"file:{f}", f"{base} {ver}"))
            break

    if is_dir(root, posixpath.join(path, "conda-meta")):
        metas = {name: (ver, f) for name, ver, f in _conda_cuda_meta(root, path)}
        for name in ("cuda-nvcc", "cudatoolkit", "cuda-version", "cuda-cudart"):
            if name in metas:
                ver, f = metas[name]
                found.append(("conda", ver))
                ev.append(Evidence(f"file:{f}", f"conda package {name} {ver}"))
                break

    headers = [posixpath.join(path, "include/cuda.h")] + root.glob(posixpath.join(path, "targets/*/include/cuda.h"))
    seen = set()
    for h in headers:
        key = resolve_path(root, h)
        if key in seen:
            continue
        seen.add(key)
        text = read_text(root, h, CUDA_H_MAX)
        v = _parsed(ev, f"file:{h}", parse_cuda_h, text) if text else None
        if v:
            found.append(("cuda.h", v))
            ev.append(Evidence(f"file:{h}", f"CUDA_VERSION -> {v}"))
            break
    return found, ev, nvcc


def choose_version(found: List[Tuple[str, str]]) -> Tuple[Optional[str], str, Optional[str]]:
    """(version, source, disagreement) from (source, version) pairs: the most precise wins,
    version.json > nvcc > version.txt > dist-info > conda > cuda.h among equals."""
    if not found:
        return None, "", None
    best = max(found, key=lambda sv: (len(sv[1].split(".")), _PRIORITY.get(sv[0], 0)))
    mms: Dict[str, List[str]] = {}
    for src, v in found:
        mm = major_minor(v)
        if mm is not None:
            mms.setdefault(mm, []).append(f"{src} {v}")
    disagreement = None
    if len(mms) > 1:
        disagreement = "version sources disagree: " + "; ".join(", ".join(x) for x in mms.values())
    return best[1], best[0], disagreement


# ---------------------------------------------------------------------------


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    reg, keys = _discover(ctx)
    default_key = keys["PATH"] or keys["CUDA_HOME"] or keys["/usr/local/cuda"]
    toolkits: List[Toolkit] = []
    for key in reg.order:
        cand = reg.items[key]
        found, ev, nvcc = _versions(ctx, cand)
        version, source, disagreement = choose_version(found)
        evidence = list(cand.evidence) + ev
        if disagreement:
            evidence.append(Evidence("check:version-sources", disagreement))
        if not ctx.root.is_live and nvcc:
            evidence.append(Evidence("note", "nvcc not run: the root is an image, not this machine"))
        toolkits.append(
            Toolkit(
                path=cand.path,
                version=version,
                version_source=source,
                nvcc=nvcc,
                found_by=list(cand.found_by),
                is_default=(key == default_key),
                evidence=evidence,
            )
        )
    snap.toolkits = toolkits
