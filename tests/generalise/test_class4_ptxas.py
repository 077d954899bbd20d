"""Class 4: the ptxas XLA runs (ED160-ED161), modelled on public reports, with healthy counterparts."""
from __future__ import annotations

import json

from envdoctor.rules.ptxas import xla_ptxas
from envdoctor.snapshot import Toolkit
from tests.cli_run import run
from tests.rules.helpers import by_id, check, serious
from tests.snapfactory import jax, machine, tensorflow

IDS = ("ED160", "ED161")
NVCC_PIN = "nvidia-cuda-nvcc-cu12>=12.6.85"


def jax_box(driver="560.35.03", driver_cuda="12.6", gpu="NVIDIA GeForce RTX 3090:8.6", toolkits=(), nvcc="12.6.85",
            gpu_env=None, version="0.4.38"):
    fws = jax(version, plugin="jax-cuda12-plugin", requires=[NVCC_PIN])
    return machine(driver=driver, driver_cuda=driver_cuda, gpus=[gpu], frameworks=fws, toolkits=toolkits,
                   packages={"nvidia-cuda-nvcc-cu12": nvcc} if nvcc else {}, gpu_env=gpu_env)


def cuda121_on_path():
    return Toolkit(path="/usr/local/cuda-12.1", version="12.1.66", nvcc="/usr/local/cuda-12.1/bin/nvcc",
                   found_by=["PATH"])


def test_system_ptxas_on_path_older_than_the_plugin_needs(tmp_path):
    """https://github.com/jax-ml/jax/issues/25718: CUDA 12.1 installed, its ptxas on PATH, `pip install -U
    "jax[cuda12]"`: "The system-installed ptxas binary (instead of pip-installed one) is used and jax throws an error".
    (#25344: the same shape with CUDA 12.2, "ptxas : Unsupported .version 8.4; current version is '8.2'".)
    Through the real CLI."""
    snap = jax_box(toolkits=[cuda121_on_path()])
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED160"]
    assert f["severity"] == "error" and "12.1.66" in f["message"] and "PATH" in f["message"]
    assert any("off PATH" in x for x in f["fix"])


def test_the_wheels_ptxas_is_healthy():
    """The same machine without a system CUDA on PATH: XLA takes the nvidia-cuda-nvcc wheel's ptxas."""
    snap = jax_box()
    assert xla_ptxas(snap).via == "nvidia-cuda-nvcc wheel"
    assert check(snap, IDS) == []


def test_xla_flags_data_dir_wins_over_path():
    good = Toolkit(path="/opt/cuda-12.8", version="12.8.93", found_by=["CUDA_HOME"])
    snap = jax_box(toolkits=[cuda121_on_path(), good], gpu_env={"XLA_FLAGS": "--xla_gpu_cuda_data_dir=/opt/cuda-12.8"})
    assert xla_ptxas(snap).via == "XLA_FLAGS"
    assert serious(check(snap, IDS)) == []


def test_ptxas_older_than_the_gpu(tmp_path):
    """https://github.com/jax-ml/jax/issues/13570: RTX 4080 (compute capability 8.9), "Falling back to the CUDA driver
    for PTX compilation; ptxas does not support CC 8.9". Here a CUDA 11.6 ptxas on PATH (8.9 needs CUDA 11.8)."""
    tk = Toolkit(path="/usr/local/cuda-11.6", version="11.6.124", found_by=["PATH"])
    fws = jax("0.4.1", plugin=None)
    fws[1].build, fws[1].cuda_version = "cuda", "11"
    snap = machine(driver="525.60.11", driver_cuda="12.0", gpus=["NVIDIA GeForce RTX 4080:8.9"], frameworks=fws,
                   toolkits=[tk])
    (f,) = by_id(check(snap, IDS), "ED160")
    assert "8.9" in f.message and "11.8" in f.message


def test_tensorflow_build_cuda_newer_than_path_ptxas():
    """TensorFlow's XLA has the same search (https://github.com/jax-ml/jax/issues/6799 shows the TF asm_compiler's
    "Unsupported .version 6.0; current version is '5.0'" from an old ptxas)."""
    tk = Toolkit(path="/usr/local/cuda-11.8", version="11.8.89", found_by=["PATH"])
    snap = machine(driver="545.23.08", driver_cuda="12.3", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                   frameworks=[tensorflow("2.15.0", cuda="12.2", cudnn="8.9")], toolkits=[tk])
    (f,) = by_id(check(snap, IDS), "ED160")
    assert f.area == "tensorflow" and "11.8.89" in f.message


def test_ptxas_newer_than_the_driver_is_info():
    """https://github.com/jax-ml/jax/issues/19821: driver 535.154.05 (CUDA 12.2), ptxas 12.3.107: "XLA is disabling
    parallel compilation, which may slow down compilation"; the array is computed on the GPU."""
    snap = jax_box(driver="535.154.05", driver_cuda="12.2", nvcc="12.3.107")
    snap.python.frameworks[2].requires = ["nvidia-cuda-nvcc-cu12>=12.1.105"]
    out = check(snap, IDS)
    assert serious(out) == []
    (f,) = by_id(out, "ED161")
    assert f.severity == "info" and "12.3.107" in f.message


def test_cpu_machine_is_not_judged():
    snap = jax_box(toolkits=[cuda121_on_path()])
    snap.gpus, snap.driver.state = [], "not_installed"
    assert check(snap, IDS) == []


def _old_jaxlib_box(jax_version, jaxlib_version):
    """An old-style jaxlib that carries its CUDA (+cuda11), a CUDA 11.8 toolkit's ptxas on PATH, driver 515.65.01
    (nvidia-smi 'CUDA Version: 11.7'): jax-ml/jax#16063's machine."""
    tk = Toolkit(path="/usr/local/cuda-11.8", version="11.8.89", found_by=["PATH"])
    fws = jax(jax_version, jaxlib=jaxlib_version, plugin=None)
    fws[1].build, fws[1].cuda_version, fws[1].cudnn_version = "cuda", "11.8", "8.6"
    return machine(driver="515.65.01", driver_cuda="11.7", gpus=["NVIDIA RTX A6000:8.6"], frameworks=fws,
                   toolkits=[tk])


def test_ptxas_newer_than_the_driver_was_fatal_for_old_jaxlib(tmp_path):
    """https://github.com/jax-ml/jax/issues/16063: jax 0.4.8, jaxlib 0.4.7, driver 515.65.01 (CUDA 11.7), a CUDA 11.8
    ptxas: "The CUDA linking API did not work. Please use XLA_FLAGS=--xla_gpu_force_compilation_parallelism=1 to
    bypass it ... newer than toolkit (118 vs 117)" and `jnp.arange(10)` fails. Today's jaxlib only compiles
    serially (ED161 info, above); this one is an error, by the release's row in matrices/xla_ptxas.toml. Through
    the real CLI."""
    snap = _old_jaxlib_box("0.4.8", "0.4.7")
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json")
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED161"]
    assert f["severity"] == "error" and "The CUDA linking API did not work" in f["message"], f
    assert "jaxlib 0.4.7" in f["message"]
    assert any("XLA_FLAGS=--xla_gpu_force_compilation_parallelism=1" in x for x in f["fix"])
    assert proc.returncode == 1


def test_ptxas_newer_than_the_driver_between_the_rows_is_a_doubt():
    """A jaxlib between the two releases the data has reports for: a warning that says it is not known which."""
    (f,) = by_id(check(_old_jaxlib_box("0.4.16", "0.4.16"), IDS), "ED161")
    assert f.severity == "warning" and "not in envdoctor's data" in f.message
