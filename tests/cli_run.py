"""Running the real CLI in a subprocess with a bound on its time, and checking the one-line error contract."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Optional, Sequence

BOUND_S = 60  # a bad input must fail within this (it is about hangs, not speed: a hung run never ends)


def run(*args: str, env: Optional[dict] = None, cwd: Optional[str] = None, input: Optional[str] = None,
        prelude: str = "", umask: Optional[int] = None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """`python -m envdoctor ARGS` (prelude: Python run first in the same process, e.g. hiding a module)."""
    e = dict(os.environ)
    for key, value in (env or {}).items():  # None: remove the variable
        if value is None:
            e.pop(key, None)
        else:
            e[key] = value
    cmd: Sequence[str] = [sys.executable, "-m", "envdoctor", *args]
    if prelude:
        cmd = [sys.executable, "-c", prelude + "\nimport sys\nfrom envdoctor.entry import main\nsys.argv[0] = 'envdoctor'\n"
               "main(sys.argv[1:])", *args]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=e, cwd=cwd, input=input,
                          timeout=BOUND_S, preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    proc.seconds = time.monotonic() - start  # type: ignore[attr-defined]
    return proc


def one_line_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    """The single stderr line of a failed run (exit code, no traceback, no 'internal error')."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]
