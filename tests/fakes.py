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
