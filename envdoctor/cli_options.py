"""The click pieces every command's ``cli.py`` shares, and the only place besides those modules that imports click:
the numeric option types (:class:`Seconds`, :class:`Count`), the options that look at a machine
(:func:`machine_options`), state a target (:func:`target_options`), choose a findings format
(:func:`format_option`) or write through a dangling symlink (:data:`force_option`), and the shell-completion
callbacks for rule IDs, table names and GPU names.

The numeric types: ``click.FloatRange`` accepts ``nan`` (no comparison is true for it), so ``--timeout nan`` used
to pass: probes failed and a hanging child was never killed; ``click.IntRange`` takes Unicode digits
(``int("١٢")`` is 12) and has no maximum unless given one. These accept a plain number written in ASCII digits
that is finite and within the option's range; anything else is a usage error: one line, exit 2.

Module-level imports stay light: this module is imported at every start of ``envdoctor``; the completion
callbacks import the data and the rules only when the shell asks (start-up speed).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import click
from click.shell_completion import CompletionItem

from envdoctor import cli_spec
from envdoctor.formats.registry import FORMATS, names
from envdoctor.target_options import PLATFORM_CHOICES

_DECIMAL = re.compile(cli_spec.DECIMAL, re.ASCII)
_INTEGER = re.compile(cli_spec.INTEGER, re.ASCII)


# --------------------------------------------------------------------------- numeric types


class Number(click.ParamType):
    """A finite number from `minimum` to `maximum` (both included); an integer with ``integer=True``."""

    name = "number"
    metavar = "NUMBER"
    unit = ""
    integer = False

    def __init__(self, minimum: float, maximum: float) -> None:
        if not (math.isfinite(minimum) and math.isfinite(maximum) and minimum <= maximum):
            raise ValueError("a Number needs finite bounds, minimum <= maximum")
        self.minimum = minimum
        self.maximum = maximum

    def get_metavar(self, param: click.Parameter, ctx: Optional[click.Context] = None) -> Optional[str]:
        return self.metavar

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        what = f"a {'whole ' if self.integer else ''}number" + (f" of {self.unit}" if self.unit else "")
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            number: float = value  # a default, or a caller passing a number
        else:
            text = str(value).strip()
            if not (_INTEGER if self.integer else _DECIMAL).fullmatch(text):
                self.fail(f"{str(value)!r} is not {what}", param, ctx)
            number = int(text) if self.integer else float(text)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.integer and number != int(number):
            self.fail(f"{value!r} is not {what}", param, ctx)
        if not self.minimum <= number <= self.maximum:
            self.fail(f"{value!r} is out of range: give {self.minimum:g} to {self.maximum:g}"
                      + (f" {self.unit}" if self.unit else ""), param, ctx)
        return int(number) if self.integer else float(number)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.minimum:g}, {self.maximum:g})"


class Seconds(Number):
    """A duration in seconds (> 0)."""

    name = "seconds"
    metavar = "SECONDS"
    unit = "seconds"

    def __init__(self, minimum: float, maximum: float) -> None:
        if not minimum > 0:
            raise ValueError("Seconds needs a minimum > 0")
        super().__init__(minimum, maximum)


class Count(Number):
    """How many of something: a whole number."""

    name = "count"
    metavar = "N"
    integer = True


# --------------------------------------------------------------------------- completion


def _matrices() -> Any:
    from envdoctor.knowledge import load_matrices  # the data: only when the shell asks

    return load_matrices()


def _complete(values: Iterable[str], incomplete: str) -> List[CompletionItem]:
    low = incomplete.lower()
    out: List[CompletionItem] = []
    seen = set()
    for v in values:
        if v and v not in seen and v.lower().startswith(low):
            seen.add(v)
            out.append(CompletionItem(v))
    return out


def complete_gpu(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    """--gpu: the architectures (sm_XX) and GPU names of matrices/gpus.toml."""
    try:
        m = _matrices()
        archs = sorted(m.archs.values(), key=lambda a: tuple(int(x) for x in a.cc.split(".")))
        return _complete([a.sm for a in archs] + sorted(g.name for g in m.gpus), incomplete)
    except Exception:  # noqa: BLE001 - completion never breaks the shell
        return []


def complete_rule_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    """--only / --skip / explain ID: rule IDs and names (a comma list completes its last item)."""
    head, _, last = incomplete.rpartition(",")
    prefix = head + "," if head else ""
    try:
        from envdoctor.rules.engine import all_rules  # every rule module: only when the shell asks

        rules = all_rules()
        items = _complete([r.id for r in rules] + [r.name for r in rules], last)
    except Exception:  # noqa: BLE001
        return []
    return [CompletionItem(prefix + i.value) for i in items]


def complete_table(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    """matrices show TABLE: the names of the bundled tables."""
    try:
        from envdoctor.knowledge.rows import TABLE_NAMES

        return _complete(TABLE_NAMES, incomplete)
    except Exception:  # noqa: BLE001
        return []


# --------------------------------------------------------------------------- options


# the completion callbacks an envdoctor.cli_spec.Opt names
COMPLETERS = {"rule_ids": complete_rule_ids}


def click_option(o: cli_spec.Opt) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option (or argument) declared by `o` (envdoctor.cli_spec: the fast parser reads the same row)."""
    if o.argument:
        return click.argument(o.dest, shell_complete=COMPLETERS[o.complete] if o.complete else None)
    kwargs: Dict[str, Any] = {"metavar": o.metavar, "help": o.help}
    if o.default is not None:  # (click's own default is a sentinel, not None)
        kwargs["default"] = o.default
    if o.flag:
        kwargs["is_flag"] = True
    if o.multiple:
        kwargs["multiple"] = True
    if o.show_default:
        kwargs["show_default"] = True
    if o.complete:
        kwargs["shell_complete"] = COMPLETERS[o.complete]
    if o.kind == "seconds":
        kwargs["type"] = Seconds(*o.bounds)
    elif o.kind == "choice":
        kwargs["type"] = click.Choice(o.choices)
    elif o.kind == "format":
        kwargs["type"] = FormatChoice()
    return click.option(*o.decls, o.dest, **kwargs)


def spec_options(opts: Sequence[cli_spec.Opt]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Every option of `opts`, in that order (the order of the help's list)."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for o in reversed(opts):
            fn = click_option(o)(fn)
        return fn

    return apply


def machine_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that looks at a machine."""
    return spec_options(cli_spec.MACHINE)(fn)


force_option = click_option(cli_spec.FORCE)


class FormatChoice(click.Choice):
    """`--format` over the registry's names as they are when the command line is parsed (so a format registered
    after the command was defined is offered and accepted)."""

    name = "format"

    def __init__(self) -> None:
        super().__init__(names())

    @property
    def choices(self) -> tuple:  # noqa: D401 - click reads self.choices
        return tuple(FORMATS)

    @choices.setter
    def choices(self, value: Any) -> None:  # click.Choice.__init__ assigns it; the registry is the truth
        pass


def format_option(default: str = "text") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The `--format` option of every command that reports findings."""
    return click_option(cli_spec.format_opt(default))


PYTHON_HELP = ("Target Python environment: an interpreter of this machine to inspect (PATH). A version here "
               "(--python 3.11) is the deprecated spelling of --python-version.")
PYTHON_VERSION_HELP = "Target Python version (3.11), for a machine that is not this one."
PLATFORM_HELP = ("Target platform (wsl2: Linux wheels, Windows driver). Default: the machine's; linux-x86_64 for "
                 "stated facts.")
DRIVER_HELP = ("Target NVIDIA driver (535.104.05). A branch alone (580) or without its last part (580.65) means "
               "that branch's first release the data knows; the output says which.")
GPU_HELP = "A GPU of the target (repeatable; sm_86, 8.6 or a name). Default: the probed / snapshot GPUs."
GLIBC_HELP = ("Target glibc (2.35), for Linux: which manylinux wheels fit. Default: the machine's; "
              "2.35 for stated facts.")
CUDA_HELP = "Target CUDA line: builds for CUDA X.Y or an older X.y (12 = any 12.x)."


def target_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add --python, --python-version, --platform, --glibc, --driver, --gpu and --cuda (parameters python_opt,
    python_version, platform, glibc, driver, gpus, cuda); their meaning: envdoctor.target_options, docs/target.md."""
    options = [
        click.option("--python", "python_opt", metavar="PATH", help=PYTHON_HELP),
        click.option("--python-version", "python_version", metavar="X.Y", help=PYTHON_VERSION_HELP),
        click.option("--platform", "platform", type=click.Choice(PLATFORM_CHOICES), help=PLATFORM_HELP),
        click.option("--glibc", metavar="X.Y", help=GLIBC_HELP),
        click.option("--driver", metavar="VER", help=DRIVER_HELP),
        click.option("--gpu", "gpus", multiple=True, metavar="sm_XX|NAME", help=GPU_HELP, shell_complete=complete_gpu),
        click.option("--cuda", metavar="X.Y", help=CUDA_HELP),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn
