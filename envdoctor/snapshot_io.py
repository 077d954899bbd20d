"""Reading and writing snapshot files, with one-line errors for bad input."""
from __future__ import annotations

import json
import os
from typing import Any

from envdoctor.errors import BadInput
from envdoctor.infile import MAX_INPUT_BYTES, loads_json, read_text_or_bad_input
from envdoctor.outfile import write_output
from envdoctor.snapshot import Snapshot

MAX_SNAPSHOT_BYTES = MAX_INPUT_BYTES


def load_snapshot(path: str | os.PathLike) -> Snapshot:
    """A snapshot file (``-``: stdin), bounded and checked by envdoctor.infile; BadInput naming the file."""
    where = f"snapshot file {path}" if str(path) != "-" else "the snapshot on stdin"
    text = read_text_or_bad_input(path, "snapshot file", MAX_SNAPSHOT_BYTES, allow_stdin=True)
    return snapshot_from_data(loads_json(text, where), where)


def decode_json(raw: bytes, what: str):
    """The JSON document in raw bytes (at most MAX_SNAPSHOT_BYTES, bounded like every input), BadInput naming `what`."""
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise BadInput(f"{what} is larger than {MAX_SNAPSHOT_BYTES // (1024 * 1024)} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{what} is not UTF-8 text (is it a binary file?)") from None
    return loads_json(text, what)


def snapshot_from_data(data, what: str) -> Snapshot:
    """A Snapshot from decoded JSON: a snapshot, or `envdoctor check --format json` output holding one."""
    if isinstance(data, dict) and "snapshot" in data and "findings" in data:
        data = data["snapshot"]
    try:
        return Snapshot.from_dict(data)
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise BadInput(f"{what} is not an envdoctor snapshot: {str(exc)[:200]}") from None


def write_atomic(path: str | os.PathLike, text: str, force: bool = False) -> None:
    """Write an output file by envdoctor.outfile's rules (atomic for regular files); kept for its callers."""
    write_output(str(path), text, force=force)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
