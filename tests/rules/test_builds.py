"""ED400 (CPU build on a GPU machine), ED401 (build for the other GPU vendor), ED410 (no GPU build for the platform)."""
from __future__ import annotations

import re

import pytest
from packaging.version import Version

from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules, select_rules
from envdoctor.snapshot import Framework
from tests.snapfactory import machine, tensorflow, torch

M = load_matrices()


def run(snap, only=("ED4",), matrices=M):
    return run_rules(Context(snap, matrices), select_rules(only=list(only)))


def ids(findings):
    return [(f.id, f.severity) for f in findings]


def jax_cpu(version):
    return [Framework("jax", "jax", version, build="cpu"), Framework("jaxlib", "jaxlib", version, build="cpu")]


# ---------------------------------------------------------------------------------------------
# ED400
# ---------------------------------------------------------------------------------------------
def test_ed400_windows_cpu_torch_with_rtx_4080():
    """https://github.com/pytorch/pytorch/issues/122924 : Windows 11, torch 2.2.2 ("CUDA used to build PyTorch: Could
    not collect"), NVIDIA GeForce RTX 4080 Laptop GPU, driver 551.86 -> cuda is not available."""
    snap = machine(driver="551.86", driver_cuda="12.4", gpus=["NVIDIA GeForce RTX 4080 Laptop GPU"], system="Windows",
                   machine_arch="AMD64", python="3.10.13", frameworks=[torch("2.2.2")])
    found = run(snap)
    assert ids(found) == [("ED400", "warning")]
    f = found[0]
    assert "torch 2.2.2" in f.message and "RTX 4080" in f.message and "551.86" in f.message
    cmd = next(x for x in f.fix if x.startswith("$ pip install"))
    assert '"torch==2.2.2+cu121"' in cmd and "--index-url https://download.pytorch.org/whl/cu121" in cmd


def test_ed400_fix_respects_the_driver():
    """Driver 470.57.02 runs CUDA 11.x (minor-version compatibility) but not 12.x: the cu118 build, not cu121."""
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla T4:7.5"], frameworks=[torch("2.2.2+cpu")])
    f = next(f for f in run(snap) if f.id == "ED400")
    cmd = next(x for x in f.fix if x.startswith("$ pip install"))
    assert "+cu118" in cmd and "whl/cu118" in cmd
    var = re.search(r"\+(cu\d+)", cmd).group(1)
    assert M.driver_runs_cuda("470.57.02", M.torch_variant("2.2.2", var).cuda)


def test_ed400_fix_includes_matching_companions():
    tv = Framework("torchvision", "torchvision", "0.17.2+cpu", build="cpu")
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[torch("2.2.2+cpu"), tv])
    f = next(f for f in run(snap) if f.id == "ED400")
    cmd = next(x for x in f.fix if x.startswith("$ pip install"))
    assert '"torchvision==0.17.2+cu121"' in cmd


def test_ed400_fix_respects_the_gpu_arch():
    """Tesla K80 (sm_37): of torch 2.2's CUDA builds only cu118 still ships sm_37 kernels."""
    snap = machine(driver="470.57.02", gpus=["Tesla K80:3.7"], frameworks=[torch("2.2.2+cpu")])
    f = next(f for f in run(snap) if f.id == "ED400")
    cmd = next(x for x in f.fix if x.startswith("$ pip install"))
    var = re.search(r"\+(cu\d+)", cmd).group(1)
    assert M.torch_variant("2.2.2", var).runs_on_cc("3.7") is True


def test_ed400_no_build_covers_the_gpu():
    """Tesla K40 (sm_35): no CUDA build of torch 2.2 has kernels for it, so no command is offered."""
    snap = machine(driver="470.57.02", gpus=["Tesla K40m:3.5"], frameworks=[torch("2.2.2+cpu")])
    f = next(f for f in run(snap) if f.id == "ED400")
    assert not [x for x in f.fix if x.startswith("$ ")]


def test_ed400_tensorflow_cpu_on_linux_gpu():
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[tensorflow("2.15.0", dist="tensorflow-cpu")])
    f = next(f for f in run(snap) if f.id == "ED400")
    assert f.severity == "warning" and "tensorflow-cpu 2.15.0" in f.message
    assert f.fix[:2] == ["$ pip uninstall -y tensorflow-cpu", '$ pip install "tensorflow[and-cuda]==2.15.0"']


def test_ed400_tensorflow_cpu_before_and_cuda_existed():
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[tensorflow("2.12.0", dist="tensorflow-cpu")])
    f = next(f for f in run(snap) if f.id == "ED400")
    rel = M.tf_release("2.12.0")
    assert '$ pip install "tensorflow==2.12.0"' in f.fix
    assert any(f"CUDA {rel.cuda} and cuDNN {rel.cudnn}" in x for x in f.fix)


@pytest.mark.parametrize("driver,gpu,version,major", [
    ("535.104.05", "NVIDIA A100-SXM4-80GB:8.0", "0.4.30", 12),  # 0.4.30 has only the cuda12 plugin
    ("580.65.06", "NVIDIA H100 80GB HBM3:9.0", "0.8.3", 13),  # driver runs CUDA 13, GPU >= 7.5
    ("580.65.06", "Tesla V100-SXM2-16GB:7.0", "0.8.3", 12),  # CUDA 13 plugin needs cc >= 7.5
    ("535.104.05", "NVIDIA H100 80GB HBM3:9.0", "0.8.3", 12),  # driver below CUDA 13's floor
])
def test_ed400_jax_without_plugin(driver, gpu, version, major):
    snap = machine(driver=driver, gpus=[gpu], frameworks=jax_cpu(version))
    f = next(f for f in run(snap) if f.id == "ED400")
    assert f"jax {version}" in f.message
    assert f'$ pip install "jax[cuda{major}]=={version}"' in f.fix
    pl = M.jax_release(version).plugins[f"cuda{major}"]
    assert Version(driver) >= Version(pl.driver_min)


def test_ed400_cpu_machine_with_cpu_builds_is_silent():
    snap = machine(frameworks=[torch("2.4.1+cpu"), tensorflow("2.15.0", dist="tensorflow-cpu")] + jax_cpu("0.4.30"))
    assert run(snap, only=["ED4"]) == []


def test_ed400_gpu_builds_are_silent():
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.4.1+cu124", cuda="12.4"), tensorflow("2.15.0", cuda="12.2", cudnn="8")])
    assert run(snap) == []


def test_ed400_unknown_build_is_silent():
    fw = torch("2.4.1")
    fw.build = "unknown"
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[fw])
    assert run(snap) == []


def test_ed400_without_matrices_still_warns_but_offers_no_guess():
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[torch("2.2.2+cpu")])
    f = next(f for f in run(snap, matrices=None) if f.id == "ED400")
    assert f.severity == "warning"
    assert not [x for x in f.fix if x.startswith("$ ")]


# ---------------------------------------------------------------------------------------------
# ED401
# ---------------------------------------------------------------------------------------------
def test_ed401_cuda_torch_on_rocm_machine():
    snap = machine(frameworks=[torch("2.4.1+cu121", cuda="12.1")])
    snap.rocm.installed, snap.rocm.version, snap.rocm.gpus = True, "6.1.2", ["AMD Instinct MI210"]
    f = next(f for f in run(snap) if f.id == "ED401")
    assert f.severity == "warning" and "torch 2.4.1+cu121" in f.message and "MI210" in f.message
    assert any('"torch==2.4.1+rocm6.1"' in x and "whl/rocm6.1" in x for x in f.fix)


def test_ed401_rocm_torch_on_nvidia_machine():
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[torch("2.4.1+rocm6.1", rocm="6.1")])
    f = next(f for f in run(snap) if f.id == "ED401")
    assert "ROCm" in f.message and any("+cu124" in x for x in f.fix)


# ---------------------------------------------------------------------------------------------
# ED410
# ---------------------------------------------------------------------------------------------
def test_ed410_tensorflow_212_on_native_windows():
    """https://github.com/tensorflow/tensorflow/issues/60237 : TF 2.12.0 on Windows 10, GTX 1050 Ti, "GPU is NOT
    AVAILABLE"; 2.10 was the last release with GPU support on native Windows."""
    snap = machine(driver="531.41", driver_cuda="12.1", gpus=["NVIDIA GeForce GTX 1050 Ti"], system="Windows",
                   machine_arch="AMD64", python="3.10.10", frameworks=[tensorflow("2.12.0")])
    found = run(snap)
    assert ids(found) == [("ED410", "warning")]  # not also ED400
    f = found[0]
    assert "2.12.0" in f.message and "native Windows" in f.message and "2.10" in f.message
    assert "$ wsl --install" in f.fix
    assert '$ pip install "tensorflow<2.11"' in f.fix


def test_ed410_tensorflow_210_on_windows_is_fine():
    snap = machine(driver="531.41", gpus=["NVIDIA GeForce GTX 1050 Ti"], system="Windows", machine_arch="AMD64",
                   frameworks=[tensorflow("2.10.1", cuda="64_112", cudnn="64_8")])
    assert not [f for f in run(snap) if f.id == "ED410"]


def test_ed410_jax_on_native_windows():
    """https://github.com/jax-ml/jax/issues/17634 : `pip install jax[cuda12_pip]` on Windows ends with jax 0.4.14 and
    "No GPU/TPU found, falling back to CPU"."""
    snap = machine(driver="537.13", gpus=["NVIDIA GeForce RTX 3060"], system="Windows", machine_arch="AMD64",
                   python="3.10.11", frameworks=jax_cpu("0.4.14"))
    found = run(snap)
    assert ids(found) == [("ED410", "warning")]
    assert "jax 0.4.14" in found[0].message and "$ wsl --install" in found[0].fix


def test_ed410_windows_intent_without_gpu_is_info():
    snap = machine(system="Windows", machine_arch="AMD64", frameworks=[tensorflow("2.15.0")],
                   gpu_env={"CUDA_PATH": "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.2"})
    assert ids(run(snap)) == [("ED410", "info")]


def test_ed410_macos_with_intent_is_info_and_names_what_works():
    snap = machine(system="Darwin", machine_arch="arm64", frameworks=[torch("2.4.1"), tensorflow("2.15.0")],
                   packages={"nvidia-cudnn-cu12": "9.1.0.70"})
    found = run(snap)
    assert {f.severity for f in found} == {"info"}
    text = " ".join(f.message + " ".join(f.fix) for f in found)
    assert "MPS" in text and "$ pip install tensorflow-metal" in text


def test_ed410_macos_without_intent_is_silent():
    snap = machine(system="Darwin", machine_arch="arm64", frameworks=[torch("2.4.1"), tensorflow("2.15.0")])
    assert run(snap) == []
