"""Class 3: the libcuda the loader picks (ED120-ED122), modelled on public reports, with healthy counterparts."""
from __future__ import annotations

import json

from envdoctor.rules.libcuda import forward_compat_data, gpu_class
from envdoctor.snapshot import Library
from tests.cli_run import run
from tests.rules.helpers import by_id, check, serious
from tests.snapfactory import machine, torch

IDS = ("ED120", "ED121", "ED122", "ED013")


def lib(path, version, via):
    return Library(name="libcuda", path=path, version=version, via=via)


def box(gpu, kernel, libs, llp=(), frameworks=None, driver_cuda="12.2"):
    snap = machine(driver=kernel, driver_cuda=driver_cuda, gpus=[gpu],
                   frameworks=frameworks or [torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")],
                   libraries=libs, ld_library_path=llp)
    snap.driver.kernel_module_version = kernel
    return snap


def cli(tmp_path, snap):
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json")
    return proc, json.loads(proc.stdout)["findings"]


def test_bundled_rows_load():
    data = forward_compat_data()
    assert data["problems"] == []
    assert gpu_class("NVIDIA GeForce GTX 1080 Ti")[:2] == ("geforce-titan", False)
    assert gpu_class("NVIDIA A100-SXM4-80GB")[:2] == ("data-center", True)
    assert gpu_class("Tesla T4")[1] is True and gpu_class("NVIDIA H100 80GB HBM3")[1] is True
    assert {535, 580}.issubset(data["base_branch"])


def test_compat_libcuda_on_a_geforce_is_804(tmp_path):
    """https://github.com/NVIDIA/nvidia-docker/issues/1294: GeForce 1080 Ti, host driver 440.33.01 (CUDA 10.2), an
    image whose compat libcuda is newer: "CUDA Error: forward compatibility was attempted on non supported HW".
    (#1515: the host's cuda-compat-11-3 injected into the container on hardware forward compat does not serve.)
    Through the real CLI."""
    snap = box("NVIDIA GeForce GTX 1080 Ti:6.1", "440.33.01",
               [lib("/usr/local/cuda-11.3/compat/libcuda.so.465.19.01", "465.19.01", "LD_LIBRARY_PATH"),
                lib("/usr/lib/x86_64-linux-gnu/libcuda.so.440.33.01", "440.33.01", "ldconfig")],
               llp=["/usr/local/cuda-11.3/compat"], driver_cuda="10.2")
    proc, findings = cli(tmp_path, snap)
    assert proc.returncode == 1
    (f,) = [f for f in findings if f["id"] == "ED120"]
    assert f["severity"] == "error" and "804" in f["message"] and "GTX 1080 Ti" in f["message"]
    assert any("unset LD_LIBRARY_PATH" in x for x in f["fix"])
    assert not [f for f in findings if f["id"] == "ED121"]


def test_compat_libcuda_on_a_data_centre_gpu_over_an_lts_branch_is_healthy():
    """The supported case NVIDIA documents: an A100 on R535 with cuda-compat-12-8 (570.x libcuda)."""
    snap = box("NVIDIA A100-SXM4-80GB:8.0", "535.104.05",
               [lib("/usr/local/cuda-12.8/compat/libcuda.so.570.124.06", "570.124.06", "LD_LIBRARY_PATH")],
               llp=["/usr/local/cuda-12.8/compat"])
    assert serious(check(snap, IDS)) == []


def test_older_compat_libcuda_over_a_newer_module_is_803(tmp_path):
    """https://github.com/NVIDIA-NeMo/labs-molt/pull/44: forcing cuda-compat-13-0 (580.173.02) on a 595 host
    "gives CUDA error 803". Through the real CLI."""
    snap = box("NVIDIA H100 80GB HBM3:9.0", "595.45.04",
               [lib("/usr/local/cuda/compat/libcuda.so.580.173.02", "580.173.02", "ldconfig"),
                lib("/usr/lib/x86_64-linux-gnu/libcuda.so.595.45.04", "595.45.04", "ldconfig")],
               driver_cuda="13.2")
    proc, findings = cli(tmp_path, snap)
    (f,) = [f for f in findings if f["id"] == "ED121"]
    assert f["severity"] == "error" and "803" in f["message"] and "580.173.02" in f["message"]
    assert not [f for f in findings if f["id"] == "ED120"]


def test_the_drivers_own_libcuda_is_healthy():
    snap = box("NVIDIA GeForce RTX 4090:8.9", "550.54.15",
               [lib("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "550.54.15", "ldconfig")])
    assert serious(check(snap, IDS)) == []


def test_unknown_kernel_module_version_is_not_judged():
    snap = box("NVIDIA GeForce RTX 4090:8.9", "550.54.15",
               [lib("/usr/local/cuda-12.8/compat/libcuda.so.570.124.06", "570.124.06", "LD_LIBRARY_PATH")])
    snap.driver.kernel_module_version = None
    assert by_id(check(snap, IDS), "ED120") == [] and by_id(check(snap, IDS), "ED121") == []


def wsl(libs, frameworks, llp=()):
    snap = machine(driver="551.61", driver_cuda="12.4", gpus=["NVIDIA GeForce RTX 3060:8.6"], wsl=2,
                   frameworks=frameworks, libraries=libs, ld_library_path=llp)
    snap.driver.wsl_libcuda = "/usr/lib/wsl/lib/libcuda.so.1"
    return snap


def test_wsl_cudnn8_without_unversioned_libcuda(tmp_path):
    """https://github.com/facebookresearch/nougat/issues/115 (WSL 2, torch, "Could not load library
    libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file"); the cache lists only
    libcuda.so.1 (https://github.com/microsoft/WSL/issues/8587). Through the real CLI."""
    snap = wsl([lib("/usr/lib/wsl/lib/libcuda.so.1", "1", "ldconfig")],
               [torch("2.0.1+cu118", cuda="11.8", cudnn="8.7.0")])
    proc, findings = cli(tmp_path, snap)
    (f,) = [f for f in findings if f["id"] == "ED122"]
    assert f["severity"] == "error" and "libcudnn_cnn_infer.so.8" in f["message"]
    assert any("/usr/lib/wsl/lib" in x for x in f["fix"])


def test_wsl_with_wsl_lib_on_ld_library_path_is_healthy():
    snap = wsl([lib("/usr/lib/wsl/lib/libcuda.so", None, "LD_LIBRARY_PATH"),
                lib("/usr/lib/wsl/lib/libcuda.so.1", "1", "LD_LIBRARY_PATH")],
               [torch("2.0.1+cu118", cuda="11.8", cudnn="8.7.0")], llp=["/usr/lib/wsl/lib"])
    assert by_id(check(snap, IDS), "ED122") == []


def test_wsl_cudnn9_build_is_not_judged():
    snap = wsl([lib("/usr/lib/wsl/lib/libcuda.so.1", "1", "ldconfig")],
               [torch("2.5.1+cu124", cuda="12.4", cudnn="9.1.0")])
    assert by_id(check(snap, IDS), "ED122") == []


def test_compat_libcuda_of_a_branch_that_no_longer_drives_kepler(tmp_path):
    """https://github.com/NVIDIA/gpu-operator/issues/389: a Tesla K80 host on R470 (CUDA 11.4); the validator image
    carries the CUDA 11.6 compat libraries (an R510 libcuda), which the loader takes: the pods crashloop until the
    compat libs are removed ("only data center GPUs support it and in your case is Tesla K80" -- but the K80 is a
    data-centre GPU; what fails is that R510 no longer drives Kepler, whose last branch is R470). 470.141.03 and
    510.47.03 are the releases of those branches (the CUDA 11.6.0 driver), quoted as the vendor writes them.
    Through the real CLI."""
    snap = box("Tesla K80:3.7", "470.141.03",
               [lib("/usr/local/cuda-11.6/compat/libcuda.so.510.47.03", "510.47.03", "LD_LIBRARY_PATH"),
                lib("/usr/lib/x86_64-linux-gnu/libcuda.so.470.141.03", "470.141.03", "ldconfig")],
               llp=["/usr/local/cuda-11.6/compat"], driver_cuda="11.4",
               frameworks=[torch("1.12.1+cu116", cuda="11.6", cudnn="8.3.2")])
    proc, findings = cli(tmp_path, snap)
    assert proc.returncode == 1
    (f,) = [f for f in findings if f["id"] == "ED120"]
    assert f["severity"] == "error" and "R510" in f["message"] and "R470" in f["message"], f["message"]
    assert "470.141.03" in f["message"] and "470.141.3" not in json.dumps(f)  # verbatim, not re-formatted
    assert any("unset LD_LIBRARY_PATH" in x for x in f["fix"])
    assert not any("upgrade the host" in x.lower() for x in f["fix"])  # no newer branch drives a K80
    assert not [f for f in findings if f["id"] == "ED121"]


def test_compat_libcuda_on_a_kepler_of_its_own_branch_is_healthy():
    """The counterpart: a K80 on R450 with an R470 compat libcuda (both branches drive Kepler; R450 is a served
    long-term base)."""
    snap = box("Tesla K80:3.7", "450.80.02",
               [lib("/usr/local/cuda-11.4/compat/libcuda.so.470.42.01", "470.42.01", "LD_LIBRARY_PATH")],
               llp=["/usr/local/cuda-11.4/compat"], driver_cuda="11.0",
               frameworks=[torch("1.12.1+cu113", cuda="11.3", cudnn="8.3.2")])
    assert serious(check(snap, IDS)) == []


def test_mismatch_names_the_kernel_module_as_the_vendor_wrote_it(tmp_path):
    """A libcuda of another release over the module (ED121): the module's 510.108.03 is printed so, not 510.108.3
    (it was re-formatted from a parsed version). The release strings are NVIDIA's (R510's last datacentre driver,
    and an older 510 user space)."""
    snap = box("NVIDIA A100-SXM4-80GB:8.0", "510.108.03",
               [lib("/usr/lib/x86_64-linux-gnu/libcuda.so.510.47.03", "510.47.03", "ldconfig")],
               driver_cuda="11.6")
    proc, findings = cli(tmp_path, snap)
    (f,) = [f for f in findings if f["id"] == "ED121"]
    assert "510.108.03" in f["message"] and "510.108.3" not in json.dumps(findings)
    text = run("check", "--snapshot", str(tmp_path / "snap.json"))
    assert "510.108.03" in text.stdout and "510.108.3" not in text.stdout


def _conda_wsl(cudnn_dir):
    """pytorch/pytorch#85773's environment: WSL 2, `conda create -n torch pytorch torchvision torchaudio
    cudatoolkit=11.3 -c pytorch`; conda's torch 1.12.1 does not state its cuDNN, the env's cudnn package puts
    libcudnn.so.8 in $CONDA_PREFIX/lib."""
    from envdoctor.snapshot import Cudnn

    fw = torch("1.12.1", cuda="11.3")
    snap = wsl([lib("/usr/lib/wsl/lib/libcuda.so.1", "1", "ldconfig")], [fw])
    snap.python.kind, snap.python.prefix = "conda", "/home/user/miniconda3/envs/torch"
    snap.python.executable = "/home/user/miniconda3/envs/torch/bin/python"
    snap.cudnn = [Cudnn(version="8.3.2", kind="library", path=f"{cudnn_dir}/libcudnn.so.8.3.2")]
    return snap


def test_wsl_conda_env_with_its_own_cudnn8(tmp_path):
    """https://github.com/pytorch/pytorch/issues/85773: conda PyTorch in WSL 2 Ubuntu 22.04, "matrix multiply works"
    then "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file" on the
    first Conv2d. The cuDNN 8 is the conda environment's own, not a wheel's: ED122 missed it. Through the real CLI."""
    snap = _conda_wsl("/home/user/miniconda3/envs/torch/lib")
    proc, findings = cli(tmp_path, snap)
    (f,) = [f for f in findings if f["id"] == "ED122"]
    assert f["severity"] == "error" and "/home/user/miniconda3/envs/torch/lib/libcudnn.so.8.3.2" in f["message"]
    assert any("/usr/lib/wsl/lib" in x for x in f["fix"])


def test_wsl_conda_env_cudnn_elsewhere_is_not_its_own():
    """The counterpart: a libcudnn.so.8 outside the environment's lib is not what its build loads by RUNPATH."""
    snap = _conda_wsl("/opt/other/lib")
    assert by_id(check(snap, IDS), "ED122") == []
