"""Which file each DT_NEEDED loads: envdoctor's model against the real dynamic loader and ldconfig."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from envdoctor.binaries.ldcache import LdCache, parse_cache, read_cache
from envdoctor.binaries.loader import LoaderModel, Needer
from envdoctor.binaries.elf import open_elf
from envdoctor.parsers.ldconfig import parse_ldconfig_p
from tests.binfakes import build_c_lib, build_cuda, ld_list

CALLS_FOO = "int foo(void); int bar(void) { return foo(); }\n"


def _ldconfig():
    for exe in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        found = shutil.which(exe) or (exe if os.path.exists(exe) else None)
        if found:
            return found
    pytest.skip("no ldconfig")


def _system_cache():
    if not os.path.exists("/etc/ld.so.cache"):
        pytest.skip("no /etc/ld.so.cache")
    return LdCache(read_cache("/etc/ld.so.cache"))


def test_ld_so_cache_reads_like_ldconfig_p():
    if not os.path.exists("/etc/ld.so.cache"):
        pytest.skip("no /etc/ld.so.cache")
    mine = [(e.soname, e.flags_text, e.path) for e in read_cache("/etc/ld.so.cache")]
    res = subprocess.run([_ldconfig(), "-p"], capture_output=True, text=True, timeout=60)
    theirs = [(e.soname, e.flags, e.path) for e in parse_ldconfig_p(res.stdout)]
    assert mine and mine == theirs


def test_a_cache_written_by_ldconfig_here(tmp_path):
    """ldconfig -C writes a real cache of a dir we fill; envdoctor reads it as `ldconfig -p -C` does."""
    libdir = tmp_path / "libs"
    build_c_lib(libdir / "libfoo.so.1", "libfoo.so.1")
    build_c_lib(libdir / "libbar.so.2", "libbar.so.2")
    conf = tmp_path / "ld.so.conf"
    conf.write_text(f"{libdir}\n")
    cache = tmp_path / "ld.so.cache"
    ldc = _ldconfig()
    made = subprocess.run([ldc, "-C", str(cache), "-f", str(conf), "-X"], capture_output=True, text=True, timeout=120)
    if made.returncode != 0 or not cache.exists():
        pytest.skip(f"ldconfig -C cannot write a cache here: {made.stderr.strip()[:200]}")
    listed = subprocess.run([ldc, "-p", "-C", str(cache)], capture_output=True, text=True, timeout=60).stdout
    theirs = [(e.soname, e.flags, e.path) for e in parse_ldconfig_p(listed)]
    mine = [(e.soname, e.flags_text, e.path) for e in read_cache(str(cache))]
    assert mine == theirs
    assert (("libfoo.so.1", str(libdir / "libfoo.so.1")) in [(s, p) for s, _, p in mine])
    hit = LdCache(read_cache(str(cache))).lookup("libfoo.so.1", 0x0303)
    assert hit is not None and hit.path == str(libdir / "libfoo.so.1")


def test_old_format_cache():
    """The pre-2.32 "ld.so-1.7.0" layout (glibc's struct cache_file / file_entry): 16-byte header,
    12-byte entries, strings after the entries."""
    strings = b"libz.so.1\0/lib/libz.so.1\0"
    data = b"ld.so-1.7.0\0" + struct.pack("<I", 1) + struct.pack("<iII", 0x0303, 0, 10) + strings
    [entry] = parse_cache(data)
    assert (entry.soname, entry.path, entry.flags_text) == ("libz.so.1", "/lib/libz.so.1", "libc6,x86-64")


def _elf(path: Path):
    with open_elf(str(path)) as e:
        return e


def _resolve(path: Path, env: dict, cache=None):
    res = _elf(path)
    model = LoaderModel(env, cache if cache is not None else _system_cache())
    who = Needer(str(path), res.machine, res.elfclass, res.needed, res.rpath, res.runpath, res.nodeflib)
    return {r.soname: (os.path.realpath(r.path) if r.path else None, r.via) for r in model.resolve(who)}


def _agree(path: Path, env: dict):
    mine = _resolve(path, env)
    theirs = ld_list(path, {**os.environ, **env} if env else {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    for soname, (where, _) in mine.items():
        assert soname in theirs, f"ld.so does not list {soname}"
        assert where == theirs[soname], f"{soname}: envdoctor {where}, ld.so {theirs[soname]}"
    return mine


@pytest.fixture
def tree(tmp_path):
    """pkg/ext.so needs libfoo.so, found through RUNPATH $ORIGIN/../lib; other/ holds another libfoo.so."""
    build_c_lib(tmp_path / "lib" / "libfoo.so", "libfoo.so")
    build_c_lib(tmp_path / "other" / "libfoo.so", "libfoo.so")
    return tmp_path


def _ext(tree: Path, dtags: str) -> Path:
    out = tree / "pkg" / f"ext_{dtags}.so"
    build_c_lib(out, out.name, CALLS_FOO, [f"-L{tree / 'lib'}", "-lfoo", "-Wl,-rpath,$ORIGIN/../lib",
                                          f"-Wl,--{dtags}-new-dtags"])
    return out


def test_runpath_found_like_ld_so(tree):
    ext = _ext(tree, "enable")
    assert _elf(ext).runpath == ["$ORIGIN/../lib"]
    mine = _agree(ext, {})
    assert mine["libfoo.so"] == (str(tree / "lib" / "libfoo.so"), "RUNPATH")


def test_ld_library_path_shadows_runpath_like_ld_so(tree):
    mine = _agree(_ext(tree, "enable"), {"LD_LIBRARY_PATH": str(tree / "other")})
    assert mine["libfoo.so"] == (str(tree / "other" / "libfoo.so"), "LD_LIBRARY_PATH")


def test_rpath_wins_over_ld_library_path_like_ld_so(tree):
    ext = _ext(tree, "disable")
    assert _elf(ext).rpath == ["$ORIGIN/../lib"] and _elf(ext).runpath == []
    mine = _agree(ext, {"LD_LIBRARY_PATH": str(tree / "other")})
    assert mine["libfoo.so"] == (str(tree / "lib" / "libfoo.so"), "RPATH")


def test_missing_library_like_ld_so(tree):
    ext = _ext(tree, "enable")
    os.unlink(tree / "lib" / "libfoo.so")
    mine = _agree(ext, {})
    assert mine["libfoo.so"] == (None, "not found")


def test_wrong_class_candidate_is_skipped(tree):
    """A 32-bit libfoo.so first on LD_LIBRARY_PATH is passed over, as ld.so does."""
    ext = _ext(tree, "enable")
    try:
        build_c_lib(tree / "m32" / "libfoo.so", "libfoo.so", extra=["-m32"])
    except subprocess.CalledProcessError:
        pytest.skip("gcc cannot build 32-bit objects here")
    mine = _agree(ext, {"LD_LIBRARY_PATH": str(tree / "m32")})
    assert mine["libfoo.so"] == (str(tree / "lib" / "libfoo.so"), "RUNPATH")


def test_cuda_extension_like_ld_so(tree):
    """An nvcc-built extension: libcudart from the ld.so.cache (or not found), libfoo through RUNPATH."""
    src = tree / "ext.cu"
    src.write_text('extern "C" int foo(void);\nextern "C" __global__ void k(float *x) { x[threadIdx.x] = 1; }\n'
                   'extern "C" int launch(float *x) { k<<<1, 1>>>(x); return foo(); }\n')
    ext = build_cuda(tree / "pkg" / "cuext.so", ["arch=compute_80,code=sm_80"],
                     [f"-L{tree / 'lib'}", "-lfoo", "-Xlinker", "-rpath,$ORIGIN/../lib"], source=src)
    for env in ({}, {"LD_LIBRARY_PATH": str(tree / "other")}):
        mine = _agree(ext, env)
        assert "libcudart.so.13" in mine
