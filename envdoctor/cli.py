"""The `envdoctor` command line.

Exit codes: 0 no error (warnings allowed); 1 the doctor found an error (with
--strict also a warning); 2 bad usage, bad input, or envdoctor itself failed.
Every failure reaches the user as one line on stderr, never a traceback
(set ENVDOCTOR_DEBUG=1 to see one).
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Callable, Optional

import click

from envdoctor import __version__
from envdoctor.errors import EXIT_USAGE, BadInput, EnvdoctorError
from envdoctor.options import Seconds

FORMATS_PROBE = ("text", "json")


def machine_options(fn: Callable) -> Callable:
    """Options shared by every command that looks at a machine."""

    @click.option("--python", "python_path", metavar="PATH", help="Inspect the environment of this Python interpreter.")
    @click.option("--root", "root_dir", metavar="DIR", help="Read system files under DIR instead of / (a mounted image).")
    @click.option("--snapshot", "snapshot_file", metavar="FILE", help="Judge a saved snapshot instead of probing.")
    @click.option("--timeout", type=Seconds(0.1, 600), default=5.0, show_default=True,
                  help="Seconds each external command may take.")
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


# Every command with -o FILE takes --force too (envdoctor.outfile: a dangling symlink is refused without it).
force_option = click.option("--force", "force_output", is_flag=True,
                            help="With -o: write through a dangling symlink (its target is created).")


def obtain_snapshot(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float,
                    kernels: bool = False):
    """Probe the machine (or load a saved snapshot); bad input raises BadInput."""
    if snapshot_file:
        if python_path or root_dir:
            raise BadInput("--snapshot cannot be combined with --python or --root")
        from envdoctor.snapshot_io import load_snapshot

        return load_snapshot(snapshot_file)
    from envdoctor.fsroot import Root
    from envdoctor.probes import ProbeContext, run_probes

    root = Root("/")
    if root_dir:
        if not os.path.exists(root_dir):
            raise BadInput(f"--root {root_dir}: no such directory")
        if not os.path.isdir(root_dir):
            raise BadInput(f"--root {root_dir}: not a directory")
        root = Root(os.path.abspath(root_dir))
    # An image's root carries none of this shell's variables: with --root only PATH (to find
    # commands) is kept, so the host's LD_LIBRARY_PATH or CUDA_HOME never describe the image.
    env = dict(os.environ) if root.is_live else {"PATH": os.environ.get("PATH", os.defpath)}
    ctx = ProbeContext(root=root, env=env, timeout=timeout, target_python=python_path, kernels=kernels)
    return run_probes(ctx)  # a --python that is not Python raises BadInput from its probe


def snapshot_dict(snap, redact: bool) -> dict:
    data = snap.to_dict()
    if redact and not snap.redacted:
        from envdoctor.redact import redact_dict

        data = redact_dict(data)
    return data


def emit(text: str, output: Optional[str], force: bool = False, redact: bool = True, snapshot=None) -> None:
    """Print a command's output, or write it to -o FILE by envdoctor.outfile's rules (force: a dangling symlink's
    target is made), through the one redactor unless --no-redact."""
    if redact:
        from envdoctor.redact import redact_output

        text = redact_output(text, snapshot)
    if output:
        from envdoctor.outfile import write_output

        write_output(output, text, force=force)
    else:
        click.echo(text, nl=not text.endswith("\n"))


class LazyGroup(click.Group):
    """A group whose commands are imported when used (see envdoctor.commands.COMMANDS)."""

    def _lazy(self) -> dict:
        from envdoctor.commands import COMMANDS

        return COMMANDS

    def list_commands(self, ctx: click.Context) -> list:
        return sorted(set(super().list_commands(ctx)) | set(self._lazy()))

    def get_command(self, ctx: click.Context, name: str):
        if name in self._lazy() and name not in self.commands:
            import importlib

            module, attr = self._lazy()[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


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
def probe(python_path, root_dir, snapshot_file, timeout, fmt, output, force_output, no_redact, fleet, node_name,
          with_kernels):
    """Take a snapshot of the machine: driver, GPUs, toolkits, cuDNN, frameworks, loader paths."""
    snap = obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    data = snapshot_dict(snap, redact=not no_redact)
    if fleet or node_name:  # an explicit opt-in: the node name is what a fleet report is about
        data["platform"]["hostname"] = (node_name or os.environ.get("ENVDOCTOR_NODE_NAME")
                                        or os.environ.get("SLURMD_NODENAME") or snap.platform.hostname)
        output = output.replace("%N", data["platform"]["hostname"] or "node") if output else output
    if fmt == "json":
        from envdoctor.snapshot_io import dump_json

        emit(dump_json(data), output, force_output, redact=not no_redact, snapshot=snap)
    else:
        from envdoctor.formats.snapshot_text import render_snapshot_text
        from envdoctor.snapshot import Snapshot

        emit(render_snapshot_text(Snapshot.from_dict(data)), output, force_output, redact=not no_redact,
             snapshot=snap)


def _on_signal(signum: int, frame) -> None:
    """SIGTERM / SIGHUP / SIGINT: kill the running commands (and refuse new ones), then end with 128+n
    (SIGINT goes on as KeyboardInterrupt, so onboard records the interrupted step; exit 130).
    A second signal while that unwinds ends envdoctor at once."""
    import signal

    from envdoctor import subproc

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
        import signal

        super().__init__(128 + signum)
        self.signame = signal.Signals(signum).name


def install_signal_handlers() -> None:
    """Children never outlive envdoctor: see envdoctor.subproc. A signal the caller ignores (nohup) stays ignored."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, _on_signal)


def main(argv: Optional[list] = None) -> None:
    if argv is not None:  # a caller running a command in-process
        return _main(argv)
    install_signal_handlers()  # the process's entry point
    try:
        _main(None)
    except SystemExit as exc:
        _exit_now(exc.code)
        raise


def _exit_now(code) -> None:
    """End the process without tearing the interpreter down (that costs check ~20 ms of its start-up budget,
    issue 18): the output is flushed and the atexit handlers (envdoctor.subproc's) run as on a normal exit.
    Only when no other thread is left; otherwise, and in-process, the caller exits as usual."""
    import atexit
    import threading

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


def _main(argv: Optional[list]) -> None:
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
