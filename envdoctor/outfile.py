"""Writing every output file (each command's ``-o``, onboard's files): the one writer of the project.

Rules (README, "Output files"):

* ``-`` is stdout; ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` and ``/proc/self/fd/N`` write to that descriptor.
* A regular file is replaced atomically: a temp file in the same folder (``.NAME.envdoctor-tmp-PID``), fsync,
  rename.  An existing file keeps its mode; a new one gets the umask's mode (0666 & ~umask).
* A character device or a FIFO is written through (opened for writing, never created, truncated, read or
  replaced); a FIFO nobody reads is refused at once instead of blocking.  Block devices, sockets and
  folders are refused.
* A symlink is followed (its target is written); a dangling one is refused unless ``force`` (then its target
  is created).
* Nothing is read from a target except, for ``same_as`` comparisons, at most as many bytes as the new text has.
* Temp files left by a killed earlier run (their PID is no longer alive) are removed on the next write.

Every failure is a :class:`~envdoctor.errors.BadInput` (one line, exit 2).
"""
from __future__ import annotations

import errno
import os
import re
import stat
import sys
from typing import Optional

from envdoctor.errors import BadInput

TMP_MARK = ".envdoctor-tmp-"
MAX_LINK_HOPS = 40
_FD_LINK = re.compile(r"^/(?:dev/fd|proc/self/fd|proc/%d/fd)/(\d+)$" % os.getpid())
_STD = {"/dev/stdout": 1, "/dev/stderr": 2}


def umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fd_of(path: str) -> Optional[int]:
    """The descriptor a /dev/stdout-like path names (only our own process's), else None."""
    if path in _STD:
        return _STD[path]
    m = _FD_LINK.match(path)
    return int(m.group(1)) if m else None


def resolve(path: str, force: bool = False):
    """(kind, where) for an output path: ("fd", N), ("file", path of the regular file or new file to write),
    ("through", path of a character device / FIFO).  Follows symlinks hop by hop (at most 40)."""
    current = path
    for _ in range(MAX_LINK_HOPS):
        fd = _fd_of(os.path.normpath(current) if current.startswith("/") else current)
        if fd is not None:
            return "fd", fd
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            if current != path and not force:
                raise BadInput(f"cannot write {path}: it is a symlink to {current}, which does not exist "
                               "(pass --force to create it)") from None
            folder = os.path.dirname(current) or "."
            if not os.path.isdir(folder):
                raise BadInput(f"cannot write {path}: folder {folder} does not exist") from None
            return "file", current
        except OSError as exc:
            raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(current)
            except OSError as exc:
                raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
            current = target if os.path.isabs(target) else os.path.join(os.path.dirname(current), target)
            continue
        if stat.S_ISREG(mode):
            return "file", current
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            return "through", current
        what = ("a directory" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise BadInput(f"cannot write {path}: it is {what}")
    raise BadInput(f"cannot write {path}: too many levels of symbolic links")


def _as_bytes(text: str) -> bytes:
    """The bytes written: UTF-8 (a lone surrogate from an odd file name replaced), a final newline added."""
    return (text if text.endswith("\n") else text + "\n").encode("utf-8", errors="replace")


def write_output(path: str, text: str, force: bool = False) -> None:
    """Write text (a final newline added when missing) to path by the rules above."""
    data = _as_bytes(text)
    if path == "-":
        _write_fd(1, data, path)
        return
    kind, where = resolve(path, force)
    if kind == "fd":
        _write_fd(where, data, path)
    elif kind == "through":
        _write_through(where, data, path)
    else:
        _write_atomic(where, data, path)


def same_as(path: str, text: str) -> bool:
    """Whether path is a regular file holding exactly this text (reads at most len(text) + 1 bytes)."""
    data = _as_bytes(text)
    try:
        kind, where = resolve(path, force=True)
    except BadInput:
        return False
    if kind != "file":
        return False
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        return _read_upto(fd, len(data) + 1) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def exists(path: str) -> bool:
    """Whether writing path would replace or write into something that is there (a dangling link: no)."""
    if path == "-":
        return False
    try:
        kind, where = resolve(path, force=True)
    except BadInput:
        return True
    return kind != "file" or os.path.lexists(where)


def _read_upto(fd: int, limit: int) -> bytes:
    chunks, got = [], 0
    while got < limit:
        chunk = os.read(fd, min(65536, limit - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_fd(fd: int, data: bytes, shown: str) -> None:
    """stdout / stderr through Python's streams (so a test runner capturing them sees it), other fds directly."""
    try:
        if fd in (1, 2):
            stream = sys.stdout if fd == 1 else sys.stderr
            buf = getattr(stream, "buffer", None)
            stream.flush()
            if buf is not None:
                buf.write(data)
                buf.flush()
            else:
                stream.write(data.decode("utf-8"))
                stream.flush()
        else:
            _write_all(fd, data)
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot write {shown}: {getattr(exc, 'strerror', None) or exc}") from None


def _write_through(where: str, data: bytes, shown: str) -> None:
    """A character device or FIFO: opened for writing (no create, no truncate), never replaced."""
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(where, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise BadInput(f"cannot write {shown}: it is a FIFO that no process reads") from None
        raise BadInput(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise BadInput(f"cannot write {shown}: it changed while being opened")
        os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        raise BadInput(f"cannot write {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def clean_stale_temps(folder: str, name: str) -> None:
    """Remove ``.NAME.envdoctor-tmp-PID[-N]`` files whose writer is no longer running."""
    rx = re.compile(r"^\." + re.escape(name) + re.escape(TMP_MARK) + r"(\d+)(?:-\d+)?$")
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        m = rx.match(entry)
        if m and not _pid_alive(int(m.group(1))):
            try:
                os.unlink(os.path.join(folder, entry))
            except OSError:
                pass


def _write_atomic(where: str, data: bytes, shown: str) -> None:
    folder = os.path.dirname(where) or "."
    name = os.path.basename(where)
    clean_stale_temps(folder, name)
    try:
        mode = stat.S_IMODE(os.stat(where).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~umask()
    except OSError as exc:
        raise BadInput(f"cannot write {shown}: {exc.strerror or exc}") from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    tmp, fd = "", -1
    for n in range(100):
        tmp = os.path.join(folder, f".{name}{TMP_MARK}{os.getpid()}" + (f"-{n}" if n else ""))
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise BadInput(f"cannot write {shown}: {exc.strerror or exc}") from None
    if fd < 0:
        raise BadInput(f"cannot write {shown}: cannot create a temp file in {folder}")
    try:
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, where)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise BadInput(f"cannot write {shown}: {exc.strerror or exc}") from None
        raise
    try:  # the rename itself survives a crash once the folder is synced (best effort)
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
