"""The one module that starts subprocesses.

Every command gets an exact argv (never a shell) and a timeout. A command that
hangs is killed together with its process group, so a GPU fallen off the bus
that makes nvidia-smi hang costs at most the timeout.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

DEFAULT_TIMEOUT = 5.0
MAX_OUTPUT = 1 << 20  # keep at most 1 MiB of each stream


@dataclass
class CmdResult:
    argv: list[str]
    status: str  # ok | missing | failed | timeout | error
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


@dataclass
class Runner:
    """Runs commands found on a PATH with a default timeout."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout: float = DEFAULT_TIMEOUT

    def which(self, name: str) -> str | None:
        if os.sep in name:
            return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
        return shutil.which(name, path=self.env.get("PATH", os.defpath))

    def run(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        stdin_text: str | None = None,
        on_stdout_line: Optional[Callable[[str], None]] = None,
        cancel: Optional[threading.Event] = None,
    ) -> CmdResult:
        """Run argv; with `on_stdout_line`, each stdout line is handed over as it arrives (streaming).

        In streaming mode stderr keeps its last MAX_OUTPUT bytes (the tail tells why a command
        crashed), and when the command ends whatever it left running in its process group is
        killed too, so a helper it spawned can neither outlive it nor hold its pipes open.
        Setting `cancel` (streaming only) kills the command early, reported like a timeout.
        """
        argv = list(argv)
        exe = self.which(argv[0])
        if exe is None:
            return CmdResult(argv, "missing", reason=f"{argv[0]}: not found on PATH")
        limit = self.timeout if timeout is None else timeout
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                [exe, *argv[1:]],
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env if env is not None else self.env),
                start_new_session=True,
            )
        except OSError as exc:
            return CmdResult(argv, "error", reason=f"{argv[0]}: cannot run: {exc.strerror or exc}")
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            return self._finish(argv, proc, limit, start, stdin_text, on_stdout_line, cancel)
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)

    def _finish(self, argv: list, proc: subprocess.Popen, limit: float, start: float, stdin_text: Optional[str],
                on_stdout_line: Optional[Callable[[str], None]], cancel: Optional[threading.Event]) -> CmdResult:
        if on_stdout_line is not None:
            return _stream(argv, proc, limit, start, on_stdout_line, stdin_text, cancel)
        try:
            out, err = proc.communicate(input=stdin_text.encode() if stdin_text is not None else None, timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                out, err = proc.communicate(timeout=1.0)
            except (subprocess.TimeoutExpired, ValueError):
                out, err = b"", b""
            return CmdResult(
                argv, "timeout", None, _text(out), _text(err), time.monotonic() - start,
                reason=f"{argv[0]}: no answer within {limit:g} s (killed)",
            )
        duration = time.monotonic() - start
        stdout, stderr = _text(out), _text(err)
        if proc.returncode != 0:
            first = (stderr.strip() or stdout.strip()).splitlines()
            detail = first[0][:200] if first else ""
            return CmdResult(
                argv, "failed", proc.returncode, stdout, stderr, duration,
                reason=f"{argv[0]}: exit status {proc.returncode}" + (f": {detail}" if detail else ""),
            )
        return CmdResult(argv, "ok", 0, stdout, stderr, duration)


def _stream(argv: list, proc: subprocess.Popen, limit: float, start: float,
            on_line: Callable[[str], None], stdin_text: str | None,
            cancel: Optional[threading.Event] = None) -> CmdResult:
    out_lines: list = []
    out_size = [0]
    err_buf = bytearray()

    def read_out() -> None:
        for raw in iter(proc.stdout.readline, b""):  # type: ignore[union-attr]
            line = raw.decode("utf-8", errors="replace")
            if out_size[0] < MAX_OUTPUT:
                out_lines.append(line)
                out_size[0] += len(raw)
            try:
                on_line(line.rstrip("\r\n"))
            except Exception:  # noqa: BLE001 - a broken callback never stops the reading
                pass

    def read_err() -> None:
        while True:
            chunk = proc.stderr.read1(65536)  # type: ignore[union-attr]
            if not chunk:
                return
            err_buf.extend(chunk)
            if len(err_buf) > 2 * MAX_OUTPUT:
                del err_buf[: len(err_buf) - MAX_OUTPUT]

    def feed() -> None:
        try:
            proc.stdin.write(stdin_text.encode())  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    threads = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    if stdin_text is not None:
        threads.append(threading.Thread(target=feed, daemon=True))
    for t in threads:
        t.start()
    timed_out = False
    try:
        _wait_unreaped(proc, limit, cancel)
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(proc)  # the command (on timeout) and whatever it left behind in its group
    proc.wait()
    for t in threads:
        t.join(timeout=2.0)  # a process that left the group may still hold a pipe: do not wait for it
    duration = time.monotonic() - start
    stdout, stderr = "".join(out_lines), _text(bytes(err_buf[-MAX_OUTPUT:]))
    if timed_out:
        why = "cancelled (killed)" if cancel is not None and cancel.is_set() else f"no answer within {limit:g} s (killed)"
        return CmdResult(argv, "timeout", None, stdout, stderr, duration, reason=f"{argv[0]}: {why}")
    if proc.returncode != 0:
        return CmdResult(argv, "failed", proc.returncode, stdout, stderr, duration,
                         reason=f"{argv[0]}: exit status {proc.returncode}")
    return CmdResult(argv, "ok", 0, stdout, stderr, duration)


def _wait_unreaped(proc: subprocess.Popen, limit: float, cancel: Optional[threading.Event] = None) -> None:
    """Wait for the command to end without reaping it, so its process group id stays reserved
    until the group is killed (a reaped leader's id could be reused by an unrelated process)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None and cancel is None:
        proc.wait(timeout=limit)
        return
    deadline = time.monotonic() + limit
    delay = 0.002
    while True:
        if waitid is None:
            if proc.poll() is not None:
                return
        else:
            try:
                if waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return
            except ChildProcessError:
                return
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.is_set()):
            raise subprocess.TimeoutExpired(proc.args, limit)
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


# Commands running right now, so an interrupted envdoctor (Ctrl-C) can end them at once instead
# of waiting out their timeouts: they run in their own sessions and never see the terminal's SIGINT.
_LIVE: set = set()
_LIVE_LOCK = threading.Lock()


def kill_all() -> None:
    """Kill every command this process is running (with its process group)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _text(data: bytes | None) -> str:
    if not data:
        return ""
    return data[:MAX_OUTPUT].decode("utf-8", errors="replace")
