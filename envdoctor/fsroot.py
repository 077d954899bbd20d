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
import posixpath
from pathlib import Path, PurePosixPath
from typing import Dict, Optional, Sequence

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
        try:
            return self.path(abs_path).is_dir()
        except (OSError, ValueError):
            return False

    def is_file(self, abs_path: str) -> bool:
        try:
            return self.path(abs_path).is_file()
        except (OSError, ValueError):
            return False

    def realpath(self, abs_path: str, max_hops: int = 40) -> str:
        """An absolute machine path with its symlinks resolved; under a root, inside it (an absolute link
        target means the root's own file, never the host's). The result may not exist."""
        if not abs_path or not abs_path.startswith("/"):
            return abs_path
        if self.is_live:
            return os.path.realpath(abs_path)
        queue = list(PurePosixPath(abs_path).parts[1:])
        resolved = "/"
        hops = 0
        while queue:
            part = queue.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                resolved = posixpath.dirname(resolved) or "/"
                continue
            cand = posixpath.join(resolved, part)
            local = self.path(cand)
            if os.path.islink(local):
                hops += 1
                if hops > max_hops:
                    return posixpath.join(cand, *queue) if queue else cand
                try:
                    target = os.readlink(local)
                except OSError:
                    resolved = cand
                    continue
                tparts = list(PurePosixPath(target).parts)
                if target.startswith("/"):
                    resolved = "/"
                    tparts = tparts[1:]
                queue = tparts + queue
            else:
                resolved = cand
        return resolved

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

    def glob_in(self, d: str, patterns: Sequence[str]) -> list[str]:
        """``self.glob(posixpath.join(d, p))`` for each pattern in turn, concatenated, from one listing of the folder
        (the cudnn probe asks four header names of each include dir, the loader eight library names of a dir; glob
        lists the folder and runs fnmatch over every name each time). As glob does: the folder is the
        pattern's local dirname, hidden names never match, a pattern without wildcards is matched by name, each
        pattern's matches come sorted. A folder glob would itself expand, or cannot list, is left to glob."""
        import fnmatch

        locals_ = [os.path.split(str(self.path(posixpath.join(d, p)))) for p in patterns]
        folder = locals_[0][0] if locals_ else ""
        if not locals_ or any(f != folder for f, _ in locals_) or glob.has_magic(folder):
            return [x for p in patterns for x in self.glob(posixpath.join(d, p))]
        try:
            names = os.listdir(folder)
        except OSError:
            return [x for p in patterns for x in self.glob(posixpath.join(d, p))]
        out: list[str] = []
        for _, pattern in locals_:
            if not glob.has_magic(pattern):
                hits = [pattern] if pattern in names else []
            else:
                literal = pattern[:min((i for i in (pattern.find(c) for c in "*?[") if i >= 0))]
                shown = [n for n in names if n.startswith(literal) and (n[:1] != "." or pattern[:1] == ".")]
                hits = fnmatch.filter(shown, pattern)
            out += sorted(self.display(os.path.join(folder, n)) for n in hits)
        return out

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
