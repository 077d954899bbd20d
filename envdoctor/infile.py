"""Reading every file a user hands to a command, bounded: the one reader of the project's inputs.

Rules (README, "Input files"):

* A file is opened with O_NONBLOCK and checked with fstat before anything is read: a FIFO, a device, a socket
  or a folder is refused at once (one line naming the file), never read.  ``-`` means stdin where a command says so.
* At most ``limit`` bytes are read (:data:`MAX_INPUT_BYTES`, 16 MiB, for snapshots, lock files and gate inputs);
  a longer file is refused, not cut.
* Text is UTF-8 (a BOM dropped); a NUL byte means a binary file.
* JSON (:func:`loads_json`) refuses nesting deeper than :data:`MAX_JSON_DEPTH` levels, integers longer than
  :data:`MAX_NUMBER_DIGITS` digits and NaN / Infinity, each as one line naming the file.

Every refusal is :class:`Unreadable` (a ValueError carrying the reason) or, from the ``*_or_bad_input`` helpers,
a :class:`~envdoctor.errors.BadInput` (exit 2).
"""
from __future__ import annotations

import errno
import math
import os
import stat
import sys
from typing import Any, Iterable, Optional

from envdoctor.errors import BadInput

MAX_INPUT_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 100
MAX_NUMBER_DIGITS = 100


class Unreadable(ValueError):
    """Why a file cannot be used as input (the reason only; callers add the file name)."""


def human_size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 and n % (1024 * 1024) == 0 else \
        f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def why(exc: BaseException) -> str:
    """A short reason for an OSError / ValueError raised while opening or reading."""
    if isinstance(exc, Unreadable):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "it is a directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    if isinstance(exc, ValueError) and "null" in str(exc):
        return "the file name contains a NUL byte"
    return str(exc)


def open_regular(path: str | os.PathLike) -> int:
    """A read-only descriptor of a regular file (never blocks on a FIFO); Unreadable / OSError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except ValueError as exc:  # an embedded NUL byte
        raise Unreadable(why(exc)) from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Unreadable(f"it is {kind_of(mode)}, not a regular file")
    return fd


def read_fd(fd: int, limit: int) -> bytes:
    """Up to limit + 1 bytes (one more than allowed, so an oversized file shows)."""
    chunks, got = [], 0
    while got <= limit:
        try:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_bytes(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES, allow_stdin: bool = False) -> bytes:
    """The bytes of a regular file (or stdin for ``-`` with allow_stdin); Unreadable / OSError on refusal."""
    raw: Optional[bytes]
    if allow_stdin and str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        raw = stream.read(limit + 1) if stream is not None else sys.stdin.read(limit + 1).encode("utf-8")
    else:
        fd = open_regular(path)
        try:
            # a file whose size says it is too large is refused unread (/proc files say 0: read, bounded)
            raw = read_fd(fd, limit) if os.fstat(fd).st_size <= limit else None
        finally:
            os.close(fd)
    if raw is None or len(raw) > limit:
        raise Unreadable(f"larger than {human_size(limit)} (the limit for this input)")
    return raw


def decode_text(raw: bytes) -> str:
    """UTF-8 text, a BOM dropped; Unreadable for a binary file or other encodings."""
    if b"\x00" in raw:
        raise Unreadable(f"not UTF-8 text: a binary file (a NUL byte at offset {raw.find(0)})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (an invalid byte at offset {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES, allow_stdin: bool = False) -> str:
    """read_bytes + decode_text (OSError / Unreadable on refusal)."""
    return decode_text(read_bytes(path, limit, allow_stdin))


def read_text_or_bad_input(path: str | os.PathLike, what: str, limit: int = MAX_INPUT_BYTES,
                           allow_stdin: bool = False) -> str:
    """read_text, with every refusal as BadInput "WHAT PATH: reason"."""
    try:
        return read_text(path, limit, allow_stdin)
    except (OSError, ValueError) as exc:
        raise BadInput(f"{what} {path}: {why(exc)}") from None


class _Refused(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _Refused(f"a number with {len(text.lstrip('-'))} digits (more than {MAX_NUMBER_DIGITS})")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_DIGITS * 4:
        raise _Refused(f"a number written with {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"a number too large to be finite ({text[:20]}...)")
    return value


def _parse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def json_depth_ok(data: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether no object / array nests deeper than limit (iterative: never recurses)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return False
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return True


def loads_json(text: str, where: str) -> Any:
    """json.loads with the bounds above; BadInput "WHERE is not valid JSON: ..." naming the line where known."""
    import json

    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except _Refused as exc:
        raise BadInput(f"{where} is not usable JSON: {exc}") from None
    except RecursionError:
        raise BadInput(f"{where} is not usable JSON: nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # e.g. a number beyond int's string-conversion limit
        raise BadInput(f"{where} is not usable JSON: {str(exc).splitlines()[0][:120]}") from None
    if not json_depth_ok(data):
        raise BadInput(f"{where} is not usable JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def safe_json_or_none(text: str) -> Optional[Any]:
    """loads_json for files envdoctor wrote itself (caches, state): None instead of an error."""
    try:
        return loads_json(text, "")
    except BadInput:
        return None
