"""`envdoctor gate`'s core, without the command line: find the inputs, build the target (stated facts, a saved
snapshot or this machine probed), plan and judge each input (envdoctor.gate.cli translates the options;
`fleet gate` reads the inputs the same way)."""
from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, Dict, Iterable, List, NoReturn, Optional, Sequence, Tuple

from packaging.utils import canonicalize_name

from envdoctor import __version__
from envdoctor.doctor import obtain_snapshot, prepare_judgement
from envdoctor.emit import write_stdout
from envdoctor.errors import BadInput
from envdoctor.gate.inputs import load_inputs
from envdoctor.gate.plan import judge, merge_units, stated_snapshot
from envdoctor.gate.render import GateResult, UnitResult, describe_target
from envdoctor.gate.resolve import plan_for_target
from envdoctor.gate.sniff import sniff_kinds
from envdoctor.snapshot_io import load_snapshot
from envdoctor.target_options import check_cuda, check_glibc, driver_os, python_target, resolve_driver

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


def named_inputs(files: Sequence[str]) -> List[str]:
    """The inputs to judge: the files named, else those found in the current folder; BadInput when there are none."""
    paths = list(files) or discover_inputs(".")
    if not paths:
        raise BadInput("no input files: name requirements*.txt, pyproject.toml, environment.yml, pylock.toml or uv.lock "
                       "files (none found in the current folder)")
    return paths


def split_gpus(values: Optional[Iterable[str]]) -> List[str]:
    """--gpu values: each may be a comma-separated list."""
    out: List[str] = []
    for v in values or ():
        # "sm_80,sm_90" is two GPUs; a GPU name never contains a comma
        out.extend(x.strip() for x in str(v).split(",") if x.strip())
    return out


def capped_problems(problems: Sequence[Any]) -> List[Any]:
    """At most MAX_PROBLEMS_PER_FILE problems of each file (a file that is not an install input would otherwise
    be printed line by line), then one line counting the rest."""
    from envdoctor.gate.inputs import InputProblem, Location
    from envdoctor.gate.trust import MAX_PROBLEMS_PER_FILE

    shown: Dict[str, int] = {}
    kept: List[Any] = []
    for p in problems:
        shown[p.loc.file] = shown.get(p.loc.file, 0) + 1
        if shown[p.loc.file] <= MAX_PROBLEMS_PER_FILE:
            kept.append(p)
    for name, n in shown.items():
        if n > MAX_PROBLEMS_PER_FILE:
            kept.append(InputProblem(Location(name), f"{n - MAX_PROBLEMS_PER_FILE} more problems in this file, not "
                                                     f"shown ({n} in all)"))
    return kept


def input_problems(problems: Sequence[Any], fmt: str) -> NoReturn:
    """The malformed-input problems on stderr (and as annotations on stdout for --format github), at most a few per
    file, then BadInput (exit 2) with the last one (and all of them as its ``details``)."""
    problems = capped_problems(problems)
    lines = [str(p) for p in problems]
    if fmt == "github":
        from envdoctor.formats.github import annotation  # a format's module only when it is used

        for p in problems:
            write_stdout(annotation("error", p.message, file=p.loc.file, line=p.loc.line or None,
                                    title="envdoctor gate: input", workspace=os.environ.get("GITHUB_WORKSPACE")))
    for line in lines[:-1]:
        sys.stderr.write(f"envdoctor: error: {line}\n")
    raise BadInput(lines[-1], details=lines)


def build_target(matrices: Any, *, snapshot_file: Optional[str], driver: Optional[str], gpus: Sequence[str],
                 python_opt: Optional[str], platform: Optional[str], cpu: bool, root_dir: Optional[str], timeout: float,
                 python_version: Optional[str] = None, cuda: Optional[str] = None,
                 glibc: Optional[str] = None) -> Tuple[Any, str]:
    """(snapshot, description of its source): a saved snapshot (stated facts override its parts), stated facts, or
    this machine probed (--python PATH / --root honoured)."""
    python_path, py_version = python_target(python_opt, None)  # run_gate's callers may still pass 3.X here
    python_version = python_version or py_version
    driver = resolve_driver(matrices, driver, driver_os(platform))
    cuda = check_cuda(matrices, cuda)
    glibc = check_glibc(glibc, platform)
    if cuda and driver:
        # --cuda is the target's CUDA line, as lock reads it: a driver older than the line still runs its builds
        # under minor-version compatibility (or fails them, judged per build as lock judges them), so the target
        # stands, judged by the driver's version alone: a stated CUDA level above what the driver reports would
        # read as a forward-compatibility libcuda
        runs = matrices.max_cuda_for_driver(driver, driver_os(platform))
        if runs and _newer(cuda, runs):
            cuda = None
    stated = bool(driver or gpus or cpu or platform or python_version or cuda or glibc)
    try:
        if snapshot_file:
            if python_path or root_dir:
                raise BadInput("--snapshot cannot be combined with --python PATH or --root")
            snap = load_snapshot(snapshot_file)
            if stated:
                snap = stated_snapshot(matrices, driver=driver, gpus=gpus, python=python_version, platform=platform,
                                       cpu=cpu, base=snap, cuda=cuda, glibc=glibc)
            return snap, f"snapshot {snapshot_file}" + (" with stated facts" if stated else "")
        if stated:
            if python_path or root_dir:
                raise BadInput("stated facts (--driver / --gpu / --cuda / --cpu / --platform / --glibc / --python-version) "
                               "describe another machine: they cannot be combined with --python PATH or --root")
            return (stated_snapshot(matrices, driver=driver, gpus=gpus, python=python_version, platform=platform, cpu=cpu,
                                    cuda=cuda, glibc=glibc), "stated facts")
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    snap = obtain_snapshot(python_path, root_dir, None, timeout)
    return snap, ("the image " + root_dir if root_dir else "this machine")


def _newer(a: str, b: str) -> bool:
    """Is CUDA line a (X.Y, or a major X) newer than X.Y line b?"""
    ta, tb = tuple(int(x) for x in a.split(".")), tuple(int(x) for x in b.split("."))
    return ta[:len(ta)] > tb[:len(ta)]


def run_gate(paths: Sequence[str], *, snapshot_file: Optional[str] = None, driver: Optional[str] = None,
             gpus: Sequence[str] = (), python_opt: Optional[str] = None, platform: Optional[str] = None,
             cpu: bool = False, root_dir: Optional[str] = None, timeout: float = 5.0, extras: Sequence[str] = (),
             groups: Sequence[str] = (), together: bool = False, fresh: bool = False, pre: bool = False,
             strict: bool = False, only: Sequence[str] = (), skip: Sequence[str] = (), fmt: str = "text",
             env: Optional[Dict[str, str]] = None, offline: bool = False, kind: Optional[str] = None,
             python_version: Optional[str] = None, cuda: Optional[str] = None, allow_outside: bool = False,
             env_vars: Sequence[str] = (), allow_index: Sequence[str] = (), glibc: Optional[str] = None,
             status: Optional[Callable[..., None]] = None) -> GateResult:
    """Read the inputs, build the target, plan and judge each input: a GateResult (BadInput for usage / input).
    The inputs may be someone else's (envdoctor/gate/trust.py): includes stay in the repository unless
    ``allow_outside``, ``${VAR}`` expands only the ``env_vars`` named, and the resolver contacts only allowed
    indexes (pip's, the frameworks', ``allow_index``). ``status(text, done, total)`` hears what it is waiting on."""
    from envdoctor.gate.trust import Guard, IndexPolicy, expandable_env

    environ = dict(os.environ) if env is None else env
    guard = Guard(allow_outside=allow_outside)
    units, problems = load_inputs(paths, env=expandable_env(environ, env_vars), kinds=sniff_kinds(paths, kind),
                                  guard=guard)
    if problems:
        input_problems(problems, fmt)
    selected = [("extra", canonicalize_name(x)) for x in extras] + [("group", canonicalize_name(g)) for g in groups]
    for what, name in selected:
        pool = [n for u in units for n in (u.extras if what == "extra" else u.groups)]
        if name not in pool and not any(u.kind == "uv.lock" for u in units):
            have = ", ".join(sorted(set(pool))) or "none"
            raise BadInput(f"--{what} {name}: no input defines it ({what}s defined: {have})")
    rules, matrices, warnings = prepare_judgement(only, skip, "gate")
    if matrices is None:
        raise BadInput("the compatibility data cannot be loaded: " + "; ".join(warnings))
    snap, source = build_target(matrices, snapshot_file=snapshot_file, driver=driver, gpus=gpus, python_opt=python_opt,
                                platform=platform, cpu=cpu, root_dir=root_dir, timeout=timeout,
                                python_version=python_version, cuda=cuda, glibc=glibc)
    if together and len(units) > 1:
        units = [merge_units(units)]
    results = []
    policy = None if offline else IndexPolicy.for_run(environ, allow_index)
    for i, unit in enumerate(units):
        if status is not None:
            status(f"gate: judging {unit.path}" + ("" if offline else " (asking the resolver)"), i + 1, len(units))
        plan = plan_for_target(unit, snap, matrices, selected=selected, pre=pre, offline=offline, env=environ,
                               policy=policy, guard=guard)
        _over, located = judge(plan, snap, matrices, rules, fresh=fresh)
        results.append(UnitResult(plan, located))
    return GateResult(target=describe_target(snap, source), target_source=source, units=results, rules=rules,
                      strict=strict, data_collected=getattr(matrices, "collected", "") or "", data_warnings=warnings,
                      envdoctor_version=__version__, snapshot=snap)
