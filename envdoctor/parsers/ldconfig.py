"""`ldconfig -p` output and ld.so.conf files.

ldconfig -p prints a header ("536 libs found in cache `/etc/ld.so.cache'") and one line per
cached library: "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12"
(flags may carry ", OS ABI: Linux 3.2.0", hwcap entries add ", hwcap: 0x..."). Pure; the
contract is in envdoctor/parsers/__init__.py.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from envdoctor.parsers import checked_text
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass

_LINE_RE = lazy_re(r"^\s*(\S+)\s+\(([^)]*)\)\s*=>\s*(\S.*?)\s*$")


@dataclass
class LdconfigEntry:
    soname: str  # libcudart.so.12
    flags: str  # libc6,x86-64
    path: str  # /usr/local/cuda/lib64/libcudart.so.12

    def __init__(self, soname: str, flags: str, path: str) -> None:
        # the generic __init__ of envdoctor.records checks names and defaults: 2 us a row, and `ldconfig -p` has
        # ~600 rows at every check; this is the same signature (records keeps a class's own __init__)
        self.soname = soname
        self.flags = flags
        self.path = path

    @property
    def arch(self) -> str:
        """"x86-64", "AArch64", "" (32-bit libc6), from the flags."""
        parts = [p.strip() for p in self.flags.split(",")]
        for p in parts[1:]:
            if p and ":" not in p:
                return p
        return ""


def parse_ldconfig_p(text: Optional[str]) -> List[LdconfigEntry]:
    text = checked_text(text)
    if text is None:
        return []
    out: List[LdconfigEntry] = []
    for line in text.splitlines():
        m = _LINE_RE.match(line)
        if not m:
            continue
        soname, flags, path = m.groups()
        if not path.startswith("/") or "=>" in path:
            continue
        out.append(LdconfigEntry(soname, flags.strip(), path))
    return out


def parse_ld_so_conf(text: Optional[str]) -> Tuple[List[str], List[str]]:
    """Returns (directories, include patterns) of one ld.so.conf file, in order."""
    dirs: List[str] = []
    includes: List[str] = []
    text = checked_text(text)
    if text is None:
        return dirs, includes
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include"):
            rest = line[len("include"):]
            if rest[:1] in (" ", "\t"):
                includes.extend(p for p in rest.split() if p)
                continue
        if line.startswith("hwcap"):
            continue
        # "dir=TYPE" (libc5-era syntax) and several dirs on one line separated by blanks, ':' or ','
        for part in re.split(r"[\s:,]+", line):
            part = part.split("=", 1)[0]
            if part.startswith("/"):
                dirs.append(part)
    return dirs, includes
