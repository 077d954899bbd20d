"""The ROCm probe on fake roots and fake rocm-smi / amd-smi executables."""
from __future__ import annotations

import time

from envdoctor.fsroot import Root
from envdoctor.probes import rocm
from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Snapshot

from tests.fakes import FIX, make_exe, write  # noqa: F401


def run(ctx):
    snap = Snapshot()
    rocm.probe(ctx, snap)
    return snap.rocm


def test_no_rocm(tmp_path):
    r = run(ProbeContext(root=Root(tmp_path), env={}))
    assert (r.installed, r.version, r.path, r.gpus) == (False, None, "", [])


def test_opt_rocm_link_and_info_version(tmp_path):
    write(tmp_path / "opt/rocm-6.1.0/.info/version", "6.1.0-82\n")
    (tmp_path / "opt/rocm").symlink_to("/opt/rocm-6.1.0")  # absolute, resolved inside the image
    r = run(ProbeContext(root=Root(tmp_path), env={}))
    assert r.installed and r.path == "/opt/rocm-6.1.0" and r.version == "6.1.0"
    assert r.gpus == []  # an image: no tool is run


def test_version_header_and_dir_name_fallbacks(tmp_path):
    write(tmp_path / "opt/rocm-5.7.1/include/rocm-core/rocm_version.h",
          "#define ROCM_VERSION_MAJOR 5\n#define ROCM_VERSION_MINOR 7\n#define ROCM_VERSION_PATCH 1\n")
    r = run(ProbeContext(root=Root(tmp_path), env={}))
    assert (r.path, r.version) == ("/opt/rocm-5.7.1", "5.7.1")

    (tmp_path / "opt/rocm-6.2.0").mkdir(parents=True)  # newest versioned dir wins, name gives the version
    r = run(ProbeContext(root=Root(tmp_path), env={}))
    assert (r.path, r.version) == ("/opt/rocm-6.2.0", "6.2.0")
    assert any("also installed: /opt/rocm-5.7.1" in e.excerpt for e in r.evidence)


def test_rocm_path_env_first(tmp_path):
    write(tmp_path / "opt/rocm-6.1.0/.info/version", "6.1.0-82\n")
    write(tmp_path / "usr/lib/rocm-x/.info/version", "5.4.3\n")
    r = run(ProbeContext(root=Root(tmp_path), env={"ROCM_PATH": "/usr/lib/rocm-x", "HIP_PATH": "/nope/hip"}))
    assert (r.path, r.version) == ("/usr/lib/rocm-x", "5.4.3")
    assert any(e.source == "env:HIP_PATH" and "no such directory" in e.excerpt for e in r.evidence)


def test_live_rocm_smi_fixture(tmp_path):
    make_exe(tmp_path / "bin/rocm-smi", f"exec /bin/cat {FIX / 'rocm/rocm_smi_showproductname_fiji.txt'}")
    r = run(ProbeContext(root=Root("/"), env={"PATH": str(tmp_path / "bin")}))
    assert r.gpus == ["Radeon R9 FURY X"]
    assert r.installed


def test_live_rocm_smi_fails_then_amd_smi(tmp_path):
    make_exe(tmp_path / "bin/rocm-smi", "echo 'ERROR: GPU[0] : Unable to read' >&2; exit 2")
    make_exe(tmp_path / "bin/amd-smi", f"exec /bin/cat {FIX / 'rocm/amd_smi_static_mi350x.txt'}")
    r = run(ProbeContext(root=Root("/"), env={"PATH": str(tmp_path / "bin")}))
    assert r.gpus == ["AMD Instinct MI350X"]
    assert any(e.source.startswith("cmd:rocm-smi") and e.excerpt.startswith("failed") for e in r.evidence)


def test_live_rocm_smi_hangs_and_garbage(tmp_path):
    make_exe(tmp_path / "bin/rocm-smi", "exec /bin/sleep 30")
    make_exe(tmp_path / "bin/amd-smi", "printf 'garbage\\377\\n'")
    start = time.monotonic()
    r = run(ProbeContext(root=Root("/"), env={"PATH": str(tmp_path / "bin")}, timeout=1.0))
    assert time.monotonic() - start < 10
    assert r.gpus == [] and not r.installed
    assert any(e.excerpt.startswith("timeout") for e in r.evidence)
    assert any(e.source.startswith("cmd:amd-smi") and "no GPU" in e.excerpt for e in r.evidence)
