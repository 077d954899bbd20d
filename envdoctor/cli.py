"""The `envdoctor` command line.

Exit codes: 0 no error (warnings allowed); 1 the doctor found an error (with
--strict also a warning); 2 bad usage, bad input, or envdoctor itself failed.
Every failure reaches the user as one line on stderr, never a traceback
(set ENVDOCTOR_DEBUG=1 to see one).

This module and every command's ``cli.py`` only translate options: the work is in envdoctor.doctor and each
command's core. Imports inside functions here are for start-up speed: a command's module, the snapshot model and
the subprocess module load only when used.
"""
from __future__ import annotations

import atexit
import gc
import importlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any, Dict, List, NoReturn, Optional, Tuple

import click

from envdoctor import __version__
from envdoctor.cli_options import force_option, machine_options
from envdoctor.doctor import obtain_snapshot, prefetch, snapshot_dict
from envdoctor.emit import emit
from envdoctor.errors import EXIT_USAGE, EnvdoctorError

FORMATS_PROBE = ("text", "json")

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
@machine_options
@click.option("--format", "fmt", type=click.Choice(FORMATS_PROBE), default="text", show_default=True)
@click.option("-o", "--output", metavar="FILE", help="Write the snapshot to FILE (atomically) instead of stdout "
              "(with --fleet, %N in FILE stands for the node name).")
@force_option
@click.option("--no-redact", is_flag=True, help="Keep GPU UUIDs, host name, home directory and secret-looking values.")
@click.option("--fleet", is_flag=True, help="For `envdoctor fleet`: keep the node name unredacted (the host name, or "
              "$ENVDOCTOR_NODE_NAME / $SLURMD_NODENAME when set); the rest is redacted as usual.")
@click.option("--node-name", metavar="NAME", help="Record NAME as the node name (implies --fleet).")
@click.option("--kernels", "with_kernels", is_flag=True,
              help="Also read the environment of every Jupyter kernel's interpreter (and the VS Code one).")
def probe(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float, fmt: str,
          output: Optional[str], force_output: bool, no_redact: bool, fleet: bool, node_name: Optional[str],
          with_kernels: bool) -> None:
    """Take a snapshot of the machine: driver, GPUs, toolkits, cuDNN, frameworks, loader paths."""
    prefetch(python_path, root_dir, snapshot_file, timeout)
    snap = obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    data = snapshot_dict(snap, redact=not no_redact)
    if fleet or node_name:  # an explicit opt-in: the node name is what a fleet report is about
        data["platform"]["hostname"] = (node_name or os.environ.get("ENVDOCTOR_NODE_NAME")
                                        or os.environ.get("SLURMD_NODENAME") or snap.platform.hostname)
        output = output.replace("%N", data["platform"]["hostname"] or "node") if output else output
    if fmt == "json":
        from envdoctor.snapshot_io import dump_json  # the snapshot model: not at every start (start-up speed)

        emit(dump_json(data), output, force_output, redact=not no_redact, snapshot=snap)
    else:
        from envdoctor.formats.snapshot_text import render_snapshot_text
        from envdoctor.snapshot import Snapshot

        emit(render_snapshot_text(Snapshot.from_dict(data)), output, force_output, redact=not no_redact,
             snapshot=snap)


def _on_signal(signum: int, frame: Optional[FrameType]) -> None:
    """SIGTERM / SIGHUP / SIGINT: kill the running commands (and refuse new ones), then end with 128+n
    (SIGINT goes on as KeyboardInterrupt, so onboard records the interrupted step; exit 130).
    A second signal while that unwinds ends envdoctor at once."""
    from envdoctor import subproc  # already loaded by whatever ran a command; not at every start

    first = not subproc.closing()
    subproc.shutdown()
    if not first:
        os._exit(128 + signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(signum)


class Stopped(SystemExit):
    """Raised by the signal handler: unwinds like sys.exit(128+n); main() says why, last."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signame = signal.Signals(signum).name


def install_signal_handlers() -> None:
    """Children never outlive envdoctor: see envdoctor.subproc. A signal the caller ignores (nohup) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, _on_signal)


def main(argv: Optional[List[str]] = None) -> None:
    if argv is not None:  # a caller running a command in-process
        _main(argv)
    install_signal_handlers()  # the process's entry point
    # Start-up makes many small objects and few cycles: ~65 young collections cost a check ~7 ms (issue 18).
    # A larger first generation keeps collection on for long runs (fleet ingest) at a bounded cost.
    gc.set_threshold(20_000, 20, 20)
    try:
        _main(None)
    except SystemExit as exc:
        _exit_now(exc.code)
        raise


def _exit_now(code: Any) -> None:
    """End the process without tearing the interpreter down (that costs check ~20 ms of its start-up budget,
    issue 18): the output is flushed and the atexit handlers (envdoctor.subproc's) run as on a normal exit.
    Only when no other thread is left; otherwise, and in-process, the caller exits as usual."""
    if threading.active_count() > 1:
        return
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the exit status still says how it went
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def _main(argv: Optional[List[str]]) -> NoReturn:
    try:
        rc = cli.main(args=argv, prog_name="envdoctor", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns Ctrl-C into Abort
            click.echo("envdoctor: interrupted", err=True)
            sys.exit(130)
        click.echo("envdoctor: aborted", err=True)
        sys.exit(EXIT_USAGE)
    except click.UsageError as exc:  # one line, like every other failure
        cmd = exc.ctx.command_path if exc.ctx is not None else "envdoctor"
        click.echo(f"{cmd}: error: {exc.format_message()} (see '{cmd} --help')", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code if exc.exit_code != 1 else EXIT_USAGE)
    except EnvdoctorError as exc:
        click.echo(f"envdoctor: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("envdoctor: interrupted", err=True)
        sys.exit(130)
    except Stopped as exc:
        click.echo(f"envdoctor: stopped by {exc.signame}; its commands were killed", err=True)
        raise
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - never a traceback for users
        if os.environ.get("ENVDOCTOR_DEBUG"):
            raise
        click.echo(f"envdoctor: internal error: {type(exc).__name__}: {exc} (set ENVDOCTOR_DEBUG=1 for details)", err=True)
        sys.exit(EXIT_USAGE)
    sys.exit(rc if isinstance(rc, int) else 0)
