"""`fleet ingest`: snapshots from folders, JSON-lines files, tarballs and stdin into the store.

A file holds one snapshot or many: JSON lines, or pretty-printed documents one after the other (a new document
starts at a line beginning with "{", as `kubectl logs` of many pods prints them). Each document is a snapshot,
`envdoctor check --format json` output, or an envelope {"node": ..., "labels": {...}, "snapshot": {...}}.
A bad document is reported with its file (and line) and skipped; the rest goes on. An input that cannot be
read at all (missing, not a regular file, over the per-input cap) is refused with one line; the others go on.

Every input is read in bounded pieces: a line is read at most one document's limit at a time, and an input (a
file, a tarball member, stdin) holds at most `max_input` bytes (DEFAULT_MAX_INPUT unless --max-input).

The store changes only as a whole: one transaction per ingest into an existing store; a new or rebuilt store is
written to a temporary file beside it and renamed into place once complete, so a failure (a full disk) leaves
the store as it was and never an empty or half-built one.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import sqlite3
import stat
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from envdoctor.errors import BadInput
from envdoctor.fleet import fingerprint as F
from envdoctor.fleet import store as S
from envdoctor.infile import Unreadable, human_size, kind_of, open_regular
from envdoctor.infile import why as why_os
from envdoctor.redact import REDACTED
from envdoctor.snapshot_io import MAX_SNAPSHOT_BYTES, decode_json, snapshot_from_data

FILE_SUFFIXES = (".json", ".jsonl", ".ndjson")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2")
FUTURE_SLACK = datetime.timedelta(minutes=10)  # clock skew tolerated between a node and this machine
# One input's bytes at most: 100,000 nodes' snapshots (~8.5 kB each) in one JSON-lines file are ~850 MB; the
# bound is there so that an endless pipe (`yes | fleet ingest -`) or a huge sparse file is refused, not spooled
DEFAULT_MAX_INPUT = 2 * 1024 ** 3
_CHUNK = 1 << 20


def parse_size(text: str) -> int:
    """--max-input: bytes, or a number with K / M / G (KiB, MiB, GiB)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmg]?)(?:i?b)?\s*", str(text), re.IGNORECASE)
    if not m or int(m.group(1)) <= 0:
        raise BadInput(f"--max-input {text!r}: expected a size such as 512M or 2G")
    return int(m.group(1)) * 1024 ** " kmg".index((m.group(2) or " ").lower())


def cap_text(limit: int) -> str:
    return f"larger than {human_size(limit)} (the per-input cap; --max-input raises it)"


REBUILD = "--rebuild"  # the reason a sound store is rebuilt: the user asked


class _TooLarge(Exception):
    """An input went past the per-input cap while being read."""


@dataclass
class Result:
    read: int = 0
    new: int = 0
    duplicates: int = 0
    bad: List[Tuple[str, str]] = field(default_factory=list)  # (where, why): bad documents
    refused: List[Tuple[str, str]] = field(default_factory=list)  # (where, why): inputs not read at all
    inputs: List[str] = field(default_factory=list)
    # told of each document as it is read (where, documents read so far): the command's progress line
    on_read: Optional[Callable[[str, int], None]] = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"read": self.read, "new": self.new, "duplicates": self.duplicates,
                "bad": [{"where": w, "why": y} for w, y in self.bad],
                "refused": [{"where": w, "why": y} for w, y in self.refused], "inputs": self.inputs}


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


def _skip_rest(fh, seen: int, total: int) -> Tuple[int, int]:
    """Read past the rest of a line longer than a document may be, a piece at a time: (its bytes, seen)."""
    n = 0
    while True:
        if seen > total:
            raise _TooLarge()
        more = fh.readline(_CHUNK)
        n += len(more)
        seen += len(more)
        if not more or more.endswith(b"\n"):
            return n, seen


def documents(fh, where: str, total: int = DEFAULT_MAX_INPUT) -> Iterator[Tuple[str, Optional[bytes]]]:
    """(where:line, raw document) for each document in a binary stream (None for one over the size limit).

    A line is read at most MAX_SNAPSHOT_BYTES + 1 bytes at a time (a 10 GiB line without a newline is never held
    whole); _TooLarge once the stream passed `total` bytes. (One loop, no line generator under it: this runs once
    per line of every pretty-printed snapshot.)"""
    limit = MAX_SNAPSHOT_BYTES
    readline = fh.readline
    buf: List[bytes] = []
    size, start, lineno, seen, started = 0, 1, 0, 0, False
    while True:
        line = readline(limit + 1)
        if not line:
            break
        lineno += 1
        length = len(line)
        seen += length
        if length > limit and not line.endswith(b"\n"):
            first = line[:1]
            line = b""
            rest, seen = _skip_rest(fh, seen, total)
            length += rest
            whole = False
        else:
            first = line[:1]
            whole = True
        if seen > total:
            raise _TooLarge()
        if first == b"{" and started:
            yield f"{where}:{start}", (b"".join(buf) if size <= limit else None)
            buf, size, started = [], 0, False
        if not started:
            if whole and not line.strip():
                continue
            start, started = lineno, True
        size += length
        if size <= limit and whole:
            buf.append(line)
        elif buf:
            buf = []
    if started:
        yield f"{where}:{start}", (b"".join(buf) if size <= limit else None)


class Ingester:
    """Reads documents, validates each snapshot once per distinct content, and writes rows in one transaction."""

    def __init__(self, store: S.Store, labels: Dict[str, str], now: Optional[datetime.datetime] = None,
                 max_input: int = DEFAULT_MAX_INPUT, result: Optional[Result] = None) -> None:
        self.store, self.labels = store, labels
        self.now = now or S.now_utc()
        self.max_input = max_input
        self.result = result if result is not None else Result()
        self._cache: Dict[bytes, tuple] = {}
        self._rows: List[tuple] = []
        self.ingest_id = 0

    def run(self, inputs: List[str]) -> Result:
        """load, then commit."""
        self.load(inputs)
        try:
            self.store.commit()
        except BaseException:
            self.store.rollback()
            raise
        return self.result

    def load(self, inputs: List[str]) -> Result:
        """Read every input into the store's open transaction (the caller commits; rolled back on failure)."""
        self.result.inputs = inputs
        self.ingest_id = self.store.begin(inputs, self.labels)
        try:
            for path in inputs:
                self._path(path)
            self._flush()
        except BaseException:
            self.store.rollback()
            raise
        return self.result

    def _refuse(self, where: str, why: str) -> None:
        self.result.refused.append((where, why))

    # -- sources --------------------------------------------------------------------------------
    def _path(self, path: str) -> None:
        try:
            mode = os.stat(path).st_mode  # follows links; a loop or a file as a parent folder: one line, below
        except FileNotFoundError:
            self._refuse(path, "no such file or folder")
            return
        except (OSError, ValueError) as exc:
            self._refuse(path, why_os(exc))
            return
        if stat.S_ISDIR(mode):
            found = False
            errors: List[OSError] = []
            for folder, dirs, files in os.walk(path, onerror=errors.append):
                dirs.sort()
                for name in sorted(files):
                    if _is_tar(name) or _is_snapshot_file(name):
                        found = True
                        self._file(Path(folder) / name)
            for err in errors:
                self._refuse(str(err.filename or path), why_os(err))
            if not found and not errors:
                self.result.bad.append((path, "no snapshot files (*.json, *.jsonl, *.ndjson, tarballs) in this folder"))
        elif stat.S_ISREG(mode):
            self._file(Path(path))
        else:
            self._refuse(path, f"it is {kind_of(mode)}, not a regular file")

    def _file(self, p: Path) -> None:
        try:
            fd = open_regular(p)  # O_NONBLOCK + fstat: a FIFO found in a folder is refused, never waited on
        except (OSError, Unreadable) as exc:
            self._refuse(str(p), f"cannot read: {why_os(exc)}")
            return
        try:
            with os.fdopen(fd, "rb") as fh:
                if os.fstat(fh.fileno()).st_size > self.max_input:
                    self._refuse(str(p), cap_text(self.max_input))  # refused unread
                    return
                if _is_tar(p.name) or (not _is_snapshot_file(p.name) and tarfile.is_tarfile(fh)):
                    fh.seek(0)
                    self._tar(p, fh)
                    return
                fh.seek(0)
                self._stream(fh, str(p), _stem(p.name))
        except OSError as exc:
            self._refuse(str(p), f"cannot read: {why_os(exc)}")

    def _tar(self, p: Path, fileobj) -> None:
        members = 0
        try:
            with tarfile.open(fileobj=fileobj, mode="r:*") as tf:
                for m in tf:
                    if not m.isfile() or not _is_snapshot_file(m.name):
                        continue
                    if m.size > self.max_input:
                        self._refuse(f"{p}:{m.name}", cap_text(self.max_input))
                        continue
                    fh = tf.extractfile(m)
                    if fh is not None:
                        members += 1
                        self._stream(fh, f"{p}:{m.name}", _stem(m.name))
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:  # cut short / damaged: keep what was read
            self.result.bad.append((str(p), f"tarball damaged or cut short after {members} snapshot files: {exc}"))

    def _stream(self, fh, where: str, stem: str) -> None:
        docs = documents(fh, where, self.max_input)
        try:
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
        except _TooLarge:  # it grew past the cap while read (its size said less): what came before is kept
            self._refuse(where, cap_text(self.max_input) + "; the rest was not read")

    # -- one document -----------------------------------------------------------------------------
    def _document(self, where: str, raw: Optional[bytes], stem: Optional[str]) -> None:
        self.result.read += 1
        if self.result.on_read is not None:
            self.result.on_read(where, self.result.read)
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


def spool_stdin(path: Path, max_input: int = DEFAULT_MAX_INPUT) -> Optional[str]:
    """Keep what stdin held beside the store, so the ledger can replay it; None (nothing kept, the rest of stdin
    not read) when it holds more than max_input bytes."""
    folder = S.spool_dir(path)
    target = folder / f"stdin-{S.now_utc().strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl"
    got = 0
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            while got <= max_input:
                chunk = sys.stdin.buffer.read(min(_CHUNK, max_input + 1 - got))
                if not chunk:
                    break
                got += len(chunk)
                if got <= max_input:
                    out.write(chunk)
    except OSError as exc:
        _unlink(target)
        raise BadInput(f"cannot keep stdin in {folder}: {why_os(exc)} (nothing was ingested)") from None
    if got > max_input:
        _unlink(target)
        return None
    return os.path.abspath(target)


def _unlink(path: "os.PathLike[str] | str") -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        _unlink(str(path) + suffix)


def _replay(store: S.Store, entries: List[Dict[str, Any]]) -> Result:
    """Every ingest of the ledger again, in order, each in its own transaction."""
    total = Result()
    for entry in entries:
        inputs = [str(x) for x in entry["inputs"]]
        labels = {str(k): str(v) for k, v in (entry.get("labels") or {}).items()}
        part = Ingester(store, labels).run(inputs)
        total.read += part.read
        total.new += part.new
        total.bad.extend(part.bad + part.refused)
    return total


def _build_new(path: Path, why: Optional[str], entries: List[Dict[str, Any]], inputs: List[str],
               labels: Dict[str, str], max_input: int, result: Result, notes: List[str]) -> None:
    """A store built from scratch (the ledger's ingests, then this one's inputs) in a temporary file beside the
    store, renamed into place once complete; the file there before (damaged or empty) is moved aside only then.
    On any failure the temporary file is removed and nothing else changed."""
    tmp = path.with_name(f".{path.name}.building-{os.getpid()}")
    _remove_db(tmp)
    mark: Optional[int] = None
    try:
        store = S.Store(tmp)
        try:
            replayed = _replay(store, entries)
            if inputs:
                Ingester(store, labels, max_input=max_input, result=result).run(inputs)
        finally:
            store.close()
        if _read(inputs, result):
            mark = S.append_ledger(path, _read(inputs, result), labels)
        aside = None
        if why is not None and os.path.exists(path):
            if os.path.getsize(path):  # an empty file holds nothing to keep
                kind = "before-rebuild" if why == REBUILD else "damaged"
                aside = path.with_name(f"{path.name}.{kind}-{S.now_utc().strftime('%Y%m%dT%H%M%S')}")
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(str(path) + suffix):
                        os.replace(str(path) + suffix, str(aside) + suffix)
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # never over a store another ingest created meanwhile
            except FileExistsError:
                raise BadInput(f"fleet store {path} was created by another command meanwhile: run the ingest again") \
                    from None
            except OSError:  # a file system without hard links: a plain rename (the check just above is all there is)
                if os.path.exists(path):
                    raise BadInput(f"fleet store {path} was created by another command meanwhile: run the ingest "
                                   "again") from None
                os.replace(tmp, path)
            _unlink(tmp)
    except BaseException:
        if mark is not None:
            S.truncate_ledger(path, mark)
        _remove_db(tmp)
        raise
    if entries:
        what = ("was rebuilt (--rebuild)" if why == REBUILD else f"was damaged ({why})" if why is not None
                else "did not exist")
        moved = f": moved to {aside.name} and" if aside is not None else ":"
        notes.append(f"fleet store {path} {what}{moved} rebuilt from {len(entries)} ingests in its ledger: "
                     f"{replayed.new} snapshots" + (f", {len(replayed.bad)} inputs unreadable" if replayed.bad else ""))


def open_store(path: Path, create: bool = False, notes: Optional[List[str]] = None) -> S.Store:
    """The store at path, read-only (report, gate, drift): a reader never creates, converts or repairs it. A
    damaged one is one line naming how to rebuild it."""
    S.check_path(path, create=False)
    why = S.damage(path)
    if why is not None:
        n = len(S.read_ledger(path))
        how = (f"`envdoctor fleet ingest --rebuild --store {path}` rebuilds it from the {n} ingests of its ledger"
               if n else f"it has no inputs ledger ({S.ledger_path(path)}) to rebuild it from: ingest the snapshots "
                         "again into a new store")
        raise BadInput(f"fleet store {path} is damaged ({why}): {how}")
    return S.Store(path, read_only=True)


def ingest(path: Path, inputs: List[str], labels: Dict[str, str], notes: List[str],
           max_input: int = DEFAULT_MAX_INPUT, rebuild: bool = False,
           progress: Optional[Callable[..., None]] = None) -> Result:
    """Ingest `inputs` into the store at path. A missing, empty or damaged store (or `rebuild`) is first rebuilt
    from its ledger; the store changes only when all of it succeeded (see the module's docstring). `progress`
    (text, done=N) is told what is being read."""
    exists = S.check_path(path, create=True)
    why = S.damage(path) if exists else None
    entries = S.read_ledger(path)
    if why is not None and why != "an empty file" and not entries:
        raise BadInput(f"fleet store {path} is damaged ({why}) and has no inputs ledger "
                       f"({S.ledger_path(path)}) to rebuild it from: ingest the snapshots again into a new store")
    if rebuild and not entries:
        raise BadInput(f"--rebuild: fleet store {path} has no inputs ledger ({S.ledger_path(path)}) to rebuild it from")
    if rebuild and exists and why is None:
        why = REBUILD
    result = Result()
    if progress is not None:
        result.on_read = lambda _where, n: progress("fleet ingest: snapshots read", done=n)
    resolved: List[str] = []
    spooled: Optional[str] = None
    for x in inputs:
        if x == "-":
            spooled = spool_stdin(path, max_input)
            if spooled is None:
                result.refused.append(("-", "stdin is " + cap_text(max_input) + "; none of it was ingested"))
                continue
            resolved.append(spooled)
        else:
            resolved.append(os.path.abspath(x))  # not resolve(): a symlink loop is reported by the ingest
    try:
        if exists and why is None:
            if resolved:
                _into(path, resolved, labels, max_input, result)
        elif resolved or entries or rebuild:
            if progress is not None and entries:
                progress(f"fleet ingest: rebuilding the store from its inputs ledger ({len(entries)} inputs)")
            _build_new(path, why, entries, resolved, labels, max_input, result, notes)
    except sqlite3.Error as exc:
        if spooled:
            _unlink(spooled)
        raise BadInput(f"cannot write fleet store {path}: {exc} (the store is unchanged)") from None
    except OSError as exc:
        if spooled:
            _unlink(spooled)
        raise BadInput(f"cannot write fleet store {path}: {why_os(exc)} (the store is unchanged)") from None
    except BaseException:
        if spooled:
            _unlink(spooled)
        raise
    return result


def _read(inputs: List[str], result: Result) -> List[str]:
    """The inputs the ledger lists: those not refused whole (a folder partly read stays)."""
    refused = {where for where, _ in result.refused}
    return [x for x in inputs if x not in refused]


def _into(path: Path, inputs: List[str], labels: Dict[str, str], max_input: int, result: Result) -> None:
    """One transaction into the existing store; its ledger line is written (synced) before the commit and taken
    back when the commit fails, so the ledger lists what the store holds."""
    store = S.Store(path)
    try:
        ing = Ingester(store, labels, max_input=max_input, result=result)
        ing.load(inputs)
        listed = _read(inputs, result)
        try:
            mark = S.append_ledger(path, listed, labels) if listed else None
        except BaseException:
            store.rollback()
            raise
        try:
            store.commit()
        except BaseException:
            try:
                store.rollback()
            except sqlite3.Error:
                pass
            if mark is not None:
                S.truncate_ledger(path, mark)
            raise
    finally:
        store.close()
