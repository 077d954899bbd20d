"""ED510 (jax / jaxlib / CUDA plugin / PJRT out of step) and ED520 (torchvision / torchaudio vs torch).

Requires-Dist lines are copied from real wheel metadata (PyPI core metadata, recorded in
/work/shared/reference/evidence/pypi_jax_*.txt and pypi_torch*_requires_dist.txt).
"""
from __future__ import annotations

import pytest

from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules, select_rules
from envdoctor.snapshot import Framework
from tests.snapfactory import machine, torch

M = load_matrices()
A100 = ["NVIDIA A100-SXM4-80GB:8.0"]

# jax 0.4.26 (PyPI): no unconditional jaxlib line, only extras
JAX_0426 = ["jaxlib ==0.4.25 ; extra == 'ci'", "jaxlib ==0.4.26 ; extra == 'cpu'",
            "jaxlib ==0.4.26+cuda12.cudnn89 ; extra == 'cuda'", "jaxlib ==0.4.26 ; extra == 'cuda12'",
            "jax-cuda12-plugin ==0.4.26 ; extra == 'cuda12'", "jaxlib ==0.4.20 ; extra == 'minimum-jaxlib'"]
# jax 0.4.30 / plugin 0.4.30 (PyPI)
JAX_0430 = ["jaxlib <=0.4.30,>=0.4.27", "jaxlib ==0.4.30 ; extra == 'cuda12'",
            "jax-cuda12-plugin[with_cuda] <=0.4.30,>=0.4.30 ; extra == 'cuda12'", "jaxlib ==0.4.27 ; extra == 'minimum-jaxlib'"]
PLUGIN_0430 = ["jax-cuda12-pjrt ==0.4.30", "nvidia-cudnn-cu12 <10.0,>=9.0 ; extra == 'with_cuda'"]
# jax-cuda12-plugin 0.9.2 (PyPI)
PLUGIN_092 = ["jax-cuda12-pjrt==0.9.2", 'nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == "linux" and extra == "with-cuda"']
# jax 0.9.2 / jax-cuda13-plugin 0.9.2 (PyPI)
JAX_092 = ["jaxlib<=0.9.2,>=0.9.2", 'jax-cuda12-plugin[with-cuda]<=0.9.2,>=0.9.2; extra == "cuda12"',
           'jax-cuda13-plugin[with-cuda]<=0.9.2,>=0.9.2; extra == "cuda13"']
PLUGIN13_092 = ["jax-cuda13-pjrt==0.9.2", 'nvidia-cudnn-cu13<10.0,>=9.12.0.46; sys_platform == "linux" and extra == "with-cuda"']


def run(snap, only=("ED5",), matrices=M):
    return run_rules(Context(snap, matrices), select_rules(only=list(only)))


def ids(findings):
    return [(f.id, f.severity) for f in findings]


def fw(name, version, requires=(), build="cuda", cuda="12"):
    return Framework(name, name, version, build=build, cuda_version=cuda if build == "cuda" else None, requires=list(requires))


# ---------------------------------------------------------------------------------------------
# ED510
# ---------------------------------------------------------------------------------------------
def test_ed510_healthy_jax_stack():
    fws = [fw("jax", "0.4.30", JAX_0430), fw("jaxlib", "0.4.30"), fw("jax-cuda12-plugin", "0.4.30", PLUGIN_0430),
           fw("jax-cuda12-pjrt", "0.4.30")]
    snap = machine(driver="550.54.15", gpus=A100, frameworks=fws, packages={"nvidia-cudnn-cu12": "9.1.0.70"})
    assert [f for f in run(snap, only=["ED3", "ED4", "ED5"]) if f.severity in ("error", "warning")] == []


def test_ed510_jaxlib_newer_than_jax():
    """https://github.com/jax-ml/jax/issues/17638 : "jaxlib version 0.4.14 is newer than and incompatible with jax
    version 0.4.6" - here with the versions of the brief, jax 0.4.26 (whose metadata pins jaxlib only behind
    extras) and jaxlib 0.4.30."""
    snap = machine(frameworks=[fw("jax", "0.4.26", JAX_0426, build="cpu"), fw("jaxlib", "0.4.30", build="cpu")])
    found = run(snap)
    assert ids(found) == [("ED510", "error")]
    f = found[0]
    assert "jaxlib 0.4.30 is newer than and incompatible with jax 0.4.26" in f.message
    assert '$ pip install "jax==0.4.26" "jaxlib==0.4.26"' in f.fix
    assert '$ pip install "jax==0.4.30"' in f.fix


def test_ed510_without_matrices_uses_jax_metadata():
    """jax 0.4.26's own metadata: minimum-jaxlib 0.4.20, and jaxlib may not be newer than jax."""
    snap = machine(frameworks=[fw("jax", "0.4.26", JAX_0426, build="cpu"), fw("jaxlib", "0.4.30", build="cpu")])
    assert ids(run(snap, matrices=None)) == [("ED510", "error")]
    snap = machine(frameworks=[fw("jax", "0.4.26", JAX_0426, build="cpu"), fw("jaxlib", "0.4.19", build="cpu")])
    f = run(snap, matrices=None)[0]
    assert "older" in f.message and "0.4.20" in f.message


def test_ed510_jaxlib_older_than_jax_requires():
    snap = machine(frameworks=[fw("jax", "0.4.30", JAX_0430, build="cpu"), fw("jaxlib", "0.4.26", build="cpu")])
    f = run(snap)[0]
    assert f.id == "ED510" and f.severity == "error" and "0.4.27" in f.message


def test_ed510_plugin_newer_than_jaxlib():
    """https://github.com/ma-gilles/recovar/issues/64 : "JAX plugin jax_cuda12_plugin version 0.9.2 is installed, but
    it is not compatible with the installed jaxlib version 0.9.0.1"."""
    fws = [fw("jax", "0.9.0.1"), fw("jaxlib", "0.9.0.1"), fw("jax-cuda12-plugin", "0.9.2", PLUGIN_092),
           fw("jax-cuda12-pjrt", "0.9.2")]
    snap = machine(driver="550.54.15", gpus=A100, frameworks=fws)
    found = run(snap)
    assert ids(found) == [("ED510", "error")]
    f = found[0]
    assert "jax-cuda12-plugin 0.9.2" in f.message and "jaxlib 0.9.0.1" in f.message
    assert any("jax-cuda12-plugin==0.9.0.1" in x and "jax-cuda12-pjrt==0.9.0.1" in x for x in f.fix)


def test_ed510_pjrt_out_of_step_with_plugin():
    fws = [fw("jax", "0.4.30", JAX_0430), fw("jaxlib", "0.4.30"), fw("jax-cuda12-plugin", "0.4.30", PLUGIN_0430),
           fw("jax-cuda12-pjrt", "0.4.31")]
    snap = machine(driver="550.54.15", gpus=A100, frameworks=fws)
    f = run(snap)[0]
    assert f.id == "ED510" and f.severity == "error"
    assert "jax-cuda12-pjrt 0.4.31" in f.message and "==0.4.30" in f.message
    assert '$ pip install "jax-cuda12-pjrt==0.4.30"' in f.fix


def test_ed510_plugin_without_pjrt():
    fws = [fw("jax", "0.4.30", JAX_0430), fw("jaxlib", "0.4.30"), fw("jax-cuda12-plugin", "0.4.30", PLUGIN_0430)]
    snap = machine(driver="550.54.15", gpus=A100, frameworks=fws)
    f = run(snap)[0]
    assert f.id == "ED510" and "without its PJRT" in f.message


def test_ed510_two_cuda_plugins():
    fws = [fw("jax", "0.9.2", JAX_092), fw("jaxlib", "0.9.2"), fw("jax-cuda12-plugin", "0.9.2", PLUGIN_092),
           fw("jax-cuda12-pjrt", "0.9.2"), fw("jax-cuda13-plugin", "0.9.2", PLUGIN13_092, cuda="13"),
           fw("jax-cuda13-pjrt", "0.9.2", cuda="13")]
    snap = machine(driver="580.65.06", gpus=["NVIDIA H100 80GB HBM3:9.0"], frameworks=fws)
    found = run(snap)
    assert ids(found) == [("ED510", "warning")]
    assert "jax-cuda12-plugin 0.9.2" in found[0].message and "jax-cuda13-plugin 0.9.2" in found[0].message


def test_ed510_unknown_jax_metadata_is_silent():
    """No Requires-Dist and no matrices row for this exact jax: nothing to judge."""
    snap = machine(frameworks=[fw("jax", "0.3.25", build="cpu"), fw("jaxlib", "0.4.30", build="cpu")])
    assert run(snap) == []


# ---------------------------------------------------------------------------------------------
# ED520
# ---------------------------------------------------------------------------------------------
def test_ed520_torchvision_built_for_another_torch():
    """https://github.com/pytorch/vision/issues/9174 : torch 2.6.0 left installed under torchvision 0.23.0
    (which requires torch==2.8.0): "operator torchvision::nms does not exist"."""
    tv = Framework("torchvision", "torchvision", "0.23.0", build="unknown", requires=["torch (==2.8.0)"])
    snap = machine(driver="570.124.04", gpus=["NVIDIA GeForce RTX 4090:8.9"],
                   frameworks=[torch("2.6.0", cuda="12.4"), tv])
    found = run(snap)
    assert ids(found) == [("ED520", "error")]
    f = found[0]
    assert "torchvision 0.23.0" in f.message and "torch==2.8.0" in f.message and "torch 2.6.0" in f.message
    assert "torchvision::nms" in f.message
    assert '$ pip install "torchvision==0.21.0"' in f.fix
    assert '$ pip install "torch==2.8.0" "torchvision==0.23.0"' in f.fix


def test_ed520_companion_pin_from_matrices_when_metadata_missing():
    tv = Framework("torchvision", "torchvision", "0.23.0", build="unknown")
    snap = machine(frameworks=[torch("2.6.0+cpu"), tv])
    f = run(snap)[0]
    assert f.id == "ED520" and "==2.8.0" in f.message
    assert any('"torchvision==0.21.0+cpu"' in x and "whl/cpu" in x for x in f.fix)


def test_ed520_cuda_major_mismatch():
    """https://github.com/deforum/deforum-stable-diffusion/issues/348 : "PyTorch has CUDA Version=12.1 and torchvision
    has CUDA Version=11.8" (torch 2.1.0+cu121 with torchvision 0.16.0+cu118)."""
    tv = Framework("torchvision", "torchvision", "0.16.0+cu118", build="cuda", cuda_version="11.8",
                   requires=["torch (==2.1.0)"])
    snap = machine(driver="535.104.05", gpus=["Tesla T4:7.5"], frameworks=[torch("2.1.0+cu121", cuda="12.1"), tv])
    found = run(snap)
    assert ids(found) == [("ED520", "error")]
    f = found[0]
    assert "CUDA 12.1" in f.message and "CUDA 11.8" in f.message and "different CUDA major versions" in f.message
    assert '$ pip install "torchvision==0.16.0+cu121" --index-url https://download.pytorch.org/whl/cu121' in f.fix


def test_ed520_minor_cuda_difference_is_a_warning():
    tv = Framework("torchvision", "torchvision", "0.19.1+cu121", build="cuda", cuda_version="12.1",
                   requires=["torch (==2.4.1)"])
    snap = machine(frameworks=[torch("2.4.1+cu124", cuda="12.4"), tv])
    assert ids(run(snap)) == [("ED520", "warning")]


def test_ed520_cpu_torch_with_cuda_torchvision():
    tv = Framework("torchvision", "torchvision", "0.22.0+cu126", build="cuda", cuda_version="12.6",
                   requires=["torch==2.7.0"])
    snap = machine(frameworks=[torch("2.7.0+cpu"), tv])
    assert ids(run(snap)) == [("ED520", "error")]


@pytest.mark.parametrize("tv_version,requires,torch_version", [
    ("0.19.1+cu124", ["torch (==2.4.1)"], "2.4.1+cu124"),
    ("0.29.2", ["torch (>=2.14.0)"], "2.15.0"),  # since 0.29.1 torchvision asks torch>=2.14.0
])
def test_ed520_healthy(tv_version, requires, torch_version):
    build = "cuda" if "+cu" in tv_version else "unknown"
    tv = Framework("torchvision", "torchvision", tv_version, build=build, cuda_version="12.4" if build == "cuda" else None,
                   requires=requires)
    cuda = "12.4" if "+cu" in torch_version else None
    snap = machine(frameworks=[torch(torch_version, cuda=cuda), tv])
    assert run(snap) == []


def test_ed520_torchaudio_without_torch_pin_is_silent():
    """torchaudio 2.11.0's metadata names no torch requirement at all: nothing to judge."""
    ta = Framework("torchaudio", "torchaudio", "2.11.0", build="unknown", requires=[])
    snap = machine(frameworks=[torch("2.12.0", cuda="13.0"), ta])
    assert run(snap) == []
