"""Through the real CLI: `envdoctor probe` lists the CUDA binaries of a venv, `envdoctor check` judges them
against the GPU a fake nvidia-smi reports (ED250 no kernel, ED251 JIT only, ED650 missing library)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.binfakes import FIX as BINFIX
from tests.binfakes import add_dist, build_c_lib, build_cuda, fake_venv
from tests.fakes import FIX, make_exe

BANNER = FIX / "nvidia" / "smi_595.71.05_rtx5090.txt"  # real: driver 595.71.05, CUDA 13.2, one GPU
# What the probe's `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,pci.bus_id,uuid,driver_version
# --format=csv,noheader,nounits` prints for one GPU of the given name and compute capability.
QUERY = "0, {name}, {cc}, 15360, 00000000:00:1E.0, GPU-0b0e2a9c-0000-0000-0000-000000000000, 595.71.05\n"
GPUS = {"7.5": "Tesla T4", "8.6": "NVIDIA A10"}
BINARY_RULES = ("ED250", "ED251", "ED650")


def _no_real_driver():
    if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver: NVML would report its real GPUs, not the fake one")


def _extension(tmp_path: Path, name: str, gencodes):
    """The extension compiled here by nvcc, else the prebuilt fixture made by the same command line."""
    if shutil.which("nvcc"):
        return build_cuda(tmp_path / "build" / name, gencodes)
    return BINFIX / name


def _machine(tmp_path: Path, so: Path, cc: str):
    _no_real_driver()
    venv = tmp_path / "venv"
    sp = fake_venv(venv, "myext", "1.0", {"myext/_C.cpython-311-x86_64-linux-gnu.so": so})
    # the CUDA runtime the extension needs, from a wheel-like dir on LD_LIBRARY_PATH (a stand-in built here)
    cudart = sp / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.13"
    build_c_lib(cudart, "libcudart.so.13")
    add_dist(sp, "nvidia-cuda-runtime", "13.0.96", {"nvidia/cuda_runtime/lib/libcudart.so.13": None})
    bindir = tmp_path / "bin"
    q = tmp_path / "query.csv"
    q.write_text(QUERY.format(name=GPUS[cc], cc=cc))
    make_exe(bindir / "nvidia-smi", f'case "$1" in --query-gpu=*) cat "{q}"; exit 0;; esac\ncat "{BANNER}"')
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "LD_PRELOAD")}
    env.update(PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}", ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"),
               LD_LIBRARY_PATH=str(cudart.parent))
    return venv, env


def _run(args, env):
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(Path(__file__).parent.parent))


def _check(venv, env, *extra):
    proc = _run(["check", "--python", str(venv / "bin" / "python"), "--format", "json", *extra], env)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    return [f for f in report["findings"] if f["id"] in BINARY_RULES], report


def test_sm80_extension_on_sm75_gpu_is_an_error(tmp_path):
    venv, env = _machine(tmp_path, _extension(tmp_path, "sm80.so", ["arch=compute_80,code=sm_80"]), "7.5")
    found, _ = _check(venv, env)
    assert [(f["id"], f["severity"]) for f in found] == [("ED250", "error")]
    msg = found[0]["message"]
    assert "myext 1.0" in msg and "sm_80" in msg and "7.5" in msg and "Tesla T4" in msg
    assert "_C.cpython-311-x86_64-linux-gnu.so" in msg


def test_sm80_with_compute75_ptx_on_sm75_gpu_is_a_jit_warning(tmp_path):
    so = _extension(tmp_path, "sm80_ptx75.so", ["arch=compute_80,code=sm_80", "arch=compute_75,code=compute_75"])
    venv, env = _machine(tmp_path, so, "7.5")
    found, _ = _check(venv, env)
    assert [(f["id"], f["severity"]) for f in found] == [("ED251", "warning")]
    msg = found[0]["message"]
    assert "myext 1.0" in msg and "compute_75" in msg and "JIT" in msg and "CUDA >= 13.0" in msg


def test_sm80_extension_on_sm86_gpu_is_clean(tmp_path):
    venv, env = _machine(tmp_path, _extension(tmp_path, "sm80.so", ["arch=compute_80,code=sm_80"]), "8.6")
    found, report = _check(venv, env)
    assert found == []
    assert not [f for f in report["findings"] if f["severity"] == "error"]


def test_probe_lists_binaries_per_package_with_resolved_libraries(tmp_path):
    venv, env = _machine(tmp_path, BINFIX / "sm80_ptx75.so", "7.5")
    proc = _run(["probe", "--python", str(venv / "bin" / "python"), "--format", "json"], env)
    assert proc.returncode == 0, proc.stderr
    bn = json.loads(proc.stdout)["binaries"]
    [b] = bn["binaries"]
    assert (b["package"], b["package_version"], b["sass"], b["ptx"], b["ptx_isa"]) == \
        ("myext", "1.0", ["sm_80"], ["compute_75"], {"compute_75": "9.0"})
    libs = {lib["soname"]: lib for lib in b["libraries"]}
    cudart = libs["libcudart.so.13"]
    assert cudart["via"] == "LD_LIBRARY_PATH" and cudart["package"] == "nvidia-cuda-runtime 13.0.96"
    assert cudart["path"].endswith("nvidia/cuda_runtime/lib/libcudart.so.13")
    home = os.path.expanduser("~")
    if str(tmp_path).startswith(home + "/"):
        assert home not in proc.stdout  # paths are redacted like the rest of the snapshot
    text = _run(["probe", "--python", str(venv / "bin" / "python")], env).stdout
    assert "myext 1.0:" in text and "SASS sm_80; PTX compute_75 (PTX ISA 9.0)" in text


def test_missing_library_is_an_error_naming_the_file(tmp_path):
    """The extension needs libfoo.so through RUNPATH $ORIGIN/../lib, which holds nothing."""
    venv, env = _machine(tmp_path, BINFIX / "sm80_needs_libfoo.so", "8.6")
    found, _ = _check(venv, env)
    assert [(f["id"], f["severity"]) for f in found] == [("ED650", "error")]
    msg = found[0]["message"]
    assert "libfoo.so" in msg and "_C.cpython-311-x86_64-linux-gnu.so" in msg and "myext 1.0" in msg
    assert "libcudart" not in msg


def test_warm_check_answers_from_the_cache(tmp_path):
    from envdoctor import cache
    from envdoctor.binaries.scan import CACHE_FORMAT

    venv, env = _machine(tmp_path, BINFIX / "sm80.so", "8.6")
    time.sleep(cache.RACY_S + 0.2)  # files changed a moment ago are not kept (the racy window)
    args = ["probe", "--python", str(venv / "bin" / "python"), "--format", "json"]
    cold = json.loads(_run(args, env).stdout)["binaries"]
    warm = json.loads(_run(args, env).stdout)["binaries"]
    assert cold["from_cache"] == 0 and warm["from_cache"] == warm["scanned"] == cold["scanned"] > 0
    assert warm["binaries"] == cold["binaries"]
    assert json.loads((tmp_path / "cache" / "binaries.json").read_text())["format"] == CACHE_FORMAT
    # ENVDOCTOR_NO_CACHE=1: every file read again, the cache neither read nor written
    (tmp_path / "cache" / "binaries.json").unlink()
    off = json.loads(_run(args, dict(env, ENVDOCTOR_NO_CACHE="1")).stdout)["binaries"]
    assert off["from_cache"] == 0 and off["binaries"] == cold["binaries"]
    assert not (tmp_path / "cache" / "binaries.json").exists()


def test_image_root_is_read_inside_the_image(tmp_path):
    """--root: the image's site-packages and its own /etc/ld.so.cache (a real one, written by ldconfig -r);
    nothing of the host."""
    root = tmp_path / "image"
    sp = root / "usr" / "lib" / "python3" / "dist-packages"
    add_dist(sp, "myext", "1.0", {"myext/_C.so": BINFIX / "sm80_needs_libfoo.so"})
    build_c_lib(root / "usr" / "lib" / "x86_64-linux-gnu" / "libfoo.so", "libfoo.so")
    cudart = root / "opt" / "cuda" / "lib" / "libcudart.so.13"
    build_c_lib(cudart, "libcudart.so.13")
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "ld.so.conf").write_text("/opt/cuda/lib\n")
    ldc = shutil.which("ldconfig") or "/sbin/ldconfig"
    made = subprocess.run([ldc, "-r", str(root), "-X"], capture_output=True, text=True, timeout=120)
    if made.returncode != 0 or not (root / "etc" / "ld.so.cache").exists():
        pytest.skip(f"ldconfig -r cannot write the image's cache: {made.stderr.strip()[:200]}")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path / "cache")
    proc = _run(["probe", "--root", str(root), "--format", "json"], env)
    assert proc.returncode == 0, proc.stderr
    [b] = json.loads(proc.stdout)["binaries"]["binaries"]
    assert (b["path"], b["package"], b["sass"]) == ("/usr/lib/python3/dist-packages/myext/_C.so", "myext", ["sm_80"])
    libs = {lib["soname"]: (lib["path"], lib["via"]) for lib in b["libraries"]}
    assert libs["libfoo.so"] == ("/usr/lib/x86_64-linux-gnu/libfoo.so", "ld.so.cache")  # ldconfig caches trusted dirs too
    assert libs["libcudart.so.13"] == ("/opt/cuda/lib/libcudart.so.13", "ld.so.cache")
    assert libs["libc.so.6"] == (None, "not found")  # the image has no libc: the host's is never used


def test_the_cache_keeps_answers_compact_reads_the_full_form_and_forgets_gone_files(tmp_path, monkeypatch):
    """binaries.json holds only the fields that differ from a plain answer ({} for a shared object without device
    code: the cache is read at every scan); an entry an earlier version wrote in full answers the same
    and is rewritten compact; a file that is gone leaves the cache at the next save."""
    from dataclasses import asdict

    from envdoctor import cache as witness_cache
    from envdoctor.binaries.scan import CACHE_FORMAT, BinaryCache, FileScan, scan_file

    monkeypatch.setattr(witness_cache, "RACY_S", 0.0)  # the files are new; the window is tests/test_cache.py's
    cuda = tmp_path / "cuda.so"
    shutil.copyfile(BINFIX / "sm80.so", cuda)
    plain = build_c_lib(tmp_path / "libplain.so", "libplain.so")
    gone = build_c_lib(tmp_path / "libgone.so", "libgone.so")
    text = tmp_path / "text.so"
    text.write_text("not ELF")
    paths = [str(p) for p in (cuda, plain, gone, text)]
    truth = {p: scan_file(p) for p in paths}
    assert truth[str(cuda)].cuda and truth[str(plain)] == FileScan() and truth[str(text)].unreadable
    where = tmp_path / "cache" / "binaries.json"
    cache = BinaryCache(where)
    assert [cache.scan(p) for p in paths] == [truth[p] for p in paths]
    cache.save()
    raw = json.loads(where.read_text())
    assert raw["format"] == CACHE_FORMAT and raw["files"][str(plain)]["scan"] == {}
    assert raw["files"][str(cuda)]["scan"] == truth[str(cuda)].to_dict() and "sass" in raw["files"][str(cuda)]["scan"]
    for entry in raw["files"].values():  # as format 1 was first written: every field
        entry["scan"] = asdict(FileScan.from_dict(entry["scan"]))
    where.write_text(json.dumps(raw))
    old = BinaryCache(where)
    assert [old.scan(p) for p in paths] == [truth[p] for p in paths] and old.hits == len(paths)
    gone.unlink()
    old.save()
    raw = json.loads(where.read_text())
    assert str(gone) not in raw["files"] and raw["files"][str(plain)]["scan"] == {}
    assert BinaryCache(where).scan(str(cuda)) == truth[str(cuda)]


def test_a_torch_older_than_the_data_is_judged_by_the_gpu_code_in_its_own_binaries(tmp_path):
    """torch 0.4.1 (CUDA 9.2) has no row in the data: its arch list is read from its own fatbins instead. Its GPU
    library built for sm_80 only on a Tesla T4 (7.5) is "no kernel image is available" (ED250, naming the file),
    and ED902 says the arch was judged from the binaries rather than "not judged"."""
    so = _extension(tmp_path, "sm80.so", ["arch=compute_80,code=sm_80"])
    venv, env = _machine(tmp_path, so, "7.5")
    sp = next((venv / "lib").glob("python3*/site-packages"))
    (tmp_path / "empty.py").write_text("")
    add_dist(sp, "torch", "0.4.1", {"torch/__init__.py": tmp_path / "empty.py", "torch/lib/libcaffe2_gpu.so": so,
                                    "torch/version.py": FIX / "frameworks" / "torch_version_0.4.1_cuda9.2.py"})
    found, report = _check(venv, env)
    ed250 = [f for f in found if f["id"] == "ED250" and "torch 0.4.1" in f["message"]]
    assert [f["severity"] for f in ed250] == ["error"] and "libcaffe2_gpu.so" in ed250[0]["message"], found
    [ed902] = [f for f in report["findings"] if f["id"] == "ED902" and "torch 0.4.1" in f["message"]]
    assert "the GPU code in its own binaries (1 file: sm_80)" in ed902["message"], ed902["message"]
    assert "its compiled GPU arch list" not in ed902["message"].split("not judged:")[1], ed902["message"]
