"""Class 2: which CUDA libraries a framework really loads (envdoctor.facts.libraries, the resolver).

A pin under `extra == 'and-cuda'` is a library TensorFlow uses only when that extra was installed; the libraries a
torch wheel bundles in torch/lib are recorded and judged against LD_LIBRARY_PATH; the copy the loader takes first is
judged, not the newest; a jax CUDA plugin's cuDNN need is judged while jaxlib's own label is kept; a torch whose own
cuDNN pin is violated by an installed wheel of another major is flagged. Healthy counterparts stay clean."""
from __future__ import annotations

import json
from pathlib import Path

from envdoctor.facts.libraries import FAMILIES, loaded
from envdoctor.probes import pyenv
from envdoctor.context import Context
from envdoctor.snapshot import Cudnn, Evidence, Framework, Library, Snapshot, Toolkit
from tests import snapfactory as sf
from tests.generalise.common import SITE, _own_cache, by_id, check, check_cli, jax_with, serious  # noqa: F401
from tests.rules.helpers import matrices
from tests.rules.test_cudnn_pins import TF_215, TORCH_241, TORCH_241_PKGS, _L
from tests.test_probe_pyenv import FakeVenv, ctx_for, fixture, import_log, run_probe, simple_metadata  # noqa: F401

LIB = "/usr/lib/x86_64-linux-gnu"


def _system_cuda_tf_next_to_torch(extra_pkgs=None):
    pkgs = dict(TORCH_241_PKGS, **(extra_pkgs or {}))
    return sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"], packages=pkgs,
                      frameworks=[sf.tensorflow("2.15.0", cuda="12.2", cudnn="8", requires=TF_215),
                                  sf.torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                      cudnn=[Cudnn("8.9.7", "library", f"{LIB}/libcudnn.so.8.9.7",
                                   [Evidence("cmd:ldconfig -p", "libcudnn.so.8 (libc6,x86-64) => "
                                                                f"{LIB}/libcudnn.so.8")])],
                      toolkits=[Toolkit("/usr/local/cuda-12.2", "12.2.140", "version.json", is_default=True)],
                      python="3.10.12")


def test_plain_tensorflow_on_system_cuda_next_to_torch_has_no_pin_clash():
    """Plain `pip install tensorflow==2.15.0` (no [and-cuda]) using the system CUDA 12.2 + cuDNN 8.9.7, the set-up
    https://www.tensorflow.org/install/source#gpu tests, next to torch 2.4.1 whose own pins installed
    nvidia-cudnn-cu12 9.1.0.70. TF's and-cuda pins are not in effect (nvidia-cuda-nvcc-cu12 and tensorrt, which
    only that extra installs, are absent): no ED320 error (it was a false error)."""
    found = check(_system_cuda_tf_next_to_torch(), ["ED3"])
    assert not [f for f in found if f.id == "ED320"], [f.message for f in found]
    assert not [f for f in found if f.severity == "error"], [f.message for f in found]


def test_the_same_with_tensorflow_and_cuda_installed_is_the_real_clash():
    """Counterpart, https://github.com/TencentARC/Moto/issues/2 : tensorflow[and-cuda] next to torch 2.4.1 - the
    extra's own packages are there, so its cuDNN 8.9.4.25 pin is violated by torch's 9.1.0.70: ED320 error."""
    snap = _system_cuda_tf_next_to_torch({"nvidia-cuda-nvcc-cu12": "12.2.140", "tensorrt": "8.6.1.post1"})
    assert [f.severity for f in by_id(check(snap, ["ED320"]), "ED320")] == ["error"]


def test_torch_whose_cudnn_8_pin_meets_a_cudnn_9_wheel_is_flagged():
    """https://github.com/pytorch/pytorch/issues/119989 family: torch 2.3.1 pins nvidia-cudnn-cu12==8.9.2.26 but a
    9.x wheel is installed (pip upgraded it for another package): libcudnn.so.8 cannot be loaded - an error."""
    t231 = [f"nvidia-cudnn-cu12 (==8.9.2.26) {_L}", f"nvidia-cublas-cu12 (==12.1.3.1) {_L}"]
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      packages={"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cublas-cu12": "12.1.3.1"},
                      frameworks=[sf.torch("2.3.1", cuda="12.1", requires=t231)])
    found = serious(check(snap, ["ED3"]))
    assert found and found[0].severity == "error" and "8.9.2.26" in found[0].message, [f.message for f in found]


# -- the library resolver (envdoctor.facts.libraries) and the bundled libraries of a torch wheel --------------------
FIX = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
TORCH_LIB_NAMES = (FIX / "torch_lib_cuda_names_cu11x.txt").read_text().split()


def _bundling_torch(version: str, cuda: str):
    """A pip torch cu11x wheel that bundles its CUDA libraries in torch/lib (the real file names), as the probe
    records it: no nvidia-* Requires-Dist, Framework.bundled from those names."""
    fw = sf.torch(version, cuda=cuda)
    fw.location = SITE
    fw.bundled = pyenv.bundled_libraries([f"{SITE}/torch/lib/{n}" for n in TORCH_LIB_NAMES])
    return fw


def _ids(report, *ids):
    return [(f["id"], f["severity"]) for f in report["findings"] if f["id"] in ids]


def test_probe_records_the_libraries_a_torch_wheel_bundles(tmp_path, import_log):  # noqa: F811
    """The --python helper lists torch/lib's CUDA libraries by name (never opening or importing anything): torch
    1.13.1+cu116 (a real torch/version.py) with the torch/lib names pytorch/builder's build_cuda.sh bundles."""
    v = FakeVenv(tmp_path / "venv")
    v.dist("torch-1.13.1+cu116.dist-info", simple_metadata("torch", "1.13.1+cu116"),
           {"torch/version.py": fixture("torch_version_1.13.1_cuda11.6.py")})
    for name in TORCH_LIB_NAMES + ["libtorch_cuda.so", "libc10.so", "libgomp-a34b3233.so.1"]:
        (v.site / "torch" / "lib").mkdir(parents=True, exist_ok=True)
        (v.site / "torch" / "lib" / name).write_bytes(b"")
    snap = run_probe(ctx_for(v.python))
    torch = snap.framework("torch")
    got = {(lib.name, Path(lib.path).name, lib.version, lib.via) for lib in torch.bundled}
    assert ("libcudnn", "libcudnn.so.8", "8", "bundled") in got
    assert ("libcudart", "libcudart-d0da41ae.so.11.0", "11.0", "bundled") in got  # the build's hash tag dropped
    assert ("libcublasLt", "libcublasLt.so.11", "11", "bundled") in got
    assert not any(n in ("libtorch_cuda", "libc10", "libgomp", "libnvToolsExt") for n, _, _, _ in got)
    assert len(torch.bundled) == len(TORCH_LIB_NAMES) - 1  # every CUDA library but libnvToolsExt
    assert not import_log.exists()
    assert Snapshot.from_json(snap.to_json()) == snap
    # and the resolver reads it: torch's own cuDNN 8, its version from envdoctor's data (cu116 row)
    snap.platform.system = "Linux"
    lib = loaded(snap, torch, "cudnn")
    assert (lib.where, lib.major, Path(lib.path).name) == ("bundle", 8, "libcudnn.so.8")


def test_an_old_snapshot_without_bundled_still_loads():
    """Snapshots written before Framework.bundled existed load, with an empty list."""
    snap = sf.machine(frameworks=[sf.torch("2.0.1+cu118", cuda="11.8")])
    data = json.loads(snap.to_json())
    for fw in data["python"]["frameworks"]:
        del fw["bundled"]
    assert Snapshot.from_dict(data).python.frameworks[0].bundled == []


def test_bundled_cudnn_shadowed_by_an_older_one_on_ld_library_path(tmp_path, capsys):
    """https://github.com/bmaltais/kohya_ss/issues/1096 - torch 2.0.1+cu118 bundles cuDNN 8.7.0 in torch/lib and a
    cuDNN 8.2.4 directory on LD_LIBRARY_PATH wins the lookup of libcudnn.so.8: 'cuDNN version incompatibility:
    PyTorch was compiled against (8, 7, 0) but found runtime version (8, 2, 4)'. (The report does not print the
    directory; /usr/local/cuda-11.4/lib64 stands for it.) Before the probe recorded torch/lib, nothing was judged."""
    d = "/usr/local/cuda-11.4/lib64"
    snap = sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=[_bundling_torch("2.0.1+cu118", "11.8")], ld_library_path=[d],
                      libraries=[Library("libcudnn", f"{d}/libcudnn.so.8.2.4", "8.2.4", "LD_LIBRARY_PATH")])
    lib = loaded(Context(snap, matrices()), snap.python.frameworks[0], "cudnn")
    assert (lib.where, lib.version, lib.own.where, lib.own.version) == ("LD_LIBRARY_PATH", "8.2.4", "bundle", "8.7.0.84")
    rc, report = check_cli(snap, tmp_path, capsys)
    assert _ids(report, "ED600") == [("ED600", "error")]
    msg = next(f["message"] for f in report["findings"] if f["id"] == "ED600")
    assert "8.2.4" in msg and "8.7.0.84" in msg and "torch's bundled cuDNN" in msg and d in msg
    assert rc != 0


def test_healthy_bundling_torch_with_a_cuda_folder_on_the_path_stays_clean(tmp_path, capsys):
    """Counterpart: the same torch 2.0.1+cu118 with /usr/local/cuda-11.8/lib64 on LD_LIBRARY_PATH holding only the
    CUDA runtime of the same 11.x soname (the usual CUDA install instructions): the bundled cuDNN is the one used."""
    d = "/usr/local/cuda-11.8/lib64"
    snap = sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=[_bundling_torch("2.0.1+cu118", "11.8")], ld_library_path=[d],
                      libraries=[Library("libcudart", f"{d}/libcudart.so.11.8.89", "11.8.89", "LD_LIBRARY_PATH")])
    rc, report = check_cli(snap, tmp_path, capsys)
    assert _ids(report, "ED300", "ED310", "ED320", "ED600") == []


def test_resolver_healthy_torch_cu12_with_matching_nvidia_wheels():
    """Healthy: torch 2.4.1 (PyPI, CUDA 12.1) with every nvidia-* wheel it pins, the driver's libcuda in the
    ldconfig cache. Each family resolves to its wheel (RUNPATH) and satisfies its pin; libcuda to the system."""
    pkgs = dict(TORCH_241_PKGS, **{"nvidia-nvjitlink-cu12": "12.6.85"})
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"], packages=pkgs,
                      frameworks=[sf.torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                      libraries=[Library("libcuda", f"{LIB}/libcuda.so.550.54.15", "550.54.15", "ldconfig")])
    fw = snap.python.frameworks[0]
    fw.location = SITE
    got = {k: loaded(snap, fw, k) for k in FAMILIES}
    for k in ("cudart", "cublas", "cudnn", "nccl", "nvrtc", "cufft", "curand", "cusolver", "cusparse"):
        assert got[k].where == "wheel" and got[k].satisfied is True, (k, got[k])
    assert got["cudnn"].version == "9.1.0.70" and got["cudnn"].path == f"{SITE}/nvidia/cudnn/lib"
    assert got["nvjitlink"].where == "wheel" and got["nvjitlink"].pin is None  # not pinned by torch itself
    assert (got["libcuda"].where, got["libcuda"].version) == ("system", "550.54.15")
    assert serious(check(snap, ["ED3", "ED6"])) == []


def test_resolver_order_ld_preload_then_ld_library_path_then_the_wheel():
    """The loader's order for a bare soname (envdoctor.binaries.loader): LD_PRELOAD before LD_LIBRARY_PATH before
    the RUNPATH that finds the wheel; a copy of another major (another soname) never serves the lookup."""
    pkgs = {"nvidia-cublas-cu12": "12.1.3.1"}
    base = dict(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"], packages=pkgs,
                frameworks=[sf.torch("2.4.1", cuda="12.1", requires=[f"nvidia-cublas-cu12 (==12.1.3.1) {_L}"])])
    on_path = Library("libcublas", "/usr/local/cuda-12.4/lib64/libcublas.so.12.4.5.8", "12.4.5.8", "LD_LIBRARY_PATH")
    other = Library("libcublas", "/usr/local/cuda-11.8/lib64/libcublas.so.11.11.3.6", "11.11.3.6", "LD_LIBRARY_PATH")
    pre = Library("libcublas", "/opt/pre/libcublas.so.12.3.4.1", "12.3.4.1", "LD_PRELOAD")
    snap = sf.machine(ld_library_path=["/usr/local/cuda-11.8/lib64", "/usr/local/cuda-12.4/lib64"],
                      libraries=[other, on_path], **base)
    lib = loaded(snap, snap.python.frameworks[0], "cublas")
    assert (lib.where, lib.version, lib.satisfied) == ("LD_LIBRARY_PATH", "12.4.5.8", False)
    assert lib.own.where == "wheel" and lib.other_majors == [other]
    snap.loader.ld_preload = [pre.path]
    snap.loader.libraries.append(pre)
    assert loaded(snap, snap.python.frameworks[0], "cublas").where == "LD_PRELOAD"
    snap.loader.libraries, snap.loader.ld_preload = [other], []
    assert loaded(snap, snap.python.frameworks[0], "cublas").where == "wheel"


def test_resolver_tensorflow_on_system_cudnn_next_to_torch():
    """TF 2.15 (plain, no [and-cuda]) next to torch 2.4.1: TF's cuDNN 8 lookup is not served by torch's cuDNN 9 wheel
    (another soname); it loads the system's 8.9.7 and no and-cuda pin applies. torch loads its wheel."""
    snap = _system_cuda_tf_next_to_torch()
    tf, torch = snap.python.frameworks
    lib = loaded(snap, tf, "cudnn")
    assert (lib.where, lib.version, lib.pin) == ("system", "8.9.7", None)
    assert loaded(snap, torch, "cudnn").where == "wheel"


def test_violated_torch_cudnn_pin_is_not_found_by_the_resolver(tmp_path, capsys):
    """https://github.com/rdyro/torch2jax/issues/29 - torch <= 2.3.1 pins nvidia-cudnn-cu12==8.9.2.26 while jax 0.6
    needs cuDNN >= 9.8: installing both upgrades the wheel to 9.x. torch asks for libcudnn.so.8, which the 9.x wheel
    does not have: the resolver finds no copy and ED300 says so, through the CLI."""
    t231 = [f"nvidia-cudnn-cu12 (==8.9.2.26) {_L}", f"nvidia-cublas-cu12 (==12.1.3.1) {_L}"]
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      packages={"nvidia-cudnn-cu12": "9.8.0.87", "nvidia-cublas-cu12": "12.1.3.1"},
                      frameworks=[sf.torch("2.3.1", cuda="12.1", requires=t231)])
    lib = loaded(snap, snap.python.frameworks[0], "cudnn")
    assert (lib.where, lib.major, str(lib.pin.specifier)) == ("not found", 8, "==8.9.2.26")
    rc, report = check_cli(snap, tmp_path, capsys)
    assert ("ED300", "error") in _ids(report, "ED300")


def test_an_older_cudnn_first_on_ld_library_path_is_judged_not_the_newest():
    """https://github.com/jax-ml/jax/issues/15268 - jaxlib 0.4.7+cuda11.cudnn86 fails with 'Loaded runtime CuDNN
    library: 8.5.0 but source was compiled with: 8.6.0' ("Is there an older CuDNN somewhere on your system?"): the
    copy the loader takes first decides, even with a newer 8.6 in the ldconfig cache. (The directories are a
    modelling choice; the report names neither.)"""
    d = "/opt/cudnn-8.5/lib"
    snap = sf.machine(driver="525.85.12", driver_cuda="12.0", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=jax_with("0.4.7", "0.4.7+cuda11.cudnn86"), ld_library_path=[d],
                      cudnn=[Cudnn("8.6.0", "library", f"{LIB}/libcudnn.so.8.6.0",
                                   [Evidence("cmd:ldconfig -p", f"libcudnn.so.8 (libc6,x86-64) => {LIB}/libcudnn.so.8")])],
                      libraries=[Library("libcudnn", f"{d}/libcudnn.so.8.5.0", "8.5.0", "LD_LIBRARY_PATH")])
    found = by_id(check(snap, ["ED300"]), "ED300")
    assert [f.severity for f in found] == ["error"] and "8.5.0" in found[0].message and d in found[0].message
    snap.loader.ld_library_path, snap.loader.libraries = [], []  # counterpart: the cache's 8.6.0 is what loads
    assert by_id(check(snap, ["ED300"]), "ED300") == []


def _jax_plugin_over_jaxlib(cudnn_wheel: str):
    """jax 0.4.28 with jaxlib 0.4.28+cuda12.cudnn89 and a jax-cuda12-plugin 0.4.31 (cuDNN >= 9.1 per its metadata)."""
    fws = jax_with("0.4.28", "0.4.28+cuda12.cudnn89")
    fws.append(Framework("jax-cuda12-plugin", "jax-cuda12-plugin", "0.4.31", build="cuda", cuda_version="12"))
    return sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=fws,
                      packages={"nvidia-cudnn-cu12": cudnn_wheel, "jax-cuda12-pjrt": "0.4.31"})


def test_jax_plugin_and_jaxlib_label_the_plugin_is_judged():
    """https://github.com/jax-ml/jax/issues/22416 - jaxlib 0.4.28+cuda12.cudnn89 installed, a newer CUDA plugin next
    to it, and 'Loaded runtime CuDNN library: 9.0.0 but source was compiled with: 9.1.1': the plugin is what jax
    loads, so its cuDNN need (>= 9.1) is judged against the 9.0.0 wheel - an error; jaxlib's own label (cudnn89) is
    kept in the snapshot as what the build says, not turned into a second, contradicting 'needs cuDNN 8'."""
    found = by_id(check(_jax_plugin_over_jaxlib("9.0.0.312"), ["ED300"]), "ED300")
    assert [f.severity for f in found] == ["error"], [f.message for f in found]
    assert "jax-cuda12-plugin" in found[0].message and "9.0.0.312" in found[0].message
    assert by_id(check(_jax_plugin_over_jaxlib("9.1.1.17"), ["ED300"]), "ED300") == []  # healthy counterpart


def test_probe_keeps_jaxlibs_cudnn_label_next_to_a_cuda_plugin():
    """A jax CUDA plugin's presence used to throw jaxlib's own +cuda12.cudnn89 label away (cudnn None)."""
    data = {"dists": [{"name": "jaxlib", "normalized": "jaxlib", "version": "0.4.28+cuda12.cudnn89", "files": {}},
                      {"name": "jax-cuda12-plugin", "normalized": "jax-cuda12-plugin", "version": "0.4.31",
                       "files": {}}],
            "platform": "linux-x86_64", "prefix": "/env", "base_prefix": "/usr"}
    env = pyenv.python_env_from(data)
    jl = next(fw for fw in env.frameworks if fw.name == "jaxlib")
    assert (jl.build, jl.cuda_version, jl.cudnn_version) == ("cuda", "12", "8.9")


def test_healthy_tf215_on_system_cuda_122_and_cudnn_897_through_the_cli(tmp_path, capsys):
    """Healthy: TensorFlow 2.15 (plain) on the system CUDA 12.2 + cuDNN 8.9.7 it was tested with
    (https://www.tensorflow.org/install/source#gpu), alone: no cuDNN or loader finding."""
    snap = sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      frameworks=[sf.tensorflow("2.15.0", cuda="12.2", cudnn="8", requires=TF_215)],
                      cudnn=[Cudnn("8.9.7", "library", f"{LIB}/libcudnn.so.8.9.7",
                                   [Evidence("cmd:ldconfig -p", f"libcudnn.so.8 (libc6,x86-64) => {LIB}/libcudnn.so.8")])],
                      toolkits=[Toolkit("/usr/local/cuda-12.2", "12.2.140", "version.json", is_default=True)],
                      ld_library_path=["/usr/local/cuda-12.2/lib64"],
                      libraries=[Library("libcudart", "/usr/local/cuda-12.2/lib64/libcudart.so.12.2.140", "12.2.140",
                                         "LD_LIBRARY_PATH")], python="3.10.12")
    rc, report = check_cli(snap, tmp_path, capsys)
    assert _ids(report, "ED300", "ED310", "ED320", "ED600") == []


def test_healthy_cpu_laptop_and_container_stay_clean(tmp_path, capsys):
    """Healthy: a CPU-only laptop (torch 2.4.1+cpu, no GPU) and a container with torch 2.4.1's wheels and the
    driver's libcuda mounted by the NVIDIA container toolkit under /usr/local/nvidia/lib64 on LD_LIBRARY_PATH."""
    laptop = sf.machine(frameworks=[sf.torch("2.4.1+cpu")])
    assert _ids(check_cli(laptop, tmp_path, capsys)[1], "ED300", "ED310", "ED320", "ED600") == []
    d = "/usr/local/nvidia/lib64"
    box = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                     packages=TORCH_241_PKGS, frameworks=[sf.torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                     ld_library_path=[d], libraries=[Library("libcuda", f"{d}/libcuda.so.550.54.15", "550.54.15",
                                                             "LD_LIBRARY_PATH")])
    box.platform.container = "docker"
    assert loaded(box, box.python.frameworks[0], "libcuda").where == "LD_LIBRARY_PATH"
    assert _ids(check_cli(box, tmp_path, capsys)[1], "ED300", "ED310", "ED320", "ED600") == []


def test_explain_names_the_resolvers_order(capsys):
    """`envdoctor explain ED300/ED320/ED600` documents that the rules read the resolver, and in which order it looks."""
    from tests.test_gate_integrations import cli

    for rid, words in (("ED300", ("envdoctor.facts.libraries", "LD_PRELOAD", "LD_LIBRARY_PATH", "RUNPATH", "conda")),
                       ("ED320", ("envdoctor.facts.libraries", "in effect", "extra")),
                       ("ED600", ("envdoctor.facts.libraries", "LD_PRELOAD", "LD_LIBRARY_PATH", "RUNPATH", "torch/lib"))):
        rc, out, err = cli(["explain", rid], capsys)
        assert rc == 0 and "Traceback" not in err
        text = " ".join(out.split())
        assert all(w in text for w in words), (rid, [w for w in words if w not in text])


def test_the_helpers_torch_lib_listing_is_bounded_and_checked(tmp_path):
    """The helper lists at most MAX_BUNDLED names per distribution; an answer whose `bundled` is not a list of
    strings (a patched interpreter) is a probe error, not a silently empty section."""
    from envdoctor.probes import _pyenv_helper as helper

    lib = tmp_path / "site" / "torch" / "lib"
    lib.mkdir(parents=True)
    for i in range(helper.MAX_BUNDLED + 20):
        (lib / f"libcudnn_part{i}.so.8").write_bytes(b"")
    (lib / "libtorch_cuda.so").write_bytes(b"")
    got = helper.bundled_libs("torch", str(tmp_path / "site"), [])
    assert len(got) == helper.MAX_BUNDLED and all("/torch/lib/libcudnn_part" in p for p in got)
    assert helper.bundled_libs("tensorflow", str(tmp_path / "site"), []) == []
    bad = {"dists": [{"name": "torch", "normalized": "torch", "version": "2.0.1", "bundled": [3]}]}
    assert "bundled" in (pyenv.helper_answer_problem(bad) or "")


def _tf215_next_to_torch(torch_version: str, torch_requires, pkgs):
    return sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"], packages=pkgs,
                      frameworks=[sf.tensorflow("2.15.0", cuda="12.2", cudnn="8", requires=TF_215),
                                  sf.torch(torch_version, cuda="12.1", requires=torch_requires)], python="3.10.12")


def test_plain_tf215_finds_torchs_cudnn_8_wheel_through_its_runpath():
    """Healthy: plain tensorflow 2.15 next to torch 2.1.2, whose pin installed nvidia-cudnn-cu12 8.9.2.26
    (libcudnn.so.8), no system cuDNN. TF's wheels carry the RUNPATH into site-packages/nvidia/*/lib whether or not
    [and-cuda] was installed (https://github.com/tensorflow/tensorflow/pull/59825: 'include the rpaths but not the
    explicit dependencies'), so TF loads that 8.9.2.26 - no pin of its own applies. This was a false ED300 error
    ('no cuDNN 8 library or nvidia-cudnn wheel was found')."""
    t212 = [f"nvidia-cudnn-cu12 (==8.9.2.26) {_L}", f"nvidia-cublas-cu12 (==12.1.3.1) {_L}"]
    snap = _tf215_next_to_torch("2.1.2", t212, {"nvidia-cudnn-cu12": "8.9.2.26", "nvidia-cublas-cu12": "12.1.3.1"})
    tf = snap.python.frameworks[0]
    lib = loaded(snap, tf, "cudnn")
    assert (lib.where, lib.version, lib.pin) == ("wheel", "8.9.2.26", None)
    assert serious(check(snap, ["ED3", "ED600"])) == []


def test_plain_tf215_next_to_torch_241_without_system_cudnn_is_an_error():
    """Counterpart: next to torch 2.4.1 the wheel is cuDNN 9 (libcudnn.so.9), which TF 2.15's libcudnn.so.8 lookup
    cannot use, and the machine has no cuDNN 8: ED300 error for TensorFlow."""
    snap = _tf215_next_to_torch("2.4.1", TORCH_241, dict(TORCH_241_PKGS))
    assert loaded(snap, snap.python.frameworks[0], "cudnn").where == "not found"
    found = by_id(check(snap, ["ED300"]), "ED300")
    assert [(f.severity, f.subject) for f in found] == [("error", "tensorflow 2.15.0")]


def test_a_bundling_torch_ignores_a_cudnn_wheel_someone_else_installed():
    """torch 2.0.1+cu118 carries RUNPATH $ORIGIN only (its libraries are in torch/lib): an nvidia-cudnn-cu11 wheel
    another package installed is not what it loads; its bundle is."""
    snap = sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=[_bundling_torch("2.0.1+cu118", "11.8")], packages={"nvidia-cudnn-cu11": "8.9.6.50"})
    lib = loaded(Context(snap, matrices()), snap.python.frameworks[0], "cudnn")
    assert (lib.where, lib.version, lib.package) == ("bundle", "8.7.0.84", None)


def test_the_binaries_scans_answer_is_taken_as_the_loaders():
    """When the binaries scan resolved a framework object's DT_NEEDED (envdoctor.binaries.loader: RPATH included),
    that answer is what the resolver reports, ahead of LD_LIBRARY_PATH and the wheel."""
    from envdoctor.snapshot import CudaBinary, LinkedLibrary

    d = "/opt/cudnn-9.1/lib"
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      packages={"nvidia-cudnn-cu12": "9.1.0.70"},
                      frameworks=[sf.torch("2.4.1", cuda="12.1", requires=[f"nvidia-cudnn-cu12 (==9.1.0.70) {_L}"])],
                      ld_library_path=["/usr/local/cuda/lib64"],
                      libraries=[Library("libcudnn", "/usr/local/cuda/lib64/libcudnn.so.9.0.0", "9.0.0", "LD_LIBRARY_PATH")])
    snap.binaries.binaries = [CudaBinary(f"{SITE}/torch/lib/libtorch_cuda.so", package="torch", package_version="2.4.1",
                                         libraries=[LinkedLibrary("libcudnn.so.9", f"{d}/libcudnn.so.9", "RPATH")])]
    lib = loaded(snap, snap.python.frameworks[0], "cudnn")
    assert (lib.where, lib.path, lib.version_source) == ("binaries", f"{d}/libcudnn.so.9", "binaries scan (RPATH)")
    assert lib.own.where == "wheel"


def test_a_conda_env_library_is_found_before_the_system():
    """A conda interpreter's frameworks find the environment's lib directory before the ldconfig cache: a conda
    TensorFlow 2.15 build (no nvidia-* Requires-Dist) with cudnn 8.9.7 in $CONDA_PREFIX/lib and an 8.6 system copy."""
    prefix = "/opt/conda/envs/tf"
    snap = sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      frameworks=[sf.tensorflow("2.15.0", cuda="12.2", cudnn="8")],
                      cudnn=[Cudnn("8.9.7", "library", f"{prefix}/lib/libcudnn.so.8.9.7", [Evidence("conda-meta", "cudnn")]),
                             Cudnn("8.6.0", "library", f"{LIB}/libcudnn.so.8.6.0",
                                   [Evidence("cmd:ldconfig -p", f"libcudnn.so.8 (libc6,x86-64) => {LIB}/libcudnn.so.8")])])
    snap.python.kind, snap.python.prefix = "conda", prefix
    lib = loaded(snap, snap.python.frameworks[0], "cudnn")
    assert (lib.where, lib.version) == ("conda", "8.9.7")
    snap.python.kind = "venv"
    assert (loaded(snap, snap.python.frameworks[0], "cudnn").where,) == ("system",)
