"""ED010-ED049: the machine's state: WSL, the NVIDIA driver's health, and which GPUs CUDA may see.

All of these read the snapshot only (never the matrices). The driver findings share one cause key,
DRIVER_CAUSE, so a driver that cannot be used is reported once, with the other symptoms folded in as
its consequences (a "Driver/library version mismatch" also makes nvidia-smi fail and list no device).
Rules are numbered so that, within one severity, the root cause comes first: WSL (ED010-ED012), then
the driver layers (ED013-ED017); the engine keeps the first of equal severity as the head of a cause.
"""
from __future__ import annotations

import re
from typing import List, Optional

from envdoctor.facts.labels import driver_source
from envdoctor.facts.loader import (
    DRIVER_CAUSE,
    MISMATCH_TEXT,
    driver_messages,
    is_mismatch,
    libcuda_resolution,
    under_wsl_lib,
    userspace_driver,
    wsl2,
)
from envdoctor.facts.platform import package_family
from envdoctor.lazyre import lazy_re
from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context
from envdoctor.records import dataclass, field

VISIBLE_CAUSE = "cuda-visible-devices"


# -- shared helpers -----------------------------------------------------------------------------


def _cuda_fws(ctx) -> list:
    return [fw for fw in ctx.frameworks if fw.build == "cuda"]


def _fw_names(fws) -> str:
    seen = []
    for fw in fws:
        label = f"{fw.name} {fw.version}"
        if label not in seen:
            seen.append(label)
    return ", ".join(seen)


def _nvidia_packages(snap) -> List[str]:
    return sorted(k for k in snap.python.packages if k.startswith("nvidia-") and k != "nvidia-ml-py")


def _expects_nvidia(ctx) -> bool:
    """Something on this machine says an NVIDIA GPU is meant to be used."""
    snap = ctx.snap
    return bool(_cuda_fws(ctx) or _nvidia_packages(snap) or snap.toolkits or snap.driver.version
                or snap.gpus or snap.driver.linux_driver_in_wsl)


def _nvidia_present(snap) -> bool:
    """Evidence of an NVIDIA GPU or driver (not merely software that could use one)."""
    d = snap.driver
    return bool(d.version or snap.gpus or d.kernel_module_version or d.linux_driver_in_wsl
                or d.state in ("module_not_loaded", "version_mismatch", "no_devices", "smi_failed")
                or d.nvidia_smi in ("ok", "failed", "timeout", "mismatch", "no_devices"))


def _msg_evidence(snap, lines: List[str]) -> List[EvidenceItem]:
    src = "cmd:nvidia-smi" if snap.driver.nvidia_smi not in ("not_run", "missing") else driver_source(snap)
    return [EvidenceItem("error message", line, src) for line in lines[:3]]


def _in_container(snap) -> bool:
    return bool(snap.platform.container)


def _probe_ok(snap, name: str) -> bool:
    p = snap.probe(name)
    return p is not None and p.status == "ok"


def _distro(snap) -> str:
    return snap.platform.distro_name or snap.platform.distro_id or "this distribution"


def _other_layer_works(snap) -> bool:
    """NVML or nvidia-smi answered and listed GPUs: the driver works even if the other layer failed."""
    d = snap.driver
    return ((d.nvml == "ok" and any(g.source == "nvml" for g in snap.gpus))
            or (d.nvidia_smi == "ok" and any(g.source == "nvidia-smi" for g in snap.gpus)))


# -- WSL -------------------------------------------------------------------------------------------
@rule(
    id="ED010",
    name="wsl1-no-gpu",
    title="WSL 1 has no GPU support",
    severity="error",
    area="platform",
    rationale="""
Only WSL 2 passes the GPU through to Linux (the Windows driver exposes it via /dev/dxg and the
libraries in /usr/lib/wsl/lib). A distribution running under WSL 1 is a system-call translation layer
without any GPU device, so CUDA builds of torch, tensorflow and jax can only run on the CPU there,
whatever is installed. Converting the distribution to WSL 2 keeps its files.
""",
    example="Ubuntu under WSL 1 with tensorflow-gpu installed: ED010 error, fix `wsl.exe --set-version Ubuntu 2`.",
    references=[
        "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
        "https://learn.microsoft.com/en-us/windows/wsl/install#upgrade-version-from-wsl-1-to-wsl-2",
        "https://github.com/microsoft/WSL/issues/1788",
    ],
)
def wsl1_no_gpu(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if snap.platform.wsl != 1:
        return []
    fws = _cuda_fws(ctx)
    distro = snap.loader.gpu_env.get("WSL_DISTRO_NAME") or "<name shown by wsl.exe -l -v>"
    fix = [
        "$ wsl.exe -l -v",
        f"$ wsl.exe --set-version {distro} 2",
        "$ wsl.exe --shutdown   (then reopen the distribution; install the NVIDIA driver on Windows only)",
    ]
    ev = [EvidenceItem("WSL version", "1", next((e.source for e in snap.platform.evidence), "file:/proc/version"))]
    if fws:
        ev += [EvidenceItem("CUDA build", f"{fw.name} {fw.version} (CUDA {fw.cuda_version or '?'})",
                            fw.evidence[0].source if fw.evidence else "probe:python") for fw in fws]
    if _expects_nvidia(ctx):
        what = f"{_fw_names(fws)} can only run on the CPU here" if fws else "no CUDA program can reach the GPU"
        return [r.finding(f"This Linux runs under WSL 1, which has no GPU support: {what}; convert it to WSL 2.",
                          evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject="WSL")]
    return [r.finding("This Linux runs under WSL 1, which has no GPU support; convert it to WSL 2 to use an NVIDIA GPU.",
                      severity="info", evidence=ev, fix=fix, subject="WSL")]


@rule(
    id="ED011",
    name="linux-driver-in-wsl",
    title="A Linux NVIDIA driver is installed inside WSL",
    severity="error",
    area="driver",
    rationale="""
Under WSL 2 the GPU is driven by the Windows NVIDIA driver, which maps its own libcuda.so and
nvidia-smi into /usr/lib/wsl/lib. A Linux driver package installed inside the distribution puts a
second libcuda.so.1 / libnvidia-ml.so.1 into the regular library directories; it cannot talk to the
GPU (there is no nvidia kernel module in WSL), and when the loader picks it first, nvidia-smi says it
"couldn't communicate with the NVIDIA driver" and every framework loses the GPU. NVIDIA's WSL guide:
do not install any Linux display driver in WSL.
""",
    example="Ubuntu 22.04 in WSL 2 after `apt install nvidia-driver-535`: ED011 error, remove the Linux driver packages.",
    references=[
        "https://docs.nvidia.com/cuda/wsl-user-guide/index.html#getting-started-with-cuda-on-wsl",
        "https://github.com/microsoft/WSL/issues/12272",
        "https://github.com/microsoft/WSL/issues/7716",
    ],
)
def linux_driver_in_wsl(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if not wsl2(snap) or not snap.driver.linux_driver_in_wsl:
        return []
    foreign = [lib for lib in libcuda_resolution(snap) if not under_wsl_lib(lib.path)]
    ev = [EvidenceItem("WSL version", "2", next((e.source for e in snap.platform.evidence), "file:/proc/version")),
          EvidenceItem("Linux NVIDIA driver in WSL", "installed", driver_source(snap))]
    ev += [EvidenceItem("libcuda (Linux driver)", lib.path, f"loader:{lib.via}") for lib in foreign[:3]]
    if snap.driver.wsl_libcuda:
        ev.append(EvidenceItem("libcuda (Windows driver)", snap.driver.wsl_libcuda, "file:/usr/lib/wsl/lib"))
    where = f" ({foreign[0].path})" if foreign else ""
    fam = package_family(snap.platform.distro_id)
    if fam == "debian":
        fix = [
            "$ dpkg -l | grep -E '^ii +(nvidia-|libnvidia-)'",
            "$ sudo apt-get remove --purge '^nvidia-.*'",
            "Read the list apt prints before answering: keep cuda-toolkit-* (the toolkit is fine in WSL). "
            "Ubuntu's nvidia-cuda-toolkit package also matches '^nvidia-.*': reinstall it afterwards if you use it. "
            "Never install the `cuda` or `cuda-drivers` meta-packages in WSL (they pull the Linux driver back in); "
            "install `cuda-toolkit-<major>-<minor>` instead.",
        ]
    elif fam == "rpm":
        fix = ["$ rpm -qa | grep -iE '^(nvidia|kmod-nvidia|xorg-x11-drv-nvidia)'",
               "$ sudo dnf remove 'nvidia-driver*' 'kmod-nvidia*' 'xorg-x11-drv-nvidia*'",
               "Keep the cuda-toolkit-* packages; remove only the driver packages."]
    else:
        fix = ["Remove the Linux NVIDIA driver packages with the distribution's package manager "
               "(keep the CUDA toolkit packages)."]
    fix += [
        "If the driver was installed from a NVIDIA-Linux-*.run file: $ sudo nvidia-uninstall",
        "$ wsl.exe --shutdown   (then reopen the distribution)",
        "$ ls -l /usr/lib/wsl/lib/libcuda.so*   (the Windows driver's libcuda must be the one the loader finds)",
    ]
    return [r.finding(
        f"A Linux NVIDIA driver is installed inside WSL 2{where}: it shadows the Windows driver's libcuda in "
        f"/usr/lib/wsl/lib, so CUDA cannot reach the GPU; keep only the Windows driver.",
        evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject="WSL")]


@rule(
    id="ED012",
    name="wsl-libcuda-missing",
    title="WSL 2 cannot load the Windows driver's libcuda",
    severity="error",
    area="driver",
    rationale="""
In WSL 2, CUDA programs reach the GPU through the libcuda.so.1 that the Windows NVIDIA driver maps
into /usr/lib/wsl/lib (registered with the loader by /etc/ld.so.conf.d/ld.wsl.conf). When that file is
absent (an old Windows driver, a driver without WSL support, a broken WSL update) or another libcuda.so.1
is found first (a CUDA stub or Linux driver directory on LD_LIBRARY_PATH), torch.cuda.is_available()
is False and TensorFlow/JAX report no GPU.
""",
    example="WSL 2 without libcuda in /usr/lib/wsl/lib and torch 2.1.2+cu121 installed: ED012 error, update the Windows driver and run `wsl.exe --update`.",
    references=[
        "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
        "https://github.com/microsoft/WSL/issues/5604",
        "https://github.com/microsoft/WSL/issues/9099",
    ],
)
def wsl_libcuda_missing(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if not wsl2(snap):
        return []
    ev = [EvidenceItem("WSL version", "2", next((e.source for e in snap.platform.evidence), "file:/proc/version"))]
    windows_fix = [
        "Install the current NVIDIA driver for your GPU on Windows (it provides CUDA to WSL 2; nothing to install in Linux).",
        "$ wsl.exe --update",
        "$ wsl.exe --shutdown   (then reopen the distribution)",
        "$ ls -l /usr/lib/wsl/lib/libcuda.so*",
        "$ cat /etc/ld.so.conf.d/ld.wsl.conf   (must list /usr/lib/wsl/lib; then: $ sudo ldconfig)",
    ]
    if snap.driver.wsl_libcuda is None:
        if not _probe_ok(snap, "nvidia"):
            return []  # the driver probe did not run: unknown, not missing
        ev.append(EvidenceItem("libcuda under /usr/lib/wsl/lib", "none", "file:/usr/lib/wsl/lib"))
        if _nvidia_present(snap):
            return [r.finding(
                "WSL 2 has no libcuda in /usr/lib/wsl/lib although an NVIDIA driver/GPU is present: "
                "the Windows driver does not expose CUDA to this distribution, so no framework can use the GPU.",
                evidence=ev, fix=windows_fix, cause=DRIVER_CAUSE, subject="WSL")]
        fws = _cuda_fws(ctx)
        if fws:
            return [r.finding(
                f"WSL 2 has no libcuda in /usr/lib/wsl/lib, so {_fw_names(fws)} will run on the CPU; if this PC has "
                f"an NVIDIA GPU, its Windows driver does not expose CUDA to WSL.",
                severity="info", evidence=ev, fix=windows_fix, subject="WSL")]
        return []
    order = libcuda_resolution(snap)
    if not order or under_wsl_lib(order[0].path):
        return []
    first = order[0]
    ev.append(EvidenceItem("libcuda (Windows driver)", snap.driver.wsl_libcuda, "file:/usr/lib/wsl/lib"))
    ev.append(EvidenceItem("libcuda the loader finds first", first.path, f"loader:{first.via}"))
    fix = []
    if first.via == "LD_LIBRARY_PATH":
        d = first.path.rsplit("/", 1)[0]
        rest = [p for p in snap.loader.ld_library_path if p.rstrip("/") != d.rstrip("/")]
        fix.append(f"$ export LD_LIBRARY_PATH={':'.join(rest)}" if rest else "$ unset LD_LIBRARY_PATH")
    elif first.via == "LD_PRELOAD":
        rest = [p for p in snap.loader.ld_preload if p != first.path]
        fix.append(f"$ export LD_PRELOAD={' '.join(rest)}" if rest else "$ unset LD_PRELOAD")
    else:
        fix.append(f"$ dpkg -S {first.path}   (find the package that installed it; a Linux driver does not belong in WSL)"
                   if package_family(snap.platform.distro_id) == "debian" else f"$ rpm -qf {first.path}   (find the package that installed it)")
    fix += ["$ cat /etc/ld.so.conf.d/ld.wsl.conf   (must list /usr/lib/wsl/lib)", "$ sudo ldconfig",
            "$ ldconfig -p | grep libcuda.so.1   (/usr/lib/wsl/lib/libcuda.so.1 must come first)"]
    return [r.finding(
        f"In WSL 2 the loader finds {first.path} (via {first.via}) before the Windows driver's "
        f"{snap.driver.wsl_libcuda}: CUDA programs load the wrong libcuda and cannot reach the GPU.",
        evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject="WSL")]


# -- the driver ---------------------------------------------------------------------------------


def _module_rule_applies(snap) -> bool:
    return snap.driver.state == "module_not_loaded" and snap.platform.wsl is None and not is_mismatch(snap)


@rule(
    id="ED013",
    name="driver-library-version-mismatch",
    title="NVIDIA kernel module and user-space driver differ (reboot pending)",
    severity="error",
    area="driver",
    rationale="""
The NVIDIA kernel module and its user-space libraries (libcuda, libnvidia-ml) must be the very same
release. A driver upgrade (often by unattended-upgrades) replaces the libraries on disk while the old
module stays loaded until the next reboot; from then on NVML fails with "Driver/library version
mismatch", nvidia-smi prints the same, and cuInit fails in every framework (torch.cuda.is_available()
is False). Rebooting, or unloading and reloading the nvidia modules, makes them agree.
""",
    example="Kernel module 550.90.07 loaded, nvidia-driver-550 550.107.02 installed: ED013 error, `sudo reboot`.",
    references=[
        "https://github.com/oddmario/NVIDIA-Ubuntu-Driver-Guide/issues/4",
        "https://github.com/lyulyul/shine-cluster/issues/30",
        "https://github.com/tinygrad/open-gpu-kernel-modules/issues/47",
    ],
)
def driver_library_mismatch(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if not is_mismatch(snap):
        return []
    d = snap.driver
    kernel = d.kernel_module_version
    library = userspace_driver(snap)
    if library == kernel:
        library = None  # the kernel module's own release: the other side is not known
    if kernel and library:
        which = f"NVIDIA kernel module {kernel} is loaded, but the user-space driver libraries are {library}"
    elif kernel:
        which = f"NVIDIA kernel module {kernel} is loaded, but the user-space driver libraries are another release"
    else:
        which = "The loaded NVIDIA kernel module and the user-space driver libraries are different releases"
    fws = _cuda_fws(ctx)
    hit = f"; {_fw_names(fws)} cannot use the GPU until they agree" if fws else "; no CUDA program can use the GPU until they agree"
    msg = f"{which} (NVML: Driver/library version mismatch){hit}."
    ev = []
    if kernel:
        ev.append(EvidenceItem("kernel module version", kernel, "file:/proc/driver/nvidia/version"))
    if library:
        ev.append(EvidenceItem("user-space driver version", library, "cmd:nvidia-smi"))
    ev += [EvidenceItem("disagreement", s, driver_source(snap)) for s in d.disagreements[:3]]
    ev += _msg_evidence(snap, driver_messages(snap, MISMATCH_TEXT, "NVML library version"))
    if _in_container(snap):
        fix = [
            "This container ships its own NVIDIA user-space driver libraries that differ from the host's kernel module: "
            "remove them from the image (do not install nvidia-driver/libnvidia-* packages in images) and let the NVIDIA "
            "Container Toolkit mount the host's libraries:",
            "$ docker run --gpus all <image> nvidia-smi",
            "If the host itself was upgraded: reboot the host (or reload its nvidia modules).",
        ]
    else:
        fix = [
            "$ sudo reboot",
            "Or, without a reboot, stop every program using the GPU (including the display manager) and reload the modules:",
            "$ sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia",
            "$ sudo modprobe nvidia && nvidia-smi",
        ]
        fam = package_family(snap.platform.distro_id)
        if fam == "debian":
            fix.append("$ grep -B2 -A4 -i nvidia /var/log/apt/history.log   (which upgrade replaced the libraries; "
                       "unattended-upgrades does this)")
        elif fam == "rpm":
            fix.append("$ sudo dnf history list | head   (which transaction upgraded the driver)")
    return [r.finding(msg, evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject=f"NVIDIA driver {kernel or library or ''}".strip())]


@rule(
    id="ED014",
    name="nvidia-module-not-loaded",
    title="The NVIDIA kernel module is not loaded",
    severity="error",
    area="driver",
    rationale="""
The user-space driver is installed but the nvidia kernel module is not running, so nvidia-smi cannot
"communicate with the NVIDIA driver" and CUDA finds no device. The usual causes: the module was never
built for the running kernel (a kernel update without DKMS, or missing kernel headers), Secure Boot
refuses the unsigned module ("Key was rejected by service"), or nouveau holds the GPU.
""",
    example="Kernel 3.13.0-116-generic after an update, driver installed from a .run file for 3.13.0-88: ED014 error, `sudo dkms status`.",
    references=[
        "https://github.com/NVIDIA/nvidia-docker/issues/365",
        "https://github.com/acidanthera/bugtracker/issues/2237",
        "https://github.com/GoogleCloudPlatform/compute-gpu-installation/pull/18",
    ],
)
def nvidia_module_not_loaded(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if not _module_rule_applies(snap):
        return []
    kernel = snap.platform.kernel
    lines = driver_messages(snap)
    ev = [EvidenceItem("driver state", "module_not_loaded", driver_source(snap))]
    if snap.driver.version:
        ev.append(EvidenceItem("installed driver", snap.driver.version, driver_source(snap)))
    if kernel:
        ev.append(EvidenceItem("running kernel", kernel, "platform"))
    ev += _msg_evidence(snap, lines)
    secure_boot = any("key was rejected" in m.lower() for m in lines)
    not_built = any("module nvidia not found" in m.lower() for m in lines)
    fam = package_family(snap.platform.distro_id)
    kver = kernel or "$(uname -r)"
    if _in_container(snap):
        fix = ["A container shares the host's kernel: load the module on the host, not here.",
               "$ lsmod | grep nvidia   (on the host)", "$ sudo modprobe nvidia   (on the host)"]
    else:
        fix = ["$ sudo modprobe nvidia   (its error message names the cause)"]
        if secure_boot:
            key = "/var/lib/shim-signed/mok/MOK.der" if fam == "debian" else "/var/lib/dkms/mok.pub"
            fix += ["$ mokutil --sb-state",
                    f"$ sudo mokutil --import {key}   (enrol the key DKMS signs modules with, then reboot and "
                    f"confirm it in the MOK manager), or disable Secure Boot"]
        fix.append("$ sudo dkms status   (is the nvidia module built for kernel " + (kernel or "the running kernel") + "?)")
        if fam == "debian":
            fix += [f"$ sudo apt-get install linux-headers-{kver}", "$ sudo dkms autoinstall"]
        elif fam == "rpm":
            fix += [f"$ sudo dnf install kernel-devel-{kver} kernel-headers", "$ sudo dkms autoinstall   "
                    "(RPM Fusion akmod packages: $ sudo akmods --force)"]
        elif fam == "suse":
            fix += ["$ sudo zypper install kernel-default-devel", "$ sudo dkms autoinstall"]
        else:
            fix.append("$ sudo dkms autoinstall   (after installing the headers of the running kernel)")
        fix.append("$ sudo reboot")
    fws = _cuda_fws(ctx)
    who = f"{_fw_names(fws)} cannot use the GPU" if fws else "no CUDA program can use the GPU"
    why = " (Secure Boot rejected it)" if secure_boot else (
        f" (no module built for kernel {kernel})" if not_built and kernel else "")
    drv = f"NVIDIA driver {snap.driver.version}" if snap.driver.version else "The NVIDIA driver"
    sev = "error" if (fws or snap.gpus) else "warning"
    return [r.finding(f"{drv} is installed but its kernel module is not loaded{why}: {who}.", severity=sev,
                      evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject=f"kernel {kernel}" if kernel else "NVIDIA driver")]


@rule(
    id="ED015",
    name="nvidia-smi-hangs",
    title="nvidia-smi / NVML does not answer",
    severity="error",
    area="driver",
    rationale="""
nvidia-smi normally answers within a second or two (longer on many-GPU machines without persistence
mode). When it hangs, the driver is usually stuck on a GPU that stopped responding: "GPU has fallen
off the bus" (Xid 79), or another fatal Xid after which the GPU needs a reset. CUDA programs then hang
in cuInit as well. The kernel log names the Xid; a reboot (or a GPU reset) clears it, and a GPU that
keeps falling off the bus points at power, cooling or the PCIe slot.
""",
    example="nvidia-smi times out after an Xid 79 on an RTX 3070 Ti with driver 530.41.03: ED015 error, `sudo dmesg -T | grep -i xid`.",
    references=[
        "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507",
        "https://docs.nvidia.com/deploy/xid-errors/index.html",
    ],
)
def nvidia_smi_hangs(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    d = snap.driver
    smi_to, nvml_to = d.nvidia_smi == "timeout", d.nvml == "timeout"
    if not (smi_to or nvml_to):
        return []
    nvml_fine = _other_layer_works(snap)
    who = "nvidia-smi and NVML" if smi_to and nvml_to else ("nvidia-smi" if smi_to else "NVML")
    ev = [EvidenceItem("nvidia-smi", d.nvidia_smi, "cmd:nvidia-smi"), EvidenceItem("NVML", d.nvml, "nvml")]
    if d.version:
        ev.append(EvidenceItem("driver", d.version, driver_source(snap)))
    ev += _msg_evidence(snap, driver_messages(snap))
    fix = [
        "$ sudo dmesg -T | grep -iE 'xid|fallen off the bus'   (Xid 79 = the GPU fell off the bus)",
        "$ sudo reboot   (a GPU that stopped responding is only recovered by a reset or reboot)",
        "If it recurs: check the GPU's power cables, cooling and PCIe seating, and collect $ sudo nvidia-bug-report.sh",
        "$ envdoctor check --timeout 30   (to rule out a merely slow answer)",
    ]
    if nvml_fine:
        return [r.finding(
            f"{who} did not answer within envdoctor's timeout, although the driver listed {len(snap.gpus)} GPU(s): it may "
            f"just be slow (persistence mode off), or a GPU is hanging.", severity="warning", evidence=ev,
            fix=["$ envdoctor check --timeout 30", "$ sudo nvidia-smi -pm 1   (persistence mode: faster answers)"] + fix[:1],
            cause=DRIVER_CAUSE, subject="nvidia-smi")]
    drv = f" (driver {d.version})" if d.version else ""
    return [r.finding(f"{who} did not answer{drv}: a GPU may have fallen off the bus or hung; CUDA programs will hang "
                      f"or fail in cuInit until the GPU is reset.",
                      evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject="nvidia-smi")]


@rule(
    id="ED016",
    name="nvidia-smi-failed",
    title="nvidia-smi / NVML fails",
    severity="error",
    area="driver",
    rationale="""
nvidia-smi is the driver's own tool: when it fails, CUDA usually fails the same way (cuInit returns an
error and the frameworks see no GPU). Its message says why: it "couldn't communicate with the NVIDIA
driver" (no working kernel module), "Unknown Error" (often a container whose device cgroup lost the
GPU after a systemd reload), "couldn't find libnvidia-ml.so" (user-space driver missing).
""",
    example="nvidia-smi prints 'Failed to initialize NVML: Unknown Error' inside a container: ED016 error with that message.",
    references=[
        "https://github.com/microsoft/WSL/issues/11888",
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/48",
        "https://github.com/NVIDIA/nvidia-docker/issues/1671",
    ],
)
def nvidia_smi_failed(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    d = snap.driver
    if not (d.nvidia_smi == "failed" or d.nvml == "failed" or d.state == "smi_failed"):
        return []
    lines = driver_messages(snap)
    telling = [m for m in lines if re.search(r"has failed|failed to|unknown error|couldn't|not found|no devices", m, re.I)
               and not m.lower().startswith("modprobe")]
    first = (telling or lines or ["no message"])[0].rstrip(".")
    nvml_fine = _other_layer_works(snap)
    layer = "nvidia-smi" if d.nvidia_smi == "failed" or d.state == "smi_failed" else "NVML"
    ev = [EvidenceItem("nvidia-smi", d.nvidia_smi, "cmd:nvidia-smi"), EvidenceItem("NVML", d.nvml, "nvml"),
          EvidenceItem("driver state", d.state, driver_source(snap))] + _msg_evidence(snap, lines)
    low = " ".join(lines).lower()
    fix: List[str] = []
    if wsl2(snap):
        fix += ["Under WSL 2 nvidia-smi and libcuda come from the Windows driver: update it on Windows.",
                "$ wsl.exe --update", "$ wsl.exe --shutdown   (then reopen the distribution)",
                "$ ls -l /usr/lib/wsl/lib/"]
    elif "unknown error" in low and _in_container(snap):
        fix += ["The container lost access to the GPU device files (systemd reloaded its cgroup, e.g. after "
                "`systemctl daemon-reload` on the host): delete and recreate the container.",
                "$ docker rm -f <container> && docker run --gpus all ... <image>",
                "Lasting fix on the host (NVIDIA's workaround): $ sudo nvidia-ctk system create-dev-char-symlinks --create-all"]
    elif "libnvidia-ml" in low:
        fix += ["The user-space driver (libnvidia-ml.so.1) is missing or not on the loader path:",
                "$ ldconfig -p | grep libnvidia-ml"]
    else:
        fix += ["$ sudo dmesg -T | grep -iE 'nvrm|xid'", "$ lsmod | grep nvidia"]
    fix.append("$ nvidia-smi   (rerun to see the full message)")
    if nvml_fine:
        return [r.finding(f"{layer} failed ({first}) although the driver lists {len(snap.gpus)} GPU(s).", severity="warning",
                          evidence=ev, fix=fix, subject="nvidia-smi")]
    fws = _cuda_fws(ctx)
    who = f"; {_fw_names(fws)} will not see a GPU" if fws else ""
    return [r.finding(f"{layer} fails: {first}{who}.", evidence=ev, fix=fix, cause=DRIVER_CAUSE, subject="nvidia-smi")]


def _container_hides_gpus(snap) -> Optional[str]:
    """The NVIDIA_VISIBLE_DEVICES value that explains why a container has no GPU, if any."""
    if not _in_container(snap):
        return None
    env = snap.loader.gpu_env
    if "NVIDIA_VISIBLE_DEVICES" not in env:
        return None
    v = env["NVIDIA_VISIBLE_DEVICES"].strip().lower()
    return v if v in ("void", "none", "") else None


@rule(
    id="ED017",
    name="driver-without-devices",
    title="The NVIDIA driver finds no GPU",
    severity="error",
    area="driver",
    rationale="""
The driver is loaded but NVML and nvidia-smi report "No devices were found". When the kernel still lists
the GPU (/proc/driver/nvidia/gpus), the driver failed to initialise it: RmInitAdapter failed (GSP
firmware, a GPU newer than the driver, the open vs proprietary kernel module, BIOS settings such as
Above 4G decoding / Resizable BAR), or the GPU fell off the bus. CUDA then has no device either.
Inside a container it usually means no GPU was passed in.
""",
    example="RTX 3090 at 0000:98:00.0 listed in /proc, driver 550.144.03, nvidia-smi 'No devices were found': ED017 error.",
    references=[
        "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/789",
        "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862",
    ],
)
def driver_without_devices(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    d = snap.driver
    if not (d.state == "no_devices" or d.nvml == "no_devices" or d.nvidia_smi == "no_devices"):
        return []
    if any(g.source in ("nvml", "nvidia-smi") for g in snap.gpus):
        return []
    if _container_hides_gpus(snap) is not None:
        return []  # ED022 explains it (a mismatch is folded into ED013 by the shared cause)
    if snap.platform.wsl is not None and not d.version:
        return []
    proc_gpus = [g for g in snap.gpus if g.source == "proc"]
    drv = f"NVIDIA driver {d.version}" if d.version else "The NVIDIA driver"
    ev = [EvidenceItem("NVML", d.nvml, "nvml"), EvidenceItem("nvidia-smi", d.nvidia_smi, "cmd:nvidia-smi")]
    if d.version:
        ev.append(EvidenceItem("driver", d.version, driver_source(snap)))
    ev += [EvidenceItem(f"GPU {g.bus_id or g.index}", g.name or "NVIDIA GPU", "file:/proc/driver/nvidia/gpus")
           for g in proc_gpus[:4]]
    ev += _msg_evidence(snap, driver_messages(snap))
    fws = _cuda_fws(ctx)
    who = f"; {_fw_names(fws)} will see no GPU" if fws else ""
    fix = [
        "$ sudo dmesg -T | grep -iE 'NVRM|xid'   (look for 'RmInitAdapter failed' or 'fallen off the bus')",
        "$ lspci -nnk -d 10de:   (the GPU's PCI ID and the kernel driver bound to it)",
        "$ cat /proc/driver/nvidia/version   (a GPU newer than the driver needs a newer driver; some GPUs need the "
        "open kernel module)",
        "Check the BIOS: Above 4G decoding and Resizable BAR on (needed by recent GPUs), then $ sudo reboot",
    ]
    if proc_gpus:
        names = ", ".join(f"{g.name or 'NVIDIA GPU'} at {g.bus_id}" if g.bus_id else (g.name or "NVIDIA GPU")
                          for g in proc_gpus[:4])
        return [r.finding(f"{drv} lists {names} in /proc but NVML/nvidia-smi find no device: the driver failed to "
                          f"initialise the GPU{who}.", evidence=ev, fix=fix, cause=DRIVER_CAUSE,
                          subject=f"GPU {proc_gpus[0].bus_id or proc_gpus[0].index}")]
    if _in_container(snap):
        return [r.finding(f"{drv} is visible in this container but no GPU was passed into it{who}.", severity="warning",
                          evidence=ev, fix=["$ docker run --gpus all <image> ...   (or --gpus '\"device=0\"')",
                                            "Kubernetes: request the GPU with resources.limits: nvidia.com/gpu: 1"],
                          cause=DRIVER_CAUSE, subject="container")]
    sev = "warning" if fws else "info"
    return [r.finding(f"{drv} is installed but finds no NVIDIA GPU{who}.", severity=sev, evidence=ev, fix=fix,
                      cause=DRIVER_CAUSE, subject="NVIDIA driver")]


# -- which devices CUDA may see ---------------------------------------------------------------------
_INT_RE = lazy_re(r"^[+-]?\d+$")
_HEXISH_RE = lazy_re(r"^[0-9a-fA-F-]{8,}$")


@dataclass
class VisibleDevices:
    """How CUDA reads CUDA_VISIBLE_DEVICES against this machine's GPUs."""

    value: str
    visible: List[int] = field(default_factory=list)  # CUDA ordinals (positions) that stay visible
    valid_tokens: List[str] = field(default_factory=list)  # every entry that names a device, in order
    invalid: Optional[str] = None  # the first entry that names no device: CUDA stops there
    ignored: List[str] = field(default_factory=list)  # entries after it
    unknown: bool = False  # an entry could not be judged (MIG-..., a redacted or unknown UUID)


def _uuid_known(uuid: str) -> bool:
    return bool(uuid) and uuid.upper().startswith("GPU-") and "redacted" not in uuid.lower()


def _judge_entry(tok: str, gpus):
    """One CUDA_VISIBLE_DEVICES entry: ("valid", position) | ("invalid", None) | ("unknown", None)."""
    if tok == "" or "redacted" in tok.lower() or tok.upper().startswith("MIG-") or (
            _HEXISH_RE.match(tok) and not _INT_RE.match(tok)):
        return "unknown", None
    if _INT_RE.match(tok):
        k = int(tok)
        return ("valid", k) if 0 <= k < len(gpus) else ("invalid", None)
    if tok.upper().startswith("GPU-"):
        if not all(_uuid_known(g.uuid) for g in gpus):
            return "unknown", None  # redacted or unprobed UUIDs: cannot tell
        hits = [pos for pos, g in enumerate(gpus) if g.uuid.lower().startswith(tok.lower())]
        if len(hits) > 1:
            return "unknown", None  # an ambiguous prefix: CUDA wants a unique one
        return ("valid", hits[0]) if hits else ("invalid", None)
    return "invalid", None  # "none", "all", "void", words: not an index or UUID


def resolve_visible_devices(value: str, gpus) -> VisibleDevices:
    """CUDA's documented semantics: unset = all; "" = none; a comma-separated list of indices, GPU UUIDs
    (unique prefixes allowed) or MIG identifiers; parsing stops at the first invalid entry and only the
    devices named before it are visible."""
    res = VisibleDevices(value=value)
    if value.strip() == "":
        return res
    tokens = [t.strip() for t in value.split(",")]
    for i, tok in enumerate(tokens):
        verdict, pos = _judge_entry(tok, gpus)
        if verdict == "unknown":
            res.unknown = True
            return res
        if verdict == "valid":
            if pos not in res.visible:
                res.visible.append(pos)
                res.valid_tokens.append(str(pos) if _INT_RE.match(tok) else tok)
            continue
        res.invalid = tok
        res.ignored = tokens[i + 1:]
        named = list(res.visible)
        for later in res.ignored:  # the valid entries after it, for the fix
            v2, p2 = _judge_entry(later, gpus)
            if v2 == "valid" and p2 not in named:
                named.append(p2)
                res.valid_tokens.append(str(p2) if _INT_RE.match(later) else later)
        return res
    return res


def _gpu_summary(gpus) -> str:
    names = [g.name or "NVIDIA GPU" for g in gpus]
    if len(set(names)) == 1 and len(names) > 1:
        return f"{len(names)} GPUs: {len(names)} x {names[0]}"
    shown = ", ".join(f"{i} = {n}" for i, n in enumerate(names[:4]))
    more = ", ..." if len(names) > 4 else ""
    return f"{len(names)} GPU{'s' if len(names) > 1 else ''}: {shown}{more}"


def _visible(ctx) -> Optional[VisibleDevices]:
    env = ctx.snap.loader.gpu_env
    if "CUDA_VISIBLE_DEVICES" not in env or not ctx.has_nvidia_gpu:
        return None
    gpus = sorted(ctx.snap.gpus, key=lambda g: g.index)
    return resolve_visible_devices(env["CUDA_VISIBLE_DEVICES"], gpus)


@rule(
    id="ED020",
    name="cuda-visible-devices-hides-all",
    title="CUDA_VISIBLE_DEVICES hides every GPU",
    severity="error",
    area="environment",
    rationale="""
CUDA_VISIBLE_DEVICES decides which GPUs CUDA enumerates. Unset, all are visible; set to an empty
string, none is. Otherwise it is a comma-separated list of indices (0 .. count-1), GPU UUIDs
("GPU-8932f937-...", unique prefixes allowed) or MIG identifiers, and CUDA stops at the first entry
that names no device: only the entries before it count. So "", "-1", "none", or an index equal to or
above the GPU count (CUDA_VISIBLE_DEVICES=1 on a one-GPU machine) hide every GPU, and
torch.cuda.is_available() is False ("no CUDA-capable device is detected"). An entry that names no
device is a mistake (error); "", "-1" and "none" are also how people force the CPU on purpose, so
those are a warning.
""",
    example="One TITAN X (Pascal) and CUDA_VISIBLE_DEVICES=2: ED020 error, `export CUDA_VISIBLE_DEVICES=0`.",
    references=[
        "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html",
        "https://github.com/pytorch/pytorch/issues/1040",
        "https://github.com/thuml/Autoformer/issues/25",
        "https://github.com/pytorch/pytorch/issues/40618",
    ],
)
def cuda_visible_devices_hides_all(ctx: Context, r: Rule) -> List[Finding]:
    vd = _visible(ctx)
    if vd is None or vd.unknown or vd.visible:
        return []
    gpus = sorted(ctx.snap.gpus, key=lambda g: g.index)
    fws = _cuda_fws(ctx)
    who = _fw_names(fws) if fws else "CUDA programs"
    # "", "-1" and "none" are the common idioms for forcing the CPU on purpose: a warning, not an
    # error. Any other value that hides every GPU (an index or UUID that names no device) is a mistake.
    deliberate = vd.value.strip().lower() in ("", "-1", "none", "void")
    if vd.value.strip() == "":
        what = "CUDA_VISIBLE_DEVICES is set to an empty string, which hides every GPU from CUDA"
    else:
        what = (f"CUDA_VISIBLE_DEVICES=\"{vd.value}\" hides every GPU: \"{vd.invalid}\" names no device and CUDA stops "
                f"at the first entry that names none")
    all_idx = ",".join(str(i) for i in range(len(gpus)))
    fix = ["$ unset CUDA_VISIBLE_DEVICES   (all GPUs visible)",
           f"$ export CUDA_VISIBLE_DEVICES={all_idx}   (valid indices here: 0..{len(gpus) - 1})",
           "Also look for scripts that set it (os.environ[\"CUDA_VISIBLE_DEVICES\"] = ..., `export` lines in run scripts)."]
    ev = [EvidenceItem("CUDA_VISIBLE_DEVICES", repr(vd.value), "env:CUDA_VISIBLE_DEVICES"),
          EvidenceItem("GPUs", _gpu_summary(gpus), gpus[0].source or "nvml")]
    return [r.finding(f"{what}; this machine has {_gpu_summary(gpus)}; {who} will see none"
                      + (" and run on the CPU (fine if that is what you meant)." if deliberate else "."),
                      severity="warning" if deliberate else "error",
                      evidence=ev, fix=fix, cause=VISIBLE_CAUSE, subject="CUDA_VISIBLE_DEVICES")]


@rule(
    id="ED021",
    name="cuda-visible-devices-bad-entry",
    title="CUDA_VISIBLE_DEVICES names a GPU that does not exist",
    severity="warning",
    area="environment",
    rationale="""
An entry of CUDA_VISIBLE_DEVICES that names no device (an index >= the GPU count, -1, a UUID of a GPU
that is not in this machine) ends CUDA's parsing: the GPUs listed after it are silently dropped, so a
job runs on fewer GPUs than meant (CUDA_VISIBLE_DEVICES=0,2,-1,1 makes only 0 and 2 visible). Scripts
copied from a bigger machine often carry such lists.
""",
    example="Four GPUs and CUDA_VISIBLE_DEVICES=0,2,-1,1: ED021 warning, GPU index 1 is dropped.",
    references=[
        "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html",
    ],
)
def cuda_visible_devices_bad_entry(ctx: Context, r: Rule) -> List[Finding]:
    vd = _visible(ctx)
    if vd is None or vd.unknown or not vd.visible or vd.invalid is None:
        return []
    gpus = sorted(ctx.snap.gpus, key=lambda g: g.index)
    kept = ", ".join(vd.valid_tokens[:len(vd.visible)])
    dropped = [t for t in vd.ignored if t]
    tail = f"; the entries after it ({', '.join(dropped)}) are ignored" if dropped else ""
    msg = (f"CUDA_VISIBLE_DEVICES=\"{vd.value}\": \"{vd.invalid}\" names no GPU on this machine "
           f"({_gpu_summary(gpus)}), so CUDA stops there{tail}; only {kept} stay visible.")
    fix = [f"$ export CUDA_VISIBLE_DEVICES={','.join(vd.valid_tokens)}"]
    ev = [EvidenceItem("CUDA_VISIBLE_DEVICES", repr(vd.value), "env:CUDA_VISIBLE_DEVICES"),
          EvidenceItem("GPUs", _gpu_summary(gpus), gpus[0].source or "nvml")]
    return [r.finding(msg, evidence=ev, fix=fix, cause=VISIBLE_CAUSE, subject="CUDA_VISIBLE_DEVICES")]


@rule(
    id="ED022",
    name="nvidia-visible-devices-void",
    title="The container was started without GPUs (NVIDIA_VISIBLE_DEVICES)",
    severity="warning",
    area="environment",
    rationale="""
Inside a container the NVIDIA Container Toolkit decides which GPUs to pass in from NVIDIA_VISIBLE_DEVICES
(or docker's --gpus). "none" passes no GPU (the driver libraries are still mounted, so nvidia-smi reports
"No devices were found"); "void" or an empty value makes the runtime behave like plain runc: neither GPUs
nor driver libraries. Frameworks in such a container run on the CPU.
""",
    example="A docker container with NVIDIA_VISIBLE_DEVICES=void and torch 2.1.2+cu121: ED022 warning, run it with --gpus all.",
    references=[
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
    ],
)
def nvidia_visible_devices_void(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    v = _container_hides_gpus(snap)
    if v is None or ctx.has_nvidia_gpu:
        return []
    raw = snap.loader.gpu_env.get("NVIDIA_VISIBLE_DEVICES", "")
    kind = snap.platform.container or "container"
    fws = _cuda_fws(ctx)
    who = f"{_fw_names(fws)} run on the CPU" if fws else "CUDA programs find no GPU"
    what = "no GPU (driver libraries only)" if v == "none" else "neither GPUs nor the driver libraries"
    if kind == "kubernetes":
        fix = ["Request the GPU in the pod spec: resources: limits: nvidia.com/gpu: 1",
               "and do not set NVIDIA_VISIBLE_DEVICES in the pod or image."]
    elif kind == "podman":
        fix = ["$ podman run --device nvidia.com/gpu=all <image> ...   (CDI)"]
    else:
        fix = ["$ docker run --gpus all <image> ...",
               "$ docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all <image> ...   (legacy runtime)"]
    ev = [EvidenceItem("NVIDIA_VISIBLE_DEVICES", repr(raw), "env:NVIDIA_VISIBLE_DEVICES"),
          EvidenceItem("container", kind, next((e.source for e in snap.platform.evidence), "platform"))]
    return [r.finding(f"This {kind} container has NVIDIA_VISIBLE_DEVICES=\"{raw}\": the NVIDIA runtime passes {what} "
                      f"into it, so {who}.", evidence=ev, fix=fix, cause="nvidia-visible-devices", subject="container")]


__all__ = ["DRIVER_CAUSE", "VISIBLE_CAUSE", "VisibleDevices", "resolve_visible_devices"]


# -- deprecated distribution names -----------------------------------------------------------------
@rule(
    id="ED420",
    name="deprecated-distribution-installed",
    title="A framework is installed under a deprecated distribution name",
    severity="info",
    area="tensorflow",
    rationale="""
tensorflow-gpu was TensorFlow under another name: since TensorFlow 2.1 the two were built the same way and both
use the GPU. The name ends at 2.11; from 2.12 tensorflow-gpu is an empty stub sdist that installs nothing (pip
cannot even build it). An installed tensorflow-gpu up to 2.11 is a real, old TensorFlow whose upgrades must use
the name tensorflow (tensorflow[and-cuda] from 2.14 for the pip CUDA libraries); a tensorflow-gpu record at a
stub release holds no TensorFlow at all (error); the old, working one is an info. The names and releases are data
(matrices/incompatibilities.toml, [[deprecated_distribution]]).
""",
    example="tensorflow-gpu 2.10.0 installed: `ED420 info`, fix `pip uninstall -y tensorflow-gpu` and "
            "`pip install 'tensorflow[and-cuda]~=2.21.0'`.",
    references=["https://github.com/opendatahub-io/notebooks/issues/42",
                "https://github.com/dionhaefner/pyhpc-benchmarks/issues/17"],
)
def deprecated_distribution_installed(ctx: Context, r: Rule) -> List[Finding]:
    from envdoctor.facts.labels import row_source
    from envdoctor.facts.choices import tf_choice, tf_command

    m = ctx.matrices
    lookup = getattr(m, "deprecated_distribution", None)
    if lookup is None:
        return []
    out = []
    for fw in ctx.snap.python.frameworks:  # ctx.frameworks leaves the stubs out
        row = lookup(fw.distribution)
        if row is None:
            continue
        label = f"{fw.distribution} {fw.version}"
        ev = [EvidenceItem("installed", label, fw.evidence[0].source if fw.evidence else f"python.packages:{fw.distribution}"),
              EvidenceItem(f"{row.name} {row.versions}", row.summary, row_source(m, row))]
        rel = tf_choice(ctx, lambda rel: True) if row.replacement == "tensorflow" else None
        if rel is None:
            install = f"$ pip install {row.replacement}"
        elif ctx.has_nvidia_gpu:
            install = tf_command(rel)  # tensorflow[and-cuda] where the release has the extra
        else:
            install = f"$ pip install '{row.replacement}~={rel.tested}'"
        fix = [f"$ pip uninstall -y {fw.distribution}", install]
        if row.covers(fw.version):
            out.append(r.finding(
                f"{label} is installed, but {row.name} {row.versions} is an empty stub, not a framework build: "
                f"{row.summary}", severity="error", evidence=ev, fix=fix, subject=label))
        else:
            out.append(r.finding(
                f"{label} is {row.replacement} {fw.version} under its old name; the name ends before {row.versions}, "
                f"so every upgrade must install {row.replacement} instead (pip would otherwise fetch the empty stub).",
                evidence=ev, fix=fix, subject=label))
    return out


# --------------------------------------------------------------------------- partial device failures

# one GPU's failure as NVML / nvidia-smi word it (the rest of the machine may still answer)
_GPU_FAILURE_RE = lazy_re(r"unable to determine the device handle|gpu is lost|gpu requires reset|"
                             r"nvmldevicegethandlebyindex\(\d+\)|fallen off the bus|unknown error", re.I)
_BUS_RE = lazy_re(r"\b([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\b")
_BAD_ROW = ("err!", "[gpu is lost]", "[unknown error]", "[gpu requires reset]")


def partial_failures(snap) -> List[str]:
    """What says that some GPUs of a machine failed: fewer GPUs in NVML / nvidia-smi than the kernel module lists,
    a GPU answering "Unknown Error" / "GPU is lost", GPU rows whose fields read ERR!."""
    from envdoctor.facts.gpus import hidden_gpus

    out = []
    hidden = hidden_gpus(snap)
    if hidden:
        out.append(hidden)
    for m in snap.driver.messages:
        low = m.lower()
        if _GPU_FAILURE_RE.search(m) and "failed to initialize nvml" not in low and "no answer within" not in low:
            out.append(m.strip())
    for g in snap.gpus:
        if any(b in (g.name or "").lower() for b in _BAD_ROW):
            out.append(f"GPU {g.index} ({g.bus_id or 'bus ?'}) reads {g.name!r}")
    return list(dict.fromkeys(out))


@rule(
    id="ED018",
    name="gpu-partially-failed",
    title="Some GPUs failed: the driver does not answer for all of them",
    severity="error",
    area="gpu",
    rationale="""
A GPU can fail alone: it falls off the bus (Xid 79), overheats, or loses its device node in a container,
while the others keep working. NVML then lists fewer GPUs than the kernel module (/proc/driver/nvidia/gpus)
or PCI, nvmlDeviceGetHandleByIndex answers "Unknown Error" or "GPU is lost", and nvidia-smi prints
"Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error" (often as its only output)
or ERR! in that GPU's row. CUDA programs that use the failed GPU hang or fail, and multi-GPU jobs
(torch.distributed, NCCL, Slurm) fail as a whole. It is an error on the GPUs line, never a tick: envdoctor
lists what it saw and the GPUs that still answer.
""",
    example="4x RTX 2080 Ti, GPU 1 fell off the bus: NVML lists 3 GPUs, /proc lists 4, and "
            "'nvmlDeviceGetHandleByIndex(1): Unknown Error': `ED018 error`.",
    references=[
        "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/387",
        "https://github.com/JosephKJ/OWOD/issues/81",
        "https://github.com/meta-llama/llama-models/issues/200",
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/69",
        "https://github.com/rossumai/nvgpu/issues/6",
        "https://docs.nvidia.com/deploy/xid-errors/index.html",
    ],
)
def gpu_partially_failed(ctx: Context, r: Rule) -> List[Finding]:
    snap = ctx.snap
    if not snap.gpus:
        return []  # no GPU answers at all: ED015-ED017 say why
    seen = partial_failures(snap)
    if not seen:
        return []
    buses = sorted({b for text in seen for b in _BUS_RE.findall(text)})
    ok = [g for g in snap.gpus if g.source in ("nvml", "nvidia-smi")
          and not any(b in (g.name or "").lower() for b in _BAD_ROW)]
    answering = ", ".join(f"{g.index} ({g.bus_id})" if g.bus_id else str(g.index) for g in ok)
    which = f"GPU {', '.join(buses)}" if buses else "at least one GPU"
    ev = [EvidenceItem("partial failure", text, driver_source(snap)) for text in seen[:4]]
    ev += [EvidenceItem("GPUs listed", _gpu_summary(snap.gpus), snap.gpus[0].source or "probe:nvidia")]
    # the failed GPU by the bus id the driver's own records give (nvidia-smi -i takes a PCI bus id); the GPUs that
    # answer by UUID, which CUDA_VISIBLE_DEVICES takes whatever order CUDA enumerates them in
    target = buses[0] if len(buses) == 1 else "<index>"
    keep = ",".join(g.uuid for g in ok) if ok and all(g.uuid for g in ok) else "<their indices>"
    fix = ["Look for the GPU's Xid errors (79: fallen off the bus; 48/63/64/94/95: ECC / row remapping):",
           "$ sudo dmesg -T | grep -iE 'nvrm|xid'",
           "Reset the GPU when nothing uses it, else reboot; a GPU that keeps dropping needs reseating, cooling "
           "or replacement:",
           f"$ sudo nvidia-smi -r -i {target}",
           f"Meanwhile keep jobs on the GPUs that answer: $ export CUDA_VISIBLE_DEVICES={keep}"]
    if _in_container(snap):
        fix.insert(0, "In a container an 'Unknown Error' for one GPU often means its device node was lost "
                      "(systemd cgroup reload on the host): recreate the container.")
    msg = (f"{which} failed" + (" while the driver still answers for others" if answering else "")
           + f" ({'; '.join(seen[:2])}): programs that use it hang or fail and multi-GPU jobs fail as a whole"
           + (f"; GPUs answering: {answering}." if answering else
              f"; the kernel module lists {_gpu_summary(snap.gpus)}."))
    return [r.finding(msg, evidence=ev, fix=fix, subject="GPUs")]
