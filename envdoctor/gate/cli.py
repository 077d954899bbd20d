"""``envdoctor gate FILE...``: would this install work on the target machine?  Judged before anything is downloaded.

Exit codes as ``check``: 0 nothing stops the install (warnings allowed), 1 an error (with --strict also a warning),
2 bad usage or malformed input (each problem on stderr as ``file:line: message``).

Module-level imports stay light: the command is registered at every start of ``envdoctor``.
"""
from __future__ import annotations

import os
import re
import sys
from typing import List, Sequence

import click

from envdoctor.cli import force_option
from envdoctor.formats.registry import format_option
from envdoctor.options import Seconds
from envdoctor.target_options import PLATFORM_CHOICES, complete_rule_ids, target_options  # noqa: F401 - re-exported

DISCOVER = (r"^pylock(\.[^.]+)?\.toml$", r"^uv\.lock$", r"^requirements[^/]*\.txt$", r"^environment\.ya?ml$",
            r"^pyproject\.toml$")


def discover_inputs(folder: str = ".") -> List[str]:
    """The install inputs in a folder, when none are named."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for pattern in DISCOVER:
        for n in names:
            if re.match(pattern, n) and os.path.isfile(os.path.join(folder, n)) and n not in out:
                out.append(n)
    return [os.path.join(folder, n) if folder != "." else n for n in out]


def _split_ids(values) -> List[str]:
    out: List[str] = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _split_gpus(values) -> List[str]:
    out: List[str] = []
    for v in values or ():
        # "sm_80,sm_90" is two GPUs; a GPU name never contains a comma
        out.extend(x.strip() for x in str(v).split(",") if x.strip())
    return out


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
def gate(files, snapshot_file, python_opt, python_version, platform, driver, gpus, cuda, cpu, root_dir, timeout, extras,
         groups, offline, kind, together, fresh, pre, fmt, strict, only, skip, verbose, output, force_output):
    """Stop a doomed install before the download: would the torch / tensorflow / jax builds that these
    requirements*.txt / pyproject.toml / environment.yml / pylock.toml / uv.lock files install work on the target?

    The target is this machine (probed), a saved --snapshot, or stated facts
    (--driver 535.104.05 --gpu sm_80 --python-version 3.11 --platform linux-x86_64, --cuda 12.4, or --cpu).
    Exit 0 ok, 1 error (--strict: or warning), 2 usage or malformed input."""
    from envdoctor.errors import BadInput

    paths = list(files) or discover_inputs(".")
    if not paths:
        raise BadInput("no input files: name requirements*.txt, pyproject.toml, environment.yml, pylock.toml or uv.lock "
                       "files (none found in the current folder)")
    from envdoctor.target_options import python_target

    python_path, python_version = python_target(python_opt, python_version)
    result = run_gate(paths, snapshot_file=snapshot_file, driver=driver, gpus=_split_gpus(gpus), python_opt=python_path,
                      python_version=python_version, cuda=cuda,
                      platform=platform, cpu=cpu, root_dir=root_dir, timeout=timeout, extras=extras, groups=groups,
                      together=together, fresh=fresh, pre=pre, strict=strict, only=_split_ids(only),
                      skip=_split_ids(skip), fmt=fmt, offline=offline, kind=kind)
    from envdoctor.cli import emit
    from envdoctor.formats.marks import use_color
    from envdoctor.gate.render import render

    color = use_color(sys.stdout.isatty(), output)
    emit(render(result, fmt, verbose=verbose, color=color, workspace=os.environ.get("GITHUB_WORKSPACE")), output,
         force_output)
    sys.exit(result.exit_code)


def _input_problems(problems, fmt: str) -> None:
    """Every malformed-input problem on stderr (and as annotations for --format github), then exit 2."""
    from envdoctor.errors import BadInput

    lines = [str(p) for p in problems]
    if fmt == "github":
        from envdoctor.formats.github import annotation

        for p in problems:
            click.echo(annotation("error", p.message, file=p.loc.file, line=p.loc.line or None,
                                  title="envdoctor gate: input", workspace=os.environ.get("GITHUB_WORKSPACE")))
    for line in lines[:-1]:
        click.echo(f"envdoctor: error: {line}", err=True)
    raise BadInput(lines[-1])


def build_target(matrices, *, snapshot_file, driver, gpus, python_opt, platform, cpu, root_dir, timeout,
                 python_version=None, cuda=None):
    """(snapshot, description of its source): a saved snapshot (stated facts override its parts), stated facts, or
    this machine probed (--python PATH / --root honoured)."""
    from envdoctor.errors import BadInput
    from envdoctor.gate.plan import stated_snapshot
    from envdoctor.target_options import check_cuda, driver_os, python_target, resolve_driver

    python_path, py_version = python_target(python_opt, None)  # run_gate's callers may still pass 3.X here
    python_version = python_version or py_version
    driver = resolve_driver(matrices, driver, driver_os(platform))
    cuda = check_cuda(matrices, cuda)
    if cuda and driver:
        runs = matrices.max_cuda_for_driver(driver, driver_os(platform))
        if runs and _newer(cuda, runs):
            raise BadInput(f"--driver {driver} runs CUDA up to {runs}, older than --cuda {cuda}: they disagree")
    stated = bool(driver or gpus or cpu or platform or python_version or cuda)
    try:
        if snapshot_file:
            if python_path or root_dir:
                raise BadInput("--snapshot cannot be combined with --python PATH or --root")
            from envdoctor.snapshot_io import load_snapshot

            snap = load_snapshot(snapshot_file)
            if stated:
                snap = stated_snapshot(matrices, driver=driver, gpus=gpus, python=python_version, platform=platform,
                                       cpu=cpu, base=snap, cuda=cuda)
            return snap, f"snapshot {snapshot_file}" + (" with stated facts" if stated else "")
        if stated:
            if python_path or root_dir:
                raise BadInput("stated facts (--driver / --gpu / --cuda / --cpu / --platform / --python-version) "
                               "describe another machine: they cannot be combined with --python PATH or --root")
            return (stated_snapshot(matrices, driver=driver, gpus=gpus, python=python_version, platform=platform, cpu=cpu,
                                    cuda=cuda), "stated facts")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    from envdoctor.cli import obtain_snapshot

    snap = obtain_snapshot(python_path, root_dir, None, timeout)
    return snap, ("the image " + root_dir if root_dir else "this machine")


def _newer(a: str, b: str) -> bool:
    """Is CUDA line a (X.Y, or a major X) newer than X.Y line b?"""
    ta, tb = tuple(int(x) for x in a.split(".")), tuple(int(x) for x in b.split("."))
    return ta[:len(ta)] > tb[:len(ta)]


def run_gate(paths: Sequence[str], *, snapshot_file=None, driver=None, gpus=(), python_opt=None, platform=None,
             cpu=False, root_dir=None, timeout=5.0, extras=(), groups=(), together=False, fresh=False, pre=False,
             strict=False, only=(), skip=(), fmt="text", env=None, offline=False, kind=None, python_version=None, cuda=None):
    """Read the inputs, build the target, plan and judge each input: a GateResult (BadInput for usage / input)."""
    from envdoctor import __version__
    from envdoctor.commands import prepare_judgement
    from envdoctor.errors import BadInput
    from envdoctor.gate.inputs import load_inputs
    from envdoctor.gate.plan import judge, merge_units
    from envdoctor.gate.render import GateResult, UnitResult, describe_target

    from packaging.utils import canonicalize_name

    from envdoctor.gate.resolve import plan_for_target
    from envdoctor.gate.sniff import sniff_kinds

    environ = dict(os.environ) if env is None else env
    units, problems = load_inputs(paths, env=environ, kinds=sniff_kinds(paths, kind))
    if problems:
        _input_problems(problems, fmt)
    selected = [("extra", canonicalize_name(x)) for x in extras] + [("group", canonicalize_name(g)) for g in groups]
    for kind, name in selected:
        pool = [n for u in units for n in (u.extras if kind == "extra" else u.groups)]
        if name not in pool and not any(u.kind == "uv.lock" for u in units):
            have = ", ".join(sorted(set(pool))) or "none"
            raise BadInput(f"--{kind} {name}: no input defines it ({kind}s defined: {have})")
    rules, matrices, warnings = prepare_judgement(only, skip, "gate")
    if matrices is None:
        raise BadInput("the compatibility data cannot be loaded: " + "; ".join(warnings))
    snap, source = build_target(matrices, snapshot_file=snapshot_file, driver=driver, gpus=gpus, python_opt=python_opt,
                                platform=platform, cpu=cpu, root_dir=root_dir, timeout=timeout,
                                python_version=python_version, cuda=cuda)
    if together and len(units) > 1:
        units = [merge_units(units)]
    results = []
    for unit in units:
        plan = plan_for_target(unit, snap, matrices, selected=selected, pre=pre, offline=offline, env=environ)
        _over, located = judge(plan, snap, matrices, rules, fresh=fresh)
        results.append(UnitResult(plan, located))
    return GateResult(target=describe_target(snap, source), target_source=source, units=results, rules=rules,
                      strict=strict, data_collected=getattr(matrices, "collected", "") or "", data_warnings=warnings,
                      envdoctor_version=__version__, snapshot=snap)
