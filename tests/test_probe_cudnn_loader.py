"""The cuDNN and loader probes on fake roots, fake ldconfig executables and this machine."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from envdoctor.fsroot import Root
from envdoctor.probes import cudnn, loader, toolkits
from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Snapshot, Toolkit

from tests.fakes import FIX, make_exe, write  # noqa: F401


def fake_lib(d: Path, real: str, *links: str) -> Path:
    """A library file `real` in d plus relative symlinks, as the installers lay them out."""
    d.mkdir(parents=True, exist_ok=True)
    (d / real).write_bytes(b"\x7fELF not really")
    for link in links:
        (d / link).symlink_to(real)
    return d / real


def run_cudnn(ctx, snap=None):
    snap = snap or Snapshot()
    cudnn.probe(ctx, snap)
    return snap


def run_loader(ctx):
    snap = Snapshot()
    loader.probe(ctx, snap)
    return snap


# ------------------------------------------------------------------ cuDNN


def test_cudnn_headers_of_two_majors(tmp_path):
    root = tmp_path / "root"
    write(root / "usr/include/x86_64-linux-gnu/cudnn_version_v9.h", (FIX / "cudnn/cudnn_version_9.6.0.h").read_text())
    (root / "usr/include/cudnn_version.h").symlink_to("/usr/include/x86_64-linux-gnu/cudnn_version_v9.h")
    write(root / "usr/local/cuda-11.4/include/cudnn_version.h", (FIX / "cudnn/cudnn_version_8.2.1.h").read_text())
    # cuDNN 8's cudnn.h has no version macros: it must not become an entry
    write(root / "usr/local/cuda-11.4/include/cudnn.h", '#include "cudnn_version.h"\n')
    snap = Snapshot(toolkits=[Toolkit(path="/usr/local/cuda-11.4")])
    snap = run_cudnn(ProbeContext(root=Root(root), env={}), snap)
    headers = {(c.version, c.path) for c in snap.cudnn if c.kind == "header"}
    assert headers == {
        ("9.6.0", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"),
        ("8.2.1", "/usr/local/cuda-11.4/include/cudnn_version.h"),
    }
    # the alternatives-style link and the real file are one entry
    assert len([c for c in snap.cudnn if c.version == "9.6.0"]) == 1


def test_cudnn7_header_in_cuda_h_dir(tmp_path):
    root = tmp_path / "root"
    write(root / "usr/local/cuda/include/cudnn.h", (FIX / "cudnn/cudnn_7.2.1_excerpt.h").read_text())
    snap = run_cudnn(ProbeContext(root=Root(root), env={}))
    assert [(c.kind, c.version) for c in snap.cudnn] == [("header", "7.2.1")]


def test_cudnn_library_on_ld_library_path_resolved_to_full_version(tmp_path):
    libdir = tmp_path / "opt/cudnn/lib"
    fake_lib(libdir, "libcudnn.so.8.9.7", "libcudnn.so.8", "libcudnn.so")
    fake_lib(libdir, "libcudnn_ops_infer.so.8.9.7", "libcudnn_ops_infer.so.8")
    ctx = ProbeContext(root=Root(tmp_path), env={"LD_LIBRARY_PATH": "/opt/cudnn/lib"})
    snap = run_cudnn(ctx)
    libs = [c for c in snap.cudnn if c.kind == "library"]
    assert [(c.version, c.path) for c in libs] == [("8.9.7", "/opt/cudnn/lib/libcudnn.so.8.9.7")]
    assert any(e.source == "env:LD_LIBRARY_PATH" for e in libs[0].evidence)


def test_cudnn_library_only_soname_link_keeps_major(tmp_path):
    # a copied libcudnn.so.8 without its versioned file: version "8"
    d = tmp_path / "usr/lib/x86_64-linux-gnu"
    d.mkdir(parents=True)
    (d / "libcudnn.so.8").write_bytes(b"x")
    (d / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")  # dangling: not reported
    snap = run_cudnn(ProbeContext(root=Root(tmp_path), env={}))
    assert [(c.kind, c.version) for c in snap.cudnn] == [("library", "8")]


def test_cudnn_wheel_from_python_packages(tmp_path):
    root = tmp_path / "root"
    sp = root / "venv/lib/python3.11/site-packages"
    write(sp / "nvidia/cudnn/include/cudnn_version.h", (FIX / "cudnn/cudnn_version_9.6.0.h").read_text())
    (sp / "nvidia_cudnn_cu12-9.6.0.74.dist-info").mkdir(parents=True)
    snap = Snapshot()
    snap.python.prefix = "/venv"
    snap.python.packages = {"nvidia-cudnn-cu12": "9.6.0.74", "torch": "2.6.0"}
    snap = run_cudnn(ProbeContext(root=Root(root), env={}), snap)
    wheels = [c for c in snap.cudnn if c.kind == "wheel"]
    assert [(c.version, c.path) for c in wheels] == [("9.6.0.74", "/venv/lib/python3.11/site-packages/nvidia/cudnn")]


def test_cudnn_wheel_found_without_python_probe(tmp_path):
    root = tmp_path / "root"
    sp = root / "opt/env/lib/python3.12/site-packages"
    (sp / "nvidia/cudnn/lib").mkdir(parents=True)
    (sp / "nvidia_cudnn_cu11-8.6.0.163.dist-info").mkdir(parents=True)
    snap = run_cudnn(ProbeContext(root=Root(root), env={"VIRTUAL_ENV": "/opt/env"}))  # snap.python is empty
    assert [(c.kind, c.version) for c in snap.cudnn] == [("wheel", "8.6.0.163")]


def test_cudnn_nothing_anywhere(tmp_path):
    snap = run_cudnn(ProbeContext(root=Root(tmp_path), env={}))
    assert snap.cudnn == []


# ------------------------------------------------------------------ loader


def test_loader_env_split_and_gpu_env(tmp_path):
    env = {
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64::/opt/x",
        "LD_PRELOAD": "/opt/a/libfoo.so libbar.so:/opt/b/libbaz.so",
        "CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "all", "TF_FORCE_GPU_ALLOW_GROWTH": "true",
        "TF_CPP_MIN_LOG_LEVEL": "2", "NCCL_DEBUG": "INFO", "XLA_FLAGS": "--xla_gpu_cuda_data_dir=/usr/local/cuda",
        "JAX_PLATFORMS": "cuda", "HIP_VISIBLE_DEVICES": "0", "CUDA_MODULE_LOADING": "LAZY",
        "HOME": "/root", "PATH": "/usr/bin", "NCCL_API_KEY": "s3cret", "TF_VAR_db_password": "hunter2",
        "TF_CLI_CONFIG_FILE": "/root/.terraformrc",
    }
    snap = run_loader(ProbeContext(root=Root(tmp_path), env=env))
    ld = snap.loader
    assert ld.ld_library_path == ["/usr/local/cuda/lib64", "/opt/x"]
    assert ld.ld_preload == ["/opt/a/libfoo.so", "libbar.so", "/opt/b/libbaz.so"]
    assert any(e.source == "check:LD_LIBRARY_PATH" for e in ld.evidence)
    wanted = {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_CPP_MIN_LOG_LEVEL",
              "NCCL_DEBUG", "XLA_FLAGS", "JAX_PLATFORMS", "HIP_VISIBLE_DEVICES", "CUDA_MODULE_LOADING"}
    assert set(ld.gpu_env) == wanted
    assert ld.gpu_env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_loader_libraries_ld_library_path_and_preload(tmp_path):
    fake_lib(tmp_path / "opt/cudnn/lib", "libcudnn.so.8.9.7", "libcudnn.so.8", "libcudnn.so")
    fake_lib(tmp_path / "opt/cuda/lib64", "libcudart.so.12.4.127", "libcudart.so.12", "libcudart.so")
    fake_lib(tmp_path / "opt/cuda/lib64", "libcurand.so.10.3.5.147", "libcurand.so.10")  # not a tracked name
    fake_lib(tmp_path / "opt/pre", "libnccl.so.2.21.5", "libnccl.so.2")
    env = {"LD_LIBRARY_PATH": "/opt/cudnn/lib:/opt/cuda/lib64", "LD_PRELOAD": "/opt/pre/libnccl.so.2"}
    snap = run_loader(ProbeContext(root=Root(tmp_path), env=env))
    libs = {(lib.name, lib.via): lib for lib in snap.loader.libraries}
    assert libs[("libcudnn", "LD_LIBRARY_PATH")].version == "8.9.7"
    assert libs[("libcudnn", "LD_LIBRARY_PATH")].path == "/opt/cudnn/lib/libcudnn.so.8.9.7"
    assert libs[("libcudart", "LD_LIBRARY_PATH")].version == "12.4.127"
    assert libs[("libnccl", "LD_PRELOAD")].version == "2.21.5"
    assert not any(lib.name == "libcurand" for lib in snap.loader.libraries)
    # three names of one file are one entry
    assert len([lib for lib in snap.loader.libraries if lib.name == "libcudart"]) == 1


def test_loader_image_reads_ld_so_conf(tmp_path):
    root = tmp_path / "root"
    write(root / "etc/ld.so.conf", (FIX / "ldconfig/ld.so.conf_this_machine").read_text())
    write(root / "etc/ld.so.conf.d/zz-cuda-13-0.conf", (FIX / "ldconfig/ld.so.conf.d_zz-cuda-13-0_this_machine.conf").read_text())
    write(root / "etc/ld.so.conf.d/x86_64-linux-gnu.conf", (FIX / "ldconfig/ld.so.conf.d_x86_64-linux-gnu_this_machine.conf").read_text())
    fake_lib(root / "usr/local/cuda-13.0/lib", "libcudart.so.13.0.96", "libcudart.so.13")
    fake_lib(root / "usr/lib/x86_64-linux-gnu", "libcuda.so.580.82.07", "libcuda.so.1")
    fake_lib(root / "opt/elsewhere", "libcublas.so.13.0.2.14", "libcublas.so.13")  # not in any conf dir
    snap = run_loader(ProbeContext(root=Root(root), env={}))
    got = {(lib.name, lib.version, lib.via) for lib in snap.loader.libraries}
    assert ("libcudart", "13.0.96", "ldconfig") in got
    assert ("libcuda", "580.82.07", "ldconfig") in got
    assert not any(lib.name == "libcublas" for lib in snap.loader.libraries)
    assert any(e.source == "ld.so.conf" and "image" in e.excerpt for e in snap.loader.evidence)


def test_loader_live_fake_ldconfig_fixture(tmp_path):
    bindir = tmp_path / "bin"
    make_exe(bindir / "ldconfig", f"exec /bin/cat {FIX / 'ldconfig/ldconfig_p_cudnn4_nvidia_docker_53.txt'}")
    snap = run_loader(ProbeContext(root=Root("/"), env={"PATH": str(bindir)}))
    libs = [(lib.name, lib.path, lib.version, lib.via) for lib in snap.loader.libraries]
    assert ("libcudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.4", "4", "ldconfig") in libs
    assert any(e.source.startswith("cmd:ldconfig") for e in snap.loader.evidence)


def test_loader_live_ldconfig_hangs_is_bounded_and_falls_back(tmp_path):
    bindir = tmp_path / "bin"
    make_exe(bindir / "ldconfig", "exec /bin/sleep 30")
    start = time.monotonic()
    snap = run_loader(ProbeContext(root=Root("/"), env={"PATH": str(bindir)}, timeout=1.0))
    assert time.monotonic() - start < 15
    assert any(e.excerpt.startswith("timeout") for e in snap.loader.evidence)
    assert any(e.source == "ld.so.conf" for e in snap.loader.evidence)


@pytest.mark.skipif(not os.path.exists("/usr/local/cuda-13.0/lib/libcudart.so.13"), reason="needs this machine's CUDA 13.0")
def test_this_machine_loader_and_cudnn():
    ctx = ProbeContext()
    snap = Snapshot()
    toolkits.probe(ctx, snap)
    loader.probe(ctx, snap)
    cudnn.probe(ctx, snap)
    assert any(lib.name == "libcudart" and lib.via == "ldconfig" and lib.path.startswith("/usr/local/cuda-13.0/")
               for lib in snap.loader.libraries)
    assert Snapshot.from_dict(snap.to_dict()) == snap


# ------------------------------------------------------------------ one parse of `ldconfig -p` per run

def _count_parses(monkeypatch):
    calls = []
    real = loader.parse_ldconfig_p

    def spy(text):
        calls.append(1)
        return real(text)

    monkeypatch.setattr(loader, "parse_ldconfig_p", spy)
    return calls


def test_loader_and_cudnn_share_one_parse_of_ldconfig_p(tmp_path, monkeypatch):
    """One probing run parses `ldconfig -p` once for both probes; each finds what it found parsing it itself."""
    bindir = tmp_path / "bin"
    make_exe(bindir / "ldconfig", f"exec /bin/cat {FIX / 'ldconfig/ldconfig_p_cudnn4_nvidia_docker_53.txt'}")
    env = {"PATH": str(bindir)}
    calls = _count_parses(monkeypatch)
    alone_loader, alone_cudnn = run_loader(ProbeContext(root=Root("/"), env=env)), run_cudnn(ProbeContext(root=Root("/"), env=env))
    assert len(calls) == 2  # two runs: two parses
    shared = ProbeContext(root=Root("/"), env=env)
    both = Snapshot()
    loader.probe(shared, both)
    cudnn.probe(shared, both)
    assert len(calls) == 3  # one run: one parse
    assert both.loader == alone_loader.loader and both.cudnn == alone_cudnn.cudnn
    assert any(lib.path == "/usr/lib/x86_64-linux-gnu/libcudnn.so.4" for lib in both.loader.libraries)


def test_an_unreadable_ldconfig_p_is_said_by_the_loader_only(tmp_path, monkeypatch):
    """As probes._parsed.parsed said it before the parse was shared: the loader's evidence, nothing from cudnn."""
    from envdoctor.parsers import ParseError

    def too_large(text):
        raise ParseError("input too large")

    monkeypatch.setattr(loader, "parse_ldconfig_p", too_large)
    bindir = tmp_path / "bin"
    make_exe(bindir / "ldconfig", f"exec /bin/cat {FIX / 'ldconfig/ldconfig_p_cudnn4_nvidia_docker_53.txt'}")
    ctx = ProbeContext(root=Root("/"), env={"PATH": str(bindir)})
    snap = Snapshot()
    cudnn.probe(ctx, snap)
    loader.probe(ctx, snap)
    said = [e for e in snap.loader.evidence if e.excerpt == "could not read: input too large"]
    assert len(said) == 1 and said[0].source.startswith("cmd:") and said[0].source.endswith("ldconfig -p")
    assert not any(lib.via == "ldconfig" for lib in snap.loader.libraries)
    assert not any("could not read" in e.excerpt for c in snap.cudnn for e in c.evidence)


# ------------------------------------------------------------------ glob_in: one listing, the globs' answers

GLOB_CASES = [cudnn.HEADER_NAMES, ("libcudnn.so*",), tuple(f"{n}.so*" for n in loader.LIB_NAMES),
              ("nvidia_cudnn*.dist-info",), ("nvidia_cuda_*.dist-info",), ("libnvidia-ml.so*",), ("libcuda.so*",),
              (".hidden*", "*", "[lx]ib*.so.?", "plain.h", "missing.h", ".dot")]


def _globbed(root, d, patterns):
    return [x for p in patterns for x in root.glob(os.path.join(d, p))]


def test_glob_in_answers_as_one_glob_per_pattern(tmp_path):
    """The cudnn, loader, nvidia and toolkits probes list a folder once for all their names (fsroot.Root.glob_in): the same paths in the
    same order as globbing each pattern, on this machine's library and include dirs and on a fake folder with hidden
    names, dangling links, a literal name, a folder whose name has glob characters, a missing folder, an image root."""

    fake = tmp_path / "image/usr/lib"
    fake.mkdir(parents=True)
    for name in ("libcudnn.so.9", "libcudnn.so.9.1.0", ".hidden.so", "libcudart.so.13", "libcublasLt.so.13",
                 "plain.h", ".dot", "xib1.so.2", "libnccl.so", "nvidia_cudnn_cu12-9.1.0.dist-info"):
        (fake / name).write_text("x")
    (fake / "libcuda.so.1").symlink_to("gone")
    odd = tmp_path / "image/odd[1]*dir"
    odd.mkdir()
    (odd / "libcudnn.so.8").write_text("x")
    live, image = Root("/"), Root(tmp_path / "image")
    dirs = [(live, d) for d in ("/usr/lib/x86_64-linux-gnu", "/usr/include", "/usr/local/cuda-13.0/include",
                                "/usr/local/cuda-13.0/lib", "/lib/x86_64-linux-gnu", "/nonexistent")]
    dirs += [(live, str(fake)), (live, str(odd)), (image, "/usr/lib"), (image, "/odd[1]*dir"), (image, "/usr/lib/")]
    for root, d in dirs:
        for patterns in GLOB_CASES:
            assert root.glob_in(d, patterns) == _globbed(root, d, patterns), (d, patterns)
    assert live.glob_in(str(fake), (".hidden*", "plain.h", "libcuda.so*")) == [
        str(fake / ".hidden.so"), str(fake / "plain.h"), str(fake / "libcuda.so.1")]
