"""envdoctor/facts: one helper per shared concept. Each test pins a place where the former copies disagreed:
the platform key (Linux ppc64le, Windows ARM64, macOS), the marker environment's python_full_version ('3.13' vs
'3.13.0'), distro families (Manjaro), a specifier's floor, a version's series and a compute capability's spelling.
The platform key is also judged through `envdoctor check`: a fix must never offer a wheel that does not exist
for the machine."""
from __future__ import annotations

import json

import pytest
from packaging.version import Version

from envdoctor.facts import pins, platform, versions
from envdoctor.onboard.plan import install_driver_commands
from tests.cli_run import run
from tests.snapfactory import machine, torch


def _snap(system: str, arch: str, tag: str = "", python: str = "3.11.7"):
    s = machine(system=system, machine_arch=arch, python=python)
    s.python.platform_tag = tag
    return s


@pytest.mark.parametrize("system, arch, tag, key", [
    ("Linux", "x86_64", "", "linux-x86_64"),
    ("Linux", "aarch64", "", "linux-aarch64"),
    ("Linux", "arm64", "", "linux-aarch64"),
    # the copies said linux-x86_64 (rules.cuda_driver) or None (cudnn_pins, gate, lock): it is its own platform
    ("Linux", "ppc64le", "", "linux-ppc64le"),
    ("Linux", "ppc64le", "linux-ppc64le", "linux-ppc64le"),
    ("Linux", "s390x", "", None),
    ("Windows", "AMD64", "", "win-amd64"),
    # rules.cuda_driver said win-amd64: no amd64 wheel installs into an ARM64 interpreter
    ("Windows", "ARM64", "", "win-arm64"),
    ("Windows", "ARM64", "win-arm64", "win-arm64"),
    ("Windows", "ARM64", "win-amd64", "win-amd64"),  # an emulated x64 interpreter installs x64 wheels
    # lock said None for macOS x86_64, cudnn_pins macos-x86_64 for any non-arm machine
    ("Darwin", "arm64", "", "macos-arm64"),
    ("Darwin", "x86_64", "", "macos-x86_64"),
    ("Darwin", "arm64", "macosx-11.0-arm64", "macos-arm64"),
    ("Darwin", "arm64", "macosx-10.9-universal2", "macos-arm64"),  # a universal tag: the machine decides
    ("Linux", "", "", "linux-x86_64"),  # an old snapshot without a machine: the usual one
])
def test_one_platform_key(system, arch, tag, key):
    assert platform.platform_key(_snap(system, arch, tag)) == key


def test_platform_key_of_a_stated_target():
    assert platform.platform_key_of("Windows", "arm64") == "win-arm64"
    assert platform.platform_key_of("linux", "amd64") == "linux-x86_64"
    assert platform.platform_key_of("Darwin", "aarch64") == "macos-arm64"


@pytest.mark.parametrize("python, full, short", [("3.13", "3.13.0", "3.13"), ("3.13.0", "3.13.0", "3.13"),
                                                 ("3.12.4", "3.12.4", "3.12"), ("3.14.0rc1", "3.14.0", "3.14")])
def test_marker_environment_python_full_version_is_always_x_y_z(python, full, short):
    env = platform.marker_env(_snap("Linux", "x86_64", python=python))
    assert env is not None
    assert (env["python_full_version"], env["python_version"]) == (full, short)
    # knowledge.index evaluates wheels' markers with the same builder
    assert platform.marker_env_for("Linux", "x86_64", python)["python_full_version"] == full


def test_marker_environment_of_each_os():
    win = platform.marker_env_for("Windows", "AMD64", "3.12")
    mac = platform.marker_env_for("Darwin", "arm64", "3.12")
    assert (win["sys_platform"], win["platform_system"], win["os_name"]) == ("win32", "Windows", "nt")
    assert (mac["sys_platform"], mac["platform_system"], mac["os_name"]) == ("darwin", "Darwin", "posix")
    assert platform.marker_env(_snap("", "")) is None  # no OS known: markers cannot be judged


def test_a_pin_marked_for_a_full_python_version_applies_to_an_x_y_target():
    """A target stated as "3.13" (gate, lock) is CPython 3.13.0 for `python_full_version` markers."""
    fw = torch("2.6.0", cuda="12.4")
    fw.requires = ['nvidia-cudnn-cu12==9.1.0.70; python_full_version == "3.13.0"',
                   'nvidia-nccl-cu12==2.21.5; python_full_version < "3.13.0"']
    snap = _snap("Linux", "x86_64", python="3.13")
    assert [p.name for p in pins.parse_pins(fw, snap)] == ["nvidia-cudnn-cu12"]


@pytest.mark.parametrize("distro, family, packages_", [
    ("ubuntu", "ubuntu", "debian"), ("pop", "pop", "debian"), ("debian", "debian", "debian"),
    ("fedora", "fedora", "rpm"), ("rocky", "el", "rpm"), ("opensuse-leap", "suse", "suse"),
    ("arch", "arch", "arch"),
    # onboard said "manjaro" (its installer is mhwd), rules.machine said "arch" (pacman): both are true, of
    # different questions
    ("manjaro", "manjaro", "arch"),
    ("nixos", "", ""),
])
def test_distro_families(distro, family, packages_):
    assert platform.distro_family(distro) == family
    assert platform.package_family(distro) == packages_


def test_manjaro_driver_install_uses_mhwd():
    s = machine()
    s.platform.distro_id = "manjaro"
    assert "sudo mhwd -a pci nonfree 0300" in install_driver_commands(s)
    s.platform.distro_id = "arch"
    assert not any("mhwd" in c for c in install_driver_commands(s))


def test_lower_bound():
    assert versions.lower_bound(">=9.1,<10") == Version("9.1")
    assert versions.lower_bound("<10.0,>=9.10.2.21") == Version("9.10.2.21")
    assert versions.lower_bound("==8.9.2.26") == Version("8.9.2.26")
    # knowledge.index ignored a strict floor; cudnn_pins read `>X` as floor X (for the major a pin needs)
    assert versions.lower_bound(">8.9") == Version("8.9")
    assert versions.lower_bound("<3") is None and versions.lower_bound("==9.*") is None
    assert versions.lower_bound("not a specifier") is None and versions.lower_bound(None) is None


def test_major_minor():
    # parsers.cuda_version said "12" for "12"; rules.context and knowledge.tables said "12.0"
    assert versions.major_minor("12") == "12.0"
    assert versions.major_minor("12.4.131") == "12.4"
    assert versions.major_minor("2.1.2+cu121") == "2.1"
    assert versions.major_minor("garbage") is None


def test_cc_tuple_reads_every_spelling():
    # rules.cuda_driver's copy read "8.6" only
    for text in ("8.6", "86", "sm_86", "compute_86", (8, 6)):
        assert versions.cc_tuple(text) == (8, 6), text
    assert versions.cc_tuple("sm_90a") == (9, 0)
    assert versions.cc_tuple("eight") is None


def test_names_and_specifiers():
    assert pins.canonical_name("Nvidia_CUDNN.cu12") == "nvidia-cudnn-cu12" == pins.norm(" nvidia-cudnn-cu12 ")
    assert pins.marker_extras('x; extra == "and_cuda"') == ["and-cuda"]
    assert pins.satisfies("9.1.0", ">=9,<10") is True and pins.satisfies("8.9", ">=9") is False
    assert pins.satisfies(None, ">=9") is None and pins.satisfies("9", "garbage") is None
    assert pins.spec_contains("", Version("3.12")) is None
    assert versions.public("2.1.2+cu121") == Version("2.1.2") and versions.local_label("2.1.2+cu121") == "cu121"


# --------------------------------------------------------------------------- through `envdoctor check`


def _old_driver_snapshot(tmp_path, system, arch):
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA GeForce RTX 3090:8.6"], system=system,
                   machine_arch=arch, frameworks=[torch("2.1.2+cu121", cuda="12.1")], python="3.11.7")
    path = tmp_path / f"{system}-{arch}.json"
    path.write_text(snap.to_json())
    return path


def _ed100(path):
    proc = run("check", "--snapshot", str(path), "--format", "json", "--only", "ED100")
    assert proc.returncode in (0, 1), proc.stderr
    found = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED100"]
    assert found and found[0]["severity"] == "error", proc.stdout
    return found[0]


@pytest.mark.parametrize("system, arch", [("Windows", "ARM64"), ("Linux", "ppc64le")])
def test_check_offers_no_torch_wheel_the_platform_has_none_of(tmp_path, system, arch):
    """A torch CUDA 12.1 build on a CUDA 11.4 driver: on x86_64 / AMD64 check also offers the CUDA 11.8 wheel; on
    Windows ARM64 and Linux ppc64le no such wheel exists, so the only fix is the driver (the former key of
    rules.cuda_driver, win-amd64 / linux-x86_64, offered the x86 wheel there)."""
    usual = _ed100(_old_driver_snapshot(tmp_path, system, "AMD64" if system == "Windows" else "x86_64"))
    assert any("--index-url" in line for line in usual["fix"]), usual["fix"]
    odd = _ed100(_old_driver_snapshot(tmp_path, system, arch))
    assert not any("--index-url" in line for line in odd["fix"]), odd["fix"]
    assert any(line.startswith("Upgrade the NVIDIA driver") for line in odd["fix"])


def test_check_names_the_user_space_release_a_disagreement_states(tmp_path):
    """The nvidia probe's disagreement "NVML says 550.54.15 but /proc/driver/nvidia/version says 565.57.01" (its
    format: tests/test_probe_nvidia.py) names the user-space release; rules.machine read only nvidia-smi's "NVML
    library version:" message, fleet read both: one helper (facts.loader.userspace_driver) now serves both."""
    snap = machine(driver=None, gpus=[], state="version_mismatch")
    snap.driver.kernel_module_version = "565.57.01"
    snap.driver.disagreements = ["NVML says 550.54.15 but /proc/driver/nvidia/version says 565.57.01"]
    path = tmp_path / "mismatch.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json", "--only", "ED013")
    assert proc.returncode in (0, 1), proc.stderr
    [f] = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == "ED013"]
    assert "kernel module 565.57.01 is loaded, but the user-space driver libraries are 550.54.15" in f["message"]
