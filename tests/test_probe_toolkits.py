"""The CUDA toolkit probe on fake roots, fake nvcc executables and this machine."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from envdoctor.fsroot import Root
from envdoctor.probes import toolkits
from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Snapshot

from tests.fakes import FIX, make_exe, write  # noqa: F401


def run(ctx: ProbeContext) -> Snapshot:
    snap = Snapshot()
    toolkits.probe(ctx, snap)
    return snap


def by_path(snap: Snapshot):
    return {tk.path: tk for tk in snap.toolkits}


@pytest.fixture
def image(tmp_path):
    """An image root with CUDA 12.8 (version.json), CUDA 11.0 (version.txt only) and
    /usr/local/cuda -> /usr/local/cuda-12.8 (an absolute link, as the installers make it)."""
    root = tmp_path / "root"
    write(root / "usr/local/cuda-12.8/version.json", (FIX / "cuda/version_12.8.2.json").read_text())
    write(root / "usr/local/cuda-12.8/include/cuda.h", "#define CUDA_VERSION 12080\n")
    write(root / "usr/local/cuda-11.0/version.txt", (FIX / "cuda/version_11.0.txt").read_text())
    (root / "usr/local/cuda").symlink_to("/usr/local/cuda-12.8")
    write(root / "usr/local/cuda-notes.txt", "not a toolkit")
    return root


def test_image_toolkits_versions_and_symlink(image):
    snap = run(ProbeContext(root=Root(image), env={"PATH": ""}))
    tks = by_path(snap)
    assert set(tks) == {"/usr/local/cuda-12.8", "/usr/local/cuda-11.0"}
    new, old = tks["/usr/local/cuda-12.8"], tks["/usr/local/cuda-11.0"]
    assert (new.version, new.version_source) == ("12.8.2", "version.json")
    assert (old.version, old.version_source) == ("11.0.207", "version.txt")
    # the /usr/local/cuda link is the same toolkit, not a third one
    assert "/usr/local/cuda" in new.found_by and "/usr/local/cuda-12.8" in new.found_by
    assert any(e.source == "alias" and "/usr/local/cuda ->" in e.excerpt for e in new.evidence)
    # no nvcc on PATH and no CUDA_HOME: the default is what /usr/local/cuda points to
    assert new.is_default and not old.is_default
    assert snap.default_toolkit is new


def test_image_link_never_escapes_to_the_host(tmp_path):
    root = tmp_path / "root"
    (root / "usr/local").mkdir(parents=True)
    # on this machine /usr/local/cuda-13.0 exists; inside the image it does not
    (root / "usr/local/cuda").symlink_to("/usr/local/cuda-13.0")
    snap = run(ProbeContext(root=Root(root), env={"PATH": ""}))
    assert snap.toolkits == []


def test_cuda_home_sets_the_default(image):
    snap = run(ProbeContext(root=Root(image), env={"PATH": "", "CUDA_HOME": "/usr/local/cuda-11.0"}))
    tks = by_path(snap)
    assert tks["/usr/local/cuda-11.0"].is_default
    assert "CUDA_HOME" in tks["/usr/local/cuda-11.0"].found_by
    assert not tks["/usr/local/cuda-12.8"].is_default
    assert sum(tk.is_default for tk in snap.toolkits) == 1


def test_cuda_home_to_missing_dir_adds_nothing(image):
    snap = run(ProbeContext(root=Root(image), env={"PATH": "", "CUDA_HOME": "/usr/local/cuda-9.9"}))
    assert all("CUDA_HOME" not in tk.found_by for tk in snap.toolkits)
    assert by_path(snap)["/usr/local/cuda-12.8"].is_default


def test_image_nvcc_on_path_is_default_and_never_run(image, tmp_path):
    marker = tmp_path / "nvcc-was-run"
    make_exe(image / "usr/local/cuda-11.0/bin/nvcc", f"touch {marker}\n/bin/cat {FIX / 'cuda/nvcc_11.0.txt'}")
    snap = run(ProbeContext(root=Root(image), env={"PATH": "/usr/local/cuda-11.0/bin:/usr/bin"}))
    tk = by_path(snap)["/usr/local/cuda-11.0"]
    assert tk.is_default and "PATH" in tk.found_by
    assert tk.nvcc == "/usr/local/cuda-11.0/bin/nvcc"
    assert not marker.exists()
    assert tk.version_source != "nvcc"


def test_image_wheel_assembled_toolkit_dist_info(tmp_path):
    root = tmp_path / "root"
    tk_dir = root / "usr/local/cuda-13.0"
    (tk_dir / "dist-info/nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    (tk_dir / "dist-info/nvidia_cuda_runtime-13.0.96.dist-info").mkdir(parents=True)
    write(tk_dir / "include/cuda.h", (FIX / "cuda/cuda_h_13.0_this_machine_excerpt.h").read_text())
    make_exe(tk_dir / "bin/nvcc", "exit 99")
    snap = run(ProbeContext(root=Root(root), env={"PATH": ""}))
    (tk,) = snap.toolkits
    assert (tk.version, tk.version_source) == ("13.0.88", "dist-info")
    assert not any(e.source == "check:version-sources" for e in tk.evidence)


def test_disagreeing_sources_are_recorded(tmp_path):
    root = tmp_path / "root"
    write(root / "usr/local/cuda-12.8/version.json", (FIX / "cuda/version_12.8.2.json").read_text())
    write(root / "usr/local/cuda-12.8/include/cuda.h", "#define CUDA_VERSION 12040\n")
    snap = run(ProbeContext(root=Root(root), env={"PATH": ""}))
    (tk,) = snap.toolkits
    assert tk.version == "12.8.2"
    dis = [e.excerpt for e in tk.evidence if e.source == "check:version-sources"]
    assert dis and "12.8.2" in dis[0] and "12.4" in dis[0]


def test_date_stamped_version_json_loses_to_cuda_h_precision_tie(tmp_path):
    root = tmp_path / "root"
    write(root / "usr/local/cuda-11.8/version.json", '{"cuda" : {"name" : "CUDA SDK", "version" : "11.8.20220929"}}')
    snap = run(ProbeContext(root=Root(root), env={"PATH": ""}))
    (tk,) = snap.toolkits
    assert tk.version == "11.8" and tk.version_source == "version.json"


def test_conda_env_toolkit(tmp_path):
    root = tmp_path / "root"
    env_dir = root / "opt/conda/envs/gpu"
    write(env_dir / "conda-meta/cuda-nvcc-12.4.131-0.json", "{}")
    write(env_dir / "conda-meta/cuda-version-12.4-h3060b56_3.json", "{}")
    write(env_dir / "conda-meta/python-3.11.9-hb806964_0_cpython.json", "{}")
    make_exe(env_dir / "bin/nvcc", "exit 1")
    snap = run(ProbeContext(root=Root(root), env={"PATH": "/opt/conda/envs/gpu/bin", "CONDA_PREFIX": "/opt/conda/envs/gpu"}))
    (tk,) = snap.toolkits
    assert tk.path == "/opt/conda/envs/gpu"
    assert set(tk.found_by) >= {"PATH", "conda"}
    assert (tk.version, tk.version_source) == ("12.4.131", "conda")


def test_pip_wheels_cu12_and_cu13_layouts(tmp_path):
    root = tmp_path / "root"
    sp = root / "usr/local/lib/python3.11/dist-packages"
    make_exe(sp / "nvidia/cu13/bin/nvcc", "exit 1")
    (sp / "nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    make_exe(sp / "nvidia/cuda_nvcc/bin/nvcc", "exit 1")
    (sp / "nvidia_cuda_nvcc_cu12-12.8.93.dist-info").mkdir(parents=True)
    snap = run(ProbeContext(root=Root(root), env={"PATH": ""}))
    tks = by_path(snap)
    base = "/usr/local/lib/python3.11/dist-packages/nvidia"
    assert tks[f"{base}/cu13"].version == "13.0.88"
    assert tks[f"{base}/cuda_nvcc"].version == "12.8.93"
    assert all(tk.found_by == ["pip"] and tk.version_source == "dist-info" for tk in tks.values())


# ------------------------------------------------------------------ live root, fake nvcc


@pytest.fixture
def fake_tk(tmp_path):
    tk = tmp_path / "tk"
    write(tk / "include/cuda.h", "#define CUDA_VERSION 12050\n")
    return tk


def live(tmp_path, path_dirs, timeout=5.0, **env):
    env = dict(env, PATH=":".join(str(p) for p in path_dirs))
    return ProbeContext(root=Root("/"), env=env, timeout=timeout)


def test_live_fake_nvcc_prints_fixture(tmp_path, fake_tk):
    make_exe(fake_tk / "bin/nvcc", f"exec /bin/cat {FIX / 'cuda/nvcc_12.5.txt'}")
    snap = run(live(tmp_path, [fake_tk / "bin"]))
    tk = by_path(snap)[os.path.realpath(fake_tk)]
    assert (tk.version, tk.version_source) == ("12.5.82", "nvcc")
    assert tk.is_default and tk.found_by[0] == "PATH"
    assert sum(t.is_default for t in snap.toolkits) == 1
    assert any(e.source.startswith("cmd:") and "V12.5.82" in e.excerpt for e in tk.evidence)


def test_live_nvcc_failing_falls_back(tmp_path, fake_tk):
    make_exe(fake_tk / "bin/nvcc", "echo 'nvcc fatal : broken' >&2; exit 3")
    snap = run(live(tmp_path, [fake_tk / "bin"]))
    tk = by_path(snap)[os.path.realpath(fake_tk)]
    assert (tk.version, tk.version_source) == ("12.5", "cuda.h")
    assert any(e.source.startswith("cmd:") and e.excerpt.startswith("failed") for e in tk.evidence)


def test_live_nvcc_hanging_is_bounded(tmp_path, fake_tk):
    make_exe(fake_tk / "bin/nvcc", "exec /bin/sleep 30")
    start = time.monotonic()
    snap = run(live(tmp_path, [fake_tk / "bin"], timeout=1.0))
    assert time.monotonic() - start < 10
    tk = by_path(snap)[os.path.realpath(fake_tk)]
    assert tk.version == "12.5"
    assert any(e.excerpt.startswith("timeout") for e in tk.evidence)


def test_live_nvcc_garbage(tmp_path):
    tk_dir = tmp_path / "tk"
    make_exe(tk_dir / "bin/nvcc", "printf '\\377\\376 garbage release V?'")
    snap = run(live(tmp_path, [tk_dir / "bin"]))
    tk = by_path(snap)[os.path.realpath(tk_dir)]
    assert tk.version is None and tk.version_source == ""
    assert any(e.excerpt.startswith("garbage") for e in tk.evidence)


def test_live_wrapper_script_and_symlink_on_path(tmp_path, fake_tk):
    make_exe(fake_tk / "bin/nvcc", f"exec /bin/cat {FIX / 'cuda/nvcc_12.5.txt'}")
    wrap = make_exe(tmp_path / "wrapbin/nvcc", f'exec {fake_tk}/bin/nvcc "$@"')
    snap = run(live(tmp_path, [wrap.parent]))
    tk = by_path(snap)[os.path.realpath(fake_tk)]
    assert tk.is_default and "PATH" in tk.found_by
    assert any("(script)" in e.excerpt for e in tk.evidence)

    link_dir = tmp_path / "linkbin"
    link_dir.mkdir()
    (link_dir / "nvcc").symlink_to(fake_tk / "bin/nvcc")
    snap = run(live(tmp_path, [link_dir]))
    assert by_path(snap)[os.path.realpath(fake_tk)].is_default


def test_live_cuda_home_and_path_same_toolkit_merge(tmp_path, fake_tk):
    make_exe(fake_tk / "bin/nvcc", f"exec /bin/cat {FIX / 'cuda/nvcc_12.5.txt'}")
    alias = tmp_path / "cuda-alias"
    alias.symlink_to(fake_tk)
    snap = run(live(tmp_path, [fake_tk / "bin"], CUDA_HOME=str(alias), CUDA_PATH=str(fake_tk)))
    matches = [tk for tk in snap.toolkits if tk.path == os.path.realpath(fake_tk)]
    assert len(matches) == 1
    assert {"PATH", "CUDA_HOME", "CUDA_PATH"} <= set(matches[0].found_by)


# ------------------------------------------------------------------ this machine


@pytest.mark.skipif(not os.path.isdir("/usr/local/cuda-13.0") or shutil.which("nvcc") is None,
                    reason="needs this machine's CUDA 13.0 toolkit")
def test_this_machine_cuda_13():
    snap = run(ProbeContext())
    tk = by_path(snap)["/usr/local/cuda-13.0"]
    assert tk.version == "13.0.88"
    assert tk.is_default
    assert snap.default_toolkit is tk
    assert "/usr/local/cuda" in tk.found_by
    assert tk.nvcc == "/usr/local/cuda-13.0/bin/nvcc"
