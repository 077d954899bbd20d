"""ED340: builds that load the system CUDA runtime (TensorFlow <= 2.13 pip wheels, later ones without [and-cuda])
find the sonames (Linux) or DLLs (Windows) their CUDA and cuDNN versions ask for. Modelled on public reports, with
healthy counterparts that must stay silent; the Windows DLL look-up of the loader probe on real folders."""
from __future__ import annotations

import json

import pytest

from envdoctor.knowledge.extra_tables import system_libraries
from envdoctor.probes.loader import DLL_SCAN, windows_dlls
from envdoctor.snapshot import Evidence, Library
from tests.cli_run import run
from tests.rules.helpers import by_id, check
from tests.snapfactory import machine, tensorflow

GPU = dict(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 3070 Ti:8.6"])


def linux_lib(name, version, d="/usr/local/cuda/lib64"):
    return Library(name=name, path=f"{d}/{name}.so.{version}", version=version, via="ldconfig")


LIBCUDA = linux_lib("libcuda", "535.104.05", "/usr/lib/x86_64-linux-gnu")


def windows(libs, scanned=True, **kw):
    snap = machine(frameworks=[tensorflow("2.10.0", cuda="11.2", cudnn="8")], system="Windows",
                   machine_arch="AMD64", libraries=libs, python="3.10.11", **kw)
    if scanned:
        snap.loader.evidence.append(Evidence(DLL_SCAN, f"{len(libs)} CUDA DLLs on PATH"))
    return snap


def dll(name, d=r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.2\bin"):
    stem = name[:-4]
    return Library(name=stem.rpartition("_")[0], path=f"{d}\\{name}", version=stem.rpartition("_")[2], via="PATH")


def test_bundled_rows_load():
    assert system_libraries().problems == []
    assert {(r.family, r.series) for r in system_libraries().rows} >= {("cudart", "11"), ("cublas", "11"),
                                                                      ("cudnn", "8")}


def test_tf_2_10_on_windows_without_the_cuda_11_dlls(tmp_path):
    """https://github.com/tensorflow/tensorflow/issues/61438: TF 2.10.0 on Windows 11, RTX 3070 Ti, CUDA 11.2
    installed, "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found". Here PATH
    holds CUDA 10.1's DLLs only (the other common shape, #41909). Through the real CLI."""
    snap = windows([dll("cudart64_101.dll", r"C:\CUDA\v10.1\bin"), dll("cublas64_10.dll", r"C:\CUDA\v10.1\bin")],
                   **GPU)
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED340"]
    assert f["severity"] == "error"
    for name in ("cudart64_110.dll", "cublas64_11.dll", "cudnn64_8.dll"):
        assert name in f["message"]
    assert "PATH" in f["message"] and any("bin folder on PATH" in x for x in f["fix"])


def test_tf_2_13_on_windows_missing_only_cudnn():
    """https://github.com/tensorflow/tensorflow/issues/72097 (TF 2.13, Windows, GTX 1650: 'cudnn64_8.dll not
    found' among others): only what is missing is named."""
    snap = windows([dll("cudart64_110.dll"), dll("cublas64_11.dll")], **GPU)
    snap.python.frameworks = [tensorflow("2.13.0", cuda="11.8", cudnn="8")]
    (f,) = by_id(check(snap, ["ED340"]), "ED340")
    assert "cudnn64_8.dll" in f.message and "cudart64_110.dll" not in f.message


@pytest.mark.parametrize("snap", [
    pytest.param(windows([dll("cudart64_110.dll"), dll("CUBLAS64_11.DLL"), dll("cudnn64_8.dll")], **GPU),
                 id="windows-all-dlls-on-path"),
    pytest.param(windows([], scanned=False, **GPU), id="windows-snapshot-that-never-looked"),
    pytest.param(windows([]), id="windows-cpu-laptop"),
])
def test_windows_healthy_or_unjudged_is_silent(snap):
    assert by_id(check(snap, ["ED340"]), "ED340") == []


def test_tf_2_11_on_linux_with_only_a_cuda_12_toolkit():
    """https://github.com/NVIDIA/tensorflow/issues/110 and https://github.com/tensorflow/tensorflow/issues/60646:
    a system-CUDA TensorFlow ('Cannot dlopen some GPU libraries ... Skipping registering GPU devices') where the
    toolkit on the loader path is of another major."""
    snap = machine(frameworks=[tensorflow("2.11.0", cuda="11.2", cudnn="8")],
                   libraries=[LIBCUDA, linux_lib("libcudart", "12.2.140"), linux_lib("libcublas", "12.2.5.6")], **GPU)
    (f,) = by_id(check(snap, ["ED340"]), "ED340")
    assert f.severity == "error" and "libcudart.so.11.0" in f.message and "libcublas.so.11" in f.message
    assert "libcudnn" not in f.message  # cuDNN on Linux is ED300's


@pytest.mark.parametrize("snap", [
    pytest.param(machine(frameworks=[tensorflow("2.11.0", cuda="11.2", cudnn="8")],
                         libraries=[LIBCUDA, linux_lib("libcudart", "11.8.89"), linux_lib("libcublas", "11.11.3.6")], **GPU),
                 id="cuda-11.8-runtime-serves-an-11.2-build"),
    pytest.param(machine(frameworks=[tensorflow("2.11.0", cuda="11.2", cudnn="8")]), id="cpu-laptop"),
    pytest.param(machine(frameworks=[tensorflow("2.11.0", cuda="11.2", cudnn="8")], wsl=2,
                         libraries=[linux_lib("libcuda", "1", "/usr/lib/wsl/lib"),
                                    linux_lib("libcudart", "11.8.89", "/home/u/miniconda3/envs/tf/lib"),
                                    linux_lib("libcublas", "11.11.3.6", "/home/u/miniconda3/envs/tf/lib")], **GPU),
                 id="wsl2-conda-cudatoolkit-on-ld-library-path"),
])
def test_linux_healthy_is_silent(snap):
    assert by_id(check(snap, ["ED340"]), "ED340") == []


def test_a_loader_record_without_libcuda_is_not_judged():
    """An incomplete record (an old snapshot, an unreadable ld.so cache) would make every library look missing."""
    snap = machine(frameworks=[tensorflow("2.11.0", cuda="11.2", cudnn="8")],
                   libraries=[linux_lib("libcudart", "12.2.140")], **GPU)
    assert by_id(check(snap, ["ED340"]), "ED340") == []
    snap.loader.libraries.append(LIBCUDA)
    assert [f.id for f in check(snap, ["ED340"])] == ["ED340"]


def test_and_cuda_wheels_are_not_a_system_cuda_build():
    """TF 2.15.0 with its [and-cuda] wheels loads them through its RPATH: no system CUDA needed."""
    from tests.generalise.test_class10_known_broken import tf_and_cuda

    snap = tf_and_cuda("2.15.0", libraries=[LIBCUDA], **GPU)
    assert by_id(check(snap, ["ED340"]), "ED340") == []
    snap.python.frameworks[0].requires = []  # the same build without its [and-cuda] wheels needs the system's
    snap.python.packages = {"tensorflow": "2.15.0"}
    assert by_id(check(snap, ["ED340"]), "ED340") == []  # no CUDA 12 row in the data: not judged, never guessed


def test_conda_built_tensorflow_is_not_judged():
    snap = machine(frameworks=[tensorflow("2.11.0", cuda="11.2", cudnn="8")], libraries=[LIBCUDA], **GPU)
    snap.installers.dists = {"tensorflow": "conda"}
    assert by_id(check(snap, ["ED340"]), "ED340") == []


def test_windows_dll_lookup_on_real_folders(tmp_path):
    first, second = tmp_path / "v11.2" / "bin", tmp_path / "v10.1" / "bin"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    for name in ("cudart64_110.dll", "cublas64_11.dll", "nvcc.exe"):
        (first / name).write_bytes(b"MZ")
    for name in ("cudart64_110.dll", "cudnn64_8.dll", "zlibwapi.dll"):
        (second / name).write_bytes(b"MZ")
    import os

    libs = windows_dlls(f"{first};{tmp_path / 'missing'};;{second}", lambda d: sorted(os.listdir(d))
                        if os.path.isdir(d) else [])
    found = {(x.name, x.version): x.path for x in libs}
    assert set(found) == {("cudart64", "110"), ("cublas64", "11"), ("cudnn64", "8")}
    assert found[("cudart64", "110")].startswith(str(first))  # the first folder on PATH wins


def test_explain_documents_the_rule():
    proc = run("explain", "ED340")
    assert proc.returncode == 0, proc.stderr
    assert "system_runtime.toml" in proc.stdout and "issues/61438" in proc.stdout


def test_the_loader_probe_scans_path_on_a_windows_snapshot_only(tmp_path):
    """The probe itself, on this (live) machine with a Windows platform record: the DLLs of PATH's folders are
    recorded with the evidence line ED340 requires; the same PATH on a Linux record is not scanned."""
    from envdoctor.fsroot import Root
    from envdoctor.probes import loader
    from envdoctor.probes.base import ProbeContext
    from envdoctor.snapshot import Snapshot

    d = tmp_path / "CUDA" / "v11.2" / "bin"
    d.mkdir(parents=True)
    (d / "cudart64_110.dll").write_bytes(b"MZ")
    (d / "cudnn64_8.dll").write_bytes(b"MZ")
    for system, expect in (("Windows", {"cudart64_110.dll", "cudnn64_8.dll"}), ("Linux", set())):
        snap = Snapshot()
        snap.platform.system = system
        loader.probe(ProbeContext(root=Root(), env={"PATH": f"{d};{tmp_path / 'none'}"}, timeout=20), snap)
        dlls = {x.path.rsplit("\\", 1)[-1] for x in snap.loader.libraries if x.via == "PATH"}
        assert dlls == expect
        assert any(e.source == DLL_SCAN for e in snap.loader.evidence) == (system == "Windows")


def _toolkit(version, folder):
    from envdoctor.snapshot import Toolkit

    return Toolkit(path=rf"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\{folder}", version=version,
                   found_by=["CUDA_PATH"])


def test_tf_2_10_on_windows_with_cuda_11_2_installed_but_not_on_path(tmp_path):
    """https://github.com/tensorflow/tensorflow/issues/61438: "CUDA 11.2 installed", yet TF 2.10.0 logs "Could not
    load dynamic library 'cudart64_110.dll'": the installed toolkit's bin folder is not on PATH. The snapshot's
    toolkit record (CUDA_PATH) names it, so the fix is that folder on PATH, not another install. Through the real
    CLI."""
    snap = windows([], **GPU)
    snap.toolkits = [_toolkit("11.2.152", "v11.2")]
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json")
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED340"]
    assert "CUDA 11.2.152 is installed at" in f["message"] and "not on PATH" in f["message"]
    tk_bin = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.2\bin"
    assert f["fix"][0].startswith(f'$ set "PATH={tk_bin};%PATH%"'), f["fix"]
    assert any("cuDNN 8" in x for x in f["fix"])  # cudnn64_8.dll is no part of the toolkit: still to install


def test_tf_2_10_on_windows_with_only_cuda_12_installed():
    """The other shape of the same report: the CUDA installed is 12.x, whose DLLs (cudart64_12.dll) are not the
    CUDA 11 ones TF 2.10 opens: no PATH line helps, the installed toolkit is named as another major."""
    snap = windows([dll("cudart64_12.dll", r"C:\CUDA\v12.4\bin")], **GPU)
    snap.toolkits = [_toolkit("12.4.131", "v12.4")]
    (f,) = by_id(check(snap, ["ED340"]), "ED340")
    assert "12.4.131" in f.message and "another major" in f.message
    assert not any(x.startswith("$ set ") for x in f.fix) and any("Install the CUDA 11.x runtime" in x for x in f.fix)
