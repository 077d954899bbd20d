"""Through the real CLI: environments with old torch / TensorFlow releases, built as fake venvs whose dists carry the
real version files those releases' wheels ship (tests/fixtures/frameworks/SOURCES.toml), are judged from the data's
rows for those releases (driver, GPU arch, cuDNN, Python) instead of "not judged" (ED902).

Each machine is the probe of the venv with a fake nvidia-smi (a real banner); where the release needs an older Python
than this interpreter, the probe's snapshot is given the Python the release's wheels exist for and judged with
`check --snapshot`, as a snapshot taken on that machine would be."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.binfakes import add_dist, fake_venv
from tests.fakes import FIX, make_exe

FW = FIX / "frameworks"
NV = FIX / "nvidia"
# what the probe's nvidia-smi --query-gpu=... --format=csv,noheader,nounits prints for one GPU
QUERY = "0, {name}, {cc}, 16160, 00000000:00:1E.0, GPU-0b0e2a9c-0000-0000-0000-000000000000, {driver}\n"
BANNERS = {"450.57": NV / "smi_450.57_titanxp.txt", "440.33.01": NV / "smi_440.33.01_2x_gv100.txt",
           "410.104": NV / "smi_410.104_v100.txt", "470.63.01": NV / "smi_470.63.01_processes.txt",
           "535.247.01": NV / "smi_535.247.01_a10g.txt"}


@pytest.fixture(autouse=True)
def _no_real_driver():
    if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver: NVML would report its real GPUs, not the fake one")


def _run(args, env):
    proc = subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(Path(__file__).parent.parent))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _machine(tmp_path: Path, dists, driver: str, gpu: str, cc: str):
    """A venv holding `dists` ([(dist, version, {site-packages path: fixture file})]) and a fake nvidia-smi."""
    venv = tmp_path / "venv"
    sp = None
    for dist, version, files in dists:
        if sp is None:
            sp = fake_venv(venv, dist, version, files)
        else:
            add_dist(sp, dist, version, files)
    bindir = tmp_path / "bin"
    q = tmp_path / "query.csv"
    q.write_text(QUERY.format(name=gpu, cc=cc, driver=driver))
    make_exe(bindir / "nvidia-smi", f'case "$1" in --query-gpu=*) cat "{q}"; exit 0;; esac\ncat "{BANNERS[driver]}"')
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "LD_PRELOAD", "LD_LIBRARY_PATH")}
    env.update(PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}", ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    return venv, env


def _check(tmp_path, venv, env, python=None):
    """The report of `check` on the venv; with `python`, of `check --snapshot` on its probe with that Python."""
    py = str(venv / "bin" / "python")
    if python is None:
        proc = _run(["check", "--python", py, "--format", "json"], env)
    else:
        probe = _run(["probe", "--python", py, "--format", "json"], env)
        assert probe.returncode == 0, probe.stderr
        snap = json.loads(probe.stdout)
        snap["python"]["version"] = python
        f = tmp_path / "snap.json"
        f.write_text(json.dumps(snap))
        proc = _run(["check", "--snapshot", str(f), "--format", "json"], env)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _ids(report, *wanted):
    return [(f["id"], f["severity"]) for f in report["findings"] if not wanted or f["id"] in wanted]


def _torch(version_file: str, version: str):
    return ("torch", version, {"torch/version.py": FW / version_file, "torch/__init__.py": None})


def _tf(dist: str, version: str, build_info: str, core: bool = False):
    rel = ("tensorflow_core" if core else "tensorflow") + "/python/platform/build_info.py"
    return (dist, version, {rel: FW / build_info, "tensorflow/__init__.py": None})


def _jax(jaxlib: str, jaxlib_file: str, jax: str, jax_file: str):
    """jaxlib (a CUDA build: `jaxlib` carries its local label) and the jax beside it, with their real version files."""
    return [("jaxlib", jaxlib, {"jaxlib/version.py": FW / jaxlib_file, "jaxlib/__init__.py": None}),
            ("jax", jax, {"jax/version.py": FW / jax_file, "jax/__init__.py": None})]


def _judged(report, family_word):
    """No ED902 ("not judged") for the framework: the data has its release's row."""
    assert not [f for f in report["findings"] if f["id"] == "ED902" and family_word in f["area"]], report["findings"]


def _driver_error(tmp_path, dist, driver, gpu, cc, python, family, floor):
    """The report of a machine whose driver is below `floor`: an error naming the floor, and no ED902."""
    venv, env = _machine(tmp_path, [dist], driver, gpu, cc)
    report = _check(tmp_path, venv, env, python=python)
    _judged(report, family)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and any(floor in f["message"] for f in errors), report["findings"]


def test_torch_1_3_1_on_a_k40m_has_no_kernel(tmp_path):
    """https://github.com/pytorch/pytorch/issues/30532 : torch 1.3.1 (CUDA 10.1) on a Tesla K40m (sm_35): the first
    kernel fails with "no kernel image is available". The 1.3.1 build's own arch list starts at sm_37 / compute_37
    (pytorch/builder "3.7+PTX;5.0" from 2019-11-01, checked against the wheel's fatbin), so the arch is judged from the
    data's row; the 1.3 row is marked presumed (1.3.0 was built with sm_35), so it is a warning, not silence and not an
    error."""
    venv, env = _machine(tmp_path, [_torch("torch_version_1.3.1_wheel.py", "1.3.1")], "440.33.01", "Tesla K40m", "3.5")
    report = _check(tmp_path, venv, env, python="3.7.5")
    _judged(report, "torch")
    ed200 = [f for f in report["findings"] if f["id"] == "ED200"]
    assert [f["severity"] for f in ed200] == ["warning"], report["findings"]
    assert "sm_37" in ed200[0]["message"] and "compute_37" in ed200[0]["message"]
    assert "presumed" in ed200[0]["message"]
    assert any("pytorch/builder" in e["source"] for e in ed200[0]["evidence"])


def test_torch_1_8_1_on_an_a100_has_no_sm80_kernel(tmp_path):
    """The PyPI torch 1.8.1 wheel is a CUDA 10.2 build (its torch/version.py: '1.8.1+cu102'), compiled for sm_37 sm_50
    sm_60 sm_70 only: on an A100 torch warns "A100-SXM4-40GB with CUDA capability sm_80 is not compatible with the
    current PyTorch installation. The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70" and
    fails at the first kernel. The fix names the 1.8 build for CUDA 11.1, which has sm_80."""
    venv, env = _machine(tmp_path, [_torch("torch_version_1.8.1_wheel.py", "1.8.1")], "450.57",
                         "A100-SXM4-40GB", "8.0")
    report = _check(tmp_path, venv, env, python="3.8.10")
    _judged(report, "torch")
    ed200 = [f for f in report["findings"] if f["id"] == "ED200"]
    assert [f["severity"] for f in ed200] == ["error"], report["findings"]
    msg = ed200[0]["message"]
    assert "sm_37" in msg and "sm_70" in msg and "sm_80" in msg
    assert "cu111" in " ".join(ed200[0]["fix"])


def test_torch_1_8_1_on_a_v100_with_driver_440_is_healthy(tmp_path):
    """Counterpart: the same wheel on a Quadro GV100 (sm_70) with driver 440.33.01 (CUDA 10.2's toolkit driver is
    >= 440.33): no error and no ED902."""
    venv, env = _machine(tmp_path, [_torch("torch_version_1.8.1_wheel.py", "1.8.1")], "440.33.01", "Quadro GV100", "7.0")
    report = _check(tmp_path, venv, env, python="3.8.10")
    _judged(report, "torch")
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


def test_torch_1_12_1_cu102_on_driver_410_needs_a_newer_driver(tmp_path):
    """torch 1.12.1 from the default index (CUDA 10.2) on a V100 with driver 410.104 (CUDA 10.0): CUDA 10.2 needs
    >= 440.33 and CUDA 10 has no minor-version compatibility, so torch.cuda.is_available() is False ("The NVIDIA driver
    on your system is too old"). Judged as an error from the CUDA row."""
    _driver_error(tmp_path, _torch("torch_version_1.12.1_wheel.py", "1.12.1"), "410.104", "Tesla V100-SXM2-16GB", "7.0",
                  "3.10.12", "torch", "440.33")


def test_torch_1_12_1_on_this_python_says_it_has_no_wheels_for_it(tmp_path):
    """The same wheel's Python range (cp37-cp310 on the default index) judged against the interpreter the venv really
    has (3.11): the release has no wheel for it, said as a finding on the torch line, not ED902."""
    venv, env = _machine(tmp_path, [_torch("torch_version_1.12.1_wheel.py", "1.12.1")], "440.33.01", "Quadro GV100", "7.0")
    report = _check(tmp_path, venv, env)
    _judged(report, "torch")
    text = json.dumps(report["findings"])
    assert "3.11" in text and ">=3.7" in text, report["findings"]


def test_tensorflow_gpu_1_15_on_a_k80_is_judged_by_its_cuda_and_cudnn(tmp_path):
    """tensorflow-gpu 1.15.0 (CUDA 10.0 / cuDNN 7, build_info in tensorflow_core/) on a Tesla K80 with driver
    410.104: CUDA 10.0's toolkit driver is 410.48, so the driver fits, and no ED902. Its compiled list is stated
    nowhere read: ED200 stays quiet (CUDA 10.0 targets sm_37). It loads the system's cuDNN 7, which this machine lacks:
    "Could not load dynamic library 'libcudnn.so.7'" (ED300), the only error."""
    venv, env = _machine(tmp_path, [_tf("tensorflow-gpu", "1.15.0", "tf_build_info_tensorflow_gpu_1.15.0.py", core=True)],
                         "410.104", "Tesla K80", "3.7")
    report = _check(tmp_path, venv, env, python="3.7.5")
    _judged(report, "tensorflow")
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [f["id"] for f in errors] == ["ED300"], report["findings"]
    assert "libcudnn.so.7" in errors[0]["message"]
    assert not [f for f in report["findings"] if f["id"] in ("ED100", "ED200")]


def test_tensorflow_2_4_on_driver_440_needs_cuda_11(tmp_path):
    """tensorflow 2.4.0 is a CUDA 11.0 build (its build_info.py): driver 440.33.01 (CUDA 10.2) is below CUDA 11's
    minor-version-compatibility floor (450.80.02), so TensorFlow sees no GPU."""
    _driver_error(tmp_path, _tf("tensorflow", "2.4.0", "tf_build_info_tensorflow_2.4.0.py"), "440.33.01", "Quadro GV100",
                  "7.0", "3.8.10", "tensorflow", "450.80.02")


def test_tensorflow_2_11_on_a_titan_xp_has_kernels_and_needs_cudnn_8(tmp_path):
    """tensorflow 2.11.0 (CUDA 11.2, cuDNN 8, compiled for sm_35 sm_50 sm_60 sm_70 sm_75 compute_80 per its
    build_info.py) on a TITAN Xp (sm_61): the sm_60 cubin runs on 6.1, so no ED200; the system cuDNN 8 it loads is
    missing here (ED300); no ED902."""
    venv, env = _machine(tmp_path, [_tf("tensorflow", "2.11.0", "tf_build_info_tensorflow_2.11.0.py")], "450.57",
                         "TITAN Xp", "6.1")
    report = _check(tmp_path, venv, env, python="3.10.12")
    _judged(report, "tensorflow")
    assert not [f for f in report["findings"] if f["id"] == "ED200"], report["findings"]
    ed300 = [f for f in report["findings"] if f["id"] == "ED300"]
    assert ed300 and "cuDNN 8" in ed300[0]["message"]


JAXLIB_0_1_65 = _jax("0.1.65+cuda111", "jaxlib_version_0.1.65.py", "0.2.12", "jax_version_0.2.12.py")
JAXLIB_0_3_25 = _jax("0.3.25+cuda11.cudnn82", "jaxlib_version_0.3.25.py", "0.3.25", "jaxlib_version_0.3.25.py")


def _the_only_error(tmp_path, dists, driver, gpu, cc, python, rule_id, needle):
    """check's one error on the machine is `rule_id`, naming `needle`; no ED902 for jax. Returns it."""
    venv, env = _machine(tmp_path, dists, driver, gpu, cc)
    report = _check(tmp_path, venv, env, python=python)
    _judged(report, "jax")
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    # the fake machine keeps this host's own CUDA toolkit, whose ptxas is newer than the fake driver: an old jaxlib
    # compiling with it fails (ED161, an error for these releases); a fact of the host, not of the release's row
    host_ptxas = [f for f in errors if f["id"] == "ED161"]
    assert not host_ptxas or glob.glob("/usr/local/cuda*/bin/ptxas") or shutil.which("ptxas"), host_ptxas
    errors = [f for f in errors if f["id"] != "ED161"]
    assert [f["id"] for f in errors] == [rule_id], report["findings"]
    assert needle in errors[0]["message"], errors[0]
    return errors[0]


def test_jaxlib_0_1_65_cuda111_on_driver_440_needs_cuda_11(tmp_path):
    """jaxlib 0.1.65+cuda111 (a CUDA 11.1 build, the label of the wheel jax's release script builds) with jax 0.2.12
    on a Quadro GV100 with driver 440.33.01 (CUDA 10.2): below CUDA 11's minor-version-compatibility floor
    (450.80.02), so XLA finds no usable CUDA driver and jax falls back to the CPU. Judged from the jaxlib row, no
    ED902."""
    venv, env = _machine(tmp_path, JAXLIB_0_1_65, "440.33.01", "Quadro GV100", "7.0")
    report = _check(tmp_path, venv, env, python="3.8.10")
    _judged(report, "jax")
    errors = [f for f in report["findings"] if f["severity"] == "error" and f["id"] == "ED100"]
    assert errors and "450.80.02" in errors[0]["message"], report["findings"]


def test_jaxlib_0_1_65_cuda111_judges_cudnn_and_arch_from_its_row(tmp_path):
    """The same build on an A10G (sm_86) with driver 535.247.01: the driver fits, its kernels (built for 3.5 and up by
    build.py's default --cuda_compute_capabilities) serve the GPU, and the +cuda111 label names no cuDNN: the row says
    the CUDA 11.1 build was built with cuDNN 8.0 (build/install_cuda.sh), which this machine lacks, so jax fails with
    "Could not load dynamic library 'libcudnn.so.8'" (ED300), the only error."""
    error = _the_only_error(tmp_path, JAXLIB_0_1_65, "535.247.01", "NVIDIA A10G", "8.6", "3.8.10", "ED300", "cuDNN 8")
    assert any("install_cuda.sh" in e["source"] for e in error["evidence"]), error["evidence"]


def test_jaxlib_0_1_65_on_this_python_has_no_wheel_for_it(tmp_path):
    """jaxlib 0.1.65's wheels are cp36-cp39 (setup.py python_requires >=3.6; 3.10 came with jaxlib 0.1.75): in a
    venv of this interpreter (3.11) it was installed for another Python, said on the jaxlib line (ED500), not ED902."""
    venv, env = _machine(tmp_path, JAXLIB_0_1_65, "535.247.01", "NVIDIA A10G", "8.6")
    report = _check(tmp_path, venv, env)
    _judged(report, "jax")
    ed500 = [f for f in report["findings"] if f["id"] == "ED500"]
    assert ed500 and "<3.10" in ed500[0]["message"], report["findings"]


def test_jaxlib_0_3_25_on_a_k80_is_judged_from_its_row(tmp_path):
    """jaxlib 0.3.25+cuda11.cudnn82 with jax 0.3.25 on a Tesla K80 (sm_37), driver 470.63.01 (CUDA 11.4): its kernels
    were built for sm_35 and up (.bazelrc TF_CUDA_COMPUTE_CAPABILITIES at jaxlib-v0.3.25), the driver runs CUDA 11,
    and the label states cuDNN 8.2, which this machine lacks (ED300). No ED200, no ED100 error, no ED902."""
    _the_only_error(tmp_path, JAXLIB_0_3_25, "470.63.01", "Tesla K80", "3.7", "3.10.12", "ED300", "8.2")


def test_jaxlib_0_4_9_on_a_k80_has_no_kernels(tmp_path):
    """https://github.com/jax-ml/jax/issues/15961 : jaxlib 0.4.9+cuda11.cudnn86 on a Tesla K80 fails at the first
    kernel. Kepler left the default jaxlib builds in 0.4.4 (CHANGELOG; .bazelrc sm_52,sm_60,sm_70,compute_80): ED200
    from the jaxlib row, with the last release built for sm_35 as the fix."""
    venv, env = _machine(tmp_path, _jax("0.4.9+cuda11.cudnn86", "jaxlib_version_0.4.9.py", "0.4.9",
                                        "jaxlib_version_0.4.9.py"), "470.63.01", "Tesla K80", "3.7")
    report = _check(tmp_path, venv, env, python="3.10.12")
    _judged(report, "jax")
    ed200 = [f for f in report["findings"] if f["id"] == "ED200"]
    assert [f["severity"] for f in ed200] == ["error"], report["findings"]
    assert "sm_52" in ed200[0]["message"]
    assert "0.4.3" in " ".join(ed200[0]["fix"])
