"""The process entry of ``envdoctor`` (the console script and ``python -m envdoctor``): signal handlers, the
collector's thresholds, one way of turning failures into one line on stderr, the quick exit; and the fast door.

A plain `check` or `probe` line (envdoctor.cli_spec.parse) runs its body (envdoctor.commands_run) without
importing click, which with what it drags in (inspect, typing, datetime, uuid, ...) costs a check ~20 ms of its
start-up. Every other line, and every line the fast parser leaves alone, goes to click as before
(envdoctor.cli). ``ENVDOCTOR_NO_FAST_ARGV=1`` sends every line to click (the tests compare the two doors).

Both doors end in :func:`finish`, so exit codes and the one-line errors are the same function's on either; the
fast door does around the body what click's ``main`` does around a callback (a blank line after Ctrl-C, exit 1 on
a closed stdout). Nothing heavy is imported here before the door is chosen; click is imported on the fast door
only to write an error line (so its bytes are click's).
"""
from __future__ import annotations

import atexit
import errno
import gc
import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing itself is not imported at run time here)
    from types import FrameType
    from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple

FAST_OFF = "ENVDOCTOR_NO_FAST_ARGV"
COMPLETE_VAR = "_ENVDOCTOR_COMPLETE"  # click's shell-completion request for prog_name "envdoctor"


def main(argv: Optional[List[str]] = None, early: Optional[List[int]] = None) -> None:
    """The process's entry point (argv given: a caller running a command in-process, no signal handlers).
    `early`: the signals envdoctor.__main__'s first handler remembered before this one went in."""
    if argv is not None:
        _dispatch(argv)
    install_signal_handlers()  # first, so a signal during the imports is ours
    try:
        try:
            if early:
                _on_signal(early[0], None)
            # Start-up makes many small objects and few cycles: ~65 young collections cost a check ~7 ms. A larger first generation keeps collection on for long runs (fleet ingest) at a bounded cost.
            gc.set_threshold(20_000, 20, 20)
            _dispatch(None)
        except KeyboardInterrupt:  # raised by the handler outside finish() (during an import, say)
            _leave(130, _signal_line(signal.SIGINT))
        except Stopped as exc:
            _leave(exc.status, f"envdoctor: stopped by {exc.signame}\n")
    except SystemExit as exc:
        _exit_now(exc.code)
        raise


def fast_line(argv: List[str]) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(command, params) when `argv` takes the fast door, else None (click's door)."""
    if os.environ.get(FAST_OFF) or os.environ.get(COMPLETE_VAR) or os.name == "nt":  # (click expands globs there)
        return None
    from envdoctor.cli_spec import parse

    return parse(argv)


def _dispatch(argv: Optional[List[str]]) -> NoReturn:
    line = fast_line(sys.argv[1:] if argv is None else list(argv))
    if line is None:
        from envdoctor.cli import click_main

        finish(lambda: click_main(argv))
    name, params = line
    finish(lambda: _as_click_calls(name, params))


class _Pacified:
    """A stream whose flush ignores a closed pipe (what click puts in place of stdout / stderr after EPIPE)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as e:
            if e.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)


def _as_click_calls(name: str, params: Dict[str, Any]) -> Any:
    """Run command `name`'s body (envdoctor.commands_run) as click's ``main`` imports and runs a command: Ctrl-C
    or the end of stdin end the line on stderr and abort; a closed stdout exits 1 quietly."""
    from envdoctor.errors import Aborted

    try:
        import envdoctor.commands_run as bodies

        return getattr(bodies, name)(**params)
    except (EOFError, KeyboardInterrupt) as exc:
        say(None)  # the blank line closes the terminal's ^C echo
        raise Aborted() from exc
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)
        sys.stderr = _Pacified(sys.stderr)
        sys.exit(1)


def say(line: Optional[str]) -> None:
    """One line on stderr, as click writes it (None: an empty line)."""
    import click  # only on the way out with a message

    if line is None:
        click.echo(file=sys.stderr)
    else:
        click.echo(line, err=True)


def finish(call: Callable[[], Any]) -> NoReturn:
    """Run one command (either door) and exit: every failure as one line on stderr, never a traceback (set
    ENVDOCTOR_DEBUG=1 to see one); exit codes in envdoctor.errors."""
    from envdoctor.errors import Aborted, EnvdoctorError

    try:
        rc = call()
    except Aborted as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            say("envdoctor: interrupted")
            sys.exit(130)
        say("envdoctor: aborted")
        sys.exit(2)
    except EnvdoctorError as exc:
        say(f"envdoctor: error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say("envdoctor: interrupted")
        sys.exit(130)
    except Stopped as exc:
        _LEAVING.append(True)
        say(f"envdoctor: stopped by {exc.signame}; its commands were killed")
        sys.exit(exc.code)  # a plain SystemExit: main() says nothing more
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - never a traceback for users
        if os.environ.get("ENVDOCTOR_DEBUG"):
            raise
        say(f"envdoctor: internal error: {type(exc).__name__}: {exc} (set ENVDOCTOR_DEBUG=1 for details)")
        sys.exit(2)
    sys.exit(rc if isinstance(rc, int) else 0)


# --------------------------------------------------------------------------- signals and the quick exit


# The handler raises at most once per process (the first signal: KeyboardInterrupt or Stopped, which main() and
# finish() turn into one line and 128+n); any later one, or one after main() began to leave, ends the process
# at once. It imports nothing: a signal can arrive in the middle of an import, and importing from a handler then
# meets a partially initialised module (or the import lock held by the very frame it interrupted).
_SIGNALLED: List[int] = []
_LEAVING: List[bool] = []


def _on_signal(signum: int, frame: Optional[FrameType]) -> None:
    """SIGTERM / SIGHUP / SIGINT: kill the running commands (and refuse new ones), then end with 128+n
    (SIGINT goes on as KeyboardInterrupt, so onboard records the interrupted step; exit 130).
    A second signal while that unwinds, or any signal once envdoctor is leaving, ends envdoctor at once."""
    again = bool(_SIGNALLED) or bool(_LEAVING)
    _SIGNALLED.append(signum)
    subproc = sys.modules.get("envdoctor.subproc")  # loaded by whatever ran a command; never imported here
    shutdown = getattr(subproc, "shutdown", None)
    if shutdown is not None:
        try:
            shutdown()
        except BaseException:  # noqa: BLE001 - a half-imported module or a nested signal: leave all the same
            again = True
    if again:
        os._exit(128 + signum)
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        # The import machinery was interrupted, maybe inside one of its weakref callbacks, where an exception is
        # printed as "Exception ignored" and dropped: the run would go on and exit 0. Nothing of envdoctor's is
        # half done there that unwinding would finish, so say the one line and end now.
        try:
            os.write(2, _signal_line(signum).encode())
        except OSError:
            pass
        os._exit(128 + signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(signum)


def _signal_line(signum: int) -> str:
    if signum == signal.SIGINT:
        return "envdoctor: interrupted\n"
    return f"envdoctor: stopped by {_SIGNAMES.get(signum, f'signal {signum}')}\n"


def _leave(code: int, line: str) -> NoReturn:
    """End after a signal's exception reached main(): one line on stderr (no click: its import may be the thing
    interrupted), the exit status; from here a further signal ends the process at once."""
    _LEAVING.append(True)
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    raise SystemExit(code)


class Stopped(SystemExit):
    """Raised by the signal handler: unwinds like sys.exit(128+n); main() says why, last."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.status = 128 + signum
        self.signame = _SIGNAMES.get(signum, f"signal {signum}")


_SIGNAMES = {getattr(signal, n): n for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n)}


def install_signal_handlers() -> None:
    """Children never outlive envdoctor: see envdoctor.subproc. A signal the caller ignores (nohup) stays ignored."""
    # (threading is not imported for this: its import is a window in which a signal would find no handler)
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        current = signal.getsignal(sig)
        if current in (signal.SIG_DFL, signal.default_int_handler) or getattr(current, "envdoctor_early", False):
            try:
                signal.signal(sig, _on_signal)
            except ValueError:  # not the main thread: the caller's handlers stay
                return


def _exit_now(code: Any) -> None:
    """End the process without tearing the interpreter down (that costs check ~20 ms of its start-up budget):
    the output is flushed and the atexit handlers (envdoctor.subproc's) run as on a normal exit.
    Only when no other thread is left; otherwise, and in-process, the caller exits as usual."""
    _LEAVING.append(True)  # a signal from here on ends the process at once, never an exception in an atexit hook
    threading = sys.modules.get("threading")  # never imported: no other thread was started
    if threading is not None and threading.active_count() > 1:
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
