"""Reading and writing snapshot files, with one-line errors for bad input."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from envdoctor.errors import BadInput
from envdoctor.snapshot import Snapshot

MAX_SNAPSHOT_BYTES = 32 * 1024 * 1024


def load_snapshot(path: str | os.PathLike) -> Snapshot:
    p = Path(path)
    if not p.exists():
        raise BadInput(f"snapshot file {p} does not exist")
    if p.is_dir():
        raise BadInput(f"snapshot file {p} is a directory")
    try:
        raw = p.read_bytes()[: MAX_SNAPSHOT_BYTES + 1]
    except OSError as exc:
        raise BadInput(f"cannot read snapshot file {p}: {exc.strerror or exc}") from None
    return snapshot_from_data(decode_json(raw, f"snapshot file {p}"), f"snapshot file {p}")


def decode_json(raw: bytes, what: str):
    """The JSON document in raw bytes (at most MAX_SNAPSHOT_BYTES), BadInput naming `what` otherwise."""
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise BadInput(f"{what} is larger than {MAX_SNAPSHOT_BYTES // (1024 * 1024)} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{what} is not UTF-8 text (is it a binary file?)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{what} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def snapshot_from_data(data, what: str) -> Snapshot:
    """A Snapshot from decoded JSON: a snapshot, or `envdoctor check --format json` output holding one."""
    if isinstance(data, dict) and "snapshot" in data and "findings" in data:
        data = data["snapshot"]
    try:
        return Snapshot.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise BadInput(f"{what} is not an envdoctor snapshot: {exc}") from None


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write text to path atomically: a temp file in the same folder, then rename."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise BadInput(f"cannot write {p}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(folder))
    except OSError as exc:
        raise BadInput(f"cannot write {p}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if not text.endswith("\n"):
                fh.write("\n")
        os.replace(tmp, p)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise BadInput(f"cannot write {p}: {exc.strerror or exc}") from None


def dump_json(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
