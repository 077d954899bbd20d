"""The parts of an ELF shared object the loader and the CUDA runtime look at, read with pyelftools over an mmap.

`open_elf(path)` maps the file (never reads it whole), checks that its header and section header table
lie inside it, and returns an `ElfFile` with the section table, DT_NEEDED, DT_RPATH, DT_RUNPATH,
DT_SONAME and the machine. Anything that is not a readable ELF file raises Unreadable with a one-line
reason: not a regular file, a symlink loop, empty, not ELF, truncated, a corrupt table.
"""
from __future__ import annotations

import errno
import os
import stat
import struct
from typing import IO, TYPE_CHECKING, Dict, List, Optional, Tuple, cast

from envdoctor.binaries import Unreadable
from envdoctor.records import dataclass, field

if TYPE_CHECKING:
    import mmap

    from elftools.elf.dynamic import DynamicTag

ELF_MAGIC = b"\x7fELF"
FATBIN_SECTIONS = (".nv_fatbin", ".nvFatBinSegment")
DF_1_NODEFLIB = 0x800
MAX_NAMES = 1024 * 1024  # bytes of section names read by quick_has_fatbin


@dataclass
class Section:
    name: str
    type: str
    offset: int
    size: int
    addr: int


@dataclass
class ElfFile:
    path: str
    size: int
    machine: str  # EM_X86_64, EM_AARCH64 ...
    elfclass: int  # 32 or 64
    sections: Dict[str, Section] = field(default_factory=dict)
    needed: List[str] = field(default_factory=list)
    rpath: List[str] = field(default_factory=list)
    runpath: List[str] = field(default_factory=list)
    soname: str = ""
    nodeflib: bool = False
    buf: Optional[mmap.mmap] = field(default=None, repr=False)

    @property
    def has_cuda(self) -> bool:
        return any(name in self.sections for name in FATBIN_SECTIONS)

    def close(self) -> None:
        if self.buf is not None:
            self.buf.close()
            self.buf = None

    def __enter__(self) -> "ElfFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def file_key(path: str, st: Optional[os.stat_result] = None) -> Tuple[str, os.stat_result]:
    """(absolute path, its os.stat): what a cached answer for `path` is valid for; Unreadable if none.
    `st`: the caller's os.stat(path) of a moment ago, not asked again (the scan states every file once)."""
    if st is None:
        st = _stat(path)
    elif not stat.S_ISREG(st.st_mode):
        raise Unreadable("not a regular file")
    return os.path.abspath(path), st


def _stat(path: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable("a symbolic link loop") from None
        if exc.errno == errno.ENOENT:
            raise Unreadable("no such file (a dangling link?)") from None
        raise Unreadable(f"cannot stat it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable("not a regular file")
    return st


def _split_paths(value: str) -> List[str]:
    return [p for p in value.split(":") if p]


def quick_has_fatbin(path: str) -> Optional[bool]:
    """Does the file have a fatbin section? From three small reads (ELF header, the section name table's
    header, the name table) without pyelftools: the cheap answer for the many files with no device code.
    None when it cannot tell (not ELF, odd tables): the caller then reads the file properly."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        head = os.pread(fd, 64, 0)
        if len(head) < 52 or head[:4] != ELF_MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
            return None
        e = "<" if head[5] == 1 else ">"
        if head[4] == 2:
            shoff, = struct.unpack_from(e + "Q", head, 40)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", head, 58)
            sh_fmt, off_at = e + "QQ", 24  # sh_offset, sh_size
        else:
            shoff, = struct.unpack_from(e + "I", head, 32)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", head, 46)
            sh_fmt, off_at = e + "II", 16
        if not shoff or not shnum or shstrndx >= shnum or shentsize < off_at + struct.calcsize(sh_fmt):
            return None
        sh = os.pread(fd, shentsize, shoff + shstrndx * shentsize)
        if len(sh) < shentsize:
            return None
        off, size = struct.unpack_from(sh_fmt, sh, off_at)
        if size == 0 or size > MAX_NAMES:
            return None
        names = os.pread(fd, size, off)
        if len(names) < size:
            return None
        return any(n.encode() + b"\0" in names for n in FATBIN_SECTIONS)
    except (OSError, struct.error, OverflowError, ValueError):
        return None
    finally:
        os.close(fd)


def open_elf(path: str) -> ElfFile:
    """Map `path` and read its ELF tables (not its contents). The caller closes the result."""
    st = _stat(path)
    if st.st_size == 0:
        raise Unreadable("an empty file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Unreadable(f"cannot open it: {exc.strerror or exc}") from None
    import mmap  # only for a file that is read: a warm scan maps nothing

    try:
        buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise Unreadable(f"cannot map it: {exc}") from None
    finally:
        os.close(fd)
    try:
        return _read(path, buf, len(buf))
    except Unreadable:
        buf.close()
        raise
    except Exception as exc:  # noqa: BLE001 - pyelftools raises many kinds on corrupt input
        buf.close()
        raise Unreadable(f"a corrupt ELF file ({type(exc).__name__}: {_one_line(exc)})") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160]


def _tag_string(tag: DynamicTag) -> str:
    """The string of a DT_NEEDED / DT_RPATH / DT_RUNPATH / DT_SONAME tag: pyelftools sets it with setattr, as
    .needed, .rpath, .runpath or .soname (the tag's name without DT_), so its type hints do not name it."""
    return str(getattr(tag, tag.entry.d_tag[3:].lower()))


def _read(path: str, buf: mmap.mmap, size: int) -> ElfFile:
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    if buf[:4] != ELF_MAGIC:
        raise Unreadable("not an ELF file")
    if size < 52:
        raise Unreadable(f"truncated: {size} bytes, shorter than an ELF header")
    try:
        ef = ELFFile(cast(IO[bytes], buf))  # an mmap has the read/seek/tell ELFFile uses; its hint says IO[bytes]
    except (ELFError, ValueError) as exc:
        raise Unreadable(f"a corrupt ELF header ({_one_line(exc)})") from None
    hdr = ef.header
    shoff, shnum, shentsize = hdr["e_shoff"], hdr["e_shnum"], hdr["e_shentsize"]
    if shoff == 0 or shnum == 0:
        raise Unreadable("no section header table (stripped of sections)")
    if shoff + shnum * shentsize > size:
        raise Unreadable(f"truncated: the section header table ends at byte {shoff + shnum * shentsize}, "
                         f"the file has {size}")
    out = ElfFile(path=path, size=size, machine=str(hdr["e_machine"]), elfclass=ef.elfclass, buf=buf)
    dynamic = None
    for sec in ef.iter_sections():
        s = Section(sec.name, str(sec["sh_type"]), sec["sh_offset"], sec["sh_size"], sec["sh_addr"])
        out.sections.setdefault(s.name, s)
        if s.type != "SHT_NOBITS" and s.offset + s.size > size and s.name in FATBIN_SECTIONS + (".dynamic", ".dynstr"):
            raise Unreadable(f"truncated: section {s.name} ends at byte {s.offset + s.size}, the file has {size}")
        if isinstance(sec, DynamicSection):
            dynamic = sec
    if dynamic is not None:
        for tag in dynamic.iter_tags():
            t = tag.entry.d_tag
            if t == "DT_NEEDED":
                out.needed.append(_tag_string(tag))
            elif t == "DT_RPATH":
                out.rpath += _split_paths(_tag_string(tag))
            elif t == "DT_RUNPATH":
                out.runpath += _split_paths(_tag_string(tag))
            elif t == "DT_SONAME":
                out.soname = _tag_string(tag)
            elif t == "DT_FLAGS_1":
                out.nodeflib = bool(tag.entry.d_val & DF_1_NODEFLIB)
    return out


def expand_origin(entry: str, origin: str) -> Optional[str]:
    """An RPATH/RUNPATH entry with $ORIGIN (or ${ORIGIN}) replaced by `origin`, normalised; None when it
    uses a token the loader expands from the running machine ($LIB, $PLATFORM), which a snapshot cannot."""
    value = entry.replace("${ORIGIN}", "$ORIGIN").replace("$ORIGIN", origin)
    if "$" in value:
        return None
    if not value.startswith("/"):
        return value  # relative to the process's working directory: kept as written
    return os.path.normpath(value)


__all__ = ["ElfFile", "Section", "open_elf", "quick_has_fatbin", "expand_origin", "file_key", "FATBIN_SECTIONS"]
