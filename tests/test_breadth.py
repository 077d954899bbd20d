"""Breadth: kernels, GPU memory and its holders, allocator settings, build-time variables, NCCL,
conda+pip, other accelerators, CPU flags / compilers / numpy ABI -- on fake machines, through the real CLI."""
from __future__ import annotations

import json
import os
from pathlib import Path

from envdoctor.parsers.breadth import (parse_alloc_conf, parse_arch_list, parse_compute_apps, parse_cpuinfo,
                                       parse_gpu_memory, parse_jsonc, parse_nvcc_archs, parse_tool_version)
from envdoctor.probes import accelerators
from envdoctor.probes.memory import _mask_args, name_processes
from envdoctor.snapshot import Accelerator, GpuMemoryUse, GpuProcess, Kernel, Snapshot
from tests import snapfactory as sf
from tests.cli_run import run
from tests.fakes import make_exe, write
from tests.test_probe_pyenv import FakeVenv, fixture, simple_metadata
from tests.test_probe_nvidia import QUERY_580

FIX = Path(__file__).parent / "fixtures"
B = FIX / "breadth"


def findings(proc):
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["findings"]


def ids(proc):
    return [f["id"] for f in findings(proc)]


def check_snapshot(tmp_path, snap: Snapshot, *args):
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    return run("check", "--snapshot", str(path), "--format", "json", *args)


def clean_env(tmp_path, **extra):
    env = {k: None for k in os.environ if k.startswith(("NCCL_", "PYTORCH_", "XLA_", "TF_", "TORCH_CUDA", "CUDA",
                                                       "JUPYTER", "VIRTUAL_ENV", "CONDA"))}
    env.update({"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": None})
    env.update(extra)
    return env


# -- 1. Jupyter kernels and the VS Code interpreter ---------------------------------------------------


def _kernel(root: Path, name: str, argv0: str, language: str = "python"):
    write(root / "kernels" / name / "kernel.json", json.dumps(
        {"argv": [argv0, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": name, "language": language}))


def test_kernels_on_the_wrong_interpreter(tmp_path):
    gpu = FakeVenv(tmp_path / "gpu")
    gpu.dist("torch-2.14.1.dist-info", fixture("METADATA_torch-2.14.1"),
             {"torch/version.py": fixture("torch_version_2.14.1+cu130.py")})
    cpu = FakeVenv(tmp_path / "cpu")
    cpu.dist("torch-2.13.0+cpu.dist-info", fixture("METADATA_torch-2.13.0+cpu"),
             {"torch/version.py": fixture("torch_version_2.13.0+cpu.py")})
    bare = FakeVenv(tmp_path / "bare")
    kdir = tmp_path / "jupyter"
    _kernel(kdir, "gpu", str(gpu.python))
    _kernel(kdir, "cpu-env", str(cpu.python))
    _kernel(kdir, "bare", str(bare.python))
    _kernel(kdir, "gone", str(tmp_path / "deleted-venv" / "bin" / "python"))
    _kernel(kdir, "ir", "R", language="R")
    project = tmp_path / "project"
    write(project / ".vscode" / "settings.json",
          '{\n  // the workspace interpreter\n  "python.defaultInterpreterPath": "${workspaceFolder}/.venv/bin/python",\n}\n')
    env = clean_env(tmp_path, JUPYTER_PATH=str(kdir))

    plain = run("probe", "--python", str(gpu.python), "--format", "json", env=env, cwd=str(project))
    ks = {k["name"]: k for k in json.loads(plain.stdout)["kernels"]["kernels"]}
    assert ks["gpu"]["status"] == ks["cpu-env"]["status"] == "unprobed"
    assert ks["gone"]["status"] == "missing" and ks["ir"]["status"] == "not_python"
    assert ks["VS Code workspace"]["interpreter"].endswith("project/.venv/bin/python")

    proc = run("check", "--python", str(gpu.python), "--kernels", "--format", "json", env=env, cwd=str(project))
    fs = findings(proc)
    by = {(f["id"], f["subject"]) for f in fs}
    assert ("ED611", "cpu-env") in by and ("ED611", "bare") in by
    assert ("ED611", "gpu") not in by
    assert ("ED610", "gone") in by and ("ED610", "VS Code workspace") in by
    msg = next(f["message"] for f in fs if f["subject"] == "cpu-env")
    assert "torch 2.13.0+cpu is a cpu build" in msg and "2.14.1+cu130" in msg
    md = run("check", "--python", str(gpu.python), "--kernels", "--format", "markdown", env=env, cwd=str(project)).stdout
    assert "| kernel cpu-env |" in md and "torch 2.13.0+cpu" in md


def test_kernel_dirs_follow_jupyter_core_order(tmp_path):
    from envdoctor.probes.kernels import data_dirs

    env = {"HOME": "/h", "JUPYTER_PATH": f"/a{os.pathsep}/b"}
    assert data_dirs(env, "Linux", ["/env"]) == ["/a", "/b", "/h/.local/share/jupyter", "/env/share/jupyter",
                                                  "/usr/local/share/jupyter", "/usr/share/jupyter"]
    assert data_dirs({"HOME": "/h", "JUPYTER_DATA_DIR": "/d"}, "Darwin", [])[0] == "/d"
    assert data_dirs({"HOME": "/h"}, "Darwin", [])[0] == "/h/Library/Jupyter"


def test_jsonc_reads_vscode_settings():
    assert parse_jsonc('{"a": "x // not a comment", /* c */ "b": [1,],}') == {"a": "x // not a comment", "b": [1]}
    assert parse_jsonc("{nope") is None


# -- 2. GPU memory and who holds it ---------------------------------------------------------------


def _smi_machine(tmp_path) -> Path:
    bindir = tmp_path / "bin"
    q = tmp_path / "query.csv"
    q.write_text(QUERY_580)
    make_exe(bindir / "nvidia-smi", "\n".join([
        'case "$1" in',
        f'  --query-gpu=index,uuid,memory.used*) cat "{B / "smi_query_gpu_memory_8x_h200.csv"}"; exit 0;;',
        f'  --query-compute-apps=*) cat "{B / "smi_query_compute_apps_8x_h200.csv"}"; exit 0;;',
        f'  --query-gpu=*) cat "{q}"; exit 0;;',
        "esac",
        f'cat "{FIX / "nvidia" / "smi_580.126.09_2x_a100.txt"}"']))
    return bindir


def test_leftover_processes_holding_gpu_memory(tmp_path):
    bindir = _smi_machine(tmp_path)
    env = clean_env(tmp_path, PATH=f"{bindir}:{os.environ['PATH']}")
    proc = run("check", "--format", "json", "--only", "ED620", env=env,
               prelude="import sys; sys.modules['pynvml'] = None")
    fs = findings(proc)
    held = sorted(f["subject"] for f in fs)
    assert held == ["GPU 0", "GPU 1", "GPU 3"]  # GPU 7's [Not Found] process holds 40%: not most of it
    assert "130004 of 143771 MiB held by pid 1328667" in fs[0]["message"]
    snap = json.loads(run("probe", "--format", "json", env=env, prelude="import sys; sys.modules['pynvml'] = None").stdout)
    procs = snap["memory"]["processes"]
    assert [p["pid"] for p in procs] == [1328667, 1328668, 1328669, 1758887]
    assert procs[3]["name"] == "" and procs[3]["gpu_index"] == 7 and procs[3]["used_mib"] == 58060
    md = run("check", "--format", "markdown", env=env, prelude="import sys; sys.modules['pynvml'] = None").stdout
    assert "| GPU 0 memory | 130013 / 143771 MiB used: pid 1328667" in md
    assert "GPU-a44622e3" not in md  # UUIDs stay redacted


def test_psutil_names_a_real_process():
    p = GpuProcess(pid=os.getpid(), used_mib=100)
    name_processes([p, GpuProcess(pid=2 ** 22 + 12345)])
    assert "python" in p.cmdline.lower() and p.user and p.age_s is not None and p.age_s >= 0


def test_secret_arguments_are_masked():
    assert _mask_args(["python", "train.py", "--api-key", "abc", "--hf-token=xyz", "--lr", "3"]) == \
        "python train.py --api-key <redacted> --hf-token=<redacted> --lr 3"


def test_compute_apps_parser_reads_the_real_csv():
    rows = parse_compute_apps((B / "smi_query_compute_apps_8x_h200.csv").read_text())
    assert rows[0] == {"gpu_uuid": "GPU-a44622e3-2296-6285-0a86-84d0f6c67900", "pid": 1328667,
                       "name": "/usr/local/bin/python3.10", "used_mib": 130004}
    mem = parse_gpu_memory((B / "smi_query_gpu_memory_8x_h200.csv").read_text())
    assert [m["used_mib"] for m in mem] == [130013, 130053, 0, 129993, 244, 4, 292, 58071]


def _torch_snap(version, cuda="12.1", **kw):
    return sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      frameworks=[sf.torch(version, cuda=cuda)], **kw)


def test_alloc_conf_key_newer_than_torch_is_an_error(tmp_path):
    snap = _torch_snap("2.0.1+cu118", cuda="11.8")
    snap.memory.allocator_env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128"}
    fs = findings(check_snapshot(tmp_path, snap, "--only", "ED621"))
    assert fs[0]["severity"] == "error" and "needs torch >= 2.1" in fs[0]["message"]
    snap.python.frameworks = [sf.torch("2.4.0+cu121", cuda="12.1")]
    fs = findings(check_snapshot(tmp_path, snap, "--only", "ED621"))
    assert fs[0]["severity"] == "info"


def test_alloc_conf_typo_and_syntax(tmp_path):
    snap = _torch_snap("2.4.0+cu121")
    snap.memory.allocator_env = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size:128,garbage_collection_threshold",
                                 "XLA_PYTHON_CLIENT_MEM_FRACTION": "75"}
    fs = findings(check_snapshot(tmp_path, snap, "--only", "ED621"))
    conf = next(f for f in fs if "PYTORCH" in f["message"])
    assert conf["severity"] == "error" and "'max_split_size' is not an option" in conf["message"]
    assert "'garbage_collection_threshold' is not key:value" in conf["message"]
    xla = next(f for f in fs if "XLA" in f["message"])
    assert xla["severity"] == "warning" and "not a number between 0 and 1" in xla["message"]


def test_alloc_conf_parser():
    assert parse_alloc_conf("roundup_power2_divisions:[256:1,>:4],backend:native") == (
        [("roundup_power2_divisions", "[256:1,>:4]"), ("backend", "native")], [])


def test_frameworks_that_each_preallocate(tmp_path):
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      frameworks=[sf.tensorflow("2.16.1", cuda="12.3", cudnn="8.9")]
                      + sf.jax("0.4.30", plugin="jax-cuda12-plugin"))
    assert "ED622" in ids(check_snapshot(tmp_path, snap, "--only", "ED622"))
    snap.memory.allocator_env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    assert ids(check_snapshot(tmp_path, snap, "--only", "ED622")) == []


# -- 3 and 4. build-time variables, nvcc, CUDA_LAUNCH_BLOCKING, NCCL, mixed GPUs ---------------------------


def _mixed(**env):
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4",
                      gpus=["NVIDIA GeForce RTX 4090:8.9", "Tesla T4:7.5"], frameworks=[sf.torch("2.4.0+cu121", cuda="12.1")])
    snap.buildenv.env = dict(env)
    snap.buildenv.nvcc = "/usr/local/cuda-13.0/bin/nvcc"
    snap.buildenv.nvcc_archs = parse_nvcc_archs((B / "nvcc_13.0.88_list_gpu_arch.txt").read_text())
    return snap


def test_arch_list_against_every_gpu_and_nvcc(tmp_path):
    fs = findings(check_snapshot(tmp_path, _mixed(TORCH_CUDA_ARCH_LIST="8.0"), "--only", "ED630"))
    assert len(fs) == 1 and "GPU 1 (Tesla T4, 7.5) is not covered" in fs[0]["message"]
    assert "GPU 0" not in fs[0]["message"]  # sm_80 SASS runs on 8.9
    fs = findings(check_snapshot(tmp_path, _mixed(TORCH_CUDA_ARCH_LIST="6.1;7.5;8.9", CUDAARCHS="75;89-real"),
                                 "--only", "ED630"))
    assert [f["subject"] for f in fs] == ["TORCH_CUDA_ARCH_LIST"]
    assert "cannot target 6.1" in fs[0]["message"]
    assert ids(check_snapshot(tmp_path, _mixed(CMAKE_CUDA_ARCHITECTURES="native"), "--only", "ED630")) == []


def test_mixed_generations_are_judged_per_gpu(tmp_path):
    snap = _mixed()
    snap.python.frameworks = [sf.torch("2.4.0+cu121", cuda="12.1", arch_list=["sm_80", "sm_86", "sm_90"])]
    fs = findings(check_snapshot(tmp_path, snap))
    assert any(f["id"] == "ED641" and "7.5: GPU 1 Tesla T4" in f["message"] for f in fs)
    arch = [f for f in fs if f["id"].startswith("ED2")]
    assert arch and all("GPU 1" in f["message"] or "T4" in f["message"] for f in arch), arch  # the 8.9 GPU is fine


def test_nccl_and_launch_blocking_from_the_live_environment(tmp_path):
    env = clean_env(tmp_path, NCCL_SOCKET_IFNAME="eth0", NCCL_P2P_DISABLE="1", NCCL_NET_PLUGIN_TOKEN="s3cr3t-value",
                    CUDA_LAUNCH_BLOCKING="1")
    fs = findings(run("check", "--format", "json", "--only", "ED632,ED640", env=env))
    by = {f["id"]: f["message"] for f in fs}
    assert "NCCL_SOCKET_IFNAME=eth0" in by["ED640"] and "NCCL_P2P_DISABLE=1" in by["ED640"]
    assert "s3cr3t-value" not in json.dumps(fs) and "NCCL_NET_PLUGIN_TOKEN=<redacted>" in by["ED640"]
    assert "CUDA_LAUNCH_BLOCKING=1" in by["ED632"]


def test_buildenv_probe_runs_the_default_nvcc(tmp_path):
    from envdoctor.fsroot import Root
    from envdoctor.probes import buildenv
    from envdoctor.probes.base import ProbeContext
    from envdoctor.snapshot import Toolkit

    nvcc = make_exe(tmp_path / "cuda" / "bin" / "nvcc", f'[ "$1" = --list-gpu-arch ] && cat "{B / "nvcc_13.0.88_list_gpu_arch.txt"}"')
    snap = Snapshot(toolkits=[Toolkit(path=str(tmp_path / "cuda"), nvcc=str(nvcc), is_default=True)])
    buildenv.probe(ProbeContext(root=Root("/"), env={"PATH": "/usr/bin:/bin", "TORCH_CUDA_ARCH_LIST": "8.6"}), snap)
    assert snap.buildenv.nvcc_archs[:3] == ["compute_75", "compute_80", "compute_86"] and "compute_121" in snap.buildenv.nvcc_archs
    assert snap.buildenv.env == {"TORCH_CUDA_ARCH_LIST": "8.6"}


def test_arch_list_parser():
    assert parse_arch_list("7.5;8.6+PTX 9.0a") == ([(75, ""), (86, ""), (90, "a")], [])
    assert parse_arch_list("75-real;all-major;sm_x") == ([(75, "")], ["all-major", "sm_x"])


# -- 5. conda and pip mixed ----------------------------------------------------------------------


def _conda_record(prefix: Path, name: str, version: str, build: str):
    rec = json.loads((B / "conda_meta_cuda-version-12.9-h4f385c5_3.json").read_text())  # the real PrefixRecord layout
    rec.update(name=name, version=version, build=build, fn=f"{name}-{version}-{build}.conda", files=[])
    write(prefix / "conda-meta" / f"{name}-{version}-{build}.json", json.dumps(rec, indent=2))


def test_conda_and_pip_in_one_environment(tmp_path):
    env_ = FakeVenv(tmp_path / "condaenv")
    _conda_record(env_.root, "cudatoolkit", "11.8.0", "h6a678d5_0")
    _conda_record(env_.root, "pytorch", "2.1.0", "py3.11_cuda11.8_cudnn8.7.0_0")
    _conda_record(env_.root, "cuda-version", "12.9", "h4f385c5_3")
    write(env_.root / "conda-meta" / "history", "")
    env_.dist("torch-2.14.1.dist-info", fixture("METADATA_torch-2.14.1"),
              {"torch/version.py": fixture("torch_version_2.14.1+cu130.py")})
    env_.dist("nvidia_cudnn_cu13-9.24.0.43.dist-info", fixture("METADATA_nvidia-cudnn-cu13-9.24.0.43"))
    proc = run("check", "--python", str(env_.python), "--format", "json", "--only", "ED660,ED661", env=clean_env(tmp_path))
    by = {f["id"]: f["message"] for f in findings(proc)}
    assert "cudatoolkit 11.8.0" in by["ED660"] and "nvidia-cudnn-cu13" in by["ED660"]
    assert "conda's pytorch 2.1.0" in by["ED661"] and "2.14.1+cu130, installed by pip" in by["ED661"]
    snap = json.loads(run("probe", "--python", str(env_.python), "--format", "json", env=clean_env(tmp_path)).stdout)
    assert {p["name"] for p in snap["installers"]["conda_packages"]} == {"cudatoolkit", "pytorch", "cuda-version"}
    assert snap["installers"]["dists"]["torch"] == "pip"


def test_two_copies_on_sys_path(tmp_path):
    v = FakeVenv(tmp_path / "v")
    v.dist("numpy-2.0.1.dist-info", simple_metadata("numpy", "2.0.1"), packages=["numpy"])
    user = tmp_path / "user-site"
    v.dist("numpy-1.26.4.dist-info", simple_metadata("numpy", "1.26.4"), base=user)
    env = clean_env(tmp_path, PYTHONPATH=str(user))
    fs = findings(run("check", "--python", str(v.python), "--format", "json", "--only", "ED661", env=env))
    assert len(fs) == 1 and "numpy is installed 2 times" in fs[0]["message"] and "(imported)" in fs[0]["message"]


# -- 6. other accelerators -----------------------------------------------------------------------


def test_other_accelerators_are_named(tmp_path):
    xpu = sf.machine(frameworks=[sf.torch("2.5.1+xpu")], packages={"torch-npu": "2.5.1"})
    accelerators.probe(None, xpu)
    assert [a.kind for a in xpu.accelerators] == ["xpu", "npu"]
    fs = findings(check_snapshot(tmp_path, xpu, "--only", "ED430"))
    assert any("Intel GPU (torch.xpu)" in f["message"] for f in fs) and any("Ascend" in f["message"] for f in fs)

    mac = sf.machine(frameworks=[sf.torch("2.5.1")], system="Darwin", machine_arch="arm64")
    accelerators.probe(None, mac)
    fs = findings(check_snapshot(tmp_path, mac, "--only", "ED430"))
    assert "MPS" in fs[0]["message"] and "torch >= 1.12" in fs[0]["message"]

    rocm = sf.machine(frameworks=[sf.torch("2.4.0+rocm6.1", rocm="6.1")])
    rocm.rocm.installed, rocm.rocm.version = True, "5.7.1"
    accelerators.probe(None, rocm)
    fs = findings(check_snapshot(tmp_path, rocm, "--only", "ED431"))
    assert fs[0]["severity"] == "warning" and "built for ROCm 6.1; the host has ROCm 5.7.1" in fs[0]["message"]


# -- 7. what bug reports ask for ------------------------------------------------------------------


def test_cpu_and_compiler_facts_from_real_outputs():
    model, flags = parse_cpuinfo((B / "proc_cpuinfo_this_machine.txt").read_text())
    assert model == "AMD EPYC" and {"avx", "avx2", "fma"} <= set(flags)
    assert parse_tool_version("gcc", (B / "gcc_12.2.0_version.txt").read_text()) == "12.2.0"
    assert parse_tool_version("cmake", (B / "cmake_3.25.1_version.txt").read_text()) == "3.25.1"
    assert parse_tool_version("ninja", (B / "ninja_1.11.1_version.txt").read_text()) == "1.11.1"


def test_cpu_without_avx(tmp_path):
    snap = sf.machine(frameworks=[sf.tensorflow("2.16.1")])
    snap.host.cpu_model, snap.host.cpu_flags = "QEMU Virtual CPU version 2.5+", ["sse4_2"]
    fs = findings(check_snapshot(tmp_path, snap, "--only", "ED670"))
    assert "lacks avx, avx2" in fs[0]["message"]
    snap.host.cpu_flags = ["sse4_2", "avx", "avx2"]
    assert ids(check_snapshot(tmp_path, snap, "--only", "ED670")) == []


def test_numpy2_with_a_numpy1_build(tmp_path):
    snap = _torch_snap("2.2.2+cu121", packages={"numpy": "2.0.1"})
    fs = findings(check_snapshot(tmp_path, snap, "--only", "ED671"))
    # torch still imports and runs on the GPU, only its numpy bridge fails: a warning
    assert fs[0]["severity"] == "warning" and "torch 2.2.2+cu121 was built against NumPy 1.x" in fs[0]["message"]
    # TensorFlow's own extension modules use the NumPy C API at import: the import fails, an error
    tf = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                    frameworks=[sf.tensorflow("2.16.1", cuda="12.3")], packages={"numpy": "2.0.1"})
    fs = findings(check_snapshot(tmp_path, tf, "--only", "ED671"))
    assert fs[0]["severity"] == "error" and "its import fails" in fs[0]["message"]
    ok = _torch_snap("2.4.0+cu121", packages={"numpy": "2.0.1"})
    assert ids(check_snapshot(tmp_path, ok, "--only", "ED671")) == []


def test_markdown_carries_the_facts_redacted(tmp_path):
    snap = _torch_snap("2.4.0+cu121", packages={"numpy": "1.26.4"})
    snap.host.cpu_model, snap.host.cpu_flags, snap.host.compilers = "AMD EPYC", ["avx", "avx2"], {"gcc": "12.2.0"}
    snap.memory.gpus = [GpuMemoryUse(0, "GPU-a44622e3-2296-6285-0a86-84d0f6c67900", 70000, 81920)]
    snap.memory.processes = [GpuProcess(pid=42, gpu_index=0, used_mib=69000, cmdline="/home/user/venv/bin/python train.py",
                                        user="user", source="nvml")]
    snap.kernels.kernels = [Kernel(name="py3", interpreter="/home/user/old/bin/python", status="missing")]
    snap.accelerators = [Accelerator("xpu", "torch 2.5.1+xpu")]
    path = tmp_path / "s.json"
    path.write_text(snap.to_json())
    md = run("check", "--snapshot", str(path), "--format", "markdown", env={"HOME": "/home/user"}).stdout
    assert "| CPU | AMD EPYC; flags: avx avx2 |" in md and "| numpy | 1.26.4 |" in md
    assert "| GPU 0 memory | 70000 / 81920 MiB used: pid 42 ~/venv/bin/python train.py 69000 MiB (user) |" in md
    assert "| kernel py3 | ~/old/bin/python (missing) |" in md and "| accelerator | xpu: torch 2.5.1+xpu |" in md
    assert "GPU-a44622e3" not in md
