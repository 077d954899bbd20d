"""cuDNN: every copy the machine has, as headers, libraries and pip wheels.

- kind "header": cudnn_version.h (cuDNN >= 8; Debian packages also install
  cudnn_version_v8.h / cudnn_version_v9.h behind an alternatives link) or cudnn.h (<= 7)
  in each toolkit's include dirs (snap.toolkits), /usr/include, /usr/include/<multiarch>,
  /usr/local/cuda/include and the conda env's include dir. The version comes from
  CUDNN_MAJOR/MINOR/PATCHLEVEL, never from CUDNN_VERSION.
- kind "library": libcudnn.so.N[.x.y.z] found in LD_LIBRARY_PATH dirs, in the ldconfig cache
  (`ldconfig -p`, live root only) and in the standard library dirs (always globbed, which is
  all an image root gets): /usr/lib/<multiarch>, /usr/lib64, /usr/local/cuda*/lib64, the
  toolkits' lib dirs, the conda env's lib. Symlinks are resolved (libcudnn.so.9 ->
  libcudnn.so.9.1.0) to report the full version; one entry per real file.
- kind "wheel": nvidia-cudnn-cu11 / -cu12 / -cu13, version from snap.python.packages (or the
  dist-info dir name), path <site-packages>/nvidia/cudnn.
Identical (version, path) pairs are reported once.
"""
from __future__ import annotations

import posixpath
from typing import Dict, List, Optional, Set, Tuple

from envdoctor.parsers.cuda_version import parse_dist_info_name
from envdoctor.parsers.cudnn_header import parse_cudnn_header
from envdoctor.parsers.libname import more_precise, split_libname
from envdoctor.probes._parsed import parsed as _parsed
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.loader import ldconfig_entries
from envdoctor.probes.toolkits import is_dir, is_file, read_text, resolve_path, site_package_dirs
from envdoctor.snapshot import Cudnn, Evidence, Snapshot

MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu", "sbsa-linux", "powerpc64le-linux-gnu")
HEADER_NAMES = ("cudnn_version.h", "cudnn_version_v*.h", "cudnn.h", "cudnn_v*.h")
WHEELS = ("nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn")


def _include_dirs(ctx: ProbeContext, snap: Snapshot) -> List[str]:
    dirs: List[str] = []
    for tk in snap.toolkits:
        dirs.append(posixpath.join(tk.path, "include"))
        dirs += ctx.root.glob(posixpath.join(tk.path, "targets/*/include"))
    dirs += ["/usr/include"] + [f"/usr/include/{m}" for m in MULTIARCH]
    dirs += ["/usr/local/cuda/include"] + ctx.root.glob("/usr/local/cuda-*/include")
    conda = ctx.env.get("CONDA_PREFIX", "")
    if conda.startswith("/"):
        dirs.append(posixpath.join(conda, "include"))
        dirs += ctx.root.glob(posixpath.join(conda, "targets/*/include"))
    return dirs


def _lib_dirs(ctx: ProbeContext, snap: Snapshot) -> List[str]:
    dirs: List[str] = []
    for tk in snap.toolkits:
        dirs += [posixpath.join(tk.path, "lib64"), posixpath.join(tk.path, "lib")]
        dirs += ctx.root.glob(posixpath.join(tk.path, "targets/*/lib"))
    dirs += [f"/usr/lib/{m}" for m in MULTIARCH] + ["/usr/lib64", "/usr/lib", "/lib64"]
    dirs += ["/usr/local/cuda/lib64"] + ctx.root.glob("/usr/local/cuda*/lib64")
    conda = ctx.env.get("CONDA_PREFIX", "")
    if conda.startswith("/"):
        dirs.append(posixpath.join(conda, "lib"))
    return dirs


def _dedupe_dirs(ctx: ProbeContext, dirs: List[str]) -> List[str]:
    out: List[str] = []
    seen: Set[str] = set()
    for d in dirs:
        if not d.startswith("/") or not is_dir(ctx.root, d):
            continue
        key = resolve_path(ctx.root, d)
        if key in seen:
            continue
        seen.add(key)
        out.append(key)  # resolved: globbing through an image's absolute link would leave the image
    return out


def _headers(ctx: ProbeContext, snap: Snapshot, add) -> None:
    for d in _dedupe_dirs(ctx, _include_dirs(ctx, snap)):
        for h in ctx.root.glob_in(d, HEADER_NAMES):  # each name in turn, as globbing them one by one
            text = read_text(ctx.root, h)
            version = _parsed([], h, parse_cudnn_header, text)
            if version is None:
                continue  # e.g. cuDNN 8's cudnn.h, which only includes cudnn_version.h
            real = resolve_path(ctx.root, h)
            ev = [Evidence(f"file:{h}", f"CUDNN_MAJOR/MINOR/PATCHLEVEL -> {version}")]
            if real != h:
                ev.append(Evidence("alias", f"{h} -> {real}"))
            add(Cudnn(version=version, kind="header", path=real, evidence=ev))


def _library_candidates(ctx: ProbeContext, snap: Snapshot) -> List[Tuple[str, str]]:
    """(machine path, how found) of files named libcudnn.so*."""
    out: List[Tuple[str, str]] = []
    for d in ctx.env.get("LD_LIBRARY_PATH", "").split(":"):
        if d.startswith("/") and is_dir(ctx.root, d):
            d = resolve_path(ctx.root, d)
            out += [(p, "env:LD_LIBRARY_PATH") for p in ctx.root.glob_in(d, ("libcudnn.so*",))]
    if ctx.root.is_live:
        res = ctx.ldconfig_p()
        if res is not None and res.ok:
            for entry in ldconfig_entries(ctx, res)[0]:  # a ParseError leaves no evidence here (the loader says it)
                if "libcudnn" not in entry.soname:
                    continue  # most rows: no regex for them
                parts = split_libname(entry.soname)
                if parts and parts[0] == "libcudnn":
                    out.append((entry.path, "cmd:ldconfig -p"))
    for d in _dedupe_dirs(ctx, _lib_dirs(ctx, snap)):
        out += [(p, f"file:{d}") for p in ctx.root.glob_in(d, ("libcudnn.so*",))]
    return out


class _LibGroup:
    """The names of one real libcudnn file and how each was found."""

    __slots__ = ("version", "names", "how")

    def __init__(self, version: Optional[str]) -> None:
        self.version = version
        self.names: List[str] = []
        self.how: List[str] = []


def _libraries(ctx: ProbeContext, snap: Snapshot, add) -> None:
    groups: Dict[str, _LibGroup] = {}
    order: List[str] = []
    for path, how in _library_candidates(ctx, snap):
        parts = split_libname(posixpath.basename(path))
        if not parts or parts[0] != "libcudnn":
            continue
        real = resolve_path(ctx.root, path)
        if not is_file(ctx.root, real):
            continue  # dangling link
        g = groups.get(real)
        if g is None:
            real_parts = split_libname(posixpath.basename(real))
            g = groups[real] = _LibGroup(real_parts[1] if real_parts and real_parts[0] == "libcudnn" else None)
            order.append(real)
        g.version = more_precise(g.version, parts[1])
        if path not in g.names:
            g.names.append(path)
        if how not in g.how:
            g.how.append(how)
    for real in order:
        g = groups[real]
        names = [n for n in g.names if n != real]
        ev = [Evidence(h, posixpath.basename(real)) for h in g.how]
        if names:
            ev.append(Evidence("alias", ", ".join(names[:6]) + f" -> {real}"))
        add(Cudnn(version=g.version, kind="library", path=real, evidence=ev))


def _wheels(ctx: ProbeContext, snap: Snapshot, add) -> None:
    packages = snap.python.packages or {}
    versions: Dict[str, Tuple[str, str]] = {}
    for name in WHEELS:
        if name in packages and packages[name]:
            versions[name] = (str(packages[name]), "python.packages")
    locations: List[str] = []
    for sp in site_package_dirs(ctx, snap.python.prefix or None):
        for f in ctx.root.glob_in(sp, ("nvidia_cudnn*.dist-info",)):
            parsed = parse_dist_info_name(posixpath.basename(f))
            if parsed and parsed[0] in WHEELS and parsed[0] not in versions:
                versions[parsed[0]] = (parsed[1], f"file:{f}")
        d = posixpath.join(sp, "nvidia/cudnn")
        if is_dir(ctx.root, d):
            locations.append(d)
    for name, (version, how) in versions.items():
        path = ""
        for loc in locations:
            hdr = read_text(ctx.root, posixpath.join(loc, "include/cudnn_version.h"))
            hv = _parsed([], "header", parse_cudnn_header, hdr)
            if hv is None or hv.split(".")[0] == version.split(".")[0]:
                path = loc
                break
        if not path and locations:
            path = locations[0]
        ev = [Evidence(how, f"{name} {version}")]
        add(Cudnn(version=version, kind="wheel", path=path, evidence=ev))


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    found: List[Cudnn] = []
    seen: Set[Tuple[Optional[str], str]] = set()

    def add(item: Cudnn) -> None:
        key = (item.version, item.path)
        if key in seen:
            return
        seen.add(key)
        found.append(item)

    _headers(ctx, snap, add)
    _libraries(ctx, snap, add)
    _wheels(ctx, snap, add)
    snap.cudnn = found


__all__ = ["probe"]
