"""The `envdoctor` command line.

Exit codes: 0 no error (warnings allowed); 1 the doctor found an error (with
--strict also a warning); 2 bad usage, bad input, or envdoctor itself failed.
Every failure reaches the user as one line on stderr, never a traceback
(set ENVDOCTOR_DEBUG=1 to see one).

This module and every command's ``cli.py`` only translate options: the work is in envdoctor.doctor and each
command's core. The process entry (signals, the one-line errors, the quick exit) is envdoctor.entry, which sends a
plain `check` / `probe` / `rules` / `explain` line straight to its body (envdoctor.commands_run) without click;
every other line comes here (:func:`click_main`). Imports inside functions here are for start-up speed: a command's module, the snapshot model and
the subprocess module load only when used.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Dict, List, Optional, Tuple

import click

from envdoctor import __version__, cli_spec
from envdoctor.cli_options import spec_options
from envdoctor.emit import write_stdout
from envdoctor.errors import EXIT_USAGE, Aborted


# Every command besides `probe`, as name -> (module, attribute): a command's module is imported only when that
# command runs, so `check` never pays for `gate`'s imports, and `envdoctor --help` lists them from SUMMARIES
# (each command's first help paragraph; tests/test_cli_layering.py keeps the two equal) without importing any.
COMMANDS: Dict[str, Tuple[str, str]] = {
    "check": ("envdoctor.commands", "check"),
    "rules": ("envdoctor.commands", "rules_cmd"),
    "explain": ("envdoctor.commands", "explain"),
    "matrices": ("envdoctor.knowledge.cli", "matrices"),
    "lock": ("envdoctor.lock.cli", "lock"),
    "smoke": ("envdoctor.smoke.cli", "smoke"),
    "gate": ("envdoctor.gate.cli", "gate"),
    "onboard": ("envdoctor.onboard.cli", "onboard"),
    "fleet": ("envdoctor.fleet.cli", "fleet"),
    "mcp": ("envdoctor.mcpserver.cli", "mcp"),
}
SUMMARIES: Dict[str, str] = {
    "check": "Judge the machine: findings with IDs, evidence and fixes.",
    "rules": "List the doctor's rules (every family: machine, smoke, gate).",
    "explain": "Explain a rule: its rationale, an example, the fix, references and the source file that registers it.",
    "matrices": "The compatibility data: list and show the tables, verify them against the package index, refresh "
                "them.",
    "lock": "Pin torch / tensorflow / jax builds that fit together and fit the machine (or --cuda / --driver / "
            "--snapshot): a requirements-cuda.txt for pip and uv, or an environment.yml for conda.",
    "smoke": "Run a small program per framework (torch, tensorflow, jax, cupy) in its own process: import, devices, "
             "matmul and conv checked against a CPU reference, mixed precision, the compiler path.",
    "gate": "Stop a doomed install before the download: would the torch / tensorflow / jax builds that these "
            "requirements*.txt / pyproject.toml / environment.yml / pylock.toml / uv.lock files install work on "
            "the target?",
    "onboard": "From a bare machine to a verified environment: probe -> check (stop with the exact commands when "
               "the NVIDIA driver is missing or broken) -> lock builds for this machine (CPU builds without an "
               "NVIDIA GPU) -> create a venv (pip or uv) or conda environment -> install the lock -> smoke-test it "
               "-> write a Markdown and an HTML report in the environment.",
    "fleet": "Many nodes: ingest their snapshots, group them by configuration, gate an install against all of them.",
    "mcp": "Serve check, probe, explain, lock, gate and rules as tools of an MCP server on stdio, for AI assistants "
           "(needs the optional extra: pip install 'envdoctor[mcp]').",
}


class LazyGroup(click.Group):
    """A group whose commands are imported when used (see COMMANDS); its help lists them from SUMMARIES."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name in COMMANDS and name not in self.commands:
            module, attr = COMMANDS[name]
            cmd: click.Command = getattr(importlib.import_module(module), attr)
            return cmd
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their short help, as click writes them, without importing a lazy command."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            cmd = self.commands.get(name) or click.Command(name, help=SUMMARIES[name])  # a stand-in: same rules
            rows.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envdoctor")
def cli() -> None:
    """Will torch / tensorflow / jax on this machine really use the GPU? If not, why, and what to install."""


@cli.command()
@spec_options(cli_spec.PROBE)
def probe(**params: Any) -> None:
    """Take a snapshot of the machine: driver, GPUs, toolkits, cuDNN, frameworks, loader paths."""
    from envdoctor import commands_run

    commands_run.probe(**params)


def _usage_message(exc: click.UsageError) -> str:
    """click's message, with the options it suggests for a misspelt one in the order of likeness (click sorts them
    by name, so '--formt' offered '--force' first)."""
    if isinstance(exc, click.NoSuchOption) and exc.possibilities:
        near = list(exc.possibilities)[:3]  # ranked by difflib.get_close_matches
        return f"{exc.message} Did you mean {' or '.join(repr(x) for x in near)}?"
    return exc.format_message()


def click_main(argv: Optional[List[str]]) -> Any:
    """Parse and run `argv` (None: sys.argv) with click; click's usage errors as one line, exit 2. What is left
    (the command's own failures) is envdoctor.entry.finish's, the same on the fast door."""
    try:
        return cli.main(args=argv, prog_name="envdoctor", standalone_mode=False)
    except click.exceptions.Abort as exc:  # click turns Ctrl-C into Abort
        raise Aborted() from exc.__cause__
    except click.UsageError as exc:  # one line, like every other failure
        if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
            # a bare `envdoctor` asks for nothing wrong: the help, as pip and flutter answer it
            write_stdout(exc.ctx.get_help() + "\n" if exc.ctx is not None else "")
            sys.exit(0)
        cmd = exc.ctx.command_path if exc.ctx is not None else "envdoctor"
        click.echo(f"{cmd}: error: {_usage_message(exc)} (see '{cmd} --help')", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code if exc.exit_code != 1 else EXIT_USAGE)
