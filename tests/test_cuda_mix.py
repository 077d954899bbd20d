"""Frameworks of different CUDA majors in one environment (ED662, envdoctor/facts/cuda_mix.py): lock, gate and check
say the same, a warning, through the real CLI (torch +cu130 next to jax[cuda12]; torch +cu118 next to TF 2.16)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from envdoctor.frameworks import registry
from envdoctor.frameworks.base import Candidate, Target
from envdoctor.knowledge import load_matrices
from envdoctor.snapshot_io import dump_json
from tests import snapfactory
from tests.framework_cli import check_json, cli, gate_json, lock_json

M = load_matrices()
TARGET = ("--driver", "580.65.06", "--gpu", "sm_90", "--python-version", "3.12")


def _newest(framework: str, build: str) -> Candidate:
    t = Target(frameworks=[], python="3.12", platform="linux-x86_64", companions=[])
    return next(c for c in registry.get(framework).candidates(M, t) if c.build == build)


def _requirements(tmp_path: Path, *cands: Candidate) -> Path:
    lines = [f"--extra-index-url {c.index_url}" for c in cands if c.index_url]
    for c in cands:
        lines.extend(registry.get(c.framework).install_requirements(c))
    path = tmp_path / "requirements.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _ed662(findings: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [f for f in findings if f["id"] == "ED662"]


def test_gate_warns_on_torch_cu130_with_jax_cuda12(capsys: Any, tmp_path: Path) -> None:
    torch, jax = _newest("torch", "cu130"), _newest("jax", "cuda12")
    rc, findings = gate_json(capsys, _requirements(tmp_path, torch, jax), *TARGET)
    mix = _ed662(findings)
    assert rc == 0  # a warning: each framework works in a process that imports only it
    assert len(mix) == 1 and mix[0]["severity"] == "warning"
    assert "CUDA 13" in mix[0]["message"] and "CUDA 12" in mix[0]["message"]
    assert torch.full_version in mix[0]["message"] and "libnccl.so.2" in mix[0]["message"]


def test_gate_is_silent_when_the_majors_agree(capsys: Any, tmp_path: Path) -> None:
    rc, findings = gate_json(capsys, _requirements(tmp_path, _newest("torch", "cu130"), _newest("jax", "cuda13")),
                             *TARGET)
    assert rc == 0 and not _ed662(findings)


def _snapshot(tmp_path: Path, plugin: str) -> Path:
    snap = snapfactory.machine(driver="580.65.06", driver_cuda="13.0", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                               frameworks=[snapfactory.torch("2.15.0+cu130", cuda="13.0", cudnn="9.13.0"),
                                           *snapfactory.jax("0.12.0.1", plugin=plugin)], python="3.12.3")
    path = tmp_path / "snap.json"
    path.write_text(dump_json(snap.to_dict()))
    return path


def test_check_warns_on_an_installed_mix(capsys: Any, tmp_path: Path) -> None:
    rc, findings = check_json(capsys, _snapshot(tmp_path, "jax-cuda12-plugin"))
    mix = _ed662(findings)
    assert len(mix) == 1 and mix[0]["severity"] == "warning"
    assert "torch 2.15.0+cu130 uses CUDA 13" in mix[0]["message"] and "uses CUDA 12" in mix[0]["message"]
    rc, findings = check_json(capsys, _snapshot(tmp_path, "jax-cuda13-plugin"))
    assert not _ed662(findings)


def test_lock_keeps_one_major_when_it_can(capsys: Any) -> None:
    rc, data, _ = lock_json(capsys, "--torch", "--jax", *TARGET)
    assert rc == 0
    assert len({p["cuda"].split(".")[0] for p in data["record"]["picks"]}) == 1
    assert not [w for w in data["lock"]["warnings"] if "uses CUDA" in w]


def test_lock_mixes_only_with_the_warning_gate_and_lock_check_repeat(capsys: Any, tmp_path: Path) -> None:
    """TF 2.16 pins cuDNN 8.9 exactly and no CUDA 12 torch agrees: lock takes a torch of another major and warns,
    and gate (on the written file) and `lock --check` say the same."""
    target = ("--driver", "535.104.05", "--python-version", "3.11")
    out = tmp_path / "env.txt"
    rc, data, _ = lock_json(capsys, "--torch", "--tensorflow=2.16", *target)
    assert rc == 0
    majors = {p["cuda"].split(".")[0] for p in data["record"]["picks"]}
    assert len(majors) == 2
    said = [w for w in data["lock"]["warnings"] if "uses CUDA" in w]
    assert len(said) == 1 and all(f"CUDA {mj}" in said[0] for mj in majors)
    rc, _, _ = cli(["lock", "--torch", "--tensorflow=2.16", *target, "-o", str(out)], capsys)
    assert rc == 0
    rc, findings = gate_json(capsys, out, *target)
    assert rc == 0 and [f["severity"] for f in _ed662(findings)] == ["warning"]
    rc, text, _ = cli(["lock", "--check", str(out), *target, "--format", "json"], capsys)
    checked = json.loads(text)
    assert rc == 0 and checked["ok"] and [w for w in checked["warnings"] if "uses CUDA" in w]


def test_explain_names_the_reports(capsys: Any) -> None:
    rc, out, _ = cli(["explain", "ED662"], capsys)
    assert rc == 0 and "https://github.com/jax-ml/jax/issues/19004" in out and "libcudnn.so.9" in out
