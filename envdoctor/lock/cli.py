"""``envdoctor lock``: pinned requirements-cuda.txt / environment.yml that fit a machine or a stated target.

Exit codes: 0 a lock was written (or ``--check``: the file fits); 1 no combination fits every constraint (the
explanation names the clash and what relaxing each constraint gives) or ``--check``: the file no longer fits;
2 bad target or usage (one line naming what is available), or an existing different ``-o`` file without --force.

Module-level imports stay light: the command is registered at every start of ``envdoctor``.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import click

from envdoctor.options import Seconds
from envdoctor.target_options import PLATFORM_CHOICES, target_options

_CC_TEXT = re.compile(r"^\s*(?:(?:sm|compute)_\d{2,3}[af]?|\d{1,2}\.\d)\s*$", re.IGNORECASE)


# one --NAME option per lockable framework of envdoctor/frameworks/registry.py (a test keeps the two equal;
# the registry is not imported here: the command is registered at every start)
FW_EXAMPLES = {"torch": ("2.5.1", "2.5", ">=2.4,<2.6"), "tensorflow": ("2.16.1", "2.16", ">=2.15,<2.18"),
               "jax": ("0.4.30", "0.4", ">=0.4.26,<0.5"), "onnxruntime": ("1.22.0", "1.22", ">=1.20,<1.24"),
               "paddlepaddle": ("2.6.2", "2.6", ">=2.5,<2.7")}


def _fw_option(name: str):
    full, short, spec = FW_EXAMPLES[name]
    return click.option(f"--{name}", name, is_flag=False, flag_value="", default=None, metavar="[SPEC]",
                        help=f"Put {name} in the environment; SPEC is a version ({full}, {short}) or a PEP 440 specifier "
                             f"(--{name}='{spec}'). Default: torch, plus what the target environment has installed.")


def _fw_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for name in reversed(tuple(FW_EXAMPLES)):
        f = _fw_option(name)(f)
    return f


@click.command(name="lock")
@target_options
@click.option("--cpu", is_flag=True, help="Lock a CPU-only environment (never chosen unless asked for).")
@_fw_options
@click.option("--companions", metavar="LIST", default=None,
              help="torch companions kept in lock-step: torchvision,torchaudio (default) or none.")
@click.option("--root", "root_dir", metavar="DIR", help="Read system files under DIR instead of / (a mounted image).")
@click.option("--snapshot", "snapshot_file", metavar="FILE", help="Take the machine from a saved snapshot instead of probing.")
@click.option("--timeout", type=Seconds(0.1, 600), default=5.0, show_default=True,
              help="Seconds each external command may take while probing.")
@click.option("--format", "fmt", type=click.Choice(("requirements", "conda", "json")), default="requirements",
              show_default=True, help="requirements-cuda.txt (pip / uv), environment.yml (conda) or json.")
@click.option("--name", "env_name", metavar="NAME", help="Name of the conda environment (--format conda).")
@click.option("-o", "--output", metavar="FILE", help="Write the lock to FILE (atomically); refuses to replace a different file.")
@click.option("--force", is_flag=True, help="With -o: replace an existing, different FILE (or create a dangling symlink's target).")
@click.option("--check", "check_file", metavar="FILE",
              help="Re-verify an existing lock against the machine or target; exit 1 when it no longer fits.")
def lock(cuda, driver, gpus, python_opt, python_version, platform, cpu, companions, root_dir,
         snapshot_file, timeout, fmt, env_name, output, force, check_file, **frameworks):
    """Pin torch / tensorflow / jax builds that fit together and fit the machine (or --cuda / --driver / --snapshot):
    a requirements-cuda.txt for pip and uv, or an environment.yml for conda."""
    from envdoctor.errors import BadInput
    from envdoctor.target_options import python_target

    python_path, python_version = python_target(python_opt, python_version)
    fw_given = {name: frameworks[name] for name in FW_EXAMPLES}
    if check_file:
        if output or force:
            raise BadInput("--check reads FILE and writes nothing; it cannot be combined with -o / --force")
        if any(v is not None for v in fw_given.values()) or companions is not None or env_name:
            raise BadInput("--check verifies the pins already in FILE; "
                           + " / ".join(f"--{n}" for n in FW_EXAMPLES) + " / --companions / --name do not apply")
    if force and not output:
        raise BadInput("--force only applies with -o FILE")

    from envdoctor.knowledge import load_matrices

    m = load_matrices()
    if driver:
        from envdoctor.target_options import driver_os, resolve_driver

        driver = resolve_driver(m, driver, driver_os(platform))
    target, machine = build_target(m, cuda=cuda, driver=driver, gpus=gpus, python_path=python_path,
                                   python_version=python_version, platform=platform, cpu=cpu, root_dir=root_dir,
                                   snapshot_file=snapshot_file, timeout=timeout, frameworks=fw_given,
                                   companions=companions, for_check=bool(check_file))
    if check_file:
        sys.exit(_run_check(m, check_file, target, machine, fmt, given=_given(cuda, driver, gpus, python_version, platform)))

    from envdoctor import __version__
    from envdoctor.lock.render import Meta, render, render_clash
    from envdoctor.lock.resolve import resolve

    from envdoctor.redact import redact_output

    result = resolve(target, m)
    if not result.ok:
        text = redact_output(render_clash(result, fmt))
        if fmt == "json":
            click.echo(text, nl=False)
        else:
            click.echo("envdoctor lock: " + text, nl=False, err=True)
        sys.exit(1)
    meta = Meta(command=_command_line(cuda, driver, gpus, python_opt if python_path else None, python_version, platform,
                                      cpu, fw_given, companions, root_dir, snapshot_file, fmt, env_name),
                envdoctor=__version__, data_collected=m.collected, date=_today(), name=env_name,
                data_warnings=list(m.warnings), conda_channels=list(m.conda))
    text = redact_output(render(result, fmt, meta))
    if output:
        written = _write(output, text, force)
        click.echo(f"envdoctor lock: {'wrote' if written else 'unchanged'} {output}: {result.summary()}", err=True)
    else:
        click.echo(text, nl=False)


# --------------------------------------------------------------------------- target


def _xy(version: str) -> str:
    parts = str(version).strip().split(".")
    return ".".join(parts[:2])


def _given(cuda, driver, gpus, python_version, platform) -> Dict[str, bool]:
    return {"cuda": bool(cuda), "driver": bool(driver), "gpus": bool(gpus), "python": bool(python_version),
            "platform": bool(platform)}


def machine_platform(snap: Any) -> Tuple[Optional[str], bool]:
    """(platform name, wsl) of a snapshot's machine; None when it is not one lock knows."""
    system = (snap.platform.system or "").lower()
    arch = (snap.platform.machine or "").lower()
    wsl = bool(snap.platform.wsl)
    if system == "linux":
        if arch in ("x86_64", "amd64"):
            return "linux-x86_64", wsl
        if arch in ("aarch64", "arm64"):
            return "linux-aarch64", wsl
    if system == "windows" and arch in ("amd64", "x86_64"):
        return "win-amd64", False
    if system == "darwin" and arch in ("arm64", "aarch64"):
        return "macos-arm64", False
    return None, wsl


def parse_gpu(m: Any, text: str):
    """--gpu sm_86 | 8.6 | compute_90a | "NVIDIA A100-SXM4-80GB" -> GpuTarget; BadInput naming the known archs."""
    from envdoctor.errors import BadInput
    from envdoctor.knowledge import normalize_cc
    from envdoctor.lock.resolve import GpuTarget

    value = str(text or "").strip()
    known = ", ".join("sm_" + k.replace(".", "") for k in sorted(m.archs, key=lambda c: tuple(int(x) for x in c.split("."))))
    if _CC_TEXT.match(value):
        cc = normalize_cc(value)
        if cc is None or m.arch(cc) is None:
            raise BadInput(f"unknown GPU architecture {value!r}; the data knows {known}")
        return GpuTarget(cc, "sm_" + cc.replace(".", ""))
    cc = m.cc_for_gpu_name(value) if value else None
    if cc is None:
        raise BadInput(f"unknown GPU {value!r}: not a GPU name the data knows nor an architecture; "
                       f"name its architecture instead: {known}")
    return GpuTarget(cc, value)


def build_target(m: Any, *, cuda, driver, gpus, python_path, python_version, platform, cpu, root_dir, snapshot_file,
                 timeout, frameworks: Dict[str, Optional[str]], companions, for_check: bool = False):
    """Constraints from the flags, over the machine (probed or a snapshot) where one is used.  Returns
    (constraints, machine snapshot or None).  Without --cuda / --driver / --cpu the machine is probed."""
    from envdoctor.errors import BadInput
    from envdoctor.lock.resolve import COMPANIONS, Constraints, FrameworkRequest

    origin: Dict[str, str] = {}
    snap = None
    where = ""
    if snapshot_file or root_dir or python_path or not (cuda or driver or cpu):
        from envdoctor.cli import obtain_snapshot

        snap = obtain_snapshot(python_path, root_dir, snapshot_file, timeout)
        where = f"snapshot {snapshot_file}" if snapshot_file else ("the image " + root_dir if root_dir else "this machine")
    c = Constraints(cpu=bool(cpu))
    if snap is not None:
        plat, wsl = machine_platform(snap)
        if plat:
            c.platform, c.wsl = plat, wsl
            origin["platform"] = where
        elif not platform:
            raise BadInput(f"{where} is {snap.platform.system or 'an unknown system'} {snap.platform.machine or ''}, "
                           f"a platform lock has no builds for; name one with --platform ({', '.join(PLATFORM_CHOICES)})")
        if snap.python.version:
            c.python = _xy(snap.python.version)
            origin["python"] = where
        if snap.driver.version:
            c.driver = snap.driver.version
            origin["driver"] = where
        c.gpus = []
        for g in snap.gpus:
            from envdoctor.knowledge import normalize_cc
            from envdoctor.lock.resolve import GpuTarget

            cc = normalize_cc(g.compute_capability) if g.compute_capability else m.cc_for_gpu_name(g.name)
            if cc is not None and m.arch(cc) is not None:
                c.gpus.append(GpuTarget(cc, g.name or ("sm_" + cc.replace(".", ""))))
            elif not gpus:
                raise BadInput(f"GPU {g.name or g.index!r} of {where} is not in the compatibility data; "
                               "name its architecture with --gpu sm_XX")
        if c.gpus:
            origin["GPUs"] = where
    if platform:
        c.platform, c.wsl = ("linux-x86_64", True) if platform == "wsl2" else (platform, False)
        origin["platform"] = "--platform"
    elif snap is None:
        origin["platform"] = "default (linux-x86_64)"
    if python_version:
        c.python = _xy(python_version)
        origin["python"] = "--python-version"
    elif c.python is None:
        c.python = f"{sys.version_info[0]}.{sys.version_info[1]}"
        origin["python"] = "the Python running envdoctor"
    if driver:
        c.driver = driver.strip()
        origin["driver"] = "--driver"
    if cuda:
        c.cuda = cuda.strip()
        origin["CUDA line"] = "--cuda"
    if gpus:
        c.gpus = [parse_gpu(m, g) for g in gpus]
        origin["GPUs"] = "--gpu"
    if cpu:
        c.gpus, c.driver = [], None
        origin.pop("GPUs", None)
        origin.pop("driver", None)
        if cuda or driver or gpus:
            raise BadInput("--cpu cannot be combined with --cuda, --driver or --gpu (a CPU-only environment has no CUDA target)")
    elif snap is not None and not for_check and not (cuda or driver) and c.driver is None:
        state = snap.driver.state or "unknown"
        raise BadInput(f"{where} has no usable NVIDIA driver (driver state: {state}); name a target with --cuda X.Y "
                       "or --driver VER, or ask for a CPU-only lock with --cpu")
    named = [FrameworkRequest(n, v) for n, v in frameworks.items() if v is not None]
    if named:
        c.frameworks = named
    else:
        c.frameworks = [FrameworkRequest("torch")]
        if snap is not None:
            for n in ("tensorflow", "jax"):
                if snap.framework(n) is not None:
                    c.frameworks.append(FrameworkRequest(n))
    if companions is not None:
        text = companions.strip().lower()
        c.companions = [] if text in ("", "none", "no") else [x.strip() for x in text.split(",") if x.strip()]
        for x in c.companions:
            if x not in COMPANIONS:
                raise BadInput(f"unknown companion {x!r}; companions: {', '.join(COMPANIONS)} (or none)")
    c.origin = origin
    return c, snap


# --------------------------------------------------------------------------- output


def _today() -> str:
    import datetime

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).date().isoformat()
    return datetime.datetime.now(tz=datetime.timezone.utc).date().isoformat()


def _command_line(cuda, driver, gpus, python_path, python_version, platform, cpu, fws, companions, root_dir,
                  snapshot_file, fmt, env_name) -> str:
    import shlex

    args: List[str] = ["envdoctor", "lock"]
    for flag, value in (("--cuda", cuda), ("--driver", driver), ("--python", python_path),
                        ("--python-version", python_version), ("--platform", platform), ("--root", root_dir),
                        ("--snapshot", snapshot_file)):
        if value:
            args += [flag, str(value)]
    for g in gpus or ():
        args += ["--gpu", g]
    if cpu:
        args.append("--cpu")
    for name, spec in fws.items():
        if spec is not None:
            args.append(f"--{name}" if spec == "" else f"--{name}={spec}")
    if companions is not None:
        args += ["--companions", companions]
    if fmt != "requirements":
        args += ["--format", fmt]
    if env_name:
        args += ["--name", env_name]
    return " ".join(shlex.quote(a) for a in args)


def _write(path: str, text: str, force: bool) -> bool:
    """Write by envdoctor.outfile's rules; an identical existing file is left alone (False), a different one needs
    --force.  Only a regular file is compared, reading at most the new text's length: a device, a FIFO or
    /dev/stdout is written through, never read."""
    from envdoctor.errors import BadInput
    from envdoctor.outfile import exists, resolve, same_as, write_output

    kind, _where = resolve(path, force)  # a folder, a socket or a dangling symlink (without --force): BadInput
    if kind == "file" and exists(path):
        if same_as(path, text):
            return False
        if not force:
            raise BadInput(f"{path} exists and differs from this lock; pass --force to replace it")
    write_output(path, text, force=force)
    return True


# --------------------------------------------------------------------------- --check


def _run_check(m: Any, path: str, target: Any, machine: Any, fmt: str, given: Dict[str, bool]) -> int:
    from envdoctor.errors import BadInput
    from envdoctor.infile import read_text_or_bad_input
    from envdoctor.lock.render import parse_lock
    from envdoctor.lock.resolve import GpuTarget, check

    text = read_text_or_bad_input(path, "--check")
    parsed = parse_lock(text, where=path)
    if not parsed.requirements:
        raise BadInput(f"--check {path}: no pinned requirements found (is it a lock written by envdoctor lock?)")
    rec = parsed.record if isinstance(parsed.record, dict) else {}
    kinds = {str(x.get("framework")): str(x.get("build")) for x in rec.get("picks") or [] if isinstance(x, dict)}
    lock_platform = rec.get("platform") if rec.get("platform") else None
    # What neither the machine nor a flag says is taken as the lock assumed it.
    if machine is None:
        if not given["platform"] and lock_platform:
            target.platform, target.wsl = lock_platform, bool(rec.get("wsl"))
        if not given["python"] and rec.get("python"):
            target.python = str(rec["python"])
        if not given["gpus"]:
            target.gpus = [GpuTarget(str(g.get("cc")), str(g.get("label") or "")) for g in rec.get("gpus") or []
                           if isinstance(g, dict) and g.get("cc")]
    result = check(m, target, parsed.requirements, kinds=kinds, lock_platform=lock_platform,
                   index_urls=parsed.index_urls)
    if machine is not None and target.driver is None and any(c.kind == "cuda" for c in result.picks):
        state = machine.driver.state or "unknown"
        result.problems.append(f"no usable NVIDIA driver on the target (driver state: {state}): the CUDA builds "
                               f"{', '.join(c.label for c in result.picks if c.kind == 'cuda')} cannot run")
        result.ok = False
    if fmt == "json":
        from envdoctor.snapshot_io import dump_json

        data = result.to_dict()
        data["file"] = path
        data["target"] = target.to_dict()
        text = dump_json(data)
    elif result.ok:
        text = f"{path} fits: {', '.join(c.label for c in result.picks)}"
    else:
        text = "\n".join([f"{path} no longer fits:"] + [f"  - {prob}" for prob in result.problems])
    from envdoctor.redact import redact_output

    click.echo(redact_output(text))
    return 0 if result.ok else 1
