"""Building real shared objects for the binaries tests: nvcc for device code, gcc for plain libraries,
and fake venvs whose dist-info RECORD names them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Sequence

import pytest

FIX = Path(__file__).parent / "fixtures" / "binaries"
KERNEL = FIX / "kernel.cu"
NVCC_BASE = ["-shared", "-Xcompiler", "-fPIC", "-cudart", "shared"]


def nvcc() -> str:
    exe = shutil.which("nvcc")
    if exe is None:
        pytest.skip("nvcc is not on PATH: the tests that compile device code need a CUDA toolkit")
    return exe


def gcc() -> str:
    exe = shutil.which("gcc") or shutil.which("cc")
    if exe is None:
        pytest.skip("no C compiler on PATH")
    return exe


def build_cuda(out: Path, gencodes: Sequence[str], extra: Sequence[str] = (), source: Path = KERNEL) -> Path:
    """nvcc -shared ... -gencode G ... -o out source; `gencodes` like "arch=compute_80,code=sm_80"."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [nvcc(), *NVCC_BASE]
    for g in gencodes:
        cmd += ["-gencode", g]
    cmd += [*extra, "-o", str(out), str(source)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return out


def build_c_lib(out: Path, soname: str, body: str = "int foo(void) { return 1; }\n", extra: Sequence[str] = ()) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(".c")
    src.write_text(body)
    subprocess.run([gcc(), "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(out), str(src), *extra],
                   check=True, capture_output=True, timeout=120)
    src.unlink()
    return out


def fake_venv(root: Path, dist: str, version: str, files: dict) -> Path:
    """A venv at `root` (bin/python a link to this interpreter, pyvenv.cfg) with one distribution whose
    RECORD lists `files` ({relative path in site-packages: source file to copy}). Returns site-packages."""
    py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    sp = root / "lib" / py / "site-packages"
    sp.mkdir(parents=True, exist_ok=True)
    (root / "bin").mkdir(exist_ok=True)
    link = root / "bin" / "python"
    if not link.exists():
        os.symlink(sys.executable, link)
    (root / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\ninclude-system-site-packages = false\n"
                                     f"version = {sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}\n")
    add_dist(sp, dist, version, files)
    return sp


def add_dist(sp: Path, dist: str, version: str, files: dict) -> Path:
    info = sp / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    rows = []
    for rel, src in files.items():
        dest = sp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src is not None:
            shutil.copyfile(src, dest)
        rows.append(f"{rel},,")
    rows += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info


def ld_so() -> str:
    for cand in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"):
        if os.path.exists(cand):
            return cand
    pytest.skip("no glibc dynamic loader to referee with")


def ld_list(path: Path, env: dict) -> dict:
    """{soname: resolved real path or None} as the real loader lists the object's dependencies (the way ldd
    asks it: LD_TRACE_LOADED_OBJECTS=1; `ld.so --list` prints nothing once a library is missing)."""
    res = subprocess.run([ld_so(), str(path)], capture_output=True, text=True,
                         env={**env, "LD_TRACE_LOADED_OBJECTS": "1"}, timeout=60)
    out = {}
    for line in res.stdout.splitlines():
        line = line.strip()
        if "=>" not in line:
            continue
        name, _, rest = line.partition("=>")
        target = rest.strip().split(" (")[0].strip()
        out[name.strip()] = None if target == "not found" else os.path.realpath(target)
    return out


def cuobjdump_targets(exe: str, path: Path) -> Iterable[str]:
    res = subprocess.run([exe, "--list-elf", "--list-ptx", str(path)], capture_output=True, text=True, timeout=120)
    for line in res.stdout.splitlines():
        name = line.rsplit(":", 1)[-1].strip()
        if name.endswith(".cubin"):
            yield name.rsplit(".", 2)[-2]
        elif name.endswith(".ptx"):
            yield "compute_" + name.rsplit(".", 2)[-2].split("_", 1)[1]
