"""`pip install .` (not editable) into a fresh venv gives a working envdoctor that finds its data."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    # install from a copy, so nothing of the checkout (or its build folders) leaks in
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".ci-venv", "*.egg-info", "__pycache__", "build", "dist", ".venv"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail("pip install . failed:\n" + proc.stderr[-3000:])
    return venv


def _run(venv, *args, cwd):
    return subprocess.run([str(venv / "bin" / "envdoctor"), *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")})


def test_installed_probe_reports_this_machine(installed, tmp_path):
    proc = _run(installed, "probe", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    assert not snap["gpus"]
    assert snap["driver"]["state"] in ("not_installed", "unknown")
    if Path("/usr/local/cuda-13.0/bin/nvcc").exists():
        tk = [t for t in snap["toolkits"] if t["path"] == "/usr/local/cuda-13.0"]
        assert tk and tk[0]["version"] == "13.0.88"


def test_installed_check_finds_bundled_data(installed, tmp_path):
    proc = _run(installed, "check", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["data"]["collected"], "the wheel must carry matrices/"
    assert not [w for w in report["data"]["warnings"] if "unavailable" in w]


def test_installed_package_is_typed(installed):
    """PEP 561: the wheel carries envdoctor/py.typed, so a type checker reads envdoctor's annotations."""
    marks = list((installed / "lib").glob("python3*/site-packages/envdoctor/py.typed"))
    assert marks, "the installed package has no py.typed"


def test_installed_probe_of_framework_venv(installed, tmp_path, fw_python):
    proc = _run(installed, "probe", "--format", "json", "--python", fw_python, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    fws = {f["name"]: f for f in json.loads(proc.stdout)["python"]["frameworks"]}
    assert fws["torch"]["version"].startswith("2.13.0") and fws["torch"]["build"] == "cpu"
    assert fws["tensorflow"]["distribution"] == "tensorflow-cpu" and fws["tensorflow"]["build"] == "cpu"
    assert fws["jax"]["build"] == "cpu"
