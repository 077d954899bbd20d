"""The fleet store: one SQLite file (stdlib, WAL) plus an append-only ledger of the inputs ingested into it.

Tables: `configs` (one row per distinct configuration: fingerprint, facts, one representative snapshot),
`snapshots` (one row per node and time, primary key (node, taken_at): ingesting a snapshot twice is a no-op),
`nodes` (each node's latest snapshot, kept by the ingest), `ingests` (when, which inputs, which labels).

The ledger, `STORE.inputs.jsonl` beside the store, lists every ingest's inputs (stdin is spooled into
`STORE.inputs.d/` first). A store file that is cut short or damaged is rebuilt from it by the next ingest (into a
new file, swapped in only once complete); readers open the store read-only and never repair it.
"""
from __future__ import annotations

import datetime
import json
import os
import sqlite3
import stat
import urllib.parse
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from envdoctor.errors import BadInput
from envdoctor.infile import kind_of, why as why_os

STORE_SCHEMA = "1"
DEFAULT_STORE = "envdoctor-fleet.db"
_HEADER = b"SQLite format 3\x00"

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ingests(id INTEGER PRIMARY KEY, at TEXT NOT NULL, inputs TEXT NOT NULL, labels TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS configs(fp TEXT PRIMARY KEY, base_fp TEXT NOT NULL, facts TEXT NOT NULL, snapshot TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots(node TEXT NOT NULL, taken_at TEXT NOT NULL, fp TEXT NOT NULL, ingest INTEGER NOT NULL,
  origin TEXT NOT NULL, labels TEXT NOT NULL, gpu_count INTEGER NOT NULL, reboot TEXT, hidden TEXT,
  PRIMARY KEY(node, taken_at)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nodes(node TEXT PRIMARY KEY, taken_at TEXT NOT NULL, fp TEXT NOT NULL, origin TEXT NOT NULL,
  labels TEXT NOT NULL, gpu_count INTEGER NOT NULL, reboot TEXT, hidden TEXT);
"""
_COLS = "node, taken_at, fp, origin, labels, gpu_count, reboot, hidden"


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def store_path(option: Optional[str]) -> Path:
    return Path(option or os.environ.get("ENVDOCTOR_FLEET_STORE") or DEFAULT_STORE)


def ledger_path(path: Path) -> Path:
    return path.with_name(path.name + ".inputs.jsonl")


def spool_dir(path: Path) -> Path:
    return path.with_name(path.name + ".inputs.d")


def check_path(path: Path, create: bool) -> bool:
    """Whether the store file exists; BadInput (one line) for a path that cannot be a store: a folder, a FIFO,
    a parent that is not a folder, no permission, a missing store when not `create`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not create:
            raise BadInput(f"fleet store {path} does not exist (run `envdoctor fleet ingest` first)") from None
        folder = path.parent
        if not folder.is_dir():
            raise BadInput(f"cannot create fleet store {path}: {folder} is not a folder") from None
        return False
    except OSError as exc:  # ENOTDIR (a parent is a file), EACCES, ELOOP: the same for root
        raise BadInput(f"cannot open fleet store {path}: {why_os(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"fleet store {path} is {kind_of(st.st_mode)}, not a fleet store file")
    return True


# SQLite's own verdicts on a file's content; any other error (a full disk, an I/O error, a lock, no permission)
# says nothing about the file and must never get it moved aside
_CORRUPT = {"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_CORRUPT_INDEX", "SQLITE_CORRUPT_SEQUENCE",
            "SQLITE_CORRUPT_VTAB"}


def _is_corruption(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", None)
    if name:
        return str(name) in _CORRUPT
    return not isinstance(exc, sqlite3.OperationalError)


def connect_ro(path: Path) -> sqlite3.Connection:
    """A read-only connection (SQLite URI mode=ro): a reader never creates, converts or repairs the file."""
    uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None)


def damage(path: Path) -> Optional[str]:
    """Why the store file cannot be used (empty, cut short, not SQLite, fails SQLite's check, tables missing), or
    None. Reads only. BadInput when the file cannot be read at all (that is no verdict on its content)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise BadInput(f"cannot read fleet store {path}: {why_os(exc)}") from None
    if not head:
        return "an empty file"
    if head != _HEADER:
        return "not an SQLite database"
    try:
        con = connect_ro(path)
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
            have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        if not _is_corruption(exc):
            raise BadInput(f"cannot read fleet store {path}: {exc}") from None
        return str(exc)
    if rows != [("ok",)]:
        return "; ".join(str(r[0]) for r in rows[:3])
    if not {"meta", "configs", "snapshots", "nodes", "ingests"} <= have:
        return "tables missing"
    return None


class Store:
    """The store. `read_only`: opened with mode=ro, for the commands that only read (report, gate, drift)."""

    def __init__(self, path: Path, create: bool = True, read_only: bool = False) -> None:
        self.path, self.read_only = path, read_only
        check_path(path, create and not read_only)
        try:
            if read_only:
                self.con = connect_ro(path)
            else:
                self.con = sqlite3.connect(str(path), isolation_level=None)
                self.con.execute("PRAGMA journal_mode=WAL")
                self.con.execute("PRAGMA synchronous=NORMAL")
                self.con.executescript(_DDL)
            row = self.con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None and not read_only:
                self.con.execute("INSERT INTO meta VALUES ('schema', ?)", (STORE_SCHEMA,))
            elif row is None or row[0] != STORE_SCHEMA:
                raise BadInput(f"fleet store {path} has schema {row[0] if row else 'none'}, "
                               f"this envdoctor reads {STORE_SCHEMA}")
            self._known = {r[0] for r in self.con.execute("SELECT fp FROM configs")}
        except sqlite3.Error as exc:
            raise BadInput(f"cannot open fleet store {path}: {exc}") from None

    def close(self) -> None:
        if not self.read_only:
            # back to a rollback journal at rest: a read-only reader of a WAL file leaves -wal / -shm files beside
            # it; failing (a reader holds it, a full disk) only keeps WAL, the data is committed either way
            try:
                self.con.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.Error:
                pass
        self.con.close()

    # -- writing (one transaction per ingest) ------------------------------------------------
    def begin(self, inputs: List[str], labels: Dict[str, str]) -> int:
        self.con.execute("BEGIN IMMEDIATE")
        cur = self.con.execute("INSERT INTO ingests(at, inputs, labels) VALUES (?, ?, ?)",
                               (now_utc().isoformat(), json.dumps(inputs), json.dumps(labels, sort_keys=True)))
        return int(cur.lastrowid or 0)  # an INSERT always sets it

    def add_config(self, fp: str, base_fp: str, facts: Dict[str, str], snapshot: Dict[str, Any]) -> None:
        if fp not in self._known:
            self.con.execute("INSERT OR IGNORE INTO configs VALUES (?, ?, ?, ?)",
                             (fp, base_fp, json.dumps(facts), json.dumps(snapshot)))
            self._known.add(fp)

    def add_rows(self, ingest: int, rows: Iterable[tuple]) -> int:
        """rows of (node, taken_at, fp, origin, labels-json, gpu_count, reboot, hidden): how many were new."""
        new = 0
        for row in rows:
            cur = self.con.execute(
                "INSERT OR IGNORE INTO snapshots(node, taken_at, fp, origin, labels, gpu_count, reboot, hidden, ingest) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row + (ingest,))
            if cur.rowcount:
                new += 1
                self.con.execute(
                    f"INSERT INTO nodes({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(node) DO UPDATE SET "
                    + ", ".join(f"{c}=excluded.{c}" for c in _COLS.split(", ")[1:])
                    + " WHERE excluded.taken_at > nodes.taken_at", row)
        return new

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        if self.con.in_transaction:
            self.con.execute("ROLLBACK")

    # -- reading ---------------------------------------------------------------------------------
    def latest(self) -> List[Dict[str, Any]]:
        cur = self.con.execute(f"SELECT {_COLS} FROM nodes ORDER BY node")
        return [_row(r) for r in cur]

    def history(self, node: Optional[str] = None) -> List[Dict[str, Any]]:
        sql = f"SELECT {_COLS} FROM snapshots" + (" WHERE node = ?" if node else "") + " ORDER BY node, taken_at"
        return [_row(r) for r in self.con.execute(sql, (node,) if node else ())]

    def configs(self) -> Dict[str, Dict[str, Any]]:
        return {fp: {"base_fp": b, "facts": json.loads(f)} for fp, b, f in
                self.con.execute("SELECT fp, base_fp, facts FROM configs")}

    def representative(self, fp: str) -> Dict[str, Any]:
        return json.loads(self.con.execute("SELECT snapshot FROM configs WHERE fp = ?", (fp,)).fetchone()[0])

    def ingests(self) -> List[Dict[str, Any]]:
        return [{"id": i, "at": a, "inputs": json.loads(p), "labels": json.loads(lb)}
                for i, a, p, lb in self.con.execute("SELECT id, at, inputs, labels FROM ingests ORDER BY id")]


def _row(r: tuple) -> Dict[str, Any]:
    node, taken_at, fp, origin, labels, gpu_count, reboot, hidden = r
    return {"node": node, "taken_at": taken_at, "fp": fp, "origin": origin, "labels": json.loads(labels),
            "gpu_count": gpu_count, "reboot": reboot, "hidden": hidden}


def read_ledger(path: Path) -> List[Dict[str, Any]]:
    out = []
    try:
        lines = ledger_path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a ledger line cut short by a crash: its ingest never committed
        if isinstance(entry, dict) and isinstance(entry.get("inputs"), list):
            out.append(entry)
    return out


def append_ledger(path: Path, inputs: List[str], labels: Dict[str, str]) -> int:
    """Append one ingest's line, synced; returns the ledger's size before, for truncate_ledger to undo it.
    A line cut short by an earlier failure is ended first, so this one stays a line of its own."""
    ledger = ledger_path(path)
    line = json.dumps({"at": now_utc().isoformat(), "inputs": inputs, "labels": labels}, sort_keys=True) + "\n"
    fd = os.open(ledger, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        before = os.fstat(fd).st_size
        if before and os.pread(fd, 1, before - 1) != b"\n":
            line = "\n" + line
        try:
            view = memoryview(line.encode("utf-8"))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            truncate_ledger(path, before)  # a full disk: no half line left for the next ingest to follow
            raise
    finally:
        os.close(fd)
    return before


def truncate_ledger(path: Path, size: int) -> None:
    """Undo append_ledger (best effort: the ingest it recorded did not happen)."""
    try:
        os.truncate(ledger_path(path), size)
    except OSError:
        pass
