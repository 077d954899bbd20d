"""``envdoctor lock``'s core, without the command line: the target's constraints from the options and the machine,
writing a lock file, and re-checking one (envdoctor.lock.cli translates the options; onboard reads the machine's
platform the same way)."""
from __future__ import annotations

import datetime
import json
import os
import shlex
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor import __version__
from envdoctor.doctor import obtain_snapshot
from envdoctor.errors import BadInput
from envdoctor.facts.platform import build_platform
from envdoctor.infile import read_text_or_bad_input
from envdoctor.knowledge import load_matrices, normalize_cc
from envdoctor.lock.render import Meta, parse_lock, render, render_clash
from envdoctor.lock.resolve import COMPANIONS, Constraints, FrameworkRequest, GpuTarget, check, resolve
from envdoctor.outfile import exists, same_as, write_output
from envdoctor.outfile import resolve as resolve_output
from envdoctor.redact import redact_output
from envdoctor.snapshot_io import dump_json
from envdoctor.records import dataclass
from envdoctor.target_options import (CC_TEXT, PLATFORM_CHOICES, check_glibc, driver_os, python_series, python_target,
                                      resolve_driver, resolve_gpu)



def given(cuda: Optional[str], driver: Optional[str], gpus: Sequence[str], python_version: Optional[str],
          platform: Optional[str]) -> Dict[str, bool]:
    """Which parts of the target the user stated (the rest --check takes from the lock)."""
    return {"cuda": bool(cuda), "driver": bool(driver), "gpus": bool(gpus), "python": bool(python_version),
            "platform": bool(platform)}


def parse_gpu(m: Any, text: str) -> GpuTarget:
    """--gpu sm_86 | 8.6 | compute_90a | "NVIDIA A100-SXM4-80GB" -> GpuTarget (target_options.resolve_gpu, gate's
    reading too); BadInput naming the nearest names and the known archs."""
    value = str(text or "").strip()
    try:
        _name, cc = resolve_gpu(m, value)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    return GpuTarget(cc, "sm_" + cc.replace(".", "") if CC_TEXT.match(value) else value)


def build_target(m: Any, *, cuda: Optional[str], driver: Optional[str], gpus: Sequence[str],
                 python_path: Optional[str], python_version: Optional[str], platform: Optional[str], cpu: bool,
                 root_dir: Optional[str], snapshot_file: Optional[str], timeout: float,
                 frameworks: Dict[str, Optional[str]], companions: Optional[str],
                 for_check: bool = False, machine: Any = None, machine_where: str = "") -> Tuple[Constraints, Any]:
    """Constraints from the flags, over the machine (probed or a snapshot) where one is used.  Returns
    (constraints, machine snapshot or None).  Without --cuda / --driver / --cpu the machine is probed.
    `machine`: a snapshot already loaded (fleet gate: a configuration's), named `machine_where`."""
    origin: Dict[str, str] = {}
    snap = None
    where = ""
    if machine is not None:
        snap, where = machine, machine_where or "the machine"
    elif snapshot_file or root_dir or python_path or not (cuda or driver or cpu):
        snap = obtain_snapshot(python_path, root_dir, snapshot_file, timeout)
        where = f"snapshot {snapshot_file}" if snapshot_file else ("the image " + root_dir if root_dir else "this machine")
    c = Constraints(cpu=bool(cpu))
    if snap is not None:
        plat, wsl = build_platform(snap)
        if plat:
            c.platform, c.wsl = plat, wsl
            origin["platform"] = where
        elif not platform:
            raise BadInput(f"{where} is {snap.platform.system or 'an unknown system'} {snap.platform.machine or ''}, "
                           f"a platform lock has no builds for; name one with --platform ({', '.join(PLATFORM_CHOICES)})")
        if snap.python.version:
            c.python = python_series(snap.python.version)
            origin["python"] = where
        if snap.driver.version:
            c.driver = snap.driver.version
            origin["driver"] = where
        c.gpus = []
        for g in snap.gpus:
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
        c.python = python_series(python_version)
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
        c.companions = parse_companions(companions)
    c.origin = origin
    return c, snap


def parse_companions(text: str) -> List[str]:
    """--companions torchvision,torchaudio | none: the torch companions kept in lock-step; BadInput for others."""
    low = text.strip().lower()
    out = [] if low in ("", "none", "no") else [x.strip() for x in low.split(",") if x.strip()]
    for x in out:
        if x not in COMPANIONS:
            raise BadInput(f"unknown companion {x!r}; companions: {', '.join(COMPANIONS)} (or none)")
    return out


def write_lock(path: str, text: str, force: bool) -> bool:
    """Write by envdoctor.outfile's rules; an identical existing file is left alone (False), a different one needs
    --force.  Only a regular file is compared, reading at most the new text's length: a device, a FIFO or
    /dev/stdout is written through, never read."""
    kind, _where = resolve_output(path, force)  # a folder, a socket or a dangling symlink (without --force): BadInput
    if kind == "file" and exists(path):
        if same_as(path, text):
            return False
        if not force:
            raise BadInput(f"{path} exists and differs from this lock; pass --force to replace it")
    write_output(path, text, force=force)
    return True


def _relock(m: Any, path: str, parsed: Any, rec: Dict[str, Any], target: Any, machine: Any,
            source: Sequence[str]) -> Dict[str, Any]:
    """The ``envdoctor lock`` command that writes a lock of the same frameworks for this target over ``path``, and
    what it pins (lock's own resolution, run here: the command is offered only with what it would do)."""
    names = [str(x["framework"]) for x in rec.get("picks") or [] if isinstance(x, dict) and x.get("framework")]
    cpu = bool(rec.get("cpu")) or bool(target.cpu)
    args: List[str] = ["envdoctor", "lock", *source]
    if machine is None:  # stated facts: every part, including what --check took from the lock
        for flag, value in (("--driver", target.driver), ("--cuda", target.cuda),
                            ("--python-version", target.python), ("--platform", target.platform)):
            if value:
                args += [flag, str(value)]
        for g in target.gpus:
            args += ["--gpu", g.label or g.sm]
    else:
        for flag, value in (("--driver", target.driver if target.origin.get("driver", "").startswith("--") else None),
                            ("--cuda", target.cuda if target.origin.get("cuda", "").startswith("--") else None)):
            if value:
                args += [flag, str(value)]
    if cpu:
        args.append("--cpu")
    args += [f"--{n}" for n in names]
    if parsed.fmt in ("conda", "json"):
        args += ["--format", parsed.fmt]
    if rec.get("name"):
        args += ["--name", str(rec["name"])]
    args += ["-o", path, "--force"]
    fresh = resolve(target.copy(frameworks=[FrameworkRequest(n) for n in names] or target.frameworks, cpu=cpu), m,
                    explain=False)
    picks = [c.label for c in fresh.picks] if getattr(fresh, "ok", False) else []
    return {"command": " ".join(shlex.quote(a) for a in args), "fits": bool(picks), "picks": picks}


def is_lock(text: str) -> bool:
    """Whether text is a lock envdoctor lock wrote (it carries the record --check reads back)."""
    return "# envdoctor-lock:" in text and isinstance(parse_lock(text).record, dict)


def check_lock(m: Any, path: str, target: Any, machine: Any, fmt: str, given: Dict[str, bool],
               source: Sequence[str] = ()) -> Tuple[str, int, Dict[str, Any]]:
    """lock --check FILE: does the lock still fit the target? (the answer's text in `fmt`, 0 it fits / 1 it does
    not, the answer as JSON data); when it does not, the command that re-locks for the target (``source``: the
    options naming the machine read)."""
    text = read_text_or_bad_input(path, "--check")
    result = judge_lock(m, path, text, target, machine, given)
    relock = None
    if not result.ok:
        parsed = parse_lock(text, where=path)
        rec = parsed.record if isinstance(parsed.record, dict) else {}
        relock = _relock(m, path, parsed, rec, target, machine, source)
    data = result.to_dict()
    data["file"] = path
    data["target"] = target.to_dict()
    data["relock"] = relock
    json_text = redact_output(dump_json(data))
    if fmt == "json":
        text = json_text
    elif result.ok:
        text = f"{path} fits: {', '.join(c.label for c in result.picks)}"
    else:
        lines = [f"{path} no longer fits:"] + [f"  - {prob}" for prob in result.problems]
        assert relock is not None
        if relock["fits"]:
            lines += [f"re-lock for this target (it pins {', '.join(relock['picks'])}):", f"  $ {relock['command']}"]
        else:
            lines += ["no lock of these frameworks fits this target; this says which constraints clash:",
                      f"  $ {relock['command'].rsplit(' -o ', 1)[0]}"]
        text = "\n".join(lines)
    return redact_output(text), 0 if result.ok else 1, json.loads(json_text)


def check_lock_on(m: Any, path: str, text: str, snap: Any, where: str) -> Any:
    """`lock --check FILE --snapshot S` without other flags, on a snapshot already loaded (fleet gate asks this of
    each configuration): the check's result (.ok, .problems). BadInput where lock has no builds for the machine."""
    target, machine = build_target(m, cuda=None, driver=None, gpus=(), python_path=None, python_version=None,
                                   platform=None, cpu=False, root_dir=None, snapshot_file=None, timeout=5.0,
                                   frameworks={}, companions=None, for_check=True, machine=snap, machine_where=where)
    return judge_lock(m, path, text, target, machine, given(None, None, (), None, None))


def judge_lock(m: Any, path: str, text: str, target: Any, machine: Any, given: Dict[str, bool]) -> Any:
    """The verdict of lock --check on the lock's text: the resolver's check result, problems included."""
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
    return result


# --------------------------------------------------------------------------- the command, without the command line


@dataclass
class LockRun:
    """What `envdoctor lock` answers: ``text`` (the lock in the format asked for, the clash explained, or --check's
    verdict) for ``stream`` ("stdout" or "stderr", where the CLI writes it), the exit code, and the same answer as
    JSON data (the lock's, the clash's or --check's ``--format json``). ``note``: the line after ``-o FILE``."""

    text: str
    exit_code: int
    data: Dict[str, Any]
    stream: str = "stdout"
    note: str = ""


def run_lock(*, cuda: Optional[str] = None, driver: Optional[str] = None, gpus: Sequence[str] = (),
             python_opt: Optional[str] = None, python_version: Optional[str] = None, platform: Optional[str] = None,
             glibc: Optional[str] = None, cpu: bool = False, companions: Optional[str] = None,
             root_dir: Optional[str] = None, snapshot_file: Optional[str] = None, timeout: float = 5.0,
             fmt: str = "requirements", env_name: Optional[str] = None, output: Optional[str] = None,
             force: bool = False, check_file: Optional[str] = None,
             frameworks: Optional[Dict[str, Optional[str]]] = None) -> LockRun:
    """`envdoctor lock`'s body: `frameworks` maps a lockable framework's name to its SPEC ("" for any version; a
    name left out, or None, is not asked for). BadInput for a bad target or usage; a lock that fits nothing is an
    answer (exit code 1), not an exception."""
    from envdoctor.frameworks.registry import names

    lockable = names(lockable=True)
    unknown = sorted(set(frameworks or {}) - set(lockable))
    if unknown:
        raise BadInput(f"unknown framework {unknown[0]!r} to lock; frameworks: {', '.join(lockable)}")
    python_path, python_version = python_target(python_opt, python_version)
    fw_given: Dict[str, Optional[str]] = {name: (frameworks or {}).get(name) for name in lockable}
    if check_file:
        if output or force:
            raise BadInput("--check reads FILE and writes nothing; it cannot be combined with -o / --force")
        if any(v is not None for v in fw_given.values()) or companions is not None or env_name:
            raise BadInput("--check verifies the pins already in FILE; "
                           + " / ".join(f"--{n}" for n in lockable) + " / --companions / --name do not apply")
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
        text, rc, data = check_lock(m, check_file, target, machine, fmt,
                                    given=given(cuda, driver, gpus, python_version, platform), source=source)
        return LockRun(text, rc, data)

    result = resolve(target, m)
    if not result.ok:
        json_text = redact_output(render_clash(result, "json"))
        if fmt == "json":
            return LockRun(json_text, 1, json.loads(json_text))
        return LockRun(redact_output(render_clash(result, fmt)), 1, json.loads(json_text), stream="stderr")
    meta = Meta(command=_command_line(cuda, driver, gpus, python_opt if python_path else None, python_version, platform,
                                      cpu, fw_given, companions, root_dir, snapshot_file, fmt, env_name),
                envdoctor=__version__, data_collected=m.collected, date=_today(), name=env_name,
                data_warnings=list(m.warnings), conda_channels=list(m.conda))
    text = redact_output(render(result, fmt, meta))
    json_text = text if fmt == "json" else redact_output(render(result, "json", meta))
    run = LockRun(text, 0, json.loads(json_text))
    if output:
        written = write_lock(output, text, force)
        run.note = (f"envdoctor lock: {'wrote' if written else 'unchanged'} {output}: {result.summary()}"
                    + (" (not known to fit: facts the data lacks)" if result.unknown else "") + "\n")
    return run


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).date().isoformat()
    return datetime.datetime.now(tz=datetime.timezone.utc).date().isoformat()


def _command_line(cuda: Optional[str], driver: Optional[str], gpus: Sequence[str], python_path: Optional[str],
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
