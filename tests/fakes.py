"""Building blocks for fake machines: files under a fake root, fake executables first on PATH."""
from __future__ import annotations

from pathlib import Path

FIX = Path(__file__).parent / "fixtures"


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_exe(path: Path, body: str) -> Path:
    """A small /bin/sh program at path (e.g. a fake nvcc that cats a fixture, fails or hangs)."""
    write(path, "#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def process_gone(pid: int) -> bool:
    """No such process, or a zombie (dead, waiting for a parent that is not envdoctor any more)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, its stat was read
        return True


def wait_until(cond, within: float) -> bool:
    """Poll cond() every 50 ms for at most `within` seconds; its last value."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def default_signals() -> None:
    """preexec_fn: the child starts with the default dispositions of SIGHUP, SIGTERM and SIGINT. A test run under
    nohup ignores SIGHUP, and envdoctor keeps a signal its caller ignores ignored (as nohup means), which is not
    what a test of its signal handling starts from."""
    import signal

    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
