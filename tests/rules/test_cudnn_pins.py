"""ED300 (cuDNN missing / wrong major / too old), ED310 (several cuDNN majors), ED320 (nvidia-* pin clashes).

Requires-Dist lines are copied from real wheel metadata (PyPI core metadata, recorded in
/work/shared/reference/evidence/pypi_*_requires_dist.txt and pypi_jax_*.txt).
"""
from __future__ import annotations

import re

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules, select_rules
from envdoctor.snapshot import Cudnn, Evidence, Framework, ProbeStatus
from tests.snapfactory import machine, tensorflow, torch

M = load_matrices()
MINE = ["ED3", "ED4", "ED5"]

_L = '; platform_system == "Linux" and platform_machine == "x86_64"'
# torch 2.4.1 (PyPI manylinux x86_64 wheel) Requires-Dist, the nvidia-* lines
TORCH_241 = [
    f"nvidia-cuda-nvrtc-cu12 (==12.1.105) {_L}", f"nvidia-cuda-runtime-cu12 (==12.1.105) {_L}",
    f"nvidia-cuda-cupti-cu12 (==12.1.105) {_L}", f"nvidia-cudnn-cu12 (==9.1.0.70) {_L}",
    f"nvidia-cublas-cu12 (==12.1.3.1) {_L}", f"nvidia-cufft-cu12 (==11.0.2.54) {_L}",
    f"nvidia-curand-cu12 (==10.3.2.106) {_L}", f"nvidia-cusolver-cu12 (==11.4.5.107) {_L}",
    f"nvidia-cusparse-cu12 (==12.1.0.106) {_L}", f"nvidia-nccl-cu12 (==2.20.5) {_L}",
    f"nvidia-nvtx-cu12 (==12.1.105) {_L}",
    'triton (==3.0.0) ; platform_system == "Linux" and platform_machine == "x86_64" and python_version < "3.13"',
]
TORCH_241_PKGS = {
    "nvidia-cuda-nvrtc-cu12": "12.1.105", "nvidia-cuda-runtime-cu12": "12.1.105", "nvidia-cuda-cupti-cu12": "12.1.105",
    "nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cublas-cu12": "12.1.3.1", "nvidia-cufft-cu12": "11.0.2.54",
    "nvidia-curand-cu12": "10.3.2.106", "nvidia-cusolver-cu12": "11.4.5.107", "nvidia-cusparse-cu12": "12.1.0.106",
    "nvidia-nccl-cu12": "2.20.5", "nvidia-nvtx-cu12": "12.1.105",
}
# torch 2.0.1 (PyPI) nvidia-cudnn line
TORCH_201 = ['nvidia-cudnn-cu11 (==8.5.0.96) ; platform_system == "Linux" and platform_machine == "x86_64"',
             'nvidia-cublas-cu11 (==11.10.3.66) ; platform_system == "Linux" and platform_machine == "x86_64"']
# torch 2.7.0 (PyPI) nvidia-cudnn line
TORCH_270 = ['nvidia-cudnn-cu12==9.5.1.17; platform_system == "Linux" and platform_machine == "x86_64"',
             'nvidia-cublas-cu12==12.6.4.1; platform_system == "Linux" and platform_machine == "x86_64"']
# tensorflow 2.15.0 (PyPI) Requires-Dist, extra == 'and-cuda'
TF_215 = [
    "nvidia-cublas-cu12 (==12.2.5.6) ; extra == 'and-cuda'", "nvidia-cuda-cupti-cu12 (==12.2.142) ; extra == 'and-cuda'",
    "nvidia-cuda-nvcc-cu12 (==12.2.140) ; extra == 'and-cuda'", "nvidia-cuda-nvrtc-cu12 (==12.2.140) ; extra == 'and-cuda'",
    "nvidia-cuda-runtime-cu12 (==12.2.140) ; extra == 'and-cuda'", "nvidia-cudnn-cu12 (==8.9.4.25) ; extra == 'and-cuda'",
    "nvidia-cufft-cu12 (==11.0.8.103) ; extra == 'and-cuda'", "nvidia-curand-cu12 (==10.3.3.141) ; extra == 'and-cuda'",
    "nvidia-cusolver-cu12 (==11.5.2.141) ; extra == 'and-cuda'", "nvidia-cusparse-cu12 (==12.1.2.141) ; extra == 'and-cuda'",
    "nvidia-nccl-cu12 (==2.16.5) ; extra == 'and-cuda'", "nvidia-nvjitlink-cu12 (==12.2.140) ; extra == 'and-cuda'",
    "tensorrt (==8.6.1.post1) ; extra == 'and-cuda'",
]
TF_215_PKGS = {
    "nvidia-cublas-cu12": "12.2.5.6", "nvidia-cuda-cupti-cu12": "12.2.142", "nvidia-cuda-nvcc-cu12": "12.2.140",
    "nvidia-cuda-nvrtc-cu12": "12.2.140", "nvidia-cuda-runtime-cu12": "12.2.140", "nvidia-cudnn-cu12": "8.9.4.25",
    "nvidia-cufft-cu12": "11.0.8.103", "nvidia-curand-cu12": "10.3.3.141", "nvidia-cusolver-cu12": "11.5.2.141",
    "nvidia-cusparse-cu12": "12.1.2.141", "nvidia-nccl-cu12": "2.16.5", "nvidia-nvjitlink-cu12": "12.2.140",
}
# tensorflow 2.16.1 (PyPI), two of its and-cuda lines
TF_2161 = ["nvidia-cudnn-cu12 ==8.9.7.29 ; extra == 'and-cuda'", "nvidia-cublas-cu12 ==12.3.4.1 ; extra == 'and-cuda'"]
# jax 0.4.30 / jax-cuda12-plugin 0.4.30 (PyPI)
JAX_0430 = ["jaxlib <=0.4.30,>=0.4.27", "jaxlib ==0.4.30 ; extra == 'cuda12'",
            "jax-cuda12-plugin[with_cuda] <=0.4.30,>=0.4.30 ; extra == 'cuda12'", "jaxlib ==0.4.27 ; extra == 'minimum-jaxlib'"]
PLUGIN_0430 = ["jax-cuda12-pjrt ==0.4.30", "nvidia-cublas-cu12 >=12.1.3.1 ; extra == 'with_cuda'",
               "nvidia-cudnn-cu12 <10.0,>=9.0 ; extra == 'with_cuda'", "nvidia-nccl-cu12 >=2.18.1 ; extra == 'with_cuda'"]
# jax 0.6.2 / jax-cuda12-plugin 0.6.2 (PyPI)
JAX_062 = ["jaxlib<=0.6.2,>=0.6.2", 'jaxlib<=0.6.2,>=0.6.2; extra == "cuda12"',
           'jax-cuda12-plugin[with-cuda]<=0.6.2,>=0.6.2; extra == "cuda12"']
PLUGIN_062 = ["jax-cuda12-pjrt==0.6.2", 'nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"',
              'nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"']

A100 = ["NVIDIA A100-SXM4-80GB:8.0"]


def run(snap, only=MINE, matrices=M):
    return run_rules(Context(snap, matrices), select_rules(only=only))


def bad(findings):
    return [f for f in findings if f.severity in ("error", "warning")]


def jax_stack(version, plugin_version=None, jax_requires=(), plugin_requires=(), pjrt_version=None, major=12):
    plugin_version = plugin_version or version
    jx = Framework("jax", "jax", version, build="cuda", cuda_version=str(major), requires=list(jax_requires))
    jl = Framework("jaxlib", "jaxlib", version, build="cuda", cuda_version=str(major))
    pl = Framework(f"jax-cuda{major}-plugin", f"jax-cuda{major}-plugin", plugin_version, build="cuda",
                   cuda_version=str(major), requires=list(plugin_requires))
    pj = Framework(f"jax-cuda{major}-pjrt", f"jax-cuda{major}-pjrt", pjrt_version or plugin_version, build="cuda",
                   cuda_version=str(major))
    return [jx, jl, pl, pj]


def lib(version, path, how):
    return Cudnn(version=version, kind="library", path=path, evidence=[Evidence(how, path.rsplit("/", 1)[1])])


# ---------------------------------------------------------------------------------------------
# healthy environments: nothing from ED3xx/ED4xx/ED5xx
# ---------------------------------------------------------------------------------------------
def test_healthy_torch_with_its_own_cudnn_wheel():
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=A100, packages=TORCH_241_PKGS,
                   frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                   cudnn=[Cudnn("9.1.0.70", "wheel", "/home/user/venv/lib/python3.11/site-packages/nvidia/cudnn",
                                [Evidence("python.packages", "nvidia-cudnn-cu12 9.1.0.70")])])
    assert bad(run(snap)) == []


def test_healthy_tensorflow_and_cuda_pins_satisfied():
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=A100, packages=TF_215_PKGS,
                   frameworks=[tensorflow("2.15.0", cuda="12.2", cudnn="8", requires=TF_215)])
    assert bad(run(snap)) == []


def test_healthy_jax_stack():
    fws = jax_stack("0.4.30", jax_requires=JAX_0430, plugin_requires=PLUGIN_0430)
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=A100, frameworks=fws,
                   packages={"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cublas-cu12": "12.1.3.1", "nvidia-nccl-cu12": "2.20.5"})
    assert bad(run(snap)) == []


def test_jax_plugin_and_torch_whose_pins_agree_are_healthy():
    """torch 2.4.1 pins cuDNN 9.1.0.70; jax-cuda12-plugin 0.4.30 asks >=9.0,<10: both hold."""
    fws = [torch("2.4.1", cuda="12.1", requires=TORCH_241)] + jax_stack("0.4.30", jax_requires=JAX_0430,
                                                                         plugin_requires=PLUGIN_0430)
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=A100, frameworks=fws, packages=TORCH_241_PKGS)
    assert bad(run(snap, only=["ED3"])) == []


# ---------------------------------------------------------------------------------------------
# ED320: pins that clash
# ---------------------------------------------------------------------------------------------
def test_ed320_torch_and_tensorflow_and_cuda_in_one_env():
    """https://github.com/TencentARC/Moto/issues/2 : tensorflow[and-cuda]==2.15.1 next to torch==2.4.1.
    (TF 2.15.1's and-cuda lines are taken from the 2.15.0 wheel, the recorded metadata.) The extra's packages that
    torch does not pin (nvidia-cuda-nvcc-cu12, tensorrt) are what shows that [and-cuda] was installed."""
    pkgs = dict(TORCH_241_PKGS, **{"nvidia-cuda-nvcc-cu12": "12.2.140", "tensorrt": "8.6.1.post1"})
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=A100, packages=pkgs,
                   frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241),
                               tensorflow("2.15.1", cuda="12.2", cudnn="8", requires=TF_215)])
    found = [f for f in run(snap) if f.id == "ED320"]
    assert len(found) == 1
    f = found[0]
    assert f.severity == "error"
    for text in ("tensorflow 2.15.1", "torch 2.4.1", "8.9.4.25", "9.1.0.70"):
        assert text in f.message
    # the ED300 view of the same wheel is not reported twice
    assert not [g for g in run(snap) if g.id == "ED300"]
    # the proposed pair really has cuDNN pins that agree, per the matrices
    cmd = next(x for x in f.fix if x.startswith("$ pip install") and "torch==" in x and "tensorflow" in x)
    tv = re.search(r"torch==([0-9.]+)", cmd).group(1)
    fv = re.search(r"tensorflow\[and-cuda\]==([0-9.]+)", cmd).group(1)
    torch_pin = M.torch_default_variant(tv).nvidia_pins["nvidia-cudnn-cu12"]
    tf_pin = SpecifierSet(M.tf_release(fv).cudnn_pin)
    assert Version(torch_pin.lstrip("=")) in tf_pin
    # ...and lock's judgement of the pair on this machine agrees: it fits and the frameworks share one environment
    from envdoctor.lock.resolve import GpuTarget, PinnedRequirement, Target, check

    pair = [PinnedRequirement("torch", [], tv, f"torch=={tv}"),
            PinnedRequirement("tensorflow", ["and-cuda"], fv, f"tensorflow[and-cuda]=={fv}")]
    verdict = check(M, Target(frameworks=[], driver="550.54.15", gpus=[GpuTarget("8.0")], python="3.11"), pair)
    assert verdict.ok, verdict.problems
    assert any("venv" in x for x in f.fix)


@pytest.mark.parametrize("installed,broken,severity", [
    ("8.9.2.26", "tensorflow 2.16.1", "error"),  # TF pinned 8.9.7.29 / cuBLAS 12.3: gets older libraries
    ("8.9.7.29", "torch 2.3.1", "warning"),  # torch pinned 8.9.2.26: gets a newer cuDNN 8 (works; pip check complains)
])
def test_ed320_both_directions(installed, broken, severity):
    t231 = [f"nvidia-cudnn-cu12 (==8.9.2.26) {_L}", f"nvidia-cublas-cu12 (==12.1.3.1) {_L}"]
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=A100,
                   packages={"nvidia-cudnn-cu12": installed, "nvidia-cublas-cu12": "12.3.4.1" if installed == "8.9.7.29" else "12.1.3.1"},
                   frameworks=[torch("2.3.1", cuda="12.1", requires=t231),
                               tensorflow("2.16.1", cuda="12.3", cudnn="8", requires=TF_2161)])
    found = [f for f in run(snap, only=["ED320"]) if f.message.startswith(broken)]
    assert found and {f.severity for f in found} == {severity}
    assert installed in " ".join(f.message for f in found) or severity == "error"


def test_ed320_jax_plugin_needs_newer_cudnn_than_torch_pins():
    """https://github.com/jax-ml/jax/issues/29315 (and AlphaGPU/leetgpu-challenges#205): nvidia-cudnn-cu12 9.5.1.17 in
    the venv, as torch 2.7 pins it, and a jax 0.6.x CUDA plugin: "Loaded runtime CuDNN library: 9.5.1 but source was
    compiled with: 9.8.0". jax-cuda12-plugin 0.6.2's metadata asks nvidia-cudnn-cu12>=9.8 (the report's 0.6.x too)."""
    fws = [torch("2.7.0", cuda="12.6", requires=TORCH_270)] + jax_stack("0.6.2", jax_requires=JAX_062,
                                                                         plugin_requires=PLUGIN_062)
    snap = machine(driver="570.124.06", driver_cuda="12.8", gpus=["NVIDIA H100 80GB HBM3:9.0"], frameworks=fws,
                   packages={"nvidia-cudnn-cu12": "9.5.1.17", "nvidia-cublas-cu12": "12.6.4.1"})
    found = run(snap, only=["ED3"])
    f = next(f for f in found if f.id == "ED320")
    assert f.severity == "error"
    assert "jax-cuda12-plugin 0.6.2" in f.message and "torch 2.7.0" in f.message and "9.5.1.17" in f.message
    assert "Loaded runtime CuDNN library: 9.5.1 but source was compiled with: 9.8.0" in f.message
    # ED300 does not report the same wheel a second time
    assert not [g for g in found if g.id == "ED300"]
    assert any(x.startswith("$ pip install") for x in f.fix)


def test_ed320_silent_without_both_frameworks_pinning():
    snap = machine(driver="550.54.15", gpus=A100, packages={"nvidia-cudnn-cu12": "9.1.0.70"},
                   frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241), tensorflow("2.15.0", dist="tensorflow-cpu")])
    assert not [f for f in run(snap) if f.id == "ED320"]


# ---------------------------------------------------------------------------------------------
# ED300
# ---------------------------------------------------------------------------------------------
def test_ed300_jaxlib_built_for_newer_cudnn_than_the_system_has():
    """https://github.com/jax-ml/jax/issues/15268 : "Loaded runtime CuDNN library: 8.5.0 but source was compiled
    with: 8.6.0" - jaxlib 0.4.7+cuda11.cudnn86 with a system cuDNN 8.5."""
    jx = Framework("jax", "jax", "0.4.7", build="cuda", cuda_version="11", cudnn_version="8.6")
    jl = Framework("jaxlib", "jaxlib", "0.4.7+cuda11.cudnn86", build="cuda", cuda_version="11", cudnn_version="8.6")
    snap = machine(driver="530.30.02", driver_cuda="12.1", gpus=["NVIDIA GeForce RTX 3090:8.6"], frameworks=[jx, jl],
                   cudnn=[lib("8.5.0", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.5.0", "cmd:ldconfig -p")])
    found = [f for f in run(snap) if f.id == "ED300"]
    assert len(found) == 1
    f = found[0]
    assert f.severity == "error"  # it refuses the older cuDNN at start-up (class 6)
    assert "jaxlib 0.4.7+cuda11.cudnn86" in f.message and "8.6" in f.message and "8.5.0" in f.message
    assert any("nvidia-cudnn-cu11>=8.6" in x for x in f.fix)


def test_ed300_jaxlib_with_new_enough_system_cudnn_is_silent():
    jl = Framework("jaxlib", "jaxlib", "0.4.7+cuda11.cudnn86", build="cuda", cuda_version="11", cudnn_version="8.6")
    snap = machine(driver="530.30.02", gpus=["NVIDIA GeForce RTX 3090:8.6"], frameworks=[jl],
                   cudnn=[lib("8.9.2", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.2", "cmd:ldconfig -p")])
    assert not [f for f in run(snap) if f.id == "ED300"]


def test_ed300_tensorflow_without_and_cuda_and_no_cudnn():
    """https://github.com/tensorflow/tensorflow/issues/60854 : "Could not load dynamic library 'libcudnn.so.8'" -
    TF 2.8.0 (build_info cuda 11.2 / cudnn 8), laptop RTX 3080, no cuDNN 8 on the loader path."""
    snap = machine(driver="525.85.05", driver_cuda="12.0", gpus=["NVIDIA GeForce RTX 3080 Laptop GPU:8.6"],
                   python="3.9.16", frameworks=[tensorflow("2.8.0", cuda="11.2", cudnn="8")])
    f = next(f for f in run(snap) if f.id == "ED300")
    assert f.severity == "error"
    assert "tensorflow 2.8.0" in f.message and "cuDNN 8" in f.message and "libcudnn.so.8" in f.message
    rel = M.tf_release("2.8.0")
    assert any(f"CUDA {rel.cuda} and cuDNN {rel.cudnn}" in x for x in f.fix)


def test_ed300_tensorflow_215_without_and_cuda_suggests_the_extra():
    snap = machine(driver="550.54.15", gpus=A100, frameworks=[tensorflow("2.15.0", cuda="12.2", cudnn="8", requires=TF_215)],
                   cudnn=[lib("9.1.0", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0", "cmd:ldconfig -p")])
    f = next(f for f in run(snap) if f.id == "ED300")
    assert f.severity == "error" and "only cuDNN 9" in f.message
    assert '$ pip install "tensorflow[and-cuda]==2.15.0"' in f.fix


def test_ed300_torch_missing_its_pinned_wheel():
    """https://github.com/pytorch/pytorch/issues/104259 : torch 2.0.1 installed without its nvidia-* wheels,
    "ImportError: libcudnn.so.8: cannot open shared object file"."""
    snap = machine(driver="525.85.12", gpus=A100, frameworks=[torch("2.0.1", cuda="11.7", requires=TORCH_201)],
                   packages={"nvidia-cublas-cu11": "11.10.3.66"})
    f = next(f for f in run(snap) if f.id == "ED300")
    assert f.severity == "error"
    assert "torch 2.0.1" in f.message and "nvidia-cudnn-cu11==8.5.0.96" in f.message
    assert '$ pip install "nvidia-cudnn-cu11==8.5.0.96"' in f.fix


def test_ed300_wheel_of_another_major():
    snap = machine(driver="550.54.15", gpus=A100, frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                   packages=dict(TORCH_241_PKGS, **{"nvidia-cudnn-cu12": "8.9.2.26"}))
    f = next(f for f in run(snap) if f.id == "ED300")
    assert f.severity == "error" and "cuDNN 9" in f.message and "8.9.2.26" in f.message


@pytest.mark.parametrize("case", ["probe_failed", "no_gpu", "no_packages", "windows"])
def test_ed300_unknown_facts_are_silent(case):
    kw = dict(driver="525.85.05", gpus=["NVIDIA GeForce RTX 3080:8.6"], frameworks=[tensorflow("2.8.0", cuda="11.2", cudnn="8")])
    if case == "no_gpu":
        kw.update(driver=None, gpus=[])
    if case == "windows":
        kw.update(system="Windows", machine_arch="AMD64")
    if case == "no_packages":
        kw["frameworks"] = [torch("2.0.1", cuda="11.7", requires=TORCH_201)]
    snap = machine(**kw)
    if case == "probe_failed":
        snap.probes.append(ProbeStatus("cudnn", "unknown", "ldconfig timed out"))
    if case == "no_packages":
        snap.python.packages = {}
    assert not [f for f in run(snap) if f.id == "ED300"]


def test_ed300_without_matrices_still_uses_the_builds_own_pins():
    snap = machine(driver="550.54.15", gpus=A100, frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                   packages=dict(TORCH_241_PKGS, **{"nvidia-cudnn-cu12": "8.9.2.26"}))
    assert [f.id for f in run(snap, matrices=None) if f.severity == "error"] == ["ED300"]


# ---------------------------------------------------------------------------------------------
# ED310
# ---------------------------------------------------------------------------------------------
def test_ed310_system_cudnn8_on_ld_library_path_and_cudnn9_wheel():
    """Modelled on https://github.com/pytorch/pytorch/issues/119989 (a system cuDNN 8.9.4 in /usr/local/cuda/lib64 on
    LD_LIBRARY_PATH next to torch's pip cuDNN; removing that dir from LD_LIBRARY_PATH fixed it), with torch 2.4.1's
    cuDNN 9 wheel: two majors reachable."""
    snap = machine(driver="550.54.15", gpus=A100, packages=TORCH_241_PKGS, ld_library_path=["/usr/local/cuda/lib64"],
                   frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                   cudnn=[lib("8.9.4", "/usr/local/cuda/lib64/libcudnn.so.8.9.4", "env:LD_LIBRARY_PATH"),
                          Cudnn("9.1.0.70", "wheel", "/home/user/venv/lib/python3.11/site-packages/nvidia/cudnn",
                                [Evidence("python.packages", "nvidia-cudnn-cu12 9.1.0.70")])])
    f = next(f for f in run(snap) if f.id == "ED310")
    assert f.severity == "warning"
    assert "8.9.4" in f.message and "9.1.0.70" in f.message
    assert any("/usr/local/cuda/lib64" in x and "LD_LIBRARY_PATH" in x for x in f.fix)


def test_ed310_unreachable_copy_is_not_counted():
    snap = machine(driver="550.54.15", gpus=A100, packages=TORCH_241_PKGS,
                   frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                   cudnn=[lib("8.9.4", "/usr/local/cuda-11.8/lib64/libcudnn.so.8.9.4", "file:/usr/local/cuda-11.8/lib64")])
    assert not [f for f in run(snap) if f.id == "ED310"]


def test_ed310_silent_without_cuda_frameworks():
    snap = machine(packages={"nvidia-cudnn-cu12": "9.1.0.70"},
                   cudnn=[lib("8.9.4", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.4", "cmd:ldconfig -p")])
    assert not [f for f in run(snap) if f.id == "ED310"]


def test_ed300_plugin_wheel_older_than_its_minimum():
    """https://github.com/jax-ml/jax/issues/29315 : cuDNN 9.5.1 (nvidia-cudnn-cu12 9.5.1.17) loaded by a jax CUDA
    plugin built for >= 9.8; the plugin finds the wheel even when installed without its with-cuda extra."""
    fws = jax_stack("0.6.2", jax_requires=JAX_062, plugin_requires=PLUGIN_062)
    snap = machine(driver="570.124.06", gpus=["NVIDIA H100 80GB HBM3:9.0"], frameworks=fws,
                   packages={"nvidia-cudnn-cu12": "9.5.1.17", "nvidia-cublas-cu12": "12.6.4.1"})
    f = next(f for f in run(snap) if f.id == "ED300")
    assert f.severity == "error"  # it refuses the older cuDNN at start-up (class 6)
    assert "jax-cuda12-plugin 0.6.2" in f.message and "9.5.1.17" in f.message and "9.8" in f.message
    assert '$ pip install "nvidia-cudnn-cu12<10.0,>=9.8"' in f.fix


def test_ed300_system_cudnn_without_a_build_for_the_frameworks_cuda_major():
    """TensorFlow 2.16.1 is a CUDA 12.3 build; cuDNN 8.6 was never built for CUDA 12 (cudnn matrix)."""
    snap = machine(driver="550.54.15", gpus=A100, frameworks=[tensorflow("2.16.1", cuda="12.3", cudnn="8", requires=TF_2161)],
                   cudnn=[lib("8.6.0", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.6.0", "cmd:ldconfig -p")])
    f = next(f for f in run(snap) if f.id == "ED300")
    row = M.cudnn_release("8.6.0")
    assert 12 not in row.cuda_majors
    assert f.severity == "error" and "8.6.0" in f.message and "CUDA 12" in f.message


def test_garbage_metadata_never_breaks_the_rules():
    junk = Framework("torch", "torch", "not-a-version", build="cuda", cuda_version="12.x",
                     requires=["%%%", "nvidia-cudnn-cu12 (==nine)", "nvidia-cudnn-cu12 ; extra ==", "nvidia-cublas-cu12>="])
    tf = tensorflow("2.x", cuda="??", cudnn="eight", requires=["nvidia-cudnn-cu12 ==8.9.7.29 ; platform_system =="])
    jx = jax_stack("0.4.zz", jax_requires=["jaxlib <=0.4.zz"], plugin_requires=["jax-cuda12-pjrt ==?"])
    snap = machine(driver="550.54.15", gpus=["NVIDIA A100-SXM4-80GB:8.0", "Mystery GPU"], frameworks=[junk, tf] + jx,
                   packages={"nvidia-cudnn-cu12": "garbage", "nvidia-cublas-cu12": ""},
                   cudnn=[Cudnn(None, "library", "/usr/lib/x86_64-linux-gnu/libcudnn.so"), Cudnn("x.y", "header", "")])
    found = run(snap)
    assert not [f for f in found if "could not run" in f.message]


def test_ed310_leftover_wheel_of_another_major_is_named_for_removal():
    """A venv that once held torch 2.0.1 (nvidia-cudnn-cu11 8.5.0.96) and now torch 2.4.1 (cuDNN 9)."""
    snap = machine(driver="550.54.15", gpus=A100, packages=dict(TORCH_241_PKGS, **{"nvidia-cudnn-cu11": "8.5.0.96"}),
                   frameworks=[torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                   cudnn=[Cudnn("8.5.0.96", "wheel", "/home/user/venv/lib/python3.11/site-packages/nvidia/cudnn",
                                [Evidence("python.packages", "nvidia-cudnn-cu11 8.5.0.96")]),
                          Cudnn("9.1.0.70", "wheel", "/home/user/venv/lib/python3.11/site-packages/nvidia/cudnn",
                                [Evidence("python.packages", "nvidia-cudnn-cu12 9.1.0.70")])])
    f = next(f for f in run(snap) if f.id == "ED310")
    assert "8.5.0.96" in f.message and "9.1.0.70" in f.message
    assert "$ pip uninstall -y nvidia-cudnn-cu11" in f.fix
    assert not [x for x in f.fix if "nvidia-cudnn-cu12" in x]
    assert f.message.count("nvidia-cudnn-cu12") == 1  # the probe's wheel entry and python.packages are one copy
