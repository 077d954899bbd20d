"""Driver branch <-> GPU and cuDNN <-> GPU (matrices/gpu_support.toml, matrices/cudnn.toml), judged by one function
(envdoctor.facts.gpu_support) that check (ED150/ED151), gate and lock all read: each through its real CLI."""
from __future__ import annotations

import json

import pytest

from envdoctor.knowledge import load_matrices
from tests.cli_run import one_line_error, run
from tests.snapfactory import machine, tensorflow

M = load_matrices()


# --------------------------------------------------------------------------- data


def test_branch_rows_carry_nvidias_architecture_matrix():
    rows = {r.family + ":" + ",".join(r.ccs): r for r in M.driver_branches}
    assert M.driver_branch_support("12.0").branch_min == 570
    assert M.driver_branch_support("9.0").branch_min == 520 and M.driver_branch_support("8.9").branch_min == 520
    assert M.driver_branch_support("3.7").branch_last == 470
    for cc in ("5.2", "6.1", "7.0"):
        assert M.driver_branch_support(cc).branch_last == 580
    assert M.driver_branch_support("7.5").branch_last is None  # Turing: still supported
    for r in rows.values():
        assert r.source.strip() and r.verified.strip()
        assert "docs.nvidia.com" in r.source or "nvidia.com" in r.source
    # no compute capability is claimed by two rows
    ccs = [c for r in M.driver_branches for c in r.ccs]
    assert len(ccs) == len(set(ccs))


# --------------------------------------------------------------------------- check


def _check(tmp_path, snap):
    f = tmp_path / "snap.json"
    f.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(f), "--format", "json", "--only", "ED15")
    data = json.loads(proc.stdout)
    return proc.returncode, [x for x in data["findings"] if x["id"].startswith("ED15")]


def test_check_r535_cannot_drive_an_rtx_5090(tmp_path):
    rc, found = _check(tmp_path, machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 5090:12.0"]))
    assert rc == 1
    assert [f["id"] for f in found] == ["ED150"] and found[0]["severity"] == "error"
    assert "R570 or newer" in found[0]["message"] and "R535" in found[0]["message"]
    assert any("R570" in x for x in found[0]["fix"])


def test_check_r570_drives_it_and_r590_no_longer_drives_pascal(tmp_path):
    rc, found = _check(tmp_path, machine(driver="570.133.07", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"]))
    assert found == [] and rc == 0
    rc, found = _check(tmp_path, machine(driver="590.48.01", driver_cuda="13.1", gpus=["NVIDIA GeForce GTX 1080:6.1"]))
    assert [f["id"] for f in found] == ["ED150"]
    assert "R580 is their last branch" in found[0]["message"]
    rc, found = _check(tmp_path, machine(driver="580.95.05", driver_cuda="13.0", gpus=["NVIDIA GeForce GTX 1080:6.1"]))
    assert found == []


def test_check_cudnn_917_on_a_gtx_1080(tmp_path):
    snap = machine(driver="580.65.06", driver_cuda="13.0", gpus=["NVIDIA GeForce GTX 1080:6.1"],
                   frameworks=[tensorflow("2.21.0", cuda="12.5.1", cudnn="9")],
                   packages={"nvidia-cudnn-cu12": "9.17.1.4"})
    rc, found = _check(tmp_path, snap)
    assert rc == 1
    assert [f["id"] for f in found] == ["ED151"]
    msg = found[0]["message"]
    assert "9.17.1.4" in msg and "6.1" in msg and "7.5" in msg
    assert '$ pip install "nvidia-cudnn-cu12<9.17"' in found[0]["fix"]
    snap.python.packages["nvidia-cudnn-cu12"] = "9.10.2.21"
    assert _check(tmp_path, snap)[1] == []


def test_check_judges_the_cudnn_a_build_brings_itself(tmp_path):
    """torch's Windows wheels bundle cuDNN (no nvidia-cudnn wheel): the cuDNN 9.1 torch 2.7.1+cu118 reports is
    judged for a Kepler GPU as an installed wheel would be; with a cuDNN wheel of its CUDA major the wheel is."""
    from tests.snapfactory import torch

    snap = machine(driver="452.39", driver_cuda="11.0", gpus=["Tesla K40m:3.5"], system="Windows", machine_arch="AMD64",
                   frameworks=[torch("2.7.1+cu118", cuda="11.8", cudnn="9.1.0.70")])
    rc, found = _check(tmp_path, snap)
    assert rc == 1 and [f["id"] for f in found] == ["ED151"]
    assert "9.1.0.70 of torch 2.7.1+cu118" in found[0]["message"] and "5.0" in found[0]["message"]
    assert any("brings this cuDNN itself" in x for x in found[0]["fix"])
    snap.python.packages["nvidia-cudnn-cu11"] = "8.7.0.84"  # the cuDNN it loads is then the wheel's, which is fine
    assert _check(tmp_path, snap)[1] == []


# --------------------------------------------------------------------------- lock


def test_lock_refuses_a_driver_branch_that_cannot_drive_the_gpu():
    line = one_line_error(run("lock", "--driver", "535.104.05", "--gpu", "sm_120", "--torch"))
    assert "R535" in line and "R570 or newer" in line and "Blackwell" in line


def test_lock_caps_cudnn_for_a_pascal_gpu():
    proc = run("lock", "--driver", "580.65.06", "--gpu", "sm_61", "--tensorflow", "--python-version", "3.11",
               "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    pins = [r for r in data["requirements"] if r.startswith("nvidia-cudnn-cu12")]
    assert len(pins) == 1
    from packaging.requirements import Requirement

    spec = Requirement(pins[0]).specifier
    assert not spec.contains("9.17.1.4") and spec.contains("9.10.2.21")
    # without the old GPU nothing is capped
    proc = run("lock", "--driver", "580.65.06", "--gpu", "sm_80", "--tensorflow", "--python-version", "3.11",
               "--format", "json")
    assert not [r for r in json.loads(proc.stdout)["requirements"] if r.startswith("nvidia-cudnn")]


# --------------------------------------------------------------------------- gate


def _gate(tmp_path, text, *target):
    f = tmp_path / "requirements.txt"
    f.write_text(text)
    proc = run("gate", str(f), "--offline", "--python-version", "3.11", *target, "--format", "json")
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("cudnn, bad", [("9.17.1.4", True), ("9.10.2.21", False)])
def test_gate_judges_a_pinned_cudnn_like_check(tmp_path, cudnn, bad):
    rc, out = _gate(tmp_path, f"tensorflow[and-cuda]==2.21.0\nnvidia-cudnn-cu12=={cudnn}\n",
                    "--driver", "580.65.06", "--gpu", "sm_61")
    assert ('"ED151"' in out) is bad
    if bad:
        assert rc == 1


def test_gate_judges_the_driver_branch_like_lock(tmp_path):
    rc, out = _gate(tmp_path, "torch==2.11.0\n", "--driver", "535.104.05", "--gpu", "sm_120")
    assert rc == 1 and '"ED150"' in out and "R570 or newer" in out
    rc, out = _gate(tmp_path, "torch==2.11.0\n", "--driver", "580.65.06", "--gpu", "sm_120")
    assert '"ED150"' not in out


def test_check_leaves_a_cuda13_cudnn_on_pascal_to_the_build_rules(tmp_path):
    # no cuDNN of CUDA 13 supports compute capability 6.1 (CUDA 13 dropped Pascal): no cap helps, so ED151 stays
    # quiet rather than advise a pin that cannot exist; the CUDA 12 wheel next to it is still judged
    snap = machine(driver="580.65.06", driver_cuda="13.0", gpus=["NVIDIA GeForce GTX 1080:6.1"],
                   packages={"nvidia-cudnn-cu13": "9.24.0.43", "nvidia-cudnn-cu12": "9.17.1.4"})
    rc, found = _check(tmp_path, snap)
    assert [f["subject"] for f in found] == ["nvidia-cudnn-cu12 9.17.1.4"]
