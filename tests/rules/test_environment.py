"""ED600-ED602 (envdoctor/rules/environment.py): the loader path against the frameworks' wheels, and the toolkits."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from envdoctor.snapshot import Library, Toolkit
from tests.rules.helpers import by_id, serious  # noqa: F401
from tests.rules.helpers import check as _check
from tests.snapfactory import machine, tensorflow, torch

FIX = Path(__file__).resolve().parent.parent / "fixtures"
MINE = ["ED6"]
TORCH22_CUDNN = 'nvidia-cudnn-cu12==8.9.2.26; platform_system == "Linux" and platform_machine == "x86_64"'


def check(snap, only=MINE):
    return _check(snap, only)


def nvcc_release(name):
    """'release 10.1, V10.1.243' from a real `nvcc --version` fixture -> '10.1.243'."""
    return re.search(r"release [0-9.]+, V([0-9.]+)", (FIX / "cuda" / name).read_text()).group(1)


def a100(**kw):
    return machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"], **kw)


# -- ED600 ------------------------------------------------------------------------------------------------
def test_older_cudnn_on_ld_library_path_breaks_bundled_cudnn():
    """https://github.com/pytorch/pytorch/issues/80637 - torch 1.12 cu113 (bundled cuDNN 8.3.2) with a cuDNN 8.0.3
    directory first on LD_LIBRARY_PATH: 'compiled against (8, 3, 2) but linked against (8, 0, 3)'."""
    ldp = (FIX / "machine" / "ld_library_path_pytorch_80637.txt").read_text().strip().split(":")
    cudnn_dir = ldp[0]
    snap = a100(frameworks=[torch("1.12.0+cu113", cuda="11.3", cudnn="8.3.2")], ld_library_path=ldp,
                libraries=[Library("libcudnn", f"{cudnn_dir}/libcudnn.so.8.0.3", "8.0.3", "LD_LIBRARY_PATH"),
                           Library("libcudart", "/public/apps/cuda/11.0/lib64/libcudart.so.11.0.221", "11.0.221",
                                   "LD_LIBRARY_PATH")])
    fs = check(snap)
    f = by_id(fs, "ED600")[0]
    assert f.severity == "error"
    assert "8.0.3" in f.message and "8.3.2" in f.message and cudnn_dir in f.message
    assert f.fix[0] == "$ export LD_LIBRARY_PATH=" + ":".join(ldp[1:])
    assert len(by_id(fs, "ED600")) == 1  # torch 1.12 brings no CUDA runtime wheel: libcudart is not judged


def test_cudnn8_from_a_system_toolkit_mixes_sub_libraries():
    """https://github.com/pytorch/pytorch/issues/119989 - torch 2.2 with nvidia-cudnn-cu12 8.9.2.26 and the cuDNN 8 in
    /usr/local/cuda-12.3/lib64 on LD_LIBRARY_PATH: 'Could not load library libcudnn_cnn_train.so.8 ... undefined
    symbol'. (The report does not print the system cuDNN's patch level; 8.9.7 is the 8.9 release for CUDA 12.3.)"""
    err = (FIX / "machine" / "cudnn_mix_error_pytorch_119989.txt").read_text()
    d = re.search(r"Error: (\S+)/libcudnn_cnn_train\.so\.8", err).group(1)
    snap = a100(frameworks=[torch("2.2.0", cuda="12.1", requires=[TORCH22_CUDNN])],
                packages={"nvidia-cudnn-cu12": "8.9.2.26"}, ld_library_path=[d],
                libraries=[Library("libcudnn", f"{d}/libcudnn.so.8.9.7", "8.9.7", "LD_LIBRARY_PATH"),
                           Library("libcudnn_cnn_train", f"{d}/libcudnn_cnn_train.so.8.9.7", "8.9.7", "LD_LIBRARY_PATH")])
    snap.python.frameworks[0].location = "/home/user/venv/lib/python3.11/site-packages/torch"
    f = by_id(check(snap), "ED600")[0]
    assert f.severity == "error"
    assert "8.9.7" in f.message and "8.9.2.26" in f.message and "nvidia-cudnn-cu12" in f.message
    assert "torch 2.2.0" in f.message and "sub-libraries" in f.message
    assert f.fix[0] == "$ unset LD_LIBRARY_PATH"
    assert ("Or, if that directory must stay: $ export LD_LIBRARY_PATH=/home/user/venv/lib/python3.11/site-packages/"
            "nvidia/cudnn/lib:$LD_LIBRARY_PATH") in f.fix


def test_other_major_cudnn_on_path_is_only_info():
    """A cuDNN 8.9.7 in /usr/local/cuda/lib64 next to torch 2.4's nvidia-cudnn-cu12 9.1.0.70: another soname, torch
    does not load it (the case pytorch/pytorch#119989 was closed with: fixed by cuDNN 9)."""
    snap = a100(frameworks=[torch("2.4.0", cuda="12.1", requires=["nvidia-cudnn-cu12==9.1.0.70; platform_system == \"Linux\""])],
                packages={"nvidia-cudnn-cu12": "9.1.0.70"}, ld_library_path=["/usr/local/cuda/lib64"],
                libraries=[Library("libcudnn", "/usr/local/cuda/lib64/libcudnn.so.8.9.7", "8.9.7", "LD_LIBRARY_PATH")])
    fs = check(snap)
    assert [f.severity for f in by_id(fs, "ED600")] == ["info"]
    assert "8.9.7" in fs[0].message and "9.1.0.70" in fs[0].message
    assert serious(fs) == []


def test_ld_preload_of_another_major_is_a_warning():
    snap = a100(frameworks=[torch("2.4.0", cuda="12.1", requires=["nvidia-cudnn-cu12==9.1.0.70"])],
                packages={"nvidia-cudnn-cu12": "9.1.0.70"})
    snap.loader.ld_preload = ["/usr/local/cuda-11.8/lib64/libcudnn.so.8.6.0"]
    snap.loader.libraries = [Library("libcudnn", "/usr/local/cuda-11.8/lib64/libcudnn.so.8.6.0", "8.6.0", "LD_PRELOAD")]
    f = by_id(check(snap), "ED600")[0]
    assert f.severity == "warning" and "LD_PRELOAD" in f.message
    assert f.fix[0] == "$ unset LD_PRELOAD"


def test_newer_cuda_runtime_same_major_is_a_warning():
    snap = a100(frameworks=[torch("2.1.2", cuda="12.1", requires=["nvidia-cuda-runtime-cu12==12.1.105; platform_system == \"Linux\""])],
                packages={"nvidia-cuda-runtime-cu12": "12.1.105"},
                ld_library_path=["/usr/local/cuda-12.4/lib64", "/opt/other/lib"],
                libraries=[Library("libcudart", "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127", "12.4.127", "LD_LIBRARY_PATH")])
    f = by_id(check(snap), "ED600")[0]
    assert f.severity == "warning" and "12.4.127" in f.message and "newer" in f.message
    assert f.fix[0] == "$ export LD_LIBRARY_PATH=/opt/other/lib"


def test_matching_system_toolkit_on_the_path_is_fine():
    snap = a100(frameworks=[torch("2.1.2", cuda="12.1", requires=["nvidia-cuda-runtime-cu12==12.1.105", TORCH22_CUDNN])],
                packages={"nvidia-cuda-runtime-cu12": "12.1.105", "nvidia-cudnn-cu12": "8.9.2.26"},
                ld_library_path=["/usr/local/cuda-12.1/lib64"],
                libraries=[Library("libcudart", "/usr/local/cuda-12.1/lib64/libcudart.so.12.1.105", "12.1.105", "LD_LIBRARY_PATH"),
                           Library("libcudnn", "/usr/local/cuda-12.1/lib64/libcudnn.so.8.9.2", "8.9.2", "LD_LIBRARY_PATH")])
    assert check(snap) == []


def test_wheel_directory_first_on_the_path_is_fine():
    """https://github.com/pytorch/pytorch/issues/104591 - the wheel's own lib directories put on LD_LIBRARY_PATH first."""
    site = "/opt/conda/lib/python3.10/site-packages"
    snap = a100(frameworks=[torch("2.1.0", cuda="11.8", requires=["nvidia-cudnn-cu11==8.7.0.84"])],
                packages={"nvidia-cudnn-cu11": "8.7.0.84"},
                ld_library_path=[f"{site}/nvidia/cudnn/lib", "/usr/local/cuda/lib64"],
                libraries=[Library("libcudnn", f"{site}/nvidia/cudnn/lib/libcudnn.so.8", "8", "LD_LIBRARY_PATH"),
                           Library("libcudnn", "/usr/local/cuda/lib64/libcudnn.so.8.9.0", "8.9.0", "LD_LIBRARY_PATH")])
    assert check(snap) == []


def test_major_only_version_is_unknown():
    snap = a100(frameworks=[torch("2.2.0", cuda="12.1", requires=[TORCH22_CUDNN])], packages={"nvidia-cudnn-cu12": "8.9.2.26"},
                ld_library_path=["/usr/local/cuda/lib64"],
                libraries=[Library("libcudnn", "/usr/local/cuda/lib64/libcudnn.so.8", "8", "LD_LIBRARY_PATH")])
    assert check(snap) == []


def test_cpu_builds_and_empty_loader_are_silent():
    snap = machine(frameworks=[torch("2.2.0+cpu")], ld_library_path=["/usr/local/cuda/lib64"],
                   libraries=[Library("libcudnn", "/usr/local/cuda/lib64/libcudnn.so.8.9.7", "8.9.7", "LD_LIBRARY_PATH")])
    assert check(snap) == []
    assert check(a100(frameworks=[torch("2.2.0", cuda="12.1", requires=[TORCH22_CUDNN])])) == []


# -- ED601 ------------------------------------------------------------------------------------------------
def _tk(path, version, found_by=(), default=False):
    return Toolkit(path=path, version=version, version_source="nvcc", nvcc=f"{path}/bin/nvcc",
                   found_by=list(found_by), is_default=default)


def test_default_toolkit_not_the_one_tensorflow_needs():
    """https://github.com/tensorflow/tensorflow/issues/44307 - tensorflow 2.3 (built for CUDA 10.1, cuDNN 7.6) with
    CUDA 10.1 and 11.1 installed and PATH/LD_LIBRARY_PATH exported for cuda-11.1."""
    snap = a100(frameworks=[tensorflow("2.3.0", cuda="10.1", cudnn="7.6")],
                toolkits=[_tk("/usr/local/cuda-11.1", "11.1.105", ["PATH"], default=True),
                          _tk("/usr/local/cuda-10.1", "10.1.243")])
    f = by_id(check(snap), "ED601")[0]
    assert f.severity == "warning"
    assert "tensorflow 2.3.0" in f.message and "CUDA 10.1" in f.message and "11.1.105" in f.message
    assert f.fix[:2] == ["$ export CUDA_HOME=/usr/local/cuda-10.1", "$ export PATH=/usr/local/cuda-10.1/bin:$PATH"]


def test_default_toolkit_mismatch_is_info_when_the_framework_brings_cuda_wheels():
    tf = tensorflow("2.15.0", cuda="12.2", cudnn="8.9",
                    requires=['nvidia-cuda-runtime-cu12==12.2.140; extra == "and-cuda"',
                              'nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"'])
    snap = a100(frameworks=[tf], packages={"nvidia-cuda-runtime-cu12": "12.2.140", "nvidia-cudnn-cu12": "8.9.4.25"},
                toolkits=[_tk("/usr/local/cuda-11.8", "11.8.89", ["PATH", "/usr/local/cuda"], default=True),
                          _tk("/usr/local/cuda-12.2", "12.2.140")])
    f = by_id(check(snap), "ED601")[0]
    assert f.severity == "info"
    assert "$ sudo update-alternatives --config cuda   (Debian/Ubuntu CUDA packages: which toolkit /usr/local/cuda points to)" in f.fix


def test_one_toolkit_or_a_matching_default_is_silent():
    tf = tensorflow("2.3.0", cuda="10.1", cudnn="7.6")
    assert check(a100(frameworks=[tf], toolkits=[_tk("/usr/local/cuda-11.1", "11.1.105", ["PATH"], True)])) == []
    assert check(a100(frameworks=[tf], toolkits=[_tk("/usr/local/cuda-10.1", "10.1.243", ["PATH"], True),
                                                 _tk("/usr/local/cuda-11.1", "11.1.105")])) == []


# -- ED602 ------------------------------------------------------------------------------------------------
def test_nvcc_major_differs_from_torch():
    """https://github.com/pytorch/pytorch/issues/73047 - torch 1.10.2 built for CUDA 11.3, Ubuntu 20.04's nvcc 10.1
    (/usr/bin/nvcc, so CUDA_HOME resolves to /usr): 'The detected CUDA version (10.1) mismatches ... (11.3)'."""
    snap = a100(frameworks=[torch("1.10.2", cuda="11.3")],
                toolkits=[_tk("/usr", nvcc_release("nvcc_10.1.txt"), ["PATH"], default=True)])
    f = by_id(check(snap), "ED602")[0]
    assert f.severity == "warning"
    assert "nvcc 10.1" in f.message and "CUDA 11.3" in f.message and "torch 1.10.2" in f.message
    assert "The detected CUDA version (10.1) mismatches the version that was used to compile PyTorch (11.3)" in f.message
    assert any("cuda-toolkit-archive" in s for s in f.fix)


def test_nvcc_mismatch_fix_switches_to_an_installed_matching_toolkit():
    """https://github.com/vllm-project/vllm/issues/1453 - nvcc 11.8 against torch built for CUDA 12.1."""
    snap = a100(frameworks=[torch("2.1.0", cuda="12.1")],
                toolkits=[_tk("/usr/local/cuda-11.8", "11.8.89", ["CUDA_HOME", "PATH"], default=True),
                          _tk("/usr/local/cuda-12.1", "12.1.105")])
    f = by_id(check(snap), "ED602")[0]
    assert "found via CUDA_HOME" in f.message
    assert f.fix == ["$ export CUDA_HOME=/usr/local/cuda-12.1", "$ export PATH=/usr/local/cuda-12.1/bin:$PATH"]


def test_nvcc_mismatch_in_conda_env_offers_conda_nvcc():
    snap = a100(frameworks=[torch("2.1.0", cuda="12.1")], toolkits=[_tk("/usr/local/cuda-11.8", "11.8.89", ["PATH"], True)])
    snap.python.kind = "conda"
    f = by_id(check(snap), "ED602")[0]
    assert "$ conda install -c nvidia cuda-nvcc=12.1" in f.fix


def test_nvcc_minor_difference_is_info():
    """https://github.com/open-mmlab/OpenPCDet/issues/1275 - nvcc 11.8 with torch 1.13.1 (CUDA 11.7)."""
    snap = a100(frameworks=[torch("1.13.1", cuda="11.7")], toolkits=[_tk("/usr/local/cuda-11.8", "11.8.89", ["PATH"], True)])
    fs = check(snap)
    assert [f.severity for f in by_id(fs, "ED602")] == ["info"]
    assert serious(fs) == []


@pytest.mark.parametrize("tk_version", ["12.1.105", "12.1.1"])
def test_matching_nvcc_is_silent(tk_version):
    snap = a100(frameworks=[torch("2.1.2", cuda="12.1")], toolkits=[_tk("/usr/local/cuda-12.1", tk_version, ["PATH"], True)])
    assert check(snap) == []


def test_nvcc_unknown_or_cpu_torch_is_silent():
    assert check(a100(frameworks=[torch("2.1.2", cuda="12.1")], toolkits=[_tk("/usr/local/cuda", None, ["PATH"], True)])) == []
    assert check(machine(frameworks=[torch("2.1.2+cpu")], toolkits=[_tk("/usr/local/cuda-11.8", "11.8.89", ["PATH"], True)])) == []


def test_conda_torch_with_the_environments_own_cudnn_is_not_judged():
    """conda's torch takes cuDNN from $CONDA_PREFIX/lib (not bundled): a newer 8.x there is the one it is meant to use."""
    snap = a100(frameworks=[torch("2.1.2", cuda="12.1", cudnn="8.9.2")], ld_library_path=["/opt/conda/envs/ml/lib"],
                libraries=[Library("libcudnn", "/opt/conda/envs/ml/lib/libcudnn.so.8.9.7", "8.9.7", "LD_LIBRARY_PATH")])
    snap.python.kind, snap.python.prefix = "conda", "/opt/conda/envs/ml"
    assert check(snap) == []


@pytest.mark.parametrize("name", ["Nvidia_CUDNN.cu12", "nvidia-cudnn-cu12", "jax_cuda12_plugin", "Torch", "a-_.b"])
def test_canonical_name_agrees_with_packaging(name):
    from packaging.utils import canonicalize_name

    from envdoctor.facts.pins import canonical_name, requirement

    assert canonical_name(name) == canonicalize_name(name)
    assert requirement("Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70) ; extra == 'x'").name == "nvidia-cudnn-cu12"
    assert requirement("garbage ((") is None
