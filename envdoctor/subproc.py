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
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

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
    ) -> CmdResult:
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
