"""Deployment runtimes: ONNX Runtime's CUDA provider (ED680/ED681), the TensorRT wheels' CUDA line (ED682),
torch's ONNX exporter prerequisites (ED683) -- on fake machines and fake venvs, through the real CLI."""
from __future__ import annotations

from pathlib import Path

from envdoctor.snapshot import Evidence, Framework
from tests import snapfactory as sf
from tests.cli_run import run
from tests.test_breadth import check_snapshot, findings
from tests.test_probe_pyenv import FakeVenv, ctx_for, run_probe, simple_metadata

R = Path(__file__).parent / "fixtures" / "runtimes"
H200 = ["NVIDIA H200:9.0"]


def _fix(name: str) -> str:
    return (R / name).read_text(encoding="utf-8")


def ort(dist: str, version: str, build: str, cuda=None, cudnn=None) -> Framework:
    return Framework("onnxruntime", dist, version, build=build, cuda_version=cuda, cudnn_version=cudnn,
                     evidence=[Evidence(f"file:/home/user/venv/lib/python3.11/site-packages/{dist}-{version}.dist-info/METADATA",
                                        f"Name: {dist}")])


def gpu_machine(*fws, driver="570.133.20", driver_cuda="12.8", packages=None, **kw):
    return sf.machine(driver=driver, driver_cuda=driver_cuda, gpus=H200, frameworks=list(fws), packages=packages, **kw)


def only(tmp_path, snap, rule_id):
    return [f for f in findings(check_snapshot(tmp_path, snap, "--only", rule_id)) if f["id"] == rule_id]


# -- the probe records the runtimes' dists and their Requires-Dist ------------------------------------------------

def test_probe_records_runtime_dists_with_requires(tmp_path):
    v = FakeVenv(tmp_path / "venv")
    v.dist("onnxruntime-1.30.0.dist-info", _fix("METADATA_onnxruntime-1.30.0"),
           {"onnxruntime/capi/build_and_package_info.py": _fix("build_and_package_info_onnxruntime_1.30.0.py")})
    v.dist("onnx-1.23.1.dist-info", _fix("METADATA_onnx-1.23.1"))
    v.dist("onnxscript-0.7.2.dist-info", _fix("METADATA_onnxscript-0.7.2"))
    # the meta-package's requirement on its CUDA line, as TensorRT's pip guide names the dists
    v.dist("tensorrt-10.13.3.9.dist-info", simple_metadata("tensorrt", "10.13.3.9", "tensorrt_cu13==10.13.3.9"))
    snap = run_probe(ctx_for(v.python))
    py = snap.python
    assert py.packages["onnx"] == "1.23.1" and py.packages["onnxscript"] == "0.7.2"
    assert py.runtime_requires["tensorrt"] == ["tensorrt_cu13==10.13.3.9"]
    assert any(line.startswith("onnx") for line in py.runtime_requires["onnxscript"])
    assert "numpy>=1.21.6" in py.runtime_requires["onnxruntime"]
    ortfw = snap.framework("onnxruntime")
    assert (ortfw.distribution, ortfw.version, ortfw.build) == ("onnxruntime", "1.30.0", "cpu")


# -- ED680: the CPU-only wheel, and both wheels together ------------------------------------------------------------

def test_both_onnxruntime_wheels_are_a_clash(tmp_path):
    snap = gpu_machine(ort("onnxruntime", "1.20.1", "cuda"), ort("onnxruntime-gpu", "1.21.0", "cuda"))
    fs = only(tmp_path, snap, "ED680")
    assert len(fs) == 1 and fs[0]["severity"] == "error"
    assert "onnxruntime 1.20.1, onnxruntime-gpu 1.21.0 are installed together" in fs[0]["message"]
    assert any("pip uninstall -y onnxruntime onnxruntime-gpu" in step for step in fs[0]["fix"])


def test_cpu_only_onnxruntime_on_a_gpu_machine(tmp_path):
    fs = only(tmp_path, gpu_machine(ort("onnxruntime", "1.30.0", "cpu")), "ED680")
    assert len(fs) == 1 and fs[0]["severity"] == "warning"
    assert "CUDAExecutionProvider is not available" in fs[0]["message"]
    no_gpu = sf.machine(frameworks=[ort("onnxruntime", "1.30.0", "cpu")])
    assert only(tmp_path, no_gpu, "ED680") == []


# -- ED681: the CUDA / cuDNN an onnxruntime-gpu needs ---------------------------------------------------------------

def test_onnxruntime_gpu_without_its_cudnn_major(tmp_path):
    # 1.19 is a CUDA 12 / cuDNN 9 build (ORT's table); the environment has torch's CUDA 11.8 / cuDNN 8 wheels only
    pk = {"nvidia-cuda-runtime-cu11": "11.8.89", "nvidia-cudnn-cu11": "8.7.0.84"}
    snap = gpu_machine(ort("onnxruntime-gpu", "1.19.2", "cuda"), sf.torch("2.3.1+cu118", cuda="11.8"), packages=pk)
    fs = only(tmp_path, snap, "ED681")
    assert len(fs) == 1 and fs[0]["severity"] == "warning"
    assert "needs CUDA 12.x and cuDNN 9.x" in fs[0]["message"]
    assert "CUDA 12 runtime (libcudart)" in fs[0]["message"] and "cuDNN 9" in fs[0]["message"]
    assert "onnxruntime.toml" in fs[0]["evidence"][0]["source"]
    # the same release with its wheels present: nothing to say
    pk.update({"nvidia-cuda-runtime-cu12": "12.4.127", "nvidia-cudnn-cu12": "9.1.0.70"})
    snap = gpu_machine(ort("onnxruntime-gpu", "1.19.2", "cuda"), packages=pk)
    assert only(tmp_path, snap, "ED681") == []
    # an older release is a cuDNN 8 build: cuDNN 9 does not serve it
    snap = gpu_machine(ort("onnxruntime-gpu", "1.16.3", "cuda"),
                       packages={"nvidia-cuda-runtime-cu11": "11.8.89", "nvidia-cudnn-cu12": "9.1.0.70"})
    fs = only(tmp_path, snap, "ED681")
    assert len(fs) == 1 and "cuDNN 8" in fs[0]["message"] and "libcudart" not in fs[0]["message"]


def test_onnxruntime_gpu_build_info_overrides_the_table_and_the_driver_is_judged(tmp_path):
    pk = {"nvidia-cuda-runtime-cu12": "12.4.127", "nvidia-cudnn-cu12": "9.1.0.70"}
    # a 470 driver runs CUDA 11.x at most: a CUDA 12 build cannot load its provider
    snap = gpu_machine(ort("onnxruntime-gpu", "1.21.0", "cuda", cuda="12.2"), driver="470.256.02",
                       driver_cuda="11.4", packages=pk)
    fs = only(tmp_path, snap, "ED681")
    assert len(fs) == 1 and fs[0]["severity"] == "error" and "cannot run it" in fs[0]["message"]
    assert fs[0]["evidence"][0]["source"].startswith("file:")  # the wheel's own record, not the table


# -- ED682: TensorRT's CUDA line ------------------------------------------------------------------------------------

def test_tensorrt_line_against_the_frameworks_and_the_driver(tmp_path):
    snap = gpu_machine(sf.torch("2.5.1+cu124", cuda="12.4"), packages={"tensorrt": "10.13.3.9"},
                       driver="580.65.06", driver_cuda="13.0")
    snap.python.runtime_requires = {"tensorrt": ["tensorrt_cu13==10.13.3.9"]}
    fs = only(tmp_path, snap, "ED682")
    assert len(fs) == 1 and fs[0]["severity"] == "warning"
    assert "CUDA 13 line" in fs[0]["message"] and "built for CUDA 12.4" in fs[0]["message"]
    assert any("tensorrt-cu12" in step for step in fs[0]["fix"])
    # on a 570 driver (CUDA <= 12.8) the CUDA 13 line cannot run at all
    snap.driver.version, snap.driver.cuda_version = "570.133.20", "12.8"
    assert [f["severity"] for f in only(tmp_path, snap, "ED682")] == ["error", "warning"]
    # the same line as torch: nothing; an old driver: error
    snap.python.packages.update({"tensorrt-cu12": "10.13.3.9"})
    snap.python.runtime_requires = {"tensorrt": ["tensorrt_cu12==10.13.3.9"]}
    assert only(tmp_path, snap, "ED682") == []
    snap = gpu_machine(packages={"tensorrt-cu12": "10.7.0", "tensorrt-cu12-libs": "10.7.0"}, driver="470.256.02",
                       driver_cuda="11.4")
    fs = only(tmp_path, snap, "ED682")
    assert len(fs) == 1 and fs[0]["severity"] == "error" and "cannot run it" in fs[0]["message"]


def test_two_tensorrt_lines(tmp_path):
    snap = gpu_machine(packages={"tensorrt-cu12-libs": "10.7.0", "tensorrt-cu13-libs": "10.13.3.9"})
    fs = only(tmp_path, snap, "ED682")
    assert len(fs) == 1 and "several CUDA lines" in fs[0]["message"]


# -- ED683: torch's ONNX exporter ------------------------------------------------------------------------------------

def test_onnx_exporter_prerequisites(tmp_path):
    snap = gpu_machine(sf.torch("2.9.0+cu128", cuda="12.8"), packages={"onnxruntime": "1.30.0", "onnx": "1.23.1"})
    fs = only(tmp_path, snap, "ED683")
    assert len(fs) == 1 and fs[0]["severity"] == "warning"
    assert "dynamo=True is the default here" in fs[0]["message"] and "missing: onnxscript" in fs[0]["message"]
    snap.python.frameworks = [sf.torch("2.6.0+cu124", cuda="12.4")]
    fs = only(tmp_path, snap, "ED683")
    assert len(fs) == 1 and fs[0]["severity"] == "info"
    snap.python.frameworks = [sf.torch("2.4.1+cu124", cuda="12.4")]  # before dynamo=True on export
    assert only(tmp_path, snap, "ED683") == []
    snap.python.frameworks = [sf.torch("2.9.0+cu128", cuda="12.8")]
    snap.python.packages["onnxscript"] = "0.7.2"
    assert only(tmp_path, snap, "ED683") == []
    # no sign of ONNX use: torch alone is not told to install exporters
    assert only(tmp_path, gpu_machine(sf.torch("2.9.0+cu128", cuda="12.8")), "ED683") == []


def test_rules_are_in_the_catalogue_with_explain():
    for rid in ("ED680", "ED681", "ED682", "ED683"):
        proc = run("explain", rid)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(rid) and "\nFix: " in proc.stdout and "envdoctor/rules/runtimes.py" in proc.stdout
    for rid in ("ED712", "ED713"):  # the smoke rules
        proc = run("explain", rid)
        assert proc.returncode == 0 and "\nFix: " in proc.stdout and "envdoctor/rules/smoke_rules.py" in proc.stdout, proc.stdout
