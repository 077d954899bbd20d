"""The options that state a target machine, defined once for every command that takes one.

One vocabulary (docs/target.md): ``--python PATH`` (an interpreter whose environment is the target),
``--python-version X.Y``, ``--platform``, ``--driver VER``, ``--gpu sm_XX|NAME`` (repeatable) and
``--cuda X.Y``. ``lock`` and ``gate`` take them all through :func:`target_options`; ``probe`` and
``check`` take ``--python PATH``. The shell-completion callbacks for rule IDs, table names and GPU
names live here too, next to the options that use them.

Module-level imports stay light: this module is imported at every start of ``envdoctor``.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, List, Optional, Tuple

import click

PLATFORM_CHOICES = ("linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64", "wsl2")
_PY_VERSION = re.compile(r"^\s*3\.\d{1,2}(\.\d+)?\s*$")
_DRIVER = re.compile(r"^\s*\d{3,4}(\.\d{1,3}){0,2}\s*$")


# --------------------------------------------------------------------------- completion


def _matrices():
    from envdoctor.knowledge import load_matrices

    return load_matrices()


def _complete(values: Iterable[str], incomplete: str) -> List[Any]:
    from click.shell_completion import CompletionItem

    low = incomplete.lower()
    out, seen = [], set()
    for v in values:
        if v and v not in seen and v.lower().startswith(low):
            seen.add(v)
            out.append(CompletionItem(v))
    return out


def complete_gpu(ctx, param, incomplete: str) -> List[Any]:
    """--gpu: the architectures (sm_XX) and GPU names of matrices/gpus.toml."""
    try:
        m = _matrices()
        archs = sorted(m.archs.values(), key=lambda a: tuple(int(x) for x in a.cc.split(".")))
        return _complete([a.sm for a in archs] + sorted(g.name for g in m.gpus), incomplete)
    except Exception:  # noqa: BLE001 - completion never breaks the shell
        return []


def complete_rule_ids(ctx, param, incomplete: str) -> List[Any]:
    """--only / --skip / explain ID: rule IDs and names (a comma list completes its last item)."""
    head, _, last = incomplete.rpartition(",")
    prefix = head + "," if head else ""
    try:
        from envdoctor.rules.engine import all_rules

        rules = all_rules()
        items = _complete([r.id for r in rules] + [r.name for r in rules], last)
    except Exception:  # noqa: BLE001
        return []
    from click.shell_completion import CompletionItem

    return [CompletionItem(prefix + i.value) for i in items]


def complete_table(ctx, param, incomplete: str) -> List[Any]:
    """matrices show TABLE: the names of the bundled tables."""
    try:
        from envdoctor.knowledge.cli import TABLE_NAMES

        return _complete(TABLE_NAMES, incomplete)
    except Exception:  # noqa: BLE001
        return []


# --------------------------------------------------------------------------- the options

PYTHON_HELP = ("Target Python environment: an interpreter of this machine to inspect (PATH). A version here "
               "(--python 3.11) is the deprecated spelling of --python-version.")
PYTHON_VERSION_HELP = "Target Python version (3.11), for a machine that is not this one."
PLATFORM_HELP = ("Target platform (wsl2: Linux wheels, Windows driver). Default: the machine's; linux-x86_64 for "
                 "stated facts.")
DRIVER_HELP = ("Target NVIDIA driver (535.104.05). A branch alone (580) or without its last part (580.65) means "
               "that branch's first release the data knows; the output says which.")
GPU_HELP = "A GPU of the target (repeatable; sm_86, 8.6 or a name). Default: the probed / snapshot GPUs."
CUDA_HELP = "Target CUDA line: builds for CUDA X.Y or an older X.y (12 = any 12.x)."


def target_options(fn: Callable) -> Callable:
    """Add --python, --python-version, --platform, --driver, --gpu and --cuda (parameters python_opt,
    python_version, platform, driver, gpus, cuda)."""
    options = [
        click.option("--python", "python_opt", metavar="PATH", help=PYTHON_HELP),
        click.option("--python-version", "python_version", metavar="X.Y", help=PYTHON_VERSION_HELP),
        click.option("--platform", "platform", type=click.Choice(PLATFORM_CHOICES), help=PLATFORM_HELP),
        click.option("--driver", metavar="VER", help=DRIVER_HELP),
        click.option("--gpu", "gpus", multiple=True, metavar="sm_XX|NAME", help=GPU_HELP, shell_complete=complete_gpu),
        click.option("--cuda", metavar="X.Y", help=CUDA_HELP),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def note(message: str) -> None:
    click.echo(f"envdoctor: note: {message}", err=True)


def _xy(version: str) -> str:
    return ".".join(str(version).strip().split(".")[:2])


def python_target(python_opt: Optional[str], python_version: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """(interpreter path, X.Y) from --python / --python-version; ``--python 3.X`` still works, with a warning."""
    from envdoctor.errors import BadInput

    path, version = python_opt, None
    deprecated = python_opt if python_opt and _PY_VERSION.match(python_opt) else None  # `--python 3.X`
    if deprecated is not None:
        path, version = None, _xy(deprecated)
    if python_version is not None:
        if not _PY_VERSION.match(python_version):
            raise BadInput(f"--python-version {python_version!r} is not a Python version (e.g. 3.11)")
        if version and version != _xy(python_version):
            raise BadInput(f"--python {python_opt} and --python-version {python_version} disagree")
        version = _xy(python_version)
    if deprecated is not None:  # after the checks: bad input stays one line
        click.echo(f"envdoctor: warning: --python {deprecated.strip()} is deprecated for a version; "
                   f"use --python-version {version}", err=True)
    return path, version


def driver_os(platform: Optional[str]) -> str:
    """Whose driver numbering a target uses: WSL2 runs the Windows driver."""
    return "windows" if platform in ("win-amd64", "wsl2") else "linux"


def known_drivers(m: Any, os_: str = "linux") -> List[str]:
    """Every driver version the data names for os_: toolkit, bundled and minor-version-compatibility drivers."""
    out: List[Optional[str]] = []
    for r in m.cuda_releases:
        out += [r.driver(os_), getattr(r, f"bundled_driver_{os_}", None)]
    out += [row.floor(os_) for row in m.mvc.values()]
    return [v for v in out if v]


def resolve_driver(m: Any, text: Optional[str], os_: str = "linux") -> Optional[str]:
    """--driver VER as a full version: a branch (580) or a branch and minor (580.65) is that branch's first
    release the data knows (580.65.06), said on stderr. A full version, or one the data has no release
    of, is taken as given."""
    from envdoctor.errors import BadInput
    from packaging.version import Version

    if text is None:
        return None
    value = text.strip()
    if not _DRIVER.match(value):
        raise BadInput(f"--driver {text!r} is not a driver version (e.g. 535.104.05, or a branch: 580)")
    given = tuple(int(p) for p in value.split("."))
    if len(given) >= 3:
        return value
    cands = sorted({v for v in known_drivers(m, os_) if tuple(Version(v).release[:len(given)]) == given},
                   key=Version)
    full = [v for v in cands if len(Version(v).release) > len(given)] or cands
    if not full or full[0] == value:
        return value
    note(f"--driver {value} taken as {full[0]}, the first release of {value} the compatibility data knows "
         f"(give the full version if yours is newer)")
    return full[0]


def check_cuda(m: Any, cuda: Optional[str]) -> Optional[str]:
    """--cuda X.Y (or a major, 12) validated against the data's CUDA lines."""
    from envdoctor.errors import BadInput

    if cuda is None:
        return None
    value = cuda.strip()
    series = m.cuda_series()
    if not re.match(r"^\d{1,2}(\.\d{1,2})?$", value) or (
            "." in value and value not in series) or ("." not in value and not any(s.split(".")[0] == value
                                                                                   for s in series)):
        raise BadInput(f"--cuda {cuda!r}: not a CUDA line the data knows ({', '.join(series)})")
    return value

