"""``envdoctor onboard``: the steps as data.  Everything here is pure: facts in (a snapshot, the findings, the
base interpreter, what is on PATH), values out (the decision to stop for the driver, the lock constraints, the
commands of each step, the shell script of ``--dry-run``).  Nothing here starts a process or writes a file;
envdoctor.onboard.steps executes a :class:`Plan`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from envdoctor.errors import BadInput
from envdoctor.facts.loader import DRIVER_CAUSE
from envdoctor.facts.platform import build_platform, distro_family
from envdoctor.knowledge import normalize_cc
from envdoctor.lock.core import parse_companions
from envdoctor.lock.resolve import Constraints, FrameworkRequest, GpuTarget

SCHEMA = "envdoctor-onboard/1"
STEPS = ("probe", "check", "lock", "create", "install", "smoke", "report")
STEP_TITLES = {
    "probe": "probe the machine", "check": "judge it", "lock": "lock the frameworks for it",
    "create": "create the environment", "install": "install the lock", "smoke": "smoke-test the frameworks",
    "report": "write the report",
}
STATE_FILE = ".envdoctor-onboard.json"
LOG_FILE = "envdoctor-onboard.log"
LOCK_FILE = "envdoctor-lock.txt"
REPORT_MD = "envdoctor-onboard-report.md"
REPORT_HTML = "envdoctor-onboard-report.html"
BACKUP_SUFFIX = ".envdoctor-old"
ONBOARD_FRAMEWORKS = ("torch", "tensorflow", "jax")
INSTALLERS = ("auto", "pip", "uv")

# Generous: tensorflow-cpu, torch and jaxlib are hundreds of MB each; a slow mirror takes many minutes.
TIMEOUT_CREATE = 900.0
TIMEOUT_INSTALL = 3600.0
TIMEOUT_SMOKE = 300.0  # each framework's smoke program (TensorFlow's import alone takes seconds on 2 cores)
TIMEOUT_QUERY = 60.0  # a base interpreter's version, `conda env list`

# Findings that say the NVIDIA driver itself cannot be used (envdoctor.rules.machine).
BROKEN_DRIVER_IDS = ("ED013", "ED014", "ED016")
_BROKEN_STATES = ("module_not_loaded", "version_mismatch", "smi_failed")

NVIDIA_DRIVER_GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"


# --------------------------------------------------------------------------- options


@dataclass
class FrameworkWish:
    """A framework the environment should hold: ``torch`` or ``torch==2.13.0`` (spec: a PEP 440 specifier or a
    bare version, as ``envdoctor lock --torch=SPEC`` takes it)."""

    name: str
    spec: str = ""

    def display(self) -> str:
        return self.name + self.spec if self.spec and self.spec[:1] in "=<>!~" else (
            f"{self.name}=={self.spec}" if self.spec else self.name)


_WISH = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*(.*?)\s*$")


def parse_frameworks(values: Iterable[str]) -> List[FrameworkWish]:
    """``--frameworks torch,jax`` (repeatable; an item may carry a version: ``torch==2.13.0``, ``jax>=0.4,<0.6``).

    A comma followed by a framework name starts the next item, so specifiers keep their own commas."""
    items: List[str] = []
    for value in values or ():
        for part in re.split(r",(?=\s*[A-Za-z])", str(value)):
            if part.strip():
                items.append(part.strip())
    out: List[FrameworkWish] = []
    for item in items:
        m = _WISH.match(item)
        name = m.group(1).lower() if m else ""
        if name == "tensorflow-cpu":
            name = "tensorflow"
        if name not in ONBOARD_FRAMEWORKS:
            raise BadInput(f"--frameworks: unknown framework {item!r}; choose from {', '.join(ONBOARD_FRAMEWORKS)} "
                           "(optionally with a version: torch==2.13.0)")
        spec = m.group(2).strip() if m else ""
        if spec.startswith("@"):
            spec = spec[1:].strip()
        if any(w.name == name for w in out):
            raise BadInput(f"--frameworks names {name} twice")
        out.append(FrameworkWish(name, spec))
    if not out:
        out = [FrameworkWish("torch")]
    return sorted(out, key=lambda w: ONBOARD_FRAMEWORKS.index(w.name))


@dataclass
class BasePython:
    """The interpreter the environment is built from (``--python``; default the one running envdoctor)."""

    executable: str
    version: str  # "3.11.7"

    @property
    def xy(self) -> str:
        return ".".join(self.version.split(".")[:2])


def parse_base_python(stdout: str) -> Optional[BasePython]:
    """The answer of ``python -c 'import sys; print(sys.version.split()[0]); print(sys.executable)'``."""
    lines = [ln.strip() for ln in (stdout or "").splitlines() if ln.strip()]
    version = re.match(r"^\d+\.\d+(\.\d+)?", lines[0]) if lines else None
    if len(lines) < 2 or version is None:
        return None
    return BasePython(executable=lines[1], version=version.group(0))


BASE_PYTHON_QUERY = "import sys; print(sys.version.split()[0]); print(sys.executable)"


# --------------------------------------------------------------------------- the machine: a GPU? a driver?


def nvidia_pci_devices(devices: Sequence[Tuple[str, Optional[str], Optional[str]]]) -> List[str]:
    """NVIDIA display controllers among sysfs PCI devices: (address, ``vendor`` text, ``class`` text) ->
    addresses.  vendor 0x10de; class 0x03xxxx (0x0300 VGA, 0x0302 3D controller, 0x0380 display)."""
    out: List[str] = []
    for addr, vendor, cls in devices:
        v = (vendor or "").strip().lower()
        c = (cls or "").strip().lower()
        if v == "0x10de" and re.match(r"^0x03[0-9a-f]{4}$", c):
            out.append(addr)
    return out


@dataclass
class GpuFacts:
    present: bool
    why: str  # "2 NVIDIA GPUs (NVIDIA A100 ...)", "NVIDIA display device on the PCI bus at 0000:01:00.0"


def gpu_facts(snap: Any, pci_devices: Sequence[str] = ()) -> GpuFacts:
    if snap.gpus:
        names = ", ".join(sorted({g.name or f"GPU {g.index}" for g in snap.gpus}))
        return GpuFacts(True, f"{len(snap.gpus)} NVIDIA GPU{'s' if len(snap.gpus) > 1 else ''} ({names})")
    if pci_devices:
        return GpuFacts(True, f"an NVIDIA display device on the PCI bus at {', '.join(pci_devices)}")
    d = snap.driver
    if d.state in _BROKEN_STATES or d.kernel_module_version:
        return GpuFacts(True, f"an NVIDIA driver is present (state: {d.state})")
    if d.linux_driver_in_wsl or (snap.platform.wsl == 2 and d.wsl_libcuda):
        return GpuFacts(True, "the WSL 2 GPU driver of Windows is present")
    return GpuFacts(False, "no NVIDIA GPU or driver found")


@dataclass
class DriverStop:
    """Onboarding stops here: the driver is missing or broken, which needs root and a reboot."""

    reason: str
    commands: List[str]  # shell lines; comments start with "#"
    findings: List[str] = field(default_factory=list)  # "ED014: ..." lines

    def render(self, rerun: str) -> str:
        lines = [f"envdoctor onboard: stopped before changing anything: {self.reason}."]
        for f in self.findings:
            lines.append(f"  {f}")
        lines += ["", "Installing or repairing the NVIDIA driver needs root and (usually) a reboot, which envdoctor "
                      "never does itself. Run:", ""]
        lines += [f"  {c}" for c in self.commands]
        lines += ["", "then check that the driver answers and rerun onboarding:", "", "  nvidia-smi", f"  {rerun}", ""]
        return "\n".join(lines)


def _major(version: str) -> Optional[int]:
    m = re.match(r"^\s*(\d+)", version or "")
    return int(m.group(1)) if m else None


def install_driver_commands(snap: Any) -> List[str]:
    """What to run to install the NVIDIA driver on this distribution (or on the Windows side of WSL 2, or on the
    host of a container).  Printed for the user; envdoctor never runs them."""
    p = snap.platform
    if p.wsl == 1:
        return ["# WSL 1 has no GPU support: convert the distribution to WSL 2, in a Windows terminal",
                "wsl.exe -l -v   # the names of the distributions and their WSL versions",
                "wsl.exe --set-version DISTRIBUTION 2"]
    if p.wsl == 2:
        return ["# On Windows, not inside WSL: install or update the NVIDIA driver for Windows; it provides the GPU to",
                "# WSL 2 (/usr/lib/wsl/lib/libcuda.so). Never install a Linux NVIDIA driver inside WSL.",
                "wsl.exe --update",
                "wsl.exe --shutdown   # then reopen the distribution"]
    if p.container:
        return ["# A container uses the host's driver: install it on the host (as for any machine), install the",
                "# NVIDIA Container Toolkit there, and start this container with the GPU:",
                "docker run --gpus all ... IMAGE"]
    fam = distro_family(snap.platform.distro_id)
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get((p.machine or "").lower(), "$(dpkg --print-architecture)")
    if fam == "ubuntu":
        cmds = ["sudo ubuntu-drivers install   # the recommended NVIDIA driver for this GPU"]
    elif fam == "pop":
        cmds = ["sudo apt install system76-driver-nvidia"]
    elif fam == "debian":
        cmds = ["# enable the contrib, non-free and non-free-firmware components in /etc/apt/sources.list, then:",
                "sudo apt update",
                f"sudo apt install linux-headers-{arch} nvidia-driver firmware-misc-nonfree"]
    elif fam == "fedora":
        cmds = ["# enable the RPM Fusion free and nonfree repositories (https://rpmfusion.org/Configuration), then:",
                "sudo dnf install akmod-nvidia",
                "modinfo -F version nvidia   # wait until this prints a version (the module is being built)"]
    elif fam == "el":
        major = _major(p.distro_version)
        cmds = [f"# add NVIDIA's CUDA repository for this release (see {NVIDIA_DRIVER_GUIDE}), then:",
                "sudo dnf install kernel-devel-$(uname -r) kernel-headers"]
        if major is not None and major >= 10:
            cmds.append("sudo dnf install nvidia-open")
        else:
            cmds += ["sudo dnf module enable nvidia-driver:open-dkms", "sudo dnf install nvidia-open"]
    elif fam == "suse":
        cmds = ["# add NVIDIA's repository for this openSUSE / SLE release (https://en.opensuse.org/SDB:NVIDIA_drivers), then:",
                "sudo zypper install-new-recommends --repo NVIDIA"]
    elif fam == "arch":
        cmds = ["sudo pacman -S nvidia-open   # Turing (GTX 16xx / RTX 20xx) and newer; older GPUs need a legacy driver"]
    elif fam == "manjaro":
        cmds = ["sudo mhwd -a pci nonfree 0300"]
    else:
        name = p.distro_name or p.distro_id or "this distribution"
        cmds = [f"# install the NVIDIA driver packaged for {name}, or NVIDIA's ({NVIDIA_DRIVER_GUIDE})"]
    return cmds + ["sudo reboot"]


def _fix_to_shell(fix: Sequence[str]) -> List[str]:
    out: List[str] = []
    for raw in fix:
        raw = str(raw).strip()
        if raw.startswith("$ "):
            cmd, _, note = raw[2:].partition("   (")  # the rules' convention: "$ cmd   (why)"
            note = " ".join(note.split())
            if note.endswith(")"):
                note = note[:-1]
            out.append(" ".join(cmd.split()) + (f"   # {note}" if note else ""))
        else:
            out.append("# " + " ".join(raw.split()))
    return out


def driver_stop(snap: Any, findings: Sequence[Any], gpu: GpuFacts) -> Optional[DriverStop]:
    """Stop (with what to run) when the driver is broken, or missing although a GPU is present; None: go on."""
    broken = [f for f in findings if f.severity == "error" and
              (f.id in BROKEN_DRIVER_IDS or getattr(f, "cause", None) == DRIVER_CAUSE)]
    if broken:
        cmds: List[str] = []
        for f in broken:
            for line in _fix_to_shell(f.fix):
                if line not in cmds:
                    cmds.append(line)
        if snap.platform.wsl is None and not snap.platform.container and not any("reboot" in c for c in cmds):
            cmds.append("sudo reboot")
        head = broken[0]
        return DriverStop(reason=f"the NVIDIA driver cannot be used ({head.title})", commands=cmds,
                          findings=[f"{f.id}: {f.message}" for f in broken])
    d = snap.driver
    if gpu.present and d.state in ("not_installed", "unknown") and not d.version:
        return DriverStop(reason=f"{gpu.why}, but no NVIDIA driver is installed", commands=install_driver_commands(snap))
    return None


# --------------------------------------------------------------------------- the lock


def lock_constraints(snap: Any, m: Any, wishes: Sequence[FrameworkWish], python_xy: str, cpu: bool,
                     companions: Optional[str] = None, where: str = "this machine") -> Any:
    """Constraints for ``envdoctor.lock.resolve``: this machine's platform, the environment's Python, and either a
    CPU-only environment or the machine's driver and GPUs."""
    plat, wsl = build_platform(snap)
    if plat is None:
        raise BadInput(f"{where} is {snap.platform.system or 'an unknown system'} {snap.platform.machine or ''}".rstrip()
                       + ", a platform envdoctor lock has no builds for")
    c = Constraints(cpu=bool(cpu), platform=plat, wsl=wsl, python=python_xy)
    c.origin = {"platform": where, "python": "the environment's interpreter"}
    c.frameworks = [FrameworkRequest(w.name, w.spec) for w in wishes]
    if not cpu:
        c.driver = snap.driver.version
        c.origin["driver"] = where
        for g in snap.gpus:
            cc = normalize_cc(g.compute_capability) if g.compute_capability else m.cc_for_gpu_name(g.name)
            if cc is None or m.arch(cc) is None:
                raise BadInput(f"GPU {g.name or g.index!r} of {where} is not in the compatibility data; "
                               "lock it yourself with envdoctor lock --gpu sm_XX, or onboard a CPU environment with --cpu")
            c.gpus.append(GpuTarget(cc, g.name or ("sm_" + cc.replace(".", ""))))
        if c.gpus:
            c.origin["GPUs"] = where
    if companions is not None:
        c.companions = parse_companions(companions)
    return c


def lock_command(c: Any, wishes: Sequence[FrameworkWish], companions: Optional[str]) -> str:
    """The ``envdoctor lock`` command that writes the same lock (recorded in the lock's header)."""
    args = ["envdoctor", "lock"]
    if c.cpu:
        args.append("--cpu")
    else:
        if c.driver:
            args += ["--driver", str(c.driver)]
        for g in c.gpus:
            args += ["--gpu", g.sm]
    args += ["--platform", "wsl2" if c.wsl else c.platform, "--python-version", str(c.python)]
    for w in wishes:
        spec = w.spec[2:] if w.spec.startswith("==") and not w.spec.startswith("===") and "," not in w.spec else w.spec
        args.append(f"--{w.name}" if not spec else f"--{w.name}={spec}")
    if companions is not None:
        args += ["--companions", companions]
    return " ".join(shlex.quote(a) for a in args)


def lock_body(text: str) -> str:
    """The lines of a requirements lock that pip reads (comments and blank lines dropped): what the install
    step's hash covers, so a new date in the header does not make a rerun reinstall."""
    out = []
    for raw in (text or "").splitlines():
        line = re.split(r"\s+#", raw, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return "\n".join(out)


def inputs_hash(inputs: Dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


# --------------------------------------------------------------------------- the environment


@dataclass
class Target:
    """Where the environment goes: a venv (``--env-dir``) or a conda environment (``--conda NAME``)."""

    kind: str  # venv | conda
    tool: str  # pip | uv (venv) | conda | mamba
    tool_path: str = ""  # the uv / conda / mamba executable
    path: str = ""  # venv directory / conda prefix ("" while a new conda environment's prefix is unknown)
    name: str = ""  # conda environment name

    @property
    def python(self) -> str:
        if not self.path:
            return ""
        if os.name == "nt":  # pragma: no cover - onboarding targets POSIX machines
            return os.path.join(self.path, "Scripts" if self.kind == "venv" else "", "python.exe")
        return os.path.join(self.path, "bin", "python")

    def describe(self) -> str:
        if self.kind == "conda":
            return f"conda environment {self.name}" + (f" at {self.path}" if self.path else "") + f" ({self.tool})"
        return f"{self.path} (venv, {self.tool})"

    def file(self, name: str) -> str:
        return os.path.join(self.path, name) if self.path else name


def choose_tool(installer: str, conda: Optional[str], which: Dict[str, Optional[str]]) -> Tuple[str, str]:
    """(tool, its executable): --conda takes mamba, else conda; a venv takes uv when it is on PATH (``auto``)."""
    if conda:
        for tool in ("mamba", "conda"):
            if which.get(tool):
                return tool, str(which[tool])
        raise BadInput("--conda needs conda or mamba on PATH (neither was found); use --env-dir DIR for a venv instead")
    if installer == "uv" or (installer == "auto" and which.get("uv")):
        if not which.get("uv"):
            raise BadInput("--installer uv: uv is not on PATH")
        return "uv", str(which["uv"])
    return "pip", ""


def create_argv(target: Target, base: BasePython) -> List[str]:
    if target.kind == "conda":
        return [target.tool_path or target.tool, "create", "--yes", "--name", target.name, f"python={base.xy}", "pip"]
    if target.tool == "uv":
        return [target.tool_path or "uv", "venv", "--allow-existing", "--python", base.executable, target.path]
    return [base.executable, "-m", "venv", target.path]


def install_argv(target: Target, lock_path: str) -> List[str]:
    if target.tool == "uv":
        return [target.tool_path or "uv", "pip", "install", "--python", target.python, "-r", lock_path]
    return [target.python or "python", "-m", "pip", "install", "--no-input", "--progress-bar", "off", "-r", lock_path]


def smoke_argv(target: Target, frameworks: Sequence[str], require_gpu: bool) -> List[str]:
    """The `envdoctor smoke` command line equivalent to the smoke step (for the script and the report)."""
    argv = ["envdoctor", "smoke", "--python", target.python or "PYTHON"]
    for f in frameworks:
        argv += ["--framework", f]
    argv += ["--timeout", f"{TIMEOUT_SMOKE:g}"]
    if require_gpu:
        argv.append("--require-gpu")
    return argv


# --------------------------------------------------------------------------- the plan


@dataclass
class Plan:
    target: Target
    base: BasePython
    wishes: List[FrameworkWish]
    cpu: bool  # a CPU-only lock (no NVIDIA GPU, or --cpu)
    gpu: GpuFacts
    require_gpu: bool
    lock_text: str
    lock_summary: str
    lock_picks: List[Dict[str, Any]]
    frameworks: List[str]  # what the smoke step tests: the lock's frameworks
    replace_existing: bool = False  # --force over an existing environment: it is moved aside first

    @property
    def lock_path(self) -> str:
        return self.target.file(LOCK_FILE)

    def create_inputs(self) -> Dict[str, Any]:
        # a conda environment is known by its name (its prefix is found only once it exists)
        return {"kind": self.target.kind, "tool": self.target.tool, "name": self.target.name,
                "path": self.target.path if self.target.kind == "venv" else "",
                "python": self.base.executable if self.target.kind == "venv" else self.base.xy,
                "python_version": self.base.version if self.target.kind == "venv" else self.base.xy}

    def install_inputs(self) -> Dict[str, Any]:
        return {"create": inputs_hash(self.create_inputs()), "tool": self.target.tool,
                "lock": hashlib.sha256(lock_body(self.lock_text).encode()).hexdigest()}

    def smoke_inputs(self) -> Dict[str, Any]:
        return {"install": inputs_hash(self.install_inputs()), "frameworks": list(self.frameworks),
                "require_gpu": self.require_gpu}

    def inputs(self, step: str) -> Optional[Dict[str, Any]]:
        """The inputs a rerun compares for ``step``; None for the steps that always run (probe, check, lock,
        report: they are quick, and they are the inputs of the others)."""
        return {"create": self.create_inputs, "install": self.install_inputs, "smoke": self.smoke_inputs}.get(
            step, lambda: None)()


def _q(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(str(a)) for a in argv)


def _heredoc_tag(text: str) -> str:
    tag = "ENVDOCTOR_LOCK"
    while tag in text:
        tag += "_"
    return tag


def render_script(plan: Plan, header: Sequence[str] = ()) -> str:
    """The shell script ``--dry-run`` prints: exactly the commands onboarding runs, in order, for review."""
    t = plan.target
    out = ["#!/bin/sh",
           "# envdoctor onboard --dry-run: the commands onboarding runs on this machine, in order.",
           "# Review them, then run this script (sh onboard.sh) or `envdoctor onboard --yes`. Nothing here needs root."]
    out += [f"# {h}" for h in header]
    out += ["set -eu", ""]
    lock = plan.lock_text if plan.lock_text.endswith("\n") else plan.lock_text + "\n"
    tag = _heredoc_tag(lock)
    n = 0

    def step(title: str) -> None:
        nonlocal n
        n += 1
        out.append(f"# {n}. {title}")

    if t.kind == "venv":
        if plan.replace_existing:
            step("--force: move the existing environment aside (deleted once onboarding succeeds)")
            out.append(_q(["mv", t.path, t.path + BACKUP_SUFFIX]))
        step(f"the environment directory and the lock: {plan.lock_summary}")
        out.append(_q(["mkdir", "-p", t.path]))
        out.append(f"cat > {shlex.quote(plan.lock_path)} <<'{tag}'")
        out.append(lock.rstrip("\n"))
        out.append(tag)
        step(f"create the environment (Python {plan.base.version})")
        out.append(_q(create_argv(t, plan.base)))
        step("install the lock (pip's own configuration applies: PIP_* variables, pip.conf)"
             if t.tool == "pip" else "install the lock with uv")
        out.append(_q(install_argv(t, plan.lock_path)))
    else:
        if plan.replace_existing:
            step("--force: the existing conda environment is replaced (conda create --yes removes it first)")
        step(f"create the conda environment (Python {plan.base.xy})")
        out.append(_q(create_argv(t, plan.base)))
        step(f"the lock, inside the environment: {plan.lock_summary}")
        out.append(f"PREFIX=$({_q([t.tool_path or t.tool, 'run', '--name', t.name, 'python', '-c', 'import sys; print(sys.prefix)'])})")
        out.append(f"cat > \"$PREFIX\"/{LOCK_FILE} <<'{tag}'")
        out.append(lock.rstrip("\n"))
        out.append(tag)
        step("install the lock (pip's own configuration applies: PIP_* variables, pip.conf)")
        out.append(_q(["$PREFIX/bin/python", "-m", "pip", "install", "--no-input", "--progress-bar", "off", "-r",
                       f"$PREFIX/{LOCK_FILE}"]).replace("'$PREFIX/bin/python'", '"$PREFIX"/bin/python').replace(
            f"'$PREFIX/{LOCK_FILE}'", f'"$PREFIX"/{LOCK_FILE}'))
    step("smoke-test every framework" + (" on the GPU" if plan.require_gpu else " (CPU builds)"))
    argv = smoke_argv(t, plan.frameworks, plan.require_gpu)
    if t.kind == "conda":
        out.append(_q(argv).replace(shlex.quote("PYTHON"), '"$PREFIX"/bin/python'))
    else:
        out.append(_q(argv))
    out.append("")
    return "\n".join(out)
