"""``envdoctor onboard``: from a bare machine to a verified environment (registered in envdoctor.cli.COMMANDS).

Exit codes: 0 the environment is ready (or --dry-run / --emit-script printed / wrote the plan); 1 onboarding
stopped: the NVIDIA driver must be installed or repaired first (the commands are printed), no lock fits, a step
failed (naming the step and the log file) or the smoke test failed; 2 bad usage, or a refusal (an existing
environment onboard did not make, without --force; no --yes and no terminal to ask on).

The work is in envdoctor.onboard (plan.py, steps.py); this module translates the options.
"""
from __future__ import annotations

import shlex
import sys
from typing import List, Optional, Sequence, Tuple

import click

from envdoctor.cli_options import Seconds
from envdoctor.onboard.plan import FrameworkWish, parse_frameworks
from envdoctor.onboard.steps import Onboarding, Options

INSTALLERS = ("auto", "pip", "uv")


@click.command(name="onboard")
@click.option("--frameworks", "frameworks", multiple=True, metavar="LIST",
              help="Frameworks to put in the environment: torch, tensorflow, jax (comma-separated or repeated; "
                   "an item may pin a version: torch==2.13.0). Default: torch.")
@click.option("--env-dir", metavar="DIR", help="Create a venv in DIR (default: .venv).")
@click.option("--conda", "conda_name", metavar="NAME", help="Create the conda environment NAME instead (mamba or conda).")
@click.option("--python", "python_opt", metavar="PATH|3.X",
              help="The interpreter to build the venv from (default: the one running envdoctor); 3.X finds python3.X on PATH.")
@click.option("--installer", type=click.Choice(INSTALLERS), default="auto", show_default=True,
              help="Make the venv and install with pip, or uv (auto: uv when it is on PATH).")
@click.option("--cpu", is_flag=True, help="Lock CPU builds even on a machine with an NVIDIA GPU (or a broken driver).")
@click.option("--companions", metavar="LIST", default=None,
              help="torch companions kept in lock-step: torchvision,torchaudio (the lock's default) or none.")
@click.option("--snapshot", "snapshot_file", metavar="FILE", help="Take the machine's facts from a saved snapshot.")
@click.option("--timeout", type=Seconds(0.1, 600), default=5.0, show_default=True,
              help="Seconds each probing command may take.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before creating the environment and installing.")
@click.option("--dry-run", is_flag=True, help="Print the exact shell script onboarding would run; change nothing.")
@click.option("--emit-script", metavar="FILE", help="Write that script to FILE (for review); change nothing else.")
@click.option("--force", is_flag=True,
              help="Replace an existing environment onboard did not make (a venv is moved aside and deleted only once "
                   "the new one passes), or start over in one it made.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
def onboard(frameworks: Tuple[str, ...], env_dir: Optional[str], conda_name: Optional[str], python_opt: Optional[str],
            installer: str, cpu: bool, companions: Optional[str], snapshot_file: Optional[str], timeout: float,
            yes: bool, dry_run: bool, emit_script: Optional[str], force: bool, quiet: bool) -> None:
    """From a bare machine to a verified environment: probe -> check (stop with the exact commands when the
    NVIDIA driver is missing or broken) -> lock builds for this machine (CPU builds without an NVIDIA GPU) ->
    create a venv (pip or uv) or conda environment -> install the lock -> smoke-test it -> write a Markdown and
    an HTML report in the environment. A rerun skips the steps already done whose inputs did not change.
    Never runs sudo, never changes system packages."""
    wishes = parse_frameworks(frameworks)
    opts = Options(wishes=wishes, env_dir=env_dir, conda=conda_name, yes=yes, dry_run=dry_run,
                   emit_script=emit_script, force=force, cpu=cpu, installer=installer, python=python_opt,
                   companions=companions, snapshot_file=snapshot_file, timeout=timeout, quiet=quiet,
                   rerun=_rerun(sys.argv, wishes, env_dir, conda_name, python_opt, installer, cpu, companions))
    try:
        rc = Onboarding(opts, confirm=_confirm).run()
    except KeyboardInterrupt:  # click would turn it into "aborted", exit 2: say where it stopped instead
        click.echo(f"envdoctor onboard: interrupted; the finished steps are kept: rerun `{opts.rerun}` to continue",
                   err=True)
        sys.exit(130)
    sys.exit(rc)


def _confirm(question: str) -> bool:
    return click.confirm(question, default=False, err=True)


def _rerun(argv: List[str], wishes: Sequence[FrameworkWish], env_dir: Optional[str], conda_name: Optional[str],
           python_opt: Optional[str], installer: str, cpu: bool, companions: Optional[str]) -> str:
    """The command to run again once the driver is fixed (or after an interruption)."""
    args = ["envdoctor", "onboard", "--frameworks", ",".join(w.display() for w in wishes)]
    if conda_name:
        args += ["--conda", conda_name]
    elif env_dir:
        args += ["--env-dir", env_dir]
    if python_opt:
        args += ["--python", python_opt]
    if installer != "auto":
        args += ["--installer", installer]
    if cpu:
        args.append("--cpu")
    if companions is not None:
        args += ["--companions", companions]
    return " ".join(shlex.quote(a) for a in args)
