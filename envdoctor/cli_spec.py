"""The options of `check`, `probe`, `rules` and `explain` (and the shared machine / --force / --format options) as
data, and a small parser over that data for the plain command lines (`check` starts without importing
click).

One declaration, two readers: envdoctor.cli_options builds the click options from these :class:`Opt` rows (so
help, completion and every error message stay click's), and :func:`parse` reads an argv with them when the line is
in its small subset: long options (``--x v``, ``--x=v``), the short ``-o FILE`` and ``-v``, flags, repeated
options, choices, a number of seconds, explain's one argument, ``--``. Anything else (an unknown option, ``-h`` /
``--help``, a missing value, a bad choice or number, a missing or extra argument, combined short flags) gives None,
and click parses the line as before, so a user sees click's answer. tests/test_fast_argv.py checks that whenever
:func:`parse` answers, its params are the ones click's own parse gives.

Click-free and light: imported before anything else by every start of ``envdoctor`` (envdoctor.entry).
"""
from __future__ import annotations

import math

from envdoctor.formats.registry import FORMATS

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing itself is not imported at run time here)
    from typing import Any, Dict, List, Optional, Tuple

# the syntax of a number on the command line (envdoctor.cli_options.Number): ASCII digits only
DECIMAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
INTEGER = r"[+-]?[0-9]+"


class Opt:
    """One option: its click declaration and what the fast parser needs.

    ``kind``: ``"text"`` (a string), ``"seconds"`` (a finite number within ``bounds``), ``"choice"`` (one of
    ``choices``) or ``"format"`` (a name of envdoctor.formats.registry.FORMATS as it is when the line is parsed).
    ``complete``: the name of a completion callback in envdoctor.cli_options.COMPLETERS. ``argument``: a
    required positional argument (no decls; click.argument), in the order of the command's rows.
    """

    __slots__ = ("decls", "dest", "flag", "multiple", "kind", "bounds", "choices", "default", "metavar", "help",
                 "show_default", "complete", "argument")

    def __init__(self, *decls: str, dest: str, flag: bool = False, multiple: bool = False, kind: str = "text",
                 bounds: Tuple[float, ...] = (), choices: Tuple[str, ...] = (), default: Any = None,
                 metavar: Optional[str] = None, help: Optional[str] = None, show_default: bool = False,
                 complete: Optional[str] = None, argument: bool = False) -> None:
        self.decls, self.dest, self.flag, self.multiple, self.kind = decls, dest, flag, multiple, kind
        self.bounds, self.choices, self.default, self.metavar, self.help = bounds, choices, default, metavar, help
        self.show_default, self.complete, self.argument = show_default, complete, argument

    def initial(self) -> Any:
        """The value click gives when the option is absent."""
        if self.flag:
            return False
        if self.multiple:
            return ()
        return self.value(self.default) if self.default is not None else None

    def value(self, text: Any) -> Any:
        """`text` converted as click converts it, or :data:`BAD` where click would refuse it (or might)."""
        if self.kind == "seconds":
            return seconds(text, *self.bounds)
        if self.kind == "choice":
            return text if text in self.choices else BAD
        if self.kind == "format":
            return text if text in FORMATS else BAD
        return text


BAD = object()  # a value the fast parser leaves to click


def seconds(text: Any, minimum: float, maximum: float) -> Any:
    """A number of seconds as envdoctor.cli_options.Seconds converts it, or BAD."""
    if isinstance(text, float):
        number = text
    else:
        import re  # only when --timeout is given

        value = str(text).strip()
        if not re.fullmatch(DECIMAL, value, re.ASCII):
            return BAD
        number = float(value)
    return number if math.isfinite(number) and minimum <= number <= maximum else BAD


# --------------------------------------------------------------------------- the options

MACHINE = (
    Opt("--python", dest="python_path", metavar="PATH", help="Inspect the environment of this Python interpreter."),
    Opt("--root", dest="root_dir", metavar="DIR", help="Read system files under DIR instead of / (a mounted image)."),
    Opt("--snapshot", dest="snapshot_file", metavar="FILE", help="Judge a saved snapshot instead of probing."),
    Opt("--timeout", dest="timeout", kind="seconds", bounds=(0.1, 600), default=5.0, show_default=True,
        help="Seconds each external command may take."),
)
# Every command with -o FILE takes --force too (envdoctor.outfile: a dangling symlink is refused without it).
FORCE = Opt("--force", dest="force_output", flag=True,
            help="With -o: write through a dangling symlink (its target is created).")
NO_REDACT = Opt("--no-redact", dest="no_redact", flag=True,
                help="Keep GPU UUIDs, host name, home directory and secret-looking values.")


def format_opt(default: str = "text") -> Opt:
    """The `--format` option of every command that reports findings."""
    return Opt("--format", dest="fmt", kind="format", default=default, show_default=True,
               help="Output format: text, json, markdown, junit, github, sarif, prometheus (or one a plugin adds).")


# probe's, rules' and explain's --format
TEXT_OR_JSON = Opt("--format", dest="fmt", kind="choice", choices=("text", "json"), default="text", show_default=True)

CHECK = MACHINE + (
    format_opt(),
    Opt("--strict", dest="strict", flag=True, help="Exit 1 on warnings too."),
    Opt("--only", dest="only", multiple=True, metavar="IDS", complete="rule_ids",
        help="Run only these rules (IDs, prefixes like ED1, or names; comma-separated)."),
    Opt("--skip", dest="skip", multiple=True, metavar="IDS", complete="rule_ids", help="Skip these rules."),
    Opt("-v", "--verbose", dest="verbose", flag=True, help="Show the evidence behind each finding."),
    NO_REDACT,
    Opt("-o", "--output", dest="output", metavar="FILE",
        help="Write the report to FILE (atomically) instead of stdout."),
    FORCE,
    Opt("--smoke", dest="with_smoke", flag=True,
        help="Also run `envdoctor smoke` (tiny kernels, each framework in a child process) and fold in its results."),
    Opt("--expect-cpu", dest="expect_cpu", multiple=True, metavar="FRAMEWORK",
        help="torch, tensorflow or jax is meant to run on the CPU: its CPU-only build is an info, not an error "
             "(also `expect-cpu = [...]` under [tool.envdoctor] in pyproject.toml or in envdoctor.toml)."),
    Opt("--kernels", dest="with_kernels", flag=True,
        help="Also judge every Jupyter kernel's interpreter (and the VS Code workspace one) like --python."),
)

PROBE = MACHINE + (
    TEXT_OR_JSON,
    Opt("-o", "--output", dest="output", metavar="FILE",
        help="Write the snapshot to FILE (atomically) instead of stdout (with --fleet, %N in FILE stands for the "
             "node name)."),
    FORCE,
    NO_REDACT,
    Opt("--fleet", dest="fleet", flag=True,
        help="For `envdoctor fleet`: keep the node name unredacted (the host name, or $ENVDOCTOR_NODE_NAME / "
             "$SLURMD_NODENAME when set); the rest is redacted as usual."),
    Opt("--node-name", dest="node_name", metavar="NAME", help="Record NAME as the node name (implies --fleet)."),
    Opt("--kernels", dest="with_kernels", flag=True,
        help="Also read the environment of every Jupyter kernel's interpreter (and the VS Code one)."),
)

RULES = (TEXT_OR_JSON,)
EXPLAIN = (Opt(dest="rule_id", argument=True, complete="rule_ids"), TEXT_OR_JSON)

# the commands the fast parser knows
COMMANDS = {"check": CHECK, "probe": PROBE, "rules": RULES, "explain": EXPLAIN}


# --------------------------------------------------------------------------- the parser


def parse(argv: List[str]) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(command, params) for ``envdoctor ARGV`` when it is a plain line of a command in COMMANDS, the params
    exactly as click would pass them to the command; None for anything else (click then parses it)."""
    if not argv or argv[0] not in COMMANDS:
        return None
    opts = COMMANDS[argv[0]]
    names = {decl: o for o in opts for decl in o.decls}
    params: Dict[str, Any] = {o.dest: o.initial() for o in opts}
    positional: List[str] = []
    rest = argv[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        i += 1
        if arg == "--":  # the rest is positional
            positional += rest[i:]
            break
        if arg.startswith("--"):
            name, eq, text = arg.partition("=")
        elif arg in ("-o", "-v"):
            name, eq, text = arg, "", ""
        elif not arg.startswith("-"):
            positional.append(arg)
            continue
        else:  # combined or attached short options, "-"
            return None
        o = names.get(name)
        if o is None:
            return None
        if o.flag:
            if eq:
                return None
            params[o.dest] = True
            continue
        if not eq:
            if i >= len(rest):
                return None
            text = rest[i]
            i += 1
        value = o.value(text)
        if value is BAD:
            return None
        params[o.dest] = params[o.dest] + (value,) if o.multiple else value
    arguments = [o for o in opts if o.argument]
    if len(positional) != len(arguments):  # click: a missing argument, or an unexpected extra one
        return None
    for o, text in zip(arguments, positional):
        params[o.dest] = text
    return argv[0], params
