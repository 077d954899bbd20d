"""``envdoctor gate FILE...``: would this install work on the target machine?  Judged before anything is downloaded.

Exit codes as ``check``: 0 nothing stops the install (warnings allowed), 1 an error (with --strict also a warning),
2 bad usage or malformed input (each problem on stderr as ``file:line: message``).

The work is in envdoctor.gate.core; this module translates the options.
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Tuple

import click

from envdoctor.cli_options import Seconds, complete_rule_ids, force_option, format_option, target_options
from envdoctor.doctor import split_ids
from envdoctor.emit import emit
from envdoctor.progress import Status
from envdoctor.formats.marks import use_color
from envdoctor.gate.core import named_inputs, run_gate, split_gpus
from envdoctor.gate.render import render
from envdoctor.target_options import python_target


@click.command(name="gate")
@click.argument("files", nargs=-1, metavar="[FILE]...")
@click.option("--snapshot", "snapshot_file", metavar="FILE", help="Target: a saved snapshot (envdoctor probe --format json).")
@target_options
@click.option("--cpu", is_flag=True, help="Target: a CPU-only machine (no NVIDIA driver or GPU).")
@click.option("--root", "root_dir", metavar="DIR", help="Target: probe an image's root file system under DIR.")
@click.option("--timeout", type=Seconds(0.1, 600), default=5.0, show_default=True,
              help="Seconds each external command may take while probing.")
@click.option("--extra", "extras", multiple=True, metavar="NAME",
              help="pyproject / uv.lock: judge this optional-dependency extra (repeatable).")
@click.option("--group", "groups", multiple=True, metavar="NAME",
              help="pyproject / uv.lock: judge this dependency group (repeatable).")
@click.option("--offline", is_flag=True,
              help="Do not ask a resolver (uv, else pip): plan from envdoctor's data only (also when no index answers).")
@click.option("--allow-index", "allow_index", multiple=True, metavar="URL",
              help="Let the resolver contact this index (and the URLs under it) when an input names it; pip's "
                   "configured indexes and the frameworks' own are allowed already (repeatable).")
@click.option("--env-var", "env_vars", multiple=True, metavar="NAME",
              help="Expand ${NAME} in the inputs from the environment, as pip would (repeatable; by default none is).")
@click.option("--allow-outside", is_flag=True,
              help="Read -r / -c includes and local paths outside the input's repository too.")
@click.option("--kind", "kind", type=click.Choice(("requirements", "pyproject", "conda", "pylock", "uv.lock")),
              help="Read every FILE as this kind (default: recognised by its content).")
@click.option("--together", is_flag=True, help="Judge all FILEs as one install (default: each FILE on its own).")
@click.option("--fresh", is_flag=True, help="Install into an empty environment (ignore what the target has installed).")
@click.option("--pre", is_flag=True, help="Allow pre-releases, as pip --pre.")
@format_option()
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too (JUnit: warnings are failures).")
@click.option("--only", multiple=True, metavar="IDS", shell_complete=complete_rule_ids,
              help="Run only these rules (IDs, prefixes like ED1, or names).")
@click.option("--skip", multiple=True, metavar="IDS", shell_complete=complete_rule_ids, help="Skip these rules.")
@click.option("-v", "--verbose", is_flag=True, help="Show infos and the evidence behind each finding.")
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE (atomically) instead of stdout.")
@force_option
def gate(files: Tuple[str, ...], snapshot_file: Optional[str], python_opt: Optional[str], python_version: Optional[str],
         platform: Optional[str], glibc: Optional[str], driver: Optional[str], gpus: Tuple[str, ...], cuda: Optional[str], cpu: bool,
         root_dir: Optional[str], timeout: float, extras: Tuple[str, ...], groups: Tuple[str, ...], offline: bool,
         allow_index: Tuple[str, ...], env_vars: Tuple[str, ...], allow_outside: bool, kind: Optional[str], together: bool, fresh: bool, pre: bool, fmt: str, strict: bool, only: Tuple[str, ...],
         skip: Tuple[str, ...], verbose: bool, output: Optional[str], force_output: bool) -> None:
    """Stop a doomed install before the download: would the torch / tensorflow / jax builds that these
    requirements*.txt / pyproject.toml / environment.yml / pylock.toml / uv.lock files install work on the target?

    The target is this machine (probed), a saved --snapshot, or stated facts
    (--driver 535.104.05 --gpu sm_80 --python-version 3.11 --platform linux-x86_64, --cuda 12.4, or --cpu).
    Exit 0 ok, 1 error (--strict: or warning), 2 usage or malformed input."""
    paths = named_inputs(files)
    python_path, python_version = python_target(python_opt, python_version)
    with Status() as status:
        result = run_gate(paths, snapshot_file=snapshot_file, driver=driver, gpus=split_gpus(gpus), python_opt=python_path,
                          python_version=python_version, cuda=cuda,
                          platform=platform, glibc=glibc, cpu=cpu, root_dir=root_dir, timeout=timeout, extras=extras, groups=groups,
                          together=together, fresh=fresh, pre=pre, strict=strict, only=split_ids(only),
                          skip=split_ids(skip), fmt=fmt, offline=offline, kind=kind, allow_outside=allow_outside,
                          env_vars=env_vars, allow_index=allow_index, status=status)
    color = use_color(sys.stdout.isatty(), output)
    emit(render(result, fmt, verbose=verbose, color=color, workspace=os.environ.get("GITHUB_WORKSPACE")), output,
         force_output)
    sys.exit(result.exit_code)
