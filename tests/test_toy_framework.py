"""A framework that lives outside envdoctor is one module and one TOML: registered through ENVDOCTOR_FRAMEWORKS
(docs/architecture.md, "Adding a framework"), it is seen by lock (its option and --help), gate, check and the
coverage table through the real CLI, with no edit to envdoctor."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from envdoctor.snapshot import Framework

from .cli_run import run
from .snapfactory import machine

SPEC_MODULE = '''
from envdoctor.frameworks.table_spec import TableSpec


class ToySpec(TableSpec):
    name = "toyfw"
    table = "toyfw.toml"
    gpu_distribution = "toyfw-gpu"
    distributions = {"toyfw-gpu": "gpu", "toyfw": "cpu"}
    lock_examples = ("3.1.4", "3.1", ">=3.0,<4")


SPEC = ToySpec()
'''

TABLE = '''schema = "toyfw/v1"
collected = "2026-12-01"

[[release]]
versions = ["3.1.3", "3.1.4"]
cuda = "12.4"
cudnn = "9.1.0"
cc_min = "8.0"
requires_python = ">=3.9"
python_tags = ["cp39", "cp310", "cp311", "cp312"]
platforms = ["linux-x86_64"]
source = "a toy table written by the test"
verified = "written by the test"
'''


@pytest.fixture()
def toy(tmp_path):
    folder = tmp_path / "toyfw_home"
    folder.mkdir()
    (folder / "toyfw_spec.py").write_text(SPEC_MODULE)
    (folder / "toyfw.toml").write_text(TABLE)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"ENVDOCTOR_FRAMEWORKS": "toyfw_spec:SPEC", "PYTHONPATH": path}


def test_lock_offers_the_toy_and_its_help_names_it(toy):
    helped = run("lock", "--help", env=toy)
    assert helped.returncode == 0, helped.stderr
    text = " ".join(helped.stdout.split())
    assert "--toyfw [SPEC]" in text and "3.1.4" in text and ">=3.0,<4" in text
    locked = run("lock", "--toyfw", "--cuda", "12.4", "--driver", "550.54.15", "--gpu", "sm_80",
                 "--python-version", "3.11", "--platform", "linux-x86_64", env=toy)
    assert locked.returncode == 0, locked.stderr
    assert "toyfw-gpu==3.1.4" in locked.stdout


def test_gate_judges_a_file_pinning_the_toy(toy, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("toyfw-gpu==3.1.3\n")
    proc = run("gate", str(req), "--driver", "450.80.02", "--gpu", "sm_80", "--python-version", "3.11", env=toy)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "toyfw-gpu 3.1.3" in proc.stdout and "450.80.02" in proc.stdout
    fits = run("gate", str(req), "--driver", "550.54.15", "--gpu", "sm_80", "--python-version", "3.11", env=toy)
    assert fits.returncode == 0, (fits.stdout, fits.stderr)


def test_check_judges_an_installed_toy_build(toy, tmp_path):
    fw = Framework("toyfw", "toyfw-gpu", "3.1.4", build="cuda", cuda_version="12.4", cudnn_version="9.1.0")
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["Tesla V100-SXM2-16GB:7.0"], frameworks=[fw])
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps(snap.to_dict()))
    proc = run("check", "--snapshot", str(snap_file), "--format", "json", env=toy)
    found = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED690"]
    assert any("toyfw-gpu 3.1.4" in f["message"] and "8.0" in f["message"] for f in found), found


def test_the_coverage_table_lists_the_toy_table(toy):
    env = dict(os.environ, **toy)
    proc = subprocess.run([sys.executable, "-m", "envdoctor.knowledge.coverage"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| `toyfw` | toyfw-gpu 3.1.3 → 3.1.4 (2 releases); CUDA 12.4 → 12.4; platforms linux-x86_64 | 1 | 0 |" \
        in proc.stdout


def test_a_bad_registration_is_a_one_line_usage_error(tmp_path):
    proc = run("lock", "--help", env={"ENVDOCTOR_FRAMEWORKS": "no_such_module_here:SPEC"})
    assert proc.returncode == 2 and "ENVDOCTOR_FRAMEWORKS" in proc.stderr and "Traceback" not in proc.stderr, \
        proc.stderr
