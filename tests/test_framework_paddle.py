"""paddlepaddle-gpu as one framework module (envdoctor/frameworks/paddle.py + matrices/paddle.toml): the data
agrees with the real wheel's files, the probe reads paddle/version/__init__.py, and lock, gate and check judge
driver, GPU, cuDNN and Python through the real CLI with the same judgement."""
from __future__ import annotations

import json
import re
import sys
from email.parser import Parser

import pytest

from envdoctor.frameworks import registry
from envdoctor.knowledge.framework_tables import build_table, row_for
from envdoctor.probes import pyenv
from tests.framework_cli import check_json, cli, gate_json, lock_json, picks, snapshot_with
from tests.test_probe_pyenv import _dist, _report, fixture

TABLE = "paddle.toml"
GPU_VERSION = fixture("paddle_version_2.6.2_gpu.py")


def _assignments(text: str) -> dict:
    return dict(re.findall(r"^(\w+)\s*=\s*'([^']*)'$", text, re.M))


# --------------------------------------------------------------------------- the data against the real wheel


def test_table_parses_and_every_row_has_a_source_and_a_verified_note():
    table = build_table(TABLE)
    assert table.problems == [] and table.rows
    for row in table.rows:
        assert row.source.strip() and row.verified.strip() and row.cc_min


def test_row_agrees_with_the_wheels_own_files():
    row = row_for(TABLE, "2.6.2")
    info = _assignments(GPU_VERSION)
    assert (info["full_version"], info["cuda_version"], info["cudnn_version"]) == ("2.6.2", row.cuda, row.cudnn)
    meta = Parser().parsestr(fixture("METADATA_paddlepaddle_gpu-2.6.2"))
    # no Requires-Python and no CUDA wheels: the table's Python span comes from the wheel tags
    assert meta["Requires-Python"] is None
    assert not [r for r in meta.get_all("Requires-Dist") if r.startswith(("nvidia-", "cuda-"))]
    assert row.extras == () and row.cudnn_pin == ""


def test_registered():
    spec = registry.get("paddlepaddle")
    assert spec.classify("paddlepaddle_gpu") == "gpu" and spec.classify("PaddlePaddle") == "cpu"
    assert registry.spec_of_distribution("paddlepaddle-gpu") is spec


# --------------------------------------------------------------------------- probe


def test_probe_reads_cuda_and_cudnn_from_paddle_version():
    env = pyenv.python_env_from(_report(_dist("paddlepaddle-gpu", "2.6.2", {"paddle/version/__init__.py": GPU_VERSION})))
    fw = env.frameworks[0]
    assert (fw.name, fw.build, fw.cuda_version, fw.cudnn_version) == ("paddlepaddle", "cuda", "11.8", "8.6.0")


def test_probe_cpu_build_writes_false():
    env = pyenv.python_env_from(_report(_dist("paddlepaddle", "3.3.1", {
        "paddle/version/__init__.py": fixture("paddle_version_3.3.1_cpu.py")})))
    fw = env.frameworks[0]
    assert (fw.build, fw.cuda_version, fw.cudnn_version) == ("cpu", None, None)


def test_probe_post_label_without_a_version_file():
    env = pyenv.python_env_from(_report(_dist("paddlepaddle-gpu", "2.6.1.post120")))
    assert (env.frameworks[0].build, env.frameworks[0].cuda_version) == ("cuda", "12.0")


# --------------------------------------------------------------------------- lock


def test_lock_picks_the_newest_release_for_the_python(capsys):
    rc, data, _ = lock_json(capsys, "--paddlepaddle", "--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.12")
    assert rc == 0 and picks(data) == {"paddlepaddle": "paddlepaddle-gpu==2.6.2"}
    rc, data, _ = lock_json(capsys, "--paddlepaddle=2.5", "--driver", "535.104.05", "--gpu", "sm_86",
                            "--python-version", "3.11")
    assert rc == 0 and picks(data) == {"paddlepaddle": "paddlepaddle-gpu==2.5.2"}


def test_lock_refuses_a_driver_below_the_cuda_11_floor(capsys):
    rc, _, err = cli(["lock", "--paddlepaddle", "--driver", "450.51.06", "--gpu", "sm_80", "--python-version", "3.10"],
                     capsys)
    assert rc == 1 and "450.80.02" in err


def test_lock_python_no_release_supports_is_bad_input(capsys):
    rc, _, err = cli(["lock", "--paddlepaddle", "--driver", "535.104.05", "--python-version", "3.13"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Python 3.13" in err


def test_lock_with_torch_keeps_one_cuda_major(capsys):
    """paddlepaddle-gpu is CUDA 11.8 only: torch is locked to a CUDA 11 build beside it (never a CUDA 12 one)."""
    rc, data, _ = lock_json(capsys, "--paddlepaddle", "--torch", "--driver", "535.104.05", "--gpu", "sm_86",
                            "--python-version", "3.11")
    assert rc == 0 and {p["cuda"].split(".")[0] for p in data["record"]["picks"] if p["kind"] == "cuda"} == {"11"}
    assert picks(data)["torch"].endswith("+cu118") and picks(data)["paddlepaddle"] == "paddlepaddle-gpu==2.6.2"


# --------------------------------------------------------------------------- gate


def test_gate_judges_driver_gpu_floor_and_python(capsys, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("paddlepaddle-gpu==2.6.2\n")
    rc, found = gate_json(capsys, req, "--driver", "450.51.06", "--gpu", "sm_80", "--python-version", "3.12")
    assert rc == 1 and any(f["id"] == "ED690" and "450.80.02" in f["message"] for f in found)
    rc, found = gate_json(capsys, req, "--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.13")
    assert rc == 1 and any(f["id"] == "ED690" and "Python 3.13" in f["message"] for f in found)
    rc, found = gate_json(capsys, req, "--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.12")
    assert rc == 0 and not [f for f in found if f["id"] == "ED690"]
    # no linux-aarch64 wheels (PaddlePaddle: "only provides arm64 CPU wheels"): lock refuses, gate fails it too
    rc, found = gate_json(capsys, req, "--platform", "linux-aarch64", "--python-version", "3.10")
    assert rc == 1 and any(f["id"] == "ED690" and "linux-aarch64" in f["message"] for f in found)
    assert cli(["lock", "--paddlepaddle", "--platform", "linux-aarch64", "--cuda", "11.8", "--python-version", "3.10"],
               capsys)[0] == 1


def test_gate_range_takes_the_newest_release_for_the_python(capsys, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("paddlepaddle-gpu>=2.5\n")
    rc, out, _ = cli(["gate", str(req), "--offline", "--format", "json", "--driver", "535.104.05", "--gpu", "sm_86",
                      "--python-version", "3.11"], capsys)
    pkg = json.loads(out)["inputs"][0]["packages"][0]
    assert rc == 0 and (pkg["family"], pkg["version"]) == ("paddlepaddle", "2.6.2")
    assert pkg["frameworks"][0]["cuda_version"] == "11.8" and pkg["frameworks"][0]["cudnn_version"] == "8.6.0"


def test_what_lock_writes_gate_accepts(capsys, tmp_path):
    for target in (["--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.12"],
                   ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.8"],
                   ["--driver", "580.65.06", "--gpu", "sm_75", "--python-version", "3.10"]):
        out = tmp_path / "paddle.txt"
        assert cli(["lock", "--paddlepaddle", *target, "-o", str(out), "--force"], capsys)[0] == 0
        rc, found = gate_json(capsys, out, *target)
        assert rc == 0 and not [f for f in found if f["severity"] == "error"], (target, found)


# --------------------------------------------------------------------------- check


def _snapshot(tmp_path, **target):
    return snapshot_with(tmp_path, "paddlepaddle_gpu-2.6.2.dist-info", fixture("METADATA_paddlepaddle_gpu-2.6.2"),
                         {"paddle/version/__init__.py": GPU_VERSION}, **target)


@pytest.mark.skipif(not (3, 8) <= sys.version_info[:2] <= (3, 12), reason="paddlepaddle-gpu 2.6.2 has cp38-cp312 wheels")
def test_check_driver_too_old_for_the_installed_build(capsys, tmp_path):
    rc, found = check_json(capsys, _snapshot(tmp_path, driver="450.51.06", driver_cuda="11.0",
                                             gpus=["NVIDIA A100-SXM4-80GB:8.0"]))
    ed690 = [f for f in found if f["id"] == "ED690"]
    assert rc == 1 and ed690 and "450.80.02" in ed690[0]["message"]
    assert {e["value"] for e in ed690[0]["evidence"]} == {"11.8", "8.6.0"}  # read from paddle/version


@pytest.mark.skipif(not (3, 8) <= sys.version_info[:2] <= (3, 12), reason="paddlepaddle-gpu 2.6.2 has cp38-cp312 wheels")
def test_check_healthy_machine(capsys, tmp_path):
    _, found = check_json(capsys, _snapshot(tmp_path, driver="535.104.05", driver_cuda="12.2",
                                            gpus=["NVIDIA A100-SXM4-80GB:8.0"]))
    assert not [f for f in found if f["id"] == "ED690"]
