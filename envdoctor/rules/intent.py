"""What the user says they want: frameworks expected to run on the CPU (`check --expect-cpu FRAMEWORK`,
`expect-cpu = [...]` under `[tool.envdoctor]` in pyproject.toml, or in an envdoctor.toml, both read from the
current directory).

The question envdoctor answers is "will it use the GPU": on a machine with a usable NVIDIA GPU a build that
cannot use it is an error unless the user said they expect that framework on the CPU. A command that knows
the user's intent puts it into `Context.extra["expect_cpu"]` (a frozenset, possibly empty); a command that
does not (gate judges an install plan) leaves it out, and the CPU-build rules keep their warning there.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import FrozenSet, Iterable, Optional

FRAMEWORKS = ("torch", "tensorflow", "jax")
_ALIASES = {"pytorch": "torch", "tf": "tensorflow", "tensorflow-cpu": "tensorflow", "jaxlib": "jax"}
CONFIG_FILES = ("envdoctor.toml", "pyproject.toml")


def normalise(values: Iterable[str], where: str) -> FrozenSet[str]:
    """{'torch', ...} from names (comma-separated allowed); an unknown name is bad input naming `where`."""
    from envdoctor.errors import BadInput

    out = set()
    for v in values or ():
        for name in str(v).split(","):
            n = name.strip().lower()
            if not n:
                continue
            n = _ALIASES.get(n, n)
            if n not in FRAMEWORKS:
                raise BadInput(f"{where}: unknown framework {name.strip()!r} (expected one of {', '.join(FRAMEWORKS)})")
            out.add(n)
    return frozenset(out)


def _table(data: dict, name: str) -> Optional[dict]:
    if name == "pyproject.toml":
        tool = data.get("tool")
        t = tool.get("envdoctor") if isinstance(tool, dict) else None
    else:
        t = data.get("tool", {}).get("envdoctor") if isinstance(data.get("tool"), dict) else None
        t = t if isinstance(t, dict) else data
    return t if isinstance(t, dict) else None


def configured(cwd: Optional[Path] = None) -> FrozenSet[str]:
    """expect-cpu from envdoctor.toml (top level or [tool.envdoctor]) and pyproject.toml ([tool.envdoctor]) in `cwd`.

    A pyproject.toml that does not mention envdoctor is the project's own business: it is not parsed (a broken one
    is no error of check's), as ruff and mypy leave a pyproject.toml without their table alone."""
    from envdoctor.errors import BadInput

    base = Path(cwd) if cwd is not None else Path.cwd()
    out: FrozenSet[str] = frozenset()
    for name in CONFIG_FILES:
        path = base / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            if name == "pyproject.toml":
                continue  # the project's file, not envdoctor's: one it cannot read says nothing about intent
            raise BadInput(f"{path}: cannot read it: {exc}")
        if name == "pyproject.toml" and "envdoctor" not in text:
            continue  # no [tool.envdoctor] in it (the usual project file): not parsed, and the TOML parser not imported
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python < 3.11
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"{path}: cannot read it: {exc}")
        table = _table(data, name)
        value = table.get("expect-cpu") if table is not None else None
        if value is None:
            continue
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise BadInput(f"{path}: expect-cpu must be a list of framework names")
        out |= normalise(value, f"{path}: expect-cpu")
    return out


def expect_cpu(ctx) -> Optional[FrozenSet[str]]:
    """The frameworks the user expects on the CPU, or None when the command does not know the user's intent."""
    v = (ctx.extra or {}).get("expect_cpu")
    return frozenset(v) if v is not None else None


def cpu_build_severity(ctx, framework: str, unstated: str = "warning") -> str:
    """A GPU-less build on a machine with a usable NVIDIA GPU: info when the user expects `framework` on the CPU,
    an error when they did not say so, `unstated` where the command does not know their intent."""
    wanted = expect_cpu(ctx)
    if wanted is None:
        return unstated
    return "info" if framework in wanted else "error"
