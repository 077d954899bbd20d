"""``envdoctor lock``: pinned requirements-cuda.txt / environment.yml that fit a machine or a stated target.

Exit codes: 0 a lock was written (or ``--check``: the file fits); 1 no combination fits every constraint (the
explanation names the clash and what relaxing each constraint gives) or ``--check``: the file no longer fits;
2 bad target or usage (one line naming what is available), or an existing different ``-o`` file without --force.

The work is in envdoctor.lock.core and envdoctor.lock.resolve; this module translates the options.
"""
from __future__ import annotations

import datetime
import os
import shlex
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import click

from envdoctor import __version__
from envdoctor.cli_options import Seconds, target_options
from envdoctor.emit import write_stdout
from envdoctor.errors import BadInput
from envdoctor.knowledge import load_matrices
from envdoctor.lock.core import build_target, check_lock, given, write_lock
from envdoctor.lock.render import Meta, render, render_clash
from envdoctor.lock.resolve import resolve
from envdoctor.redact import redact_output
from envdoctor.target_options import check_glibc, driver_os, python_target, resolve_driver

# one --NAME option per lockable framework of envdoctor/frameworks/registry.py (a test keeps the two equal;
# the registry is not imported here: the command is registered at every start)
FW_EXAMPLES = {"torch": ("2.5.1", "2.5", ">=2.4,<2.6"), "tensorflow": ("2.16.1", "2.16", ">=2.15,<2.18"),
               "jax": ("0.4.30", "0.4", ">=0.4.26,<0.5"), "onnxruntime": ("1.22.0", "1.22", ">=1.20,<1.24"),
               "paddlepaddle": ("2.6.2", "2.6", ">=2.5,<2.7")}


def _fw_option(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
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
def lock(cuda: Optional[str], driver: Optional[str], gpus: Tuple[str, ...], python_opt: Optional[str],
         python_version: Optional[str], platform: Optional[str], glibc: Optional[str], cpu: bool, companions: Optional[str],
         root_dir: Optional[str], snapshot_file: Optional[str], timeout: float, fmt: str, env_name: Optional[str],
         output: Optional[str], force: bool, check_file: Optional[str], **frameworks: Optional[str]) -> None:
    """Pin torch / tensorflow / jax builds that fit together and fit the machine (or --cuda / --driver / --snapshot):
    a requirements-cuda.txt for pip and uv, or an environment.yml for conda."""
    python_path, python_version = python_target(python_opt, python_version)
    fw_given: Dict[str, Optional[str]] = {name: frameworks[name] for name in FW_EXAMPLES}
    if check_file:
        if output or force:
            raise BadInput("--check reads FILE and writes nothing; it cannot be combined with -o / --force")
        if any(v is not None for v in fw_given.values()) or companions is not None or env_name:
            raise BadInput("--check verifies the pins already in FILE; "
                           + " / ".join(f"--{n}" for n in FW_EXAMPLES) + " / --companions / --name do not apply")
    if force and not output:
        raise BadInput("--force only applies with -o FILE")

    # lock picks from its own build tables, which are not narrowed by glibc: the value is checked, not used
    check_glibc(glibc, platform)
    m = load_matrices()
    if driver:
        driver = resolve_driver(m, driver, driver_os(platform))
    target, machine = build_target(m, cuda=cuda, driver=driver, gpus=gpus, python_path=python_path,
                                   python_version=python_version, platform=platform, cpu=cpu, root_dir=root_dir,
                                   snapshot_file=snapshot_file, timeout=timeout, frameworks=fw_given,
                                   companions=companions, for_check=bool(check_file))
    if check_file:
        source = [a for flag, value in (("--python", python_path), ("--root", root_dir), ("--snapshot", snapshot_file))
                  if value for a in (flag, str(value))]
        text, rc = check_lock(m, check_file, target, machine, fmt,
                              given=given(cuda, driver, gpus, python_version, platform), source=source)
        write_stdout(text)
        sys.exit(rc)

    result = resolve(target, m)
    if not result.ok:
        text = redact_output(render_clash(result, fmt))
        if fmt == "json":
            sys.stdout.write(text)
        else:
            sys.stderr.write("envdoctor lock: " + text)
        sys.exit(1)
    meta = Meta(command=_command_line(cuda, driver, gpus, python_opt if python_path else None, python_version, platform,
                                      cpu, fw_given, companions, root_dir, snapshot_file, fmt, env_name),
                envdoctor=__version__, data_collected=m.collected, date=_today(), name=env_name,
                data_warnings=list(m.warnings), conda_channels=list(m.conda))
    text = redact_output(render(result, fmt, meta))
    if output:
        written = write_lock(output, text, force)
        sys.stderr.write(f"envdoctor lock: {'wrote' if written else 'unchanged'} {output}: {result.summary()}"
                         + (" (not known to fit: facts the data lacks)" if result.unknown else "") + "\n")
    else:
        sys.stdout.write(text)


# --------------------------------------------------------------------------- output


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).date().isoformat()
    return datetime.datetime.now(tz=datetime.timezone.utc).date().isoformat()


def _command_line(cuda: Optional[str], driver: Optional[str], gpus: Tuple[str, ...], python_path: Optional[str],
                  python_version: Optional[str], platform: Optional[str], cpu: bool, fws: Dict[str, Optional[str]],
                  companions: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], fmt: str,
                  env_name: Optional[str]) -> str:
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

