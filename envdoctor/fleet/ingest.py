"""`fleet ingest`: snapshots from folders, JSON-lines files, tarballs and stdin into the store.

A file holds one snapshot or many: JSON lines, or pretty-printed documents one after the other (a new document
starts at a line beginning with "{", as `kubectl logs` of many pods prints them). Each document is a snapshot,
`envdoctor check --format json` output, or an envelope {"node": ..., "labels": {...}, "snapshot": {...}}.
A bad document is reported with its file (and line) and skipped; the rest goes on.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from envdoctor.errors import BadInput
from envdoctor.fleet import fingerprint as F
from envdoctor.fleet import store as S
from envdoctor.redact import REDACTED
from envdoctor.snapshot_io import MAX_SNAPSHOT_BYTES, decode_json, snapshot_from_data

FILE_SUFFIXES = (".json", ".jsonl", ".ndjson")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2")
FUTURE_SLACK = datetime.timedelta(minutes=10)  # clock skew tolerated between a node and this machine


@dataclass
class Result:
    read: int = 0
    new: int = 0
    duplicates: int = 0
    bad: List[Tuple[str, str]] = field(default_factory=list)  # (where, why)
    inputs: List[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"read": self.read, "new": self.new, "duplicates": self.duplicates,
                "bad": [{"where": w, "why": y} for w, y in self.bad], "inputs": self.inputs}


def parse_labels(values) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for v in values or ():
        key, sep, val = str(v).partition("=")
        if not sep or not key.strip():
            raise BadInput(f"label {v!r}: expected KEY=VALUE (e.g. partition=gpu)")
        out[key.strip()] = val.strip()
    return out


def _is_tar(name: str) -> bool:
    return name.lower().endswith(TAR_SUFFIXES)


def _is_snapshot_file(name: str) -> bool:
    return name.lower().endswith(FILE_SUFFIXES)


def _stem(name: str) -> str:
    base = os.path.basename(name)
    for suf in FILE_SUFFIXES:
        if base.lower().endswith(suf):
            return base[: -len(suf)]
    return base


def documents(fh, where: str) -> Iterator[Tuple[str, Optional[bytes]]]:
    """(where:line, raw document) for each document in a binary stream (None for one over the size limit)."""
    buf: List[bytes] = []
    size, start, lineno = 0, 1, 0
    for line in fh:
        lineno += 1
        if line[:1] == b"{" and buf:
            yield f"{where}:{start}", (b"".join(buf) if size <= MAX_SNAPSHOT_BYTES else None)
            buf, size = [], 0
        if not buf:
            if not line.strip():
                continue
            start = lineno
        size += len(line)
        if size <= MAX_SNAPSHOT_BYTES:
            buf.append(line)
        elif not buf:
            buf.append(b"")
    if buf:
        yield f"{where}:{start}", (b"".join(buf) if size <= MAX_SNAPSHOT_BYTES else None)


class Ingester:
    """Reads documents, validates each snapshot once per distinct content, and writes rows in one transaction."""

    def __init__(self, store: S.Store, labels: Dict[str, str], now: Optional[datetime.datetime] = None) -> None:
        self.store, self.labels = store, labels
        self.now = now or S.now_utc()
        self.result = Result()
        self._cache: Dict[bytes, tuple] = {}
        self._rows: List[tuple] = []
        self.ingest_id = 0

    def run(self, inputs: List[str]) -> Result:
        self.result.inputs = inputs
        self.ingest_id = self.store.begin(inputs, self.labels)
        try:
            for path in inputs:
                self._path(path)
            self._flush()
            self.store.commit()
        except BaseException:
            self.store.rollback()
            raise
        return self.result

    # -- sources --------------------------------------------------------------------------------
    def _path(self, path: str) -> None:
        p = Path(path)
        if p.is_dir():
            found = False
            for folder, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    if _is_tar(name) or _is_snapshot_file(name):
                        found = True
                        self._file(Path(folder) / name)
            if not found:
                self.result.bad.append((str(p), "no snapshot files (*.json, *.jsonl, *.ndjson, tarballs) in this folder"))
        elif p.is_file():
            self._file(p)
        else:
            self.result.bad.append((str(p), "no such file or folder"))

    def _file(self, p: Path) -> None:
        try:
            if _is_tar(p.name) or (not _is_snapshot_file(p.name) and tarfile.is_tarfile(str(p))):
                self._tar(p)
                return
            with open(p, "rb") as fh:
                self._stream(fh, str(p), _stem(p.name))
        except OSError as exc:
            self.result.bad.append((str(p), f"cannot read: {exc.strerror or exc}"))

    def _tar(self, p: Path) -> None:
        members = 0
        try:
            with tarfile.open(str(p), "r:*") as tf:
                for m in tf:
                    if not m.isfile() or not _is_snapshot_file(m.name):
                        continue
                    fh = tf.extractfile(m)
                    if fh is not None:
                        members += 1
                        self._stream(fh, f"{p}:{m.name}", _stem(m.name))
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:  # cut short / damaged: keep what was read
            self.result.bad.append((str(p), f"tarball damaged or cut short after {members} snapshot files: {exc}"))

    def _stream(self, fh, where: str, stem: str) -> None:
        docs = documents(fh, where)
        first = next(docs, None)
        if first is None:
            self.result.bad.append((where, "empty file"))
            return
        second = next(docs, None)
        # a file with one snapshot is named after its node (Slurm: DIR/%N.json): the name stands in when the
        # snapshot carries none; in a file of many, each needs its own
        self._document(*first, stem if second is None else None)
        if second is not None:
            self._document(*second, None)
            for w, raw in docs:
                self._document(w, raw, None)

    # -- one document -----------------------------------------------------------------------------
    def _document(self, where: str, raw: Optional[bytes], stem: Optional[str]) -> None:
        self.result.read += 1
        try:
            if raw is None:
                raise BadInput(f"document is larger than {MAX_SNAPSHOT_BYTES // (1024 * 1024)} MiB")
            self._row(where, decode_json(raw, "document"), stem)
        except BadInput as exc:
            self.result.bad.append((where, str(exc)))

    def _row(self, where: str, data: Any, stem: Optional[str]) -> None:
        labels = dict(self.labels)
        node = None
        if isinstance(data, dict) and "snapshot" in data and "findings" not in data and "schema_version" not in data:
            extra = data.get("labels") or {}
            if not isinstance(extra, dict):
                raise BadInput("envelope: labels must be an object")
            labels.update({str(k): str(v) for k, v in extra.items()})
            node = data.get("node")
            data = data["snapshot"]
        elif isinstance(data, dict) and "snapshot" in data and "findings" in data:
            data = data["snapshot"]
        derived = self._derive(data)
        plat = data["platform"]
        host = plat.get("hostname") if isinstance(plat.get("hostname"), str) else ""
        node = node if isinstance(node, str) and node else (host if host and host != REDACTED else stem)
        if not node:
            raise BadInput("no node name: the snapshot's host name is redacted or empty "
                           "(take snapshots with `envdoctor probe --fleet`, or one per file named NODE.json)")
        taken_at = self._taken_at(data.get("created"))
        fp, base_fp, facts, gpu_count, reboot, hidden = derived
        self.store.add_config(fp, base_fp, facts, data)
        self._rows.append((node, taken_at, fp, where, json.dumps(labels, sort_keys=True), gpu_count, reboot, hidden))
        if len(self._rows) >= 5000:
            self._flush()

    def _derive(self, data: Any) -> tuple:
        """Fingerprint and findings-free facts of one snapshot, validated once per distinct content."""
        if not isinstance(data, dict) or not isinstance(data.get("platform"), dict):
            snapshot_from_data(data, "document")  # raises the loader's own message
            raise BadInput("document is not an envdoctor snapshot")
        probes = data.get("probes", [])
        if not isinstance(probes, list) or not all(isinstance(x, dict) for x in probes):
            raise BadInput("document is not an envdoctor snapshot: snapshot.probes: expected a list of objects")
        key_obj = dict(data, created="", probes=None, platform=dict(data["platform"], hostname=""))
        if isinstance(data.get("gpus"), list):
            key_obj["gpus"] = [dict(g, uuid="", serial="") if isinstance(g, dict) else g for g in data["gpus"]]
        key = hashlib.blake2b(json.dumps(key_obj).encode(), digest_size=16).digest()
        hit = self._cache.get(key)
        if hit is None:
            snap = snapshot_from_data(data, "document")
            facts = F.facts(snap)
            hit = (F.fingerprint(facts), F.base_fingerprint(facts), facts, len(snap.gpus), F.reboot_pending(snap),
                   F.hidden_gpus(snap))
            if len(self._cache) > 20000:
                self._cache.clear()
            self._cache[key] = hit
        if not isinstance(data.get("created", ""), str) or not isinstance(data["platform"].get("hostname", ""), str):
            snapshot_from_data(data, "document")
        return hit

    def _taken_at(self, created: Any) -> str:
        if not created:
            raise BadInput("the snapshot has no time (`created`)")
        try:
            dt = datetime.datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        except ValueError:
            raise BadInput(f"the snapshot's time {created!r} is not an ISO 8601 time") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=datetime.timezone.utc)
        dt = dt.astimezone(datetime.timezone.utc)
        if dt > self.now + FUTURE_SLACK:
            raise BadInput(f"taken at {dt.isoformat()}, in the future (this machine's time is {self.now.isoformat()}): "
                           "the node's clock is wrong; skipped so it cannot stand for the node's latest state")
        return dt.isoformat()

    def _flush(self) -> None:
        if self._rows:
            new = self.store.add_rows(self.ingest_id, self._rows)
            self.result.new += new
            self.result.duplicates += len(self._rows) - new
            self._rows = []


def spool_stdin(path: Path) -> str:
    """Keep what stdin held beside the store, so the ledger can replay it."""
    folder = S.spool_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"stdin-{S.now_utc().strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl"
    with open(target, "wb") as out:
        while True:
            chunk = sys.stdin.buffer.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
    return str(target.resolve())


def open_store(path: Path, create: bool = True, notes: Optional[List[str]] = None) -> S.Store:
    """The store at path; a damaged one is moved aside and rebuilt from its ledger (what was rebuilt: in notes)."""
    why = S.damage(path)
    if why is None:
        return S.Store(path, create=create)
    entries = S.read_ledger(path)
    aside = path.with_name(f"{path.name}.damaged-{S.now_utc().strftime('%Y%m%dT%H%M%S')}")
    if not entries:
        raise BadInput(f"fleet store {path} is damaged ({why}) and has no inputs ledger "
                       f"({S.ledger_path(path)}) to rebuild it from: ingest the snapshots again into a new store")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            os.replace(src, str(aside) + suffix)
    store = S.Store(path)
    result = Result()
    for entry in entries:
        inputs = [str(x) for x in entry["inputs"]]
        labels = {str(k): str(v) for k, v in (entry.get("labels") or {}).items()}
        part = Ingester(store, labels).run(inputs)
        result.read += part.read
        result.new += part.new
        result.bad.extend(part.bad)
    if notes is not None:
        notes.append(f"fleet store {path} was damaged ({why}): moved to {aside.name} and rebuilt from "
                     f"{len(entries)} ingests in its ledger: {result.new} snapshots"
                     + (f", {len(result.bad)} inputs unreadable" if result.bad else ""))
    return store


def ingest(path: Path, inputs: List[str], labels: Dict[str, str], notes: List[str]) -> Result:
    resolved = [spool_stdin(path) if x == "-" else str(Path(x).resolve()) for x in inputs]
    store = open_store(path, notes=notes)
    try:
        result = Ingester(store, labels).run(resolved)
    finally:
        store.close()
    S.append_ledger(path, resolved, labels)
    return result
