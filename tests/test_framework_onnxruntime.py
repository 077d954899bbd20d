"""onnxruntime-gpu as one framework module (envdoctor/frameworks/onnxruntime.py + matrices/onnxruntime.toml):
the data agrees with the real wheels' files, and lock, gate and check judge driver, GPU, cuDNN and Python through
the real CLI with the same judgement."""
from __future__ import annotations

import json
import re
import sys
from email.parser import Parser

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.frameworks import registry
from envdoctor.knowledge.framework_tables import build_table, row_for
from envdoctor.lock.cli import FW_EXAMPLES
from tests.framework_cli import check_json, cli, gate_json, lock_json, picks, snapshot_with
from tests.test_probe_pyenv import fixture

TABLE = "onnxruntime.toml"


# --------------------------------------------------------------------------- the data against the real wheels


def test_table_parses_and_every_row_has_a_source_and_a_verified_note():
    table = build_table(TABLE)
    assert table.problems == [] and len(table.rows) >= 5
    for row in table.rows:
        assert row.source.strip() and row.verified.strip()


@pytest.mark.parametrize("version", ["1.22.0", "1.27.0"])
def test_rows_agree_with_the_wheels_own_files(version):
    """CUDA from capi/build_and_package_info.py, Requires-Python and the cudnn extra from METADATA (real wheels)."""
    row = row_for(TABLE, version)
    info = dict(re.findall(r"^(\w+) = '([^']*)'$", fixture(f"onnxruntime_gpu_build_and_package_info_{version}.py"), re.M))
    assert info["package_name"] == "onnxruntime-gpu" and info["cuda_version"] == row.cuda
    meta = Parser().parsestr(fixture(f"METADATA_onnxruntime_gpu-{version}"))
    assert meta["Requires-Python"] == row.requires_python
    cudnn = [r for r in meta.get_all("Requires-Dist") if 'extra == "cudnn"' in r]
    assert [r.split(";")[0].strip() for r in cudnn] == [row.cudnn_pin]
    assert sorted(meta.get_all("Provides-Extra")) >= sorted(row.extras)


def test_python_tags_fall_inside_requires_python():
    for row in build_table(TABLE).rows:
        for v in row.versions:
            spec = SpecifierSet(row.python_for(v))
            inside = [t for t in row.python_tags if spec.contains(f"{t[2]}.{t[3:]}")]
            assert inside, (v, row.python_for(v), row.python_tags)


def test_registered_and_lock_offers_every_lockable_framework():
    spec = registry.get("onnxruntime")
    assert spec.classify("onnxruntime_gpu") == "gpu" and spec.classify("onnxruntime") == "cpu"
    assert registry.spec_of_distribution("onnxruntime-gpu") is spec
    assert tuple(FW_EXAMPLES) == registry.names(lockable=True)


# --------------------------------------------------------------------------- lock


@pytest.mark.parametrize("target, want", [
    (["--driver", "580.65.06", "--gpu", "sm_86", "--python-version", "3.12"], "onnxruntime-gpu[cuda,cudnn]==1.31.1"),
    # driver 535 runs CUDA 12.x only: the newest CUDA 12 build
    (["--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.12"], "onnxruntime-gpu[cuda,cudnn]==1.26.0"),
    # CUDA 13 cannot produce sm_61 code: the newest CUDA 12 build, whatever the driver
    (["--driver", "580.65.06", "--gpu", "sm_61", "--python-version", "3.12"], "onnxruntime-gpu[cuda,cudnn]==1.26.0"),
    # Python 3.10: 1.24+ are cp311+
    (["--driver", "580.65.06", "--gpu", "sm_86", "--python-version", "3.10"], "onnxruntime-gpu[cuda,cudnn]==1.23.2"),
    # driver 470 runs CUDA 11.x only: the last CUDA 11.8 / cuDNN 8 release on the index
    (["--driver", "470.82.01", "--gpu", "sm_75", "--python-version", "3.10"], "onnxruntime-gpu==1.18.1"),
])
def test_lock_picks_the_build_the_target_runs(capsys, target, want):
    rc, data, _ = lock_json(capsys, "--onnxruntime", *target)
    assert rc == 0 and picks(data) == {"onnxruntime": want}


def test_lock_caps_the_cudnn_the_extra_would_bring_for_a_pascal_gpu(capsys):
    rc, out, _ = cli(["lock", "--onnxruntime", "--driver", "535.104.05", "--gpu", "sm_61", "--python-version", "3.12"],
                     capsys)
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("nvidia-cudnn-cu12"))
    assert "<9.17" in line and "~=9.0" in line


def test_lock_refuses_a_driver_below_every_cuda_floor(capsys):
    rc, _, err = cli(["lock", "--onnxruntime", "--driver", "440.33.01", "--gpu", "sm_75", "--python-version", "3.10"],
                     capsys)
    assert rc == 1 and "onnxruntime-gpu" in err


def test_lock_spec_and_python_outside_the_data_are_bad_input(capsys):
    rc, _, err = cli(["lock", "--onnxruntime=1.99", "--driver", "580.65.06"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "onnxruntime" in err
    rc, _, err = cli(["lock", "--onnxruntime", "--driver", "580.65.06", "--python-version", "3.6"], capsys)
    assert rc == 2 and "Python 3.6" in err


def test_lock_check_rejects_the_file_on_an_older_driver(capsys, tmp_path):
    out = tmp_path / "ort.txt"
    base = ["--driver", "580.65.06", "--gpu", "sm_86", "--python-version", "3.12"]
    assert cli(["lock", "--onnxruntime", *base, "-o", str(out)], capsys)[0] == 0
    assert cli(["lock", "--check", str(out), *base], capsys)[0] == 0
    rc, _, _ = cli(["lock", "--check", str(out), "--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.12"],
                   capsys)
    assert rc == 1


# --------------------------------------------------------------------------- gate


def test_gate_judges_the_cuda_13_build_on_a_pascal_gpu_and_an_old_driver(capsys, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("onnxruntime-gpu==1.27.0\n")
    rc, found = gate_json(capsys, req, "--driver", "580.65.06", "--gpu", "sm_61", "--python-version", "3.12")
    assert rc == 1 and any(f["id"] == "ED690" and f["severity"] == "error" and "sm_61" in f["message"] for f in found)
    assert any("1.26.0" in line for f in found if f["id"] == "ED690" for line in f["fix"])
    rc, found = gate_json(capsys, req, "--driver", "535.104.05", "--gpu", "sm_86", "--python-version", "3.12")
    assert rc == 1 and any(f["id"] == "ED681" and f["severity"] == "error" for f in found)
    rc, found = gate_json(capsys, req, "--driver", "580.65.06", "--gpu", "sm_86", "--python-version", "3.12")
    assert rc == 0 and not [f for f in found if f["severity"] == "error"]


def test_gate_judges_python_of_the_pinned_release(capsys, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("onnxruntime-gpu==1.27.0\n")
    rc, found = gate_json(capsys, req, "--driver", "580.65.06", "--gpu", "sm_86", "--python-version", "3.10")
    assert rc == 1 and any(f["id"] == "ED690" and "Python 3.10" in f["message"] for f in found)


@pytest.mark.parametrize("target", [
    ["--driver", "580.65.06", "--gpu", "sm_120", "--python-version", "3.13"],
    ["--driver", "550.54.14", "--gpu", "sm_75", "--python-version", "3.11"],
    ["--driver", "525.60.13", "--gpu", "sm_61", "--python-version", "3.10"],
    ["--driver", "470.82.01", "--gpu", "sm_80", "--python-version", "3.9"],
])
def test_what_lock_writes_gate_accepts(capsys, tmp_path, target):
    out = tmp_path / "ort.txt"
    assert cli(["lock", "--onnxruntime", *target, "-o", str(out)], capsys)[0] == 0
    rc, found = gate_json(capsys, out, *target)
    assert rc == 0 and not [f for f in found if f["severity"] == "error"], found


# --------------------------------------------------------------------------- check


def _snapshot_with(tmp_path, version: str, **target):
    """onnxruntime-gpu's real METADATA and build info in a venv, probed by the real probe, on a stated machine."""
    return snapshot_with(tmp_path, f"onnxruntime_gpu-{version}.dist-info", fixture(f"METADATA_onnxruntime_gpu-{version}"),
                         {"onnxruntime/capi/build_and_package_info.py":
                          fixture(f"onnxruntime_gpu_build_and_package_info_{version}.py")}, **target)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the fixture wheels are cp311+ (the probe reads the running Python)")
def test_check_judges_the_installed_build_against_the_gpu(capsys, tmp_path):
    bad = _snapshot_with(tmp_path, "1.27.0", driver="580.65.06", driver_cuda="13.0",
                         gpus=["NVIDIA GeForce GTX 1080:6.1"])
    rc, found = check_json(capsys, bad)
    ed690 = [f for f in found if f["id"] == "ED690"]
    assert rc == 1 and ed690 and "CUDA 13.0" in ed690[0]["message"] and "sm_61" in ed690[0]["message"]
    assert ed690[0]["evidence"][0]["value"] == "13.0"  # from the installed build info


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the fixture wheels are cp310+")
def test_check_healthy_build_has_no_ed690(capsys, tmp_path):
    ok = _snapshot_with(tmp_path, "1.22.0", driver="580.65.06", driver_cuda="13.0", gpus=["NVIDIA A100-SXM4-80GB:8.0"])
    _, found = check_json(capsys, ok)
    assert not [f for f in found if f["id"] == "ED690"]
    assert Version(json.loads(ok.read_text())["python"]["frameworks"][0]["cuda_version"]) == Version("12.2")
