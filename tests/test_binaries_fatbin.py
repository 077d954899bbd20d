"""What envdoctor reads from the fatbin of real shared objects: the prebuilt fixtures (always), the same
targets compiled here by nvcc (skipped without nvcc), and a real wheel against cuobjdump (network)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from envdoctor.binaries.scan import scan_file
from tests.binfakes import FIX, build_cuda, cuobjdump_targets

# (fixture, gencodes it was built with (SOURCES.toml), SASS, PTX, compressed entries?)
CASES = [
    ("sm80.so", ["arch=compute_80,code=sm_80"], ["sm_80"], [], False),
    ("sm80_ptx75.so", ["arch=compute_80,code=sm_80", "arch=compute_75,code=compute_75"], ["sm_80"], ["compute_75"], None),
    ("sm90a_ptx90.so", ["arch=compute_90a,code=sm_90a", "arch=compute_90,code=compute_90"], ["sm_90a"], ["compute_90"], None),
    ("sm100a_ptx100f.so", ["arch=compute_100a,code=sm_100a", "arch=compute_100f,code=compute_100f"],
     ["sm_100a"], ["compute_100f"], None),
    ("sm100f.so", ["arch=compute_100f,code=sm_100f"], ["sm_100f"], [], False),
]
COMPRESSED = ("compressed_sm80_sm120_ptx120.so",
              ["arch=compute_80,code=sm_80", "arch=compute_120,code=sm_120", "arch=compute_120,code=compute_120"])


def _check(res, sass, ptx):
    assert res.unreadable == ""
    assert res.cuda is True
    assert res.sass == sass
    assert res.ptx == ptx
    assert set(res.ptx_isa) == set(ptx)
    assert all(v == "9.0" for v in res.ptx_isa.values())  # nvcc 13.0 writes PTX ISA 9.0
    assert "libcudart.so.13" in res.needed


@pytest.mark.parametrize("name, gencodes, sass, ptx, compressed", CASES)
def test_prebuilt_fixture(name, gencodes, sass, ptx, compressed):
    res = scan_file(str(FIX / name))
    _check(res, sass, ptx)
    if compressed is False:
        assert res.compressed == 0


def test_prebuilt_compressed_fixture():
    res = scan_file(str(FIX / COMPRESSED[0]))
    _check(res, ["sm_80", "sm_120"], ["compute_120"])
    assert res.compressed == res.entries == 5  # cuobjdump: 4 cubins + 1 PTX


@pytest.mark.parametrize("name, gencodes, sass, ptx, compressed", CASES + [
    (COMPRESSED[0], COMPRESSED[1], ["sm_80", "sm_120"], ["compute_120"], True)])
def test_compiled_here(tmp_path, name, gencodes, sass, ptx, compressed):
    extra = ["-Xfatbin", "-compress-all"] if compressed else []
    out = build_cuda(tmp_path / name, gencodes, extra)
    res = scan_file(str(out))
    _check(res, sass, ptx)
    if compressed:
        assert res.compressed == res.entries > 0


def test_plain_library_has_no_cuda():
    import glob

    libc = sorted(glob.glob("/lib/x86_64-linux-gnu/libc.so.6") + glob.glob("/lib64/libc.so.6") + glob.glob("/usr/lib64/libc.so.6"))
    if not libc:
        pytest.skip("no libc.so.6 at a known path")
    res = scan_file(libc[0])
    assert (res.cuda, res.sass, res.ptx, res.unreadable) == (False, [], [], "")


def _cuobjdump():
    exe = os.environ.get("ENVDOCTOR_TEST_CUOBJDUMP") or shutil.which("cuobjdump")
    return exe if exe and os.path.exists(exe) else None


def _as_cuobjdump_lists(res):
    """cuobjdump 13.5 lists family cubins without their f (sm_100f cubins as sm_100): compare like it."""
    sass = {t[:-1] if t.endswith("f") else t for t in res.sass}
    return sass | set(res.ptx)


@pytest.mark.parametrize("name", [c[0] for c in CASES] + [COMPRESSED[0]])
def test_cuobjdump_agrees_on_fixtures(name):
    exe = _cuobjdump()
    if exe is None:
        pytest.skip("no cuobjdump (set ENVDOCTOR_TEST_CUOBJDUMP or put it on PATH)")
    res = scan_file(str(FIX / name))
    assert _as_cuobjdump_lists(res) == set(cuobjdump_targets(exe, FIX / name))


NVJPEG = "nvidia-nvjpeg-cu12==12.4.0.76"  # 5.3 MB wheel; libnvjpeg.so.12 built by CUDA 12.9: SASS sm_50 ... sm_121, PTX


@pytest.mark.network
def test_real_wheel_against_cuobjdump(tmp_path):
    """A real wheel with device code (nvidia-nvjpeg-cu12 12.4.0.76) and cuobjdump from the
    nvidia-cuda-cuobjdump wheel, both fetched with pip from the configured index."""
    pip = [sys.executable, "-m", "pip"]
    dl = subprocess.run(pip + ["download", "-q", "--no-deps", "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                               "--python-version", "3.11", "-d", str(tmp_path / "wheels"), NVJPEG],
                        capture_output=True, text=True, timeout=600)
    if dl.returncode != 0:
        pytest.skip(f"pip download failed (no index?): {dl.stderr.strip().splitlines()[-1:]}")
    exe = _cuobjdump()
    if exe is None:
        tools = tmp_path / "tools"
        inst = subprocess.run(pip + ["install", "-q", "--no-deps", "--target", str(tools), "nvidia-cuda-cuobjdump"],
                              capture_output=True, text=True, timeout=600)
        if inst.returncode != 0:
            pytest.skip(f"cannot install nvidia-cuda-cuobjdump: {inst.stderr.strip().splitlines()[-1:]}")
        found = sorted(tools.rglob("cuobjdump"))
        assert found, "the nvidia-cuda-cuobjdump wheel holds no cuobjdump"
        exe = str(found[0])
        os.chmod(exe, 0o755)
    wheel = next((tmp_path / "wheels").glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        zf.extract("nvidia/nvjpeg/lib/libnvjpeg.so.12", tmp_path / "x")
    lib = tmp_path / "x" / "nvidia/nvjpeg/lib/libnvjpeg.so.12"
    res = scan_file(str(lib))
    assert res.unreadable == "" and res.cuda
    truth = set(cuobjdump_targets(exe, lib))
    assert _as_cuobjdump_lists(res) == truth
    assert "sm_50" in res.sass and "sm_121" in res.sass and res.ptx == ["compute_121"]
    assert res.ptx_isa == {"compute_121": "8.8"}  # CUDA 12.9's PTX ISA
    assert res.runpath == ["$ORIGIN"]
    listed = subprocess.run([exe, "--list-elf", "--list-ptx", str(lib)], capture_output=True, text=True).stdout
    assert res.entries == len([ln for ln in listed.splitlines() if ln.strip()])


def test_quick_section_check_agrees_with_pyelftools():
    """The cheap check that lets files without device code skip pyelftools gives pyelftools' answer."""
    import glob

    from envdoctor.binaries.elf import open_elf, quick_has_fatbin

    paths = sorted(FIX.glob("*.so")) + [Path(p) for p in sorted(glob.glob("/lib/x86_64-linux-gnu/lib*.so.*"))[:40]]
    checked = 0
    for p in paths:
        if p.is_symlink() or not p.is_file():
            continue
        with open_elf(str(p)) as e:
            assert quick_has_fatbin(str(p)) is e.has_cuda, p
        checked += 1
    assert checked >= len(list(FIX.glob("*.so")))
    text = FIX / "kernel.cu"
    assert quick_has_fatbin(str(text)) is None  # not ELF: left to the full reader, which says why
