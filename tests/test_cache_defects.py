"""Each way a kept answer was found to answer for something else, through the real CLI (envdoctor.cache): two venvs
of one base interpreter, a shared object replaced in place by another build of the same size, a planted entry,
cache files that are not regular files, a deeply nested table in the user cache, two extensions in two venvs. And
the referee of them all, the seeded walk of tests/cache_walk.py, equal to a cold run after every step."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor import cache
from tests.binfakes import FIX as BINFIX
from tests.binfakes import fake_venv
from tests.cache_walk import BANNER, walk
from tests.fakes import make_exe

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX venvs and file modes")
WAIT = cache.RACY_S + 0.3  # what a CLI run needs between a change and a kept answer: its racy window
GPUS = {"7.5": "Tesla T4", "8.0": "NVIDIA A100-SXM4-80GB"}
QUERY = "0, {name}, {cc}, 15360, 00000000:00:1E.0, GPU-0b0e2a9c-0000-0000-0000-000000000000, 595.71.05\n"


def _env(tmp_path: Path, cc: str = "8.0", **extra: str) -> dict:
    bindir = tmp_path / "bin"
    q = tmp_path / "query.csv"
    q.write_text(QUERY.format(name=GPUS[cc], cc=cc))
    make_exe(bindir / "nvidia-smi", f'case "$1" in --query-gpu=*) cat "{q}"; exit 0;; esac\ncat "{BANNER}"')
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "LD_PRELOAD", "ENVDOCTOR_NO_CACHE", "ENVDOCTOR_NO_PARSE_CACHE")}
    env.update(PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}", ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"),
               **extra)
    return env


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(Path(__file__).parent.parent))
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _torch_venv(root: Path, version: str, cuda) -> Path:
    sp = fake_venv(root, "torch", version, {"torch/__init__.py": None})
    (sp / "torch" / "version.py").write_text(f"__version__ = '{version}'\ncuda = {cuda!r}\ngit_version = 'x'\n")
    return root / "bin" / "python"


def _torch_of(env: dict, python: Path) -> tuple:
    snap = json.loads(_cli(env, "check", "--python", str(python), "--format", "json").stdout)["snapshot"]
    [fw] = [f for f in snap["python"]["frameworks"] if f["name"] == "torch"]
    return snap["python"]["executable"], fw["version"]


def test_two_venvs_of_one_base_each_report_their_own_packages_in_any_order(tmp_path):
    """Both venvs link to the same base interpreter (as venv, uv and virtualenv make them): its resolved path is
    one, the environments are two."""
    gpu = _torch_venv(tmp_path / "gpu", "2.5.1+cu124", "12.4")
    cpu = _torch_venv(tmp_path / "cpu", "2.5.1+cpu", None)
    assert os.path.realpath(gpu) == os.path.realpath(cpu)
    env = _env(tmp_path)
    truth = {gpu: (str(gpu), "2.5.1+cu124"), cpu: (str(cpu), "2.5.1+cpu")}
    for order in ([gpu, cpu, gpu, cpu], "wait", [cpu, gpu, cpu, gpu]):
        if order == "wait":
            time.sleep(WAIT)  # now every answer is kept: the second of each pair comes from the cache
            continue
        for python in order:
            assert _torch_of(env, python) == truth[python]
    kept = list((tmp_path / "cache" / "pyenv").glob("*.json"))
    assert len(kept) == 2  # one answer each, under keys of their own


def test_a_venvs_answer_is_not_given_for_its_copy_or_after_its_link_is_repointed(tmp_path):
    gpu = _torch_venv(tmp_path / "gpu", "2.5.1+cu124", "12.4")
    env = _env(tmp_path)
    time.sleep(WAIT)
    assert _torch_of(env, gpu) == (str(gpu), "2.5.1+cu124")
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "gpu", copy, symlinks=True)  # cp -a: the same mtimes and sizes
    version = next(copy.glob("lib/*/site-packages/torch/version.py"))
    st = version.stat()
    version.write_text(version.read_text().replace("cu124", "cu121"))
    os.utime(version, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _torch_of(env, copy / "bin" / "python") == (str(copy / "bin" / "python"), "2.5.1+cu124".replace("4", "1"))
    assert _torch_of(env, gpu) == (str(gpu), "2.5.1+cu124")


def test_a_version_file_rewritten_in_place_with_its_size_and_mtime_is_read_again(tmp_path):
    gpu = _torch_venv(tmp_path / "gpu", "2.5.1+cu124", "12.4")
    env = _env(tmp_path)
    time.sleep(WAIT)
    assert _torch_of(env, gpu)[1] == "2.5.1+cu124"
    assert _torch_of(env, gpu)[1] == "2.5.1+cu124"  # kept
    version = next((tmp_path / "gpu").glob("lib/*/site-packages/torch/version.py"))
    st = version.stat()
    with open(version, "r+b") as fh:  # the same inode, the same size, the mtime put back
        fh.write(version.read_bytes().replace(b"cu124", b"cu121").replace(b"12.4", b"12.1"))
    os.utime(version, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (version.stat().st_size, version.stat().st_mtime_ns, version.stat().st_ino) == \
        (st.st_size, st.st_mtime_ns, st.st_ino)
    assert _torch_of(env, gpu)[1] == "2.5.1+cu121"


def _ext_venv(root: Path, so: Path) -> Path:
    fake_venv(root, "myext", "1.0", {"myext/_C.cpython-311-x86_64-linux-gnu.so": so})
    return root / "bin" / "python"


def _binaries(env: dict, python: Path) -> list:
    snap = json.loads(_cli(env, "probe", "--python", str(python), "--format", "json").stdout)
    return [(b["sass"], b["ptx"]) for b in snap["binaries"]["binaries"]]


def test_a_shared_object_swapped_for_another_build_of_its_size_is_scanned_again(tmp_path):
    """cp other.so lib.so; touch -r ref lib.so: the same inode, size and mtime, another arch list (two real nvcc
    builds of one size)."""
    a, b = BINFIX / "sm80.so", BINFIX / "sm80_ptx75.so"
    assert a.stat().st_size == b.stat().st_size
    python = _ext_venv(tmp_path / "venv", a)
    env = _env(tmp_path)
    time.sleep(WAIT)
    assert _binaries(env, python) == [(["sm_80"], [])]
    assert _binaries(env, python) == [(["sm_80"], [])]
    lib = next((tmp_path / "venv").glob("lib/*/site-packages/myext/_C*.so"))
    ref = tmp_path / "ref"
    ref.write_bytes(b"")
    os.utime(ref, ns=(lib.stat().st_atime_ns, lib.stat().st_mtime_ns))
    ino = lib.stat().st_ino
    subprocess.run(["cp", str(b), str(lib)], check=True)
    subprocess.run(["touch", "-r", str(ref), str(lib)], check=True)
    assert lib.stat().st_ino == ino
    assert _binaries(env, python) == [(["sm_80"], ["compute_75"])]
    assert _binaries(dict(env, ENVDOCTOR_NO_CACHE="1"), python) == [(["sm_80"], ["compute_75"])]


def test_two_extensions_in_two_venvs_are_judged_each_by_its_own_code(tmp_path):
    """On a T4 (sm_75): the sm_80-only build is an error, the one with compute_75 PTX a JIT warning, whichever
    venv is checked first and however often."""
    only = _ext_venv(tmp_path / "a", BINFIX / "sm80.so")
    ptx = _ext_venv(tmp_path / "b", BINFIX / "sm80_ptx75.so")
    env = _env(tmp_path, cc="7.5")
    want = {only: ["ED250"], ptx: ["ED251"]}
    time.sleep(WAIT)
    for python in (only, ptx, only, ptx, ptx, only):
        report = json.loads(_cli(env, "check", "--python", str(python), "--format", "json").stdout)
        assert [f["id"] for f in report["findings"] if f["id"] in ("ED250", "ED251")] == want[python]


def _nvcc_entry(tmp_path: Path) -> Path:
    entries = [p for p in (tmp_path / "cache" / "commands").glob("*.json")
               if "nvcc" in json.dumps(json.loads(p.read_text())["witness"]) and
               "Cuda compilation tools" in json.loads(p.read_text())["value"]["stdout"]]
    assert len(entries) == 1, entries
    return entries[0]


def _plant(entry: Path) -> None:
    data = json.loads(entry.read_text())
    out = data["value"]["stdout"]
    assert "release 13.0" in out
    data["value"]["stdout"] = out.replace("release 13.0", "release 11.0").replace("V13.0.", "V11.0.")
    entry.write_text(json.dumps(data))


def _toolkit_line(env: dict) -> str:
    proc = _cli(env, "check")
    [line] = [ln for ln in proc.stdout.splitlines() if "CUDA toolkit" in ln]
    return line + "\n" + proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None or os.geteuid() != 0, reason="needs nvcc, and root to chown")
@pytest.mark.parametrize("how", ["folder 0777", "entry of another user", "entry 0666"])
def test_a_planted_entry_is_not_believed(tmp_path, how):
    env = _env(tmp_path)
    _cli(env, "check")
    entry = _nvcc_entry(tmp_path)
    _plant(entry)
    assert "11.0" in _toolkit_line(env)  # an entry of ours is believed: the test can tell
    if how == "folder 0777":
        os.chmod(entry.parent, 0o777)
        os.chown(entry, 65534, 65534)
    elif how == "entry of another user":
        os.chown(entry, 65534, 65534)
    else:
        os.chmod(entry, 0o666)
    said = _toolkit_line(env)
    assert "13.0" in said and "11.0" not in said.splitlines()[0]
    assert "envdoctor: note:" in said and ("another user" in said)
    if how == "folder 0777":
        assert entry.exists()  # nothing is written into, or deleted from, a folder others can write


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "symlink to /dev/zero"])
def test_a_cache_file_that_is_no_regular_file_is_never_read(tmp_path, kind):
    python = _ext_venv(tmp_path / "venv", BINFIX / "sm80.so")
    env = _env(tmp_path)
    target = tmp_path / "cache" / "binaries.json"
    target.parent.mkdir(mode=0o700)
    if kind == "fifo":
        os.mkfifo(target, 0o600)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("mknod needs root")
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers: endless bytes
    elif kind == "folder":
        target.mkdir(mode=0o700)
    else:
        os.symlink("/dev/zero", target)
    start = time.monotonic()
    proc = _cli(env, "probe", "--python", str(python), "--format", "json")
    assert time.monotonic() - start < 60
    assert [b["sass"] for b in json.loads(proc.stdout)["binaries"]["binaries"]] == [["sm_80"]]
    assert str(target) in proc.stderr and "cache file" in proc.stderr
    assert "bundled" not in proc.stderr


def test_a_deeply_nested_table_in_the_user_cache_costs_no_bundled_table(tmp_path):
    env = _env(tmp_path)
    plain = _cli(env, "matrices", "list").stdout
    overlay = tmp_path / "cache" / "matrices" / "gpus.toml"
    overlay.parent.mkdir(parents=True, exist_ok=True)
    for depth in (90, 3000):
        overlay.write_text(f'schema = "gpus/v1"\ncollected = "2026-01-01"\nx = {"[" * depth}{"]" * depth}\n')
        for _ in range(2):  # and again, from whatever the first run kept
            proc = _cli(env, "matrices", "list")
            rows = {ln.split()[0]: ln.split()[1] for ln in proc.stdout.splitlines()[1:] if ln.split()[1:2] != []
                    and ln.split()[1].isdigit()}
            want = {ln.split()[0]: ln.split()[1] for ln in plain.splitlines()[1:] if ln.split()[1:2] != []
                    and ln.split()[1].isdigit()}
            assert rows == want and all(int(v) > 0 for v in rows.values())
            warned = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "warning" in ln or "note" in ln]
            assert all("matrices/gpus.toml" not in w or str(overlay) in w for w in warned), warned
            assert not [w for w in warned if "/matrices/gpus.toml" in w and str(overlay) not in w]


def test_a_cache_home_that_does_not_exist_yet_is_made_private_and_used(tmp_path):
    python = _ext_venv(tmp_path / "venv", BINFIX / "sm80.so")
    env = _env(tmp_path)
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path / "new" / "deeper" / "envdoctor")
    time.sleep(WAIT)
    _cli(env, "probe", "--python", str(python), "--format", "json")
    home = tmp_path / "new" / "deeper" / "envdoctor"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert (home / "binaries.json").exists() and stat.S_IMODE((home / "binaries.json").stat().st_mode) == 0o600
    snap = json.loads(_cli(env, "probe", "--python", str(python), "--format", "json").stdout)
    assert snap["binaries"]["from_cache"] == snap["binaries"]["scanned"] > 0


def test_the_walk_agrees_with_a_cold_run_after_every_step(tmp_path):
    """300 seeded steps (ENVDOCTOR_CACHE_WALK_STEPS, ENVDOCTOR_CACHE_WALK_SEED to change them); a long walk:
    benchmarks/cache_walk.py."""
    steps = int(os.environ.get("ENVDOCTOR_CACHE_WALK_STEPS", "300"))
    seed = int(os.environ.get("ENVDOCTOR_CACHE_WALK_SEED", "20261202"))
    got = walk(tmp_path, seed, steps)
    assert got["steps"] == steps
    assert got["kept_answers"] > steps  # the cache did answer: the walk compared something
