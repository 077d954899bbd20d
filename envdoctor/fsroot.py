"""Reading system files under a root folder (`--root DIR`), safely.

Every probe reads /proc, /sys, /etc, /usr, /opt ... through a Root, so a
mounted container image or a fake machine built by a test is read exactly like
the live system. Reads never raise: a missing, unreadable, oversized or binary
file reads as None.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path, PurePosixPath

MAX_READ = 256 * 1024


class Root:
    def __init__(self, path: str | os.PathLike = "/") -> None:
        self.base = Path(path)

    @property
    def is_live(self) -> bool:
        return str(self.base) in ("/", "")

    def path(self, abs_path: str | os.PathLike) -> Path:
        """Map an absolute path of the inspected machine to a local path."""
        p = str(abs_path)
        if self.is_live:
            return Path(p)
        rel = PurePosixPath(p)
        if rel.is_absolute():
            rel = rel.relative_to("/")
        return self.base / rel

    def display(self, local: str | os.PathLike) -> str:
        """The path as the inspected machine sees it (for evidence)."""
        if self.is_live:
            return str(local)
        try:
            return "/" + str(Path(local).relative_to(self.base))
        except ValueError:
            return str(local)

    def exists(self, abs_path: str) -> bool:
        return self.path(abs_path).exists()

    def is_dir(self, abs_path: str) -> bool:
        return self.path(abs_path).is_dir()

    def read_text(self, abs_path: str, max_bytes: int = MAX_READ) -> str | None:
        return read_text_file(self.path(abs_path), max_bytes)

    def glob(self, pattern: str) -> list[str]:
        """Glob an absolute pattern; returns paths as the inspected machine sees them."""
        local = str(self.path(pattern))
        return sorted(self.display(p) for p in glob.glob(local))

    def listdir(self, abs_path: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(abs_path)))
        except OSError:
            return []


def read_text_file(path: str | os.PathLike, max_bytes: int = MAX_READ) -> str | None:
    """Read a small text file; None if missing, unreadable or binary."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes)
    except (OSError, ValueError):
        return None
    if b"\x00" in data:
        return None
    return data.decode("utf-8", errors="replace")
