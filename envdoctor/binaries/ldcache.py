"""The binary /etc/ld.so.cache, read without running ldconfig (so an image root is read like the live one).

Formats, as glibc's sysdeps/generic/dl-cache.h defines them (little- or big-endian as the machine):
- new ("glibc-ld.so.cache1.1", glibc >= 2.32 writes only this): a 48-byte header (20-byte magic, u32
  nlibs, u32 string table length, u8 flags, 3 pad, u32 extension offset, 12 unused), then nlibs
  24-byte entries (i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap); key and value are offsets
  of the soname and the path from the start of that header. An hwcap with bit 62 set indexes the
  glibc-hwcaps subdirectory names of the extension section (tag 1).
- old ("ld.so-1.7.0"): a 16-byte header (11-byte magic, pad, u32 nlibs), nlibs 12-byte entries (i32
  flags, u32 key, u32 value), string offsets from the end of the entries. Older ldconfigs wrote both:
  the new part then follows the old entries (8-byte aligned) and is the one the loader reads.
"""
from __future__ import annotations

import struct
from typing import Dict, List, Optional

from envdoctor.binaries import Unreadable
from envdoctor.records import dataclass

NEW_MAGIC = b"glibc-ld.so.cache1.1"
OLD_MAGIC = b"ld.so-1.7.0"
EXT_MAGIC = 0xEAA42174
HWCAP_EXTENSION = 1 << 62
MAX_CACHE = 64 * 1024 * 1024
MAX_LIBS = 1_000_000

_TYPES = {0: "libc4", 1: "ELF", 2: "libc5", 3: "libc6"}
_REQUIRED = {0x0100: "64bit", 0x0200: "IA-64", 0x0300: "x86-64", 0x0400: "64bit", 0x0500: "64bit",
             0x0600: "N32", 0x0700: "64bit", 0x0800: "x32", 0x0900: "hard-float", 0x0A00: "AArch64",
             0x0B00: "soft-float"}
# the flags an ELF file's machine and class need in the cache (glibc's _dl_cache_check_flags)
MACHINE_FLAGS = {("EM_X86_64", 64): 0x0303, ("EM_AARCH64", 64): 0x0A03, ("EM_386", 32): 0x0003,
                 ("EM_PPC64", 64): 0x0503, ("EM_S390", 64): 0x0403}


@dataclass(frozen=True)
class CacheEntry:
    soname: str
    path: str
    flags: int
    hwcap: int = 0
    hwcap_name: str = ""  # the glibc-hwcaps subdirectory (x86-64-v3) of a hwcaps entry

    @property
    def flags_text(self) -> str:
        """As `ldconfig -p` prints it: "libc6,x86-64"."""
        text = _TYPES.get(self.flags & 0xFF, f"type 0x{self.flags & 0xFF:x}")
        req = self.flags & 0xFF00
        if req:
            text += "," + _REQUIRED.get(req, f"0x{req:04x}")
        return text


def _cstr(data: bytes, off: int) -> str:
    if off < 0 or off >= len(data):
        raise Unreadable(f"a string offset {off} outside the cache ({len(data)} bytes)")
    end = data.find(b"\0", off)
    if end < 0:
        raise Unreadable(f"an unterminated string at offset {off}")
    return data[off:end].decode("utf-8", "replace")


def _endian(data: bytes, nlibs_at: int, entry_size: int, start: int) -> str:
    """'<' or '>': the byte order whose nlibs fits the file (a cache is written in the machine's order)."""
    for e in ("<", ">"):
        (n,) = struct.unpack_from(e + "I", data, nlibs_at)
        if n <= MAX_LIBS and start + n * entry_size <= len(data):
            return e
    raise Unreadable("the entry count does not fit the file")


def _hwcap_names(data: bytes, base: int, ext_off: int, e: str) -> List[str]:
    if not ext_off or base + ext_off + 8 > len(data):
        return []
    at = base + ext_off
    magic, count = struct.unpack_from(e + "II", data, at)
    if magic != EXT_MAGIC or count > 64:
        return []
    names: List[str] = []
    for i in range(count):
        sec = at + 8 + 16 * i
        if sec + 16 > len(data):
            break
        tag, _, off, size = struct.unpack_from(e + "IIII", data, sec)
        if tag == 1 and base + off + size <= len(data):
            for j in range(size // 4):
                (s,) = struct.unpack_from(e + "I", data, base + off + 4 * j)
                names.append(_cstr(data, base + s))
    return names


def _parse_new(data: bytes, base: int) -> List[CacheEntry]:
    if len(data) < base + 48:
        raise Unreadable("truncated: shorter than the cache header")
    e = _endian(data, base + 20, 24, base + 48)
    nlibs, _strlen = struct.unpack_from(e + "II", data, base + 20)
    (ext_off,) = struct.unpack_from(e + "I", data, base + 32)
    hwcaps = _hwcap_names(data, base, ext_off, e)
    out: List[CacheEntry] = []
    for i in range(nlibs):
        flags, key, value, _osv, hwcap = struct.unpack_from(e + "iIIIQ", data, base + 48 + 24 * i)
        name = ""
        if hwcap & HWCAP_EXTENSION:
            idx = hwcap & 0xFFFFFFFF
            name = hwcaps[idx] if idx < len(hwcaps) else f"#{idx}"
        out.append(CacheEntry(_cstr(data, base + key), _cstr(data, base + value), flags, hwcap, name))
    return out


def parse_cache(data: bytes) -> List[CacheEntry]:
    """Every entry of an ld.so.cache image, in file order (the order `ldconfig -p` prints)."""
    if data.startswith(NEW_MAGIC):
        return _parse_new(data, 0)
    if data.startswith(OLD_MAGIC):
        if len(data) < 16:
            raise Unreadable("truncated: shorter than the cache header")
        e = _endian(data, 12, 12, 16)
        (nlibs,) = struct.unpack_from(e + "I", data, 12)
        end = 16 + 12 * nlibs
        new_at = (end + 7) & ~7
        if data[new_at:new_at + len(NEW_MAGIC)] == NEW_MAGIC:
            return _parse_new(data, new_at)
        out = []
        for i in range(nlibs):
            flags, key, value = struct.unpack_from(e + "iII", data, 16 + 12 * i)
            out.append(CacheEntry(_cstr(data, end + key), _cstr(data, end + value), flags))
        return out
    raise Unreadable("not an ld.so.cache (unknown magic)")


def read_cache(path: str) -> List[CacheEntry]:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CACHE + 1)
    except OSError as exc:
        raise Unreadable(f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_CACHE:
        raise Unreadable(f"larger than {MAX_CACHE} bytes")
    try:
        return parse_cache(data)
    except struct.error as exc:
        raise Unreadable(f"truncated ({exc})") from None


class LdCache:
    """Soname lookups in a parsed cache: the first entry whose flags suit the binary, as the loader takes it."""

    def __init__(self, entries: List[CacheEntry]) -> None:
        self.entries = entries
        self._by_name: Dict[str, List[CacheEntry]] = {}
        for ent in entries:
            self._by_name.setdefault(ent.soname, []).append(ent)

    def lookup(self, soname: str, flags: Optional[int]) -> Optional[CacheEntry]:
        candidates = self._by_name.get(soname, [])
        fitting = [c for c in candidates if flags is None or c.flags == flags]
        plain = [c for c in fitting if not c.hwcap]
        found = plain or fitting
        return found[0] if found else None


__all__ = ["CacheEntry", "LdCache", "parse_cache", "read_cache", "MACHINE_FLAGS"]
