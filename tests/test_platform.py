from pathlib import Path

import pytest

from envdoctor.fsroot import Root
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.platform import parse_os_release, probe, wsl_version
from envdoctor.snapshot import Snapshot

FIX = Path(__file__).parent / "fixtures" / "platform"


@pytest.mark.parametrize("name, expected", [
    ("proc_version_wsl1.txt", 1),
    ("proc_version_wsl2.txt", 2),
    ("proc_version_linux.txt", None),
])
def test_wsl_version_from_real_banners(name, expected):
    assert wsl_version((FIX / name).read_text(), has_wsl_lib=False) == expected


def test_wsl_lib_dir_alone_means_wsl2():
    assert wsl_version("Linux version 6.1.0-generic", has_wsl_lib=True) == 2


def test_os_release_real_file():
    osr = parse_os_release((FIX / "os-release-debian12").read_text())
    assert osr["ID"] == "debian" and osr["VERSION_ID"] == "12"
    assert osr["PRETTY_NAME"].startswith("Debian GNU/Linux 12")


def test_os_release_garbage():
    got = parse_os_release("\x00\x01 garbage\n=\nID\n")
    assert "ID" not in got
    assert parse_os_release("") == {}


def _fake_root(tmp_path, proc_version, wsl_lib=False):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text((FIX / "os-release-debian12").read_text())
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "version").write_text((FIX / proc_version).read_text())
    (tmp_path / "usr" / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    if wsl_lib:
        (tmp_path / "usr" / "lib" / "wsl" / "lib").mkdir(parents=True)
    (tmp_path / ".dockerenv").write_text("")
    return Root(tmp_path)


def test_probe_fake_root_wsl2_container(tmp_path):
    snap = Snapshot()
    probe(ProbeContext(root=_fake_root(tmp_path, "proc_version_wsl2.txt", wsl_lib=True), env={}), snap)
    p = snap.platform
    assert p.distro_id == "debian" and p.machine == "x86_64"
    assert p.kernel == "5.10.16.3-microsoft-standard-WSL2"
    assert p.wsl == 2 and p.container == "docker"


def test_probe_fake_root_wsl1(tmp_path):
    snap = Snapshot()
    probe(ProbeContext(root=_fake_root(tmp_path, "proc_version_wsl1.txt"), env={}), snap)
    assert snap.platform.wsl == 1


def test_probe_empty_root_does_not_raise(tmp_path):
    snap = Snapshot()
    probe(ProbeContext(root=Root(tmp_path), env={}), snap)
    assert snap.platform.distro_id == "" and snap.platform.wsl is None


def test_probe_binary_os_release(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_bytes(b"\x7fELF\x00\x00binary")
    snap = Snapshot()
    probe(ProbeContext(root=Root(tmp_path), env={}), snap)
    assert snap.platform.distro_id == ""


def test_live_probe():
    snap = Snapshot()
    probe(ProbeContext(), snap)
    assert snap.platform.system and snap.platform.machine


def _platform_answers():
    import platform

    return platform.system(), platform.machine(), platform.release(), platform.node(), platform.libc_ver()


def test_live_uname_answers_as_the_platform_module():
    """The live probe reads os.uname and confstr itself, not through the platform module (~2 ms of imports):
    the same five answers on this machine."""
    from envdoctor.probes.platform import live_uname

    assert live_uname() == _platform_answers()


def test_live_uname_blanks_unknown_and_falls_back_to_platform(monkeypatch):
    """As platform.uname(): an "unknown" field reads as ""; without confstr's answer (musl) platform.libc_ver()
    says; on another system the platform module answers everything."""
    import os
    import platform

    from envdoctor.probes.platform import live_uname

    real = os.uname()
    fake = type(real)(("Linux", "unknown", real.release, real.version, "unknown"))
    monkeypatch.setattr(os, "uname", lambda: fake)
    monkeypatch.setattr(os, "confstr", lambda name: None)
    monkeypatch.setattr(platform, "libc_ver", lambda: ("musl", "1.2"))
    assert live_uname() == ("Linux", "", real.release, "", ("musl", "1.2"))
    monkeypatch.setattr(os, "uname", lambda: type(real)(("Darwin", "mac", "23.0", "v", "arm64")))
    assert live_uname() == _platform_answers()
