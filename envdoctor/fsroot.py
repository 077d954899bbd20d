"""Reading system files under a root folder (`--root DIR`), safely.

Every probe reads /proc, /sys, /etc, /usr, /opt ... through a Root, so a
mounted container image or a fake machine built by a test is read exactly like
the live system. Reads never raise and never block: a missing, unreadable or
binary file, a FIFO or a device reads as None; at most MAX_READ (256 KiB) is
read of a file unless a caller asks for another bound; why an existing file was
not read is kept in ``Root.unreadable``.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path, PurePosixPath
from typing import Dict, Optional

MAX_READ = 256 * 1024


class Root:
    def __init__(self, path: str | os.PathLike = "/") -> None:
        self.base = Path(path)
        self.unreadable: Dict[str, str] = {}  # path on the inspected machine -> why it was not read

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
        reasons: Dict[str, str] = {}
        text = read_text_file(self.path(abs_path), max_bytes, reasons)
        if reasons:  # keyed as the inspected machine names the file
            self.unreadable[str(abs_path)] = next(iter(reasons.values()))
        return text

    def glob(self, pattern: str) -> list[str]:
        """Glob an absolute pattern; returns paths as the inspected machine sees them."""
        local = str(self.path(pattern))
        return sorted(self.display(p) for p in glob.glob(local))

    def listdir(self, abs_path: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(abs_path)))
        except OSError:
            return []


def read_text_file(path: str | os.PathLike, max_bytes: int = MAX_READ,
                   unreadable: Optional[Dict[str, str]] = None) -> str | None:
    """Read a small text file; None if missing, unreadable, not a regular file or binary.

    Opened with O_NONBLOCK and checked with fstat before reading (envdoctor.infile.open_regular): a FIFO or a
    device never blocks and is never read.  Why an existing file was not read goes into ``unreadable``."""
    from envdoctor.infile import Unreadable, open_regular, read_fd, why

    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    except (OSError, Unreadable) as exc:
        if unreadable is not None and not isinstance(exc, NotADirectoryError):
            unreadable[str(path)] = why(exc)
        return None
    try:
        data = read_fd(fd, max_bytes)[:max_bytes]
    except OSError as exc:
        if unreadable is not None:
            unreadable[str(path)] = why(exc)
        return None
    finally:
        os.close(fd)
    if b"\x00" in data:
        return None
    return data.decode("utf-8", errors="replace")
