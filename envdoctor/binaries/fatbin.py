"""CUDA fat binary containers (the bytes of an ELF `.nv_fatbin` section): which SASS and PTX they hold.

Layout, little-endian, as measured on binaries built here by nvcc 13.0 and checked against
`cuobjdump --list-elf --list-ptx` (tests/test_binaries_fatbin.py; SOURCES.toml of
tests/fixtures/binaries/ says how each fixture was made):

container header, 16 bytes:
    u32 magic 0xBA55ED50, u16 version (1), u16 header size (16), u64 size of the entries that follow
entry header, `header size` bytes (64; 80 or 96/112 for newer targets, whose extra bytes follow the 64):
    +0  u16 kind: 1 PTX, 2 ELF (a cubin: SASS)
    +2  u16 entry format version (0x0101)
    +4  u32 header size
    +8  u64 payload size (the payload follows the header; the next entry follows the payload)
    +16 u32 compressed size (0 when the payload is stored as is)
    +24 u16 minor, u16 major: the PTX ISA version of a PTX entry (9.0 from CUDA 13.0); the cubin
        ELF version of a cubin entry (1.8)
    +28 u32 arch: 75, 80, 90, 100, 120 (sm_/compute_ XY as a number)
    +40 u64 flags: 0x1 64-bit, 0x10 Linux host, 0x2000 or 0x8000 compressed payload, 0x100000 an
        arch-specific target (sm_90a, compute_100a), 0x200000 a family target (sm_100f, compute_100f)
    +56 u64 uncompressed size of a compressed payload

Only headers are read: each payload is skipped by its declared size, so a 1 GB libtorch_cuda.so
costs a few pages per kernel image, and a size that points outside the section is an error (the file
is reported unreadable with the reason), never a read past the end.
"""
from __future__ import annotations

import struct
from typing import List, Optional, Tuple

from envdoctor.binaries import Unreadable
from envdoctor.records import dataclass

MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", MAGIC)
CONTAINER_HEADER = struct.Struct("<IHHQ")
ENTRY_HEADER = struct.Struct("<HHIQIIHHI")  # kind, version, header size, payload size, compressed, -, minor, major, arch
FLAGS = struct.Struct("<Q")

KIND_PTX = 1
KIND_ELF = 2
FLAG_COMPRESSED = 0x2000 | 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000

MAX_ENTRIES = 200_000  # per file: libcublasLt, the largest known, has a few thousand
MAX_GAP = 4096  # bytes of padding tolerated between two containers


@dataclass(frozen=True)
class Entry:
    kind: int  # KIND_PTX, KIND_ELF, or another value nvcc may write (kept, not judged)
    arch: int  # 80 for sm_80 / compute_80
    suffix: str  # "", "a" (arch-specific) or "f" (family)
    version: Tuple[int, int]  # PTX ISA version for PTX; cubin ELF version for ELF
    compressed: bool
    offset: int  # of the entry header, in the buffer

    @property
    def target(self) -> str:
        """sm_80, sm_90a, sm_100f for a cubin; compute_75, compute_100f for PTX."""
        prefix = "compute" if self.kind == KIND_PTX else "sm" if self.kind == KIND_ELF else f"kind{self.kind}"
        return f"{prefix}_{self.arch}{self.suffix}"

    @property
    def ptx_isa(self) -> Optional[str]:
        return f"{self.version[0]}.{self.version[1]}" if self.kind == KIND_PTX else None


def _suffix(flags: int) -> str:
    if flags & FLAG_ARCH_SPECIFIC:
        return "a"
    if flags & FLAG_FAMILY:
        return "f"
    return ""


def parse_entries(buf, start: int, end: int, max_entries: int = MAX_ENTRIES,
                  into: Optional[List[Entry]] = None) -> List[Entry]:
    """Every entry of the containers in buf[start:end] (an mmap or bytes); Unreadable when a size lies.

    Containers follow each other (a few bytes of padding allowed); anything else after the last one
    ends the scan, as the CUDA runtime does not look there either. The entries read before an error
    stay in `into` (when given).
    """
    entries: List[Entry] = into if into is not None else []
    pos = start
    while pos + CONTAINER_HEADER.size <= end:
        if buf[pos:pos + 4] != MAGIC_BYTES:
            found = buf.find(MAGIC_BYTES, pos, min(end, pos + MAX_GAP))
            if found < 0:
                if not entries and pos == start:
                    raise Unreadable(f"no fatbin container at offset {start} (magic {bytes(buf[pos:pos + 4]).hex()})")
                break
            pos = found
            continue
        _, version, hsize, size = CONTAINER_HEADER.unpack_from(buf, pos)
        if hsize < CONTAINER_HEADER.size:
            raise Unreadable(f"fatbin container at offset {pos}: header size {hsize} < 16")
        body, cend = pos + hsize, pos + hsize + size
        if cend > end:
            raise Unreadable(f"fatbin container at offset {pos} claims {size} bytes; "
                             f"only {max(0, end - body)} remain in the section")
        p = body
        while p + ENTRY_HEADER.size <= cend:
            kind, _, ehsize, psize, csize, _, minor, major, arch = ENTRY_HEADER.unpack_from(buf, p)
            if ehsize < 64:
                raise Unreadable(f"fatbin entry at offset {p}: header size {ehsize} < 64")
            nxt = p + ehsize + psize
            if nxt > cend:
                raise Unreadable(f"fatbin entry at offset {p} claims a {psize}-byte payload; "
                                 f"only {max(0, cend - p - ehsize)} remain in its container")
            (flags,) = FLAGS.unpack_from(buf, p + 40)
            entries.append(Entry(kind=kind, arch=arch, suffix=_suffix(flags), version=(major, minor),
                                 compressed=bool(flags & FLAG_COMPRESSED) or csize > 0, offset=p))
            if len(entries) > max_entries:
                raise Unreadable(f"more than {max_entries} fatbin entries: stopped reading")
            p = nxt
        pos = cend
    return entries


__all__ = ["Entry", "parse_entries", "KIND_ELF", "KIND_PTX", "MAGIC"]
