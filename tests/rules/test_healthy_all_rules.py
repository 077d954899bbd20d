"""The whole doctor on healthy machines: every torch release's real PyPI build with exactly the nvidia-* wheels
its metadata pins, on a GPU and driver it supports, gets no error and no warning from ANY rule.

The pins are the real Requires-Dist lines of each release (tests/fixtures/evidence), so this asserts the rules
generalise over 2022-2026 releases instead of fitting the handful of versions in the per-rule tests.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules
from tests.snapfactory import machine, torch

EVIDENCE = Path(__file__).resolve().parent.parent / "fixtures" / "evidence" / "pypi_torch_requires_dist.txt"
M = load_matrices()


def _releases():
    """{version: (requires_python, [Requires-Dist lines])} from the recorded metadata."""
    out, cur = {}, None
    for line in EVIDENCE.read_text().splitlines():
        m = re.match(r"== torch (\S+)\s+wheel=\S+\s+requires_python=(\S+)", line)
        if m:
            cur = m.group(1)
            out[cur] = (m.group(2), [])
        elif cur and line.startswith("    ") and line.strip():
            out[cur][1].append(line.strip())
    return out


RELEASES = _releases()


def _installed_from_pins(lines):
    """Exactly what pip installs for these pins (== pins only; extras of cuda-toolkit name the version too)."""
    pk = {}
    cuda = None
    for line in lines:
        req = Requirement(line)
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if not pins:
            continue
        pk[req.name] = pins[0]
        if req.name.startswith("nvidia-cuda-runtime") or req.name == "cuda-toolkit":
            cuda = ".".join(pins[0].split(".")[:2])
    return pk, cuda


def _python_for(version):
    """A Python every release from 2.1 on has wheels for (3.11), else 3.10 (1.13.0 and 2.0 have no cp311)."""
    return "3.11.9" if Version(version) >= Version("2.1") else "3.10.12"


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_pypi_default_build_with_its_own_pins_is_healthy(version):
    requires_python, lines = RELEASES[version]
    packages, cuda = _installed_from_pins(lines)
    assert cuda, f"no CUDA runtime pin recorded for torch {version}"
    fw = torch(version, cuda=cuda, requires=lines)
    fw.requires_python = requires_python
    snap = machine(driver="580.95.05", driver_cuda="13.0", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[fw],
                   packages=packages, python=_python_for(version))
    bad = [(f.id, f.severity, f.message) for f in run_rules(Context(snap, M)) if f.severity in ("error", "warning")]
    assert not bad, bad


def test_the_evidence_covers_the_range():
    assert {"1.13.0", "2.0.0", "2.4.1", "2.11.0", "2.15.0"} <= set(RELEASES)


@pytest.mark.parametrize("version", [v for v in sorted(RELEASES) if Version(v) >= Version("2.1")])
def test_the_same_builds_on_a_driver_below_their_floor_are_errors(version):
    """The counterpart that keeps the test above honest: the identical environment on a 470 driver
    (CUDA <= 11.4) cannot run any CUDA 12/13 build."""
    requires_python, lines = RELEASES[version]
    packages, cuda = _installed_from_pins(lines)
    fw = torch(version, cuda=cuda, requires=lines)
    snap = machine(driver="470.256.02", driver_cuda="11.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[fw],
                   packages=packages, python=_python_for(version))
    errors = [f for f in run_rules(Context(snap, M)) if f.severity == "error"]
    assert [f.id for f in errors] == ["ED100"], [(f.id, f.message) for f in errors]
    assert "470.256.02" in errors[0].message and version in errors[0].message


# --------------------------------------------------------------------------- healthy machines beyond torch on an A100
# (CPU laptops, containers, WSL, 2019-2026 machines stay clean)

def _torch_with_pins(version):
    requires_python, lines = RELEASES[version]
    packages, cuda = _installed_from_pins(lines)
    fw = torch(version, cuda=cuda, requires=lines)
    fw.requires_python = requires_python
    return fw, packages


def _healthy_machines():
    from envdoctor.snapshot import Cudnn, Evidence, Library
    from tests.snapfactory import jax, tensorflow

    out = {}
    out["cpu laptop, CPU builds of all three"] = machine(
        frameworks=[torch("2.4.1+cpu"), tensorflow("2.15.0", dist="tensorflow-cpu")] + jax("0.4.26"))
    out["macOS arm64 laptop"] = machine(system="Darwin", machine_arch="arm64", frameworks=[torch("2.4.1")])
    fw, pk = _torch_with_pins("2.4.1")
    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[fw],
                   packages=pk, python="3.11.9")
    snap.platform.container = "docker"
    out["docker container, A100, torch 2.4.1 with its pins"] = snap
    fw, pk = _torch_with_pins("2.4.1")
    snap = machine(driver="555.99", driver_cuda="12.5", gpus=["NVIDIA GeForce RTX 4070:8.9"], frameworks=[fw],
                   packages=pk, python="3.11.9", wsl=2)
    snap.driver.wsl_libcuda = "/usr/lib/wsl/lib/libcuda.so.1"
    out["WSL 2, RTX 4070, torch 2.4.1"] = snap
    lib = "/usr/lib/x86_64-linux-gnu"
    out["2020: V100, driver 450, TF 2.4 on system CUDA 11.0 + cuDNN 8.0.4"] = machine(
        driver="450.80.02", driver_cuda="11.0", gpus=["Tesla V100-SXM2-16GB:7.0"], python="3.8.10",
        frameworks=[tensorflow("2.4.0", cuda="11.0", cudnn="8")],
        cudnn=[Cudnn("8.0.4", "library", f"{lib}/libcudnn.so.8.0.4", [Evidence("cmd:ldconfig -p", "libcudnn.so.8")])],
        # CUDA 11.0.3's runtime and cuBLAS in the ld.so cache, next to the driver's libcuda (ED340 judges them)
        libraries=[Library("libcuda", f"{lib}/libcuda.so.450.80.02", "450.80.02", "ldconfig"),
                   Library("libcudart", "/usr/local/cuda-11.0/lib64/libcudart.so.11.0.221", "11.0.221", "ldconfig"),
                   Library("libcublas", "/usr/local/cuda-11.0/lib64/libcublas.so.11.2.0.252", "11.2.0.252",
                           "ldconfig")])
    newest = max(RELEASES, key=Version)
    fw, pk = _torch_with_pins(newest)
    out[f"2026: RTX 5090, driver 580, torch {newest} with its pins"] = machine(
        driver="580.95.05", driver_cuda="13.0", gpus=["NVIDIA GeForce RTX 5090:12.0"], frameworks=[fw], packages=pk,
        python="3.12.3")
    return out


HEALTHY = _healthy_machines()


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_machines_of_every_kind_stay_clean(name):
    bad = [(f.id, f.severity, f.message) for f in run_rules(Context(HEALTHY[name], M))
           if f.severity in ("error", "warning")]
    assert not bad, bad


def test_a_2019_machine_is_never_an_error_or_a_warning():
    """2019: torch 1.3.0 (CUDA 10.1) on a V100, driver 418.87.01 (CUDA 10.1). The data's torch 1.3 row judges it
    (driver, the sm_70 cubin, Python 3.7): no error, no warning, and no ED902."""
    snap = machine(driver="418.87.01", driver_cuda="10.1", gpus=["Tesla V100-SXM2-16GB:7.0"],
                   frameworks=[torch("1.3.0", cuda="10.1")], python="3.7.5")
    found = [(f.id, f.severity) for f in run_rules(Context(snap, M)) if f.severity in ("error", "warning")]
    assert found == []
