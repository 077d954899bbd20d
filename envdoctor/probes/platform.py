"""Platform probe: OS and distro, kernel, architecture, glibc, WSL, container hints."""
from __future__ import annotations

import os
import re
from typing import Tuple

from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Evidence, Platform, Snapshot
from envdoctor.lazyre import lazy_re


def parse_os_release(text: str) -> dict:
    """Parse /etc/os-release (KEY=value lines, values optionally quoted)."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def wsl_version(kernel: str, has_wsl_lib: bool) -> int | None:
    """WSL2 kernels say 'microsoft-standard' (or WSL2); WSL1 reports a 'Microsoft' kernel string."""
    k = kernel or ""
    if re.search(r"microsoft-standard|WSL2", k, re.IGNORECASE):
        return 2
    if "Microsoft" in k:
        return 1
    if "microsoft" in k.lower():
        return 2
    return 2 if has_wsl_lib else None


def container_hint(root, env) -> str | None:
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if root.exists("/.dockerenv"):
        return "docker"
    if root.exists("/run/.containerenv"):
        return "podman"
    cgroup = root.read_text("/proc/1/cgroup") or ""
    for needle, name in (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd"), ("lxc", "lxc")):
        if needle in cgroup:
            return name
    return None


def live_uname() -> Tuple[str, str, str, str, Tuple[str, str]]:
    """(system, machine, kernel release, host name, libc_ver()) of this machine, as the platform module answers
    them: on Linux from os.uname() and os.confstr (what platform.uname() and platform.libc_ver() read there, its
    "unknown" as ""), without importing platform (~2 ms); elsewhere, or when confstr cannot say
    (musl), platform itself."""
    uname = getattr(os, "uname", None)
    u = uname() if uname is not None else None
    if u is None or u.sysname != "Linux":
        import platform

        return platform.system(), platform.machine(), platform.release(), platform.node(), platform.libc_ver()
    system, node, release, machine = (v if v != "unknown" else "" for v in (u.sysname, u.nodename, u.release, u.machine))
    try:
        ver = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        ver = None
    parts = ver.split(maxsplit=1) if ver else []
    if len(parts) == 2:
        libc = (parts[0], parts[1])
    else:
        import platform

        libc = platform.libc_ver()
    return system, machine, release, node, libc


_LIBC_RE = lazy_re(r"libc-([0-9]{1,6}\.[0-9]{1,6})\.so$")


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    root = ctx.root
    plat = Platform()
    osr_path = "/etc/os-release" if root.exists("/etc/os-release") else "/usr/lib/os-release"
    osr_text = root.read_text(osr_path)
    if osr_text:
        osr = parse_os_release(osr_text)
        plat.distro_id = osr.get("ID", "")
        plat.distro_version = osr.get("VERSION_ID", "")
        plat.distro_name = osr.get("PRETTY_NAME", "")
        plat.evidence.append(Evidence(f"file:{osr_path}", osr_text[:400]))
    if root.is_live:
        plat.system, plat.machine, plat.kernel, plat.hostname, (libc, ver) = live_uname()
        if libc == "glibc":
            plat.glibc = ver
        proc_version = root.read_text("/proc/version") or plat.kernel
    else:
        plat.system = "Linux" if root.is_dir("/etc") or root.is_dir("/usr") else ""
        for arch in ("x86_64", "aarch64", "ppc64le", "s390x"):
            if root.is_dir(f"/usr/lib/{arch}-linux-gnu") or root.is_dir(f"/lib/{arch}-linux-gnu"):
                plat.machine = arch
                break
        proc_version = root.read_text("/proc/version") or ""
        plat.kernel = proc_version.split()[2] if len(proc_version.split()) > 2 else ""
        for cand in root.glob("/lib*/*/libc-*.so") + root.glob("/usr/lib*/*/libc-*.so") + root.glob("/lib*/libc-*.so"):
            m = _LIBC_RE.search(cand)
            if m:
                plat.glibc = m.group(1)
                break
        host = (root.read_text("/etc/hostname") or "").strip()
        plat.hostname = host
    if plat.system in ("Linux", ""):
        plat.wsl = wsl_version(proc_version, root.is_dir("/usr/lib/wsl/lib"))
        if plat.wsl is not None:
            plat.evidence.append(Evidence("file:/proc/version", proc_version.strip()[:300]))
        plat.container = container_hint(root, ctx.env)
    snap.platform = plat


__all__ = ["probe", "parse_os_release", "wsl_version", "container_hint"]
