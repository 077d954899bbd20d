"""One shared object's device code and links, from its headers only, with a JSON cache.

`scan_file(local_path)` -> FileScan: `cuda` false for the (common) file without a fatbin section, which
costs its ELF header and section header table; for a CUDA one the fatbin entry headers too. The cache
(`BinaryCache`) keys each answer by its path and the file's signature (envdoctor.cache), so a warm `check` maps nothing; an
answer is kept as the fields that differ from a plain one ({} for most files), and the answers for files
that are gone are dropped whenever the cache is written.
"""
from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from envdoctor import cache
from envdoctor.binaries import Unreadable
from envdoctor.binaries.elf import ElfFile, file_key, open_elf, quick_has_fatbin
from envdoctor.binaries.fatbin import KIND_ELF, KIND_PTX, parse_entries
from envdoctor.records import asdict, dataclass, field

CACHE_FORMAT = 2  # 2: signatures of five fields (device, inode, size, mtime_ns, ctime_ns)
CACHE_MAX_ENTRIES = 100_000
CACHE_MAX_BYTES = 64 * 1024 * 1024
WRAPPER = struct.Struct("<IIQQ")  # __fatBinC_Wrapper_t: magic, version, fatbin address, filename/prelinked
WRAPPER_MAGIC = 0x466243B1


@dataclass
class FileScan:
    cuda: bool = False
    machine: str = ""
    elfclass: int = 0
    sass: List[str] = field(default_factory=list)
    ptx: List[str] = field(default_factory=list)
    ptx_isa: Dict[str, str] = field(default_factory=dict)  # PTX target -> newest PTX ISA version it carries
    entries: int = 0
    compressed: int = 0
    needed: List[str] = field(default_factory=list)
    rpath: List[str] = field(default_factory=list)
    runpath: List[str] = field(default_factory=list)
    soname: str = ""
    nodeflib: bool = False
    unreadable: str = ""

    @classmethod
    def from_dict(cls, data: dict) -> "FileScan":
        if not data:
            return cls()  # the common plain shared object, kept as {} (to_dict)
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict:
        """The fields that differ from a FileScan()'s: a plain shared object is {}, most of a venv's
        (the cache of a venv with torch, tensorflow and jax reads in a third of the time). from_dict reads both
        this and the full asdict form that earlier versions wrote."""
        return {k: v for k, v in asdict(self).items() if v != _DEFAULTS[k]}


_DEFAULTS = asdict(FileScan())


def _isa_key(v: str):
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return (0,)


def _target_key(t: str):
    digits = "".join(c for c in t.split("_", 1)[-1] if c.isdigit())
    return (int(digits or 0), t)


def _fatbin_ranges(elf: ElfFile) -> List[Tuple[int, int]]:
    """(start, end) byte ranges of the fatbin containers: the .nv_fatbin section, else the addresses
    the .nvFatBinSegment wrappers point at (mapped to file offsets through the section table)."""
    sec = elf.sections.get(".nv_fatbin")
    if sec is not None and sec.type != "SHT_NOBITS":
        return [(sec.offset, sec.offset + sec.size)]
    seg = elf.sections.get(".nvFatBinSegment")
    out: List[Tuple[int, int]] = []
    if seg is None or seg.type == "SHT_NOBITS":
        return out
    buf = elf.buf
    if buf is None:
        raise Unreadable("closed before its fatbin was read")  # scan_file reads it inside `with elf`
    for at in range(seg.offset, min(seg.offset + seg.size, elf.size) - WRAPPER.size + 1, WRAPPER.size):
        magic, _, addr, _ = WRAPPER.unpack_from(buf, at)
        if magic != WRAPPER_MAGIC:
            continue
        for s in elf.sections.values():
            if s.type != "SHT_NOBITS" and s.addr and s.addr <= addr < s.addr + s.size:
                out.append((s.offset + addr - s.addr, s.offset + s.size))
                break
    return out


def scan_file(path: str) -> FileScan:
    """Read one file; an unreadable one comes back with `unreadable` set to the reason (never raises)."""
    try:
        if quick_has_fatbin(path) is False:
            return FileScan()  # a plain shared object: nothing more to know about it
        elf = open_elf(path)
    except Unreadable as exc:
        return FileScan(unreadable=str(exc))
    with elf:
        out = FileScan(machine=elf.machine, elfclass=elf.elfclass, needed=list(elf.needed), rpath=list(elf.rpath),
                       runpath=list(elf.runpath), soname=elf.soname, nodeflib=elf.nodeflib)
        if not elf.has_cuda:
            return out
        out.cuda = True
        entries: list = []
        try:
            ranges = _fatbin_ranges(elf)
            if not ranges:
                raise Unreadable("a fatbin segment whose containers cannot be located")
            for start, end in ranges:
                parse_entries(elf.buf, start, end, into=entries)
        except Unreadable as exc:
            out.unreadable = str(exc)
        except (struct.error, ValueError, IndexError) as exc:
            out.unreadable = f"a corrupt fatbin ({type(exc).__name__}: {exc})"
        sass, ptx = set(), set()
        for e in entries:  # what was read before an error counts too
            out.entries += 1
            out.compressed += int(e.compressed)
            if e.kind == KIND_ELF:
                sass.add(e.target)
            elif e.kind == KIND_PTX:
                ptx.add(e.target)
                isa = e.ptx_isa or ""
                if _isa_key(isa) > _isa_key(out.ptx_isa.get(e.target, "0")):
                    out.ptx_isa[e.target] = isa
        out.sass = sorted(sass, key=_target_key)
        out.ptx = sorted(ptx, key=_target_key)
        return out


def links_of(path: str) -> FileScan:
    """Only the dynamic-section facts of any shared object (DT_NEEDED, RPATH, RUNPATH, SONAME, class, machine),
    device code or not: what the process model follows from a framework's libraries to the ones they load."""
    try:
        elf = open_elf(path)
    except Unreadable as exc:
        return FileScan(unreadable=str(exc))
    with elf:
        return FileScan(machine=elf.machine, elfclass=elf.elfclass, needed=list(elf.needed), rpath=list(elf.rpath),
                        runpath=list(elf.runpath), soname=elf.soname, nodeflib=elf.nodeflib)


class BinaryCache:
    """Answers of scan_file kept as JSON under the user cache: `<cache root>/binaries.json`, read and written by
    envdoctor.cache's rules (this user's file in this user's folder, bounded, atomically replaced). Each answer is
    kept with the file's signature (device, inode, size, mtime_ns, ctime_ns: a build copied over in place with its
    mtime restored has a new ctime), and none is kept for a file that changed within the racy window."""

    def __init__(self, path: Optional[Path], top: Optional[Path] = None) -> None:
        self.path = path
        self.top = top if top is not None else (path.parent if path is not None else None)
        self.data: Dict[str, dict] = {}
        self.records: Dict[str, dict] = {}  # RECORD path -> {"key": signature, "value": ...}
        self.links_data: Dict[str, dict] = {}  # shared object -> {"key": signature, "scan": links_of's answer}
        self.hits = 0
        self.misses = 0
        self.dirty = False
        self.now = time.time()
        if path is not None:
            raw = cache.read(path, self.top, limit=CACHE_MAX_BYTES)
            if isinstance(raw, dict) and raw.get("format") == CACHE_FORMAT and isinstance(raw.get("files"), dict):
                self.data = raw["files"]
                if isinstance(raw.get("records"), dict):
                    self.records = raw["records"]
                if isinstance(raw.get("links"), dict):
                    self.links_data = raw["links"]

    def _keep(self, key: list) -> bool:
        return not cache.sig_is_racy(key, self.now)

    def scan(self, path: str, st: Optional[os.stat_result] = None) -> FileScan:
        """scan_file(path), from the cache while the file is unchanged; `st` as elf.file_key takes it."""
        return self._kept(self.data, path, st, scan_file, count=True)

    def links(self, path: str) -> FileScan:
        """links_of(path), from the cache while the file is unchanged."""
        return self._kept(self.links_data, path, None, links_of, count=False)

    def _kept(self, table: Dict[str, dict], path: str, st: Optional[os.stat_result], compute, count: bool) -> FileScan:
        """compute(path) as `table` keeps it ({real path: {"key": signature, "scan": the answer's to_dict()}}): the
        kept answer while the file has the same signature, else computed and kept (unless the file changed within
        the racy window: then no answer is kept for it)."""
        try:
            real, st = file_key(path, st)
        except Unreadable as exc:
            return FileScan(unreadable=str(exc))
        key = cache.sig_of(st)
        hit = table.get(real)
        if isinstance(hit, dict) and hit.get("key") == key and isinstance(hit.get("scan"), dict):
            try:
                res = FileScan.from_dict(hit["scan"])
            except TypeError:
                pass
            else:
                self.hits += count
                if len(hit["scan"]) == len(_DEFAULTS) and hit["scan"] != res.to_dict():
                    hit["scan"] = res.to_dict()  # a full entry (as asdict writes it): kept compact from now on
                    self.dirty = True
                return res
        self.misses += count
        res = compute(path)
        if self._keep(key):
            table[real] = {"key": key, "scan": res.to_dict()}
            self.dirty = True
        elif table.pop(real, None) is not None:
            self.dirty = True
        return res

    def record(self, path: str, compute):
        """`compute(path)` for a dist's RECORD file (JSON-able), from the cache while the file is unchanged."""
        try:
            st = os.stat(path)
        except OSError:
            return compute(path)
        key = cache.sig_of(st)
        hit = self.records.get(path)
        if isinstance(hit, dict) and hit.get("key") == key and "value" in hit:
            return hit["value"]
        value = compute(path)
        if self._keep(key):
            self.records[path] = {"key": key, "value": value}
            self.dirty = True
        return value

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        # answers for files that are gone (a deleted venv, a test's temporary dir) go: the whole cache is read at
        # every scan, so it holds only what can still be asked (stated here, when something changed anyway)
        files = {k: v for k, v in self.data.items() if os.path.lexists(k)}
        if len(files) > CACHE_MAX_ENTRIES:
            files = dict(list(files.items())[-CACHE_MAX_ENTRIES:])
        records = {k: v for k, v in self.records.items() if os.path.lexists(k)}
        if len(records) > CACHE_MAX_ENTRIES:
            records = dict(list(records.items())[-CACHE_MAX_ENTRIES:])
        links = {k: v for k, v in self.links_data.items() if os.path.lexists(k)}
        if len(links) > CACHE_MAX_ENTRIES:
            links = dict(list(links.items())[-CACHE_MAX_ENTRIES:])
        # an unwritable cache only means scanning again next time
        cache.write(self.path, self.top, {"format": CACHE_FORMAT, "files": files, "records": records, "links": links})


__all__ = ["FileScan", "BinaryCache", "scan_file", "links_of"]
