"""``envdoctor lock``: pinned requirements-cuda.txt / environment.yml that fit a machine or a stated target.

Exit codes: 0 a lock was written (or ``--check``: the file fits); 1 no combination fits every constraint (the
explanation names the clash and what relaxing each constraint gives) or ``--check``: the file no longer fits;
2 bad target or usage (one line naming what is available), or an existing different ``-o`` file without --force.

The work is in envdoctor.lock.core (run_lock, the Python API's too) and envdoctor.lock.resolve; this module
translates the options and writes the answer where the command line puts it.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Tuple

import click

from envdoctor.cli_options import Seconds, target_options
from envdoctor.emit import write_stdout
from envdoctor.frameworks import registry
from envdoctor.lock.core import run_lock

# one --NAME option per lockable framework of the registry, with the examples its spec gives (this module is
# imported only when lock runs, and lock reads the registry anyway)
FW_EXAMPLES = {name: registry.get(name).lock_examples for name in registry.names(lockable=True)}


def _fw_option(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    examples = FW_EXAMPLES[name]
    if len(examples) == 3:
        full, short, spec = examples
        what = f"a version ({full}, {short}) or a PEP 440 specifier (--{name}='{spec}')"
    else:  # a spec that gives no examples
        what = "a version or a PEP 440 specifier"
    return click.option(f"--{name}", name, is_flag=False, flag_value="", default=None, metavar="[SPEC]",
                        help=f"Put {name} in the environment; SPEC is {what}. Default: torch, plus what the target "
                             "environment has installed.")


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
    run = run_lock(cuda=cuda, driver=driver, gpus=gpus, python_opt=python_opt, python_version=python_version,
                   platform=platform, glibc=glibc, cpu=cpu, companions=companions, root_dir=root_dir,
                   snapshot_file=snapshot_file, timeout=timeout, fmt=fmt, env_name=env_name, output=output, force=force,
                   check_file=check_file, frameworks={name: frameworks[name] for name in FW_EXAMPLES})
    if check_file:
        write_stdout(run.text)
    elif run.note:
        sys.stderr.write(run.note)
    elif run.stream == "stderr":  # nothing fits: the explanation is an error message
        sys.stderr.write("envdoctor lock: " + run.text)
    else:
        sys.stdout.write(run.text)
    sys.exit(run.exit_code)
