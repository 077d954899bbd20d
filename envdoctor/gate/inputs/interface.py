"""The model every input kind reads into (as pip-audit's dependency sources share one): an :class:`InputUnit`
(what one install command reads) of :class:`InputRequirement` lines with their :class:`Location`, the
:class:`IndexOption` s they name, and :class:`InputProblem` s; plus the limits and the file reader all kinds use."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

MAX_INPUT_BYTES = 16 * 1024 * 1024  # as envdoctor.infile.MAX_INPUT_BYTES
MAX_INCLUDE_DEPTH = 50
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 200_000  # values in one YAML file (an environment file has hundreds)
MAX_NOTES = 100
MAX_VERSION_DIGITS = 32  # a longer run of digits in a version is refused (as input, never converted to int)
_LONG_DIGITS = re.compile(r"[0-9]{%d,}" % (MAX_VERSION_DIGITS + 1))

KINDS = ("requirements", "pyproject", "conda", "pylock", "uv.lock")


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Location:
    """Where a requirement was written: the file as the user named it (includes: joined to it) and the 1-based line."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class IndexOption:
    """A place packages come from: pip's --index-url / --extra-index-url / --find-links / --no-index, a uv
    [[tool.uv.index]] entry, a conda pip section option."""

    kind: str  # index-url | extra-index-url | find-links | no-index | uv-index
    url: str
    loc: Location
    name: str = ""  # uv index name
    explicit: bool = False  # uv: used only by packages whose [tool.uv.sources] name it
    default: bool = False  # uv: replaces PyPI as the default index


@dataclass
class InputRequirement:
    name: str  # canonical (PEP 503) name
    raw: str  # the requirement as written (continuation lines joined, comment removed)
    loc: Location
    extras: Tuple[str, ...] = ()
    specifier: str = ""
    marker: Optional[str] = None
    url: Optional[str] = None  # direct reference (wheel URL or path)
    constraint: bool = False  # from a -c constraints file: restricts versions, installs nothing
    group: Optional[Tuple[str, str]] = None  # ("extra", "cu121") | ("group", "dev") | ("pip", "") for conda's pip list
    version: Optional[str] = None  # exact version fixed by a lock file or a wheel file name
    wheel_tags: Tuple[str, ...] = ()  # "cp310-cp310-linux_x86_64" of a direct wheel / locked wheels
    index: Optional[str] = None  # the only index this requirement may come from (lock file registry)
    ignored_options: List[Tuple[str, str]] = field(default_factory=list)  # options pip ignores on this line
    conda: bool = False  # a conda match spec (not a pip requirement)
    conda_build: Optional[str] = None  # conda build string ("py3.10_cuda12.1_cudnn8.9.2_0")
    conda_channel: Optional[str] = None

    @property
    def label(self) -> str:
        ex = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{ex}{self.specifier}" if not self.version else f"{self.name}{ex}=={self.version}"


@dataclass
class InputProblem:
    loc: Location
    message: str

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}"


@dataclass
class InputUnit:
    """What one install command reads (see the module docstring)."""

    path: str
    kind: str
    files: List[str] = field(default_factory=list)
    requirements: List[InputRequirement] = field(default_factory=list)
    indexes: List[IndexOption] = field(default_factory=list)
    strategy: str = "pip"  # pip: best version over every index; first-index: uv (the first index that has it)
    python: Optional[Tuple[str, Location]] = None  # conda `python` spec ("3.10", ">=3.9")
    channels: List[str] = field(default_factory=list)  # conda channels, in order
    sources: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)  # uv [tool.uv.sources]
    conflicts: List[List[Tuple[str, str]]] = field(default_factory=list)  # uv [tool.uv] conflicts
    extras: List[str] = field(default_factory=list)  # optional-dependency names defined
    groups: List[str] = field(default_factory=list)  # dependency-group names defined
    notes: List[str] = field(default_factory=list)  # what was assumed or skipped while reading
    not_judged: List[Tuple[str, str]] = field(default_factory=list)  # (line, why): what reading found it cannot judge
    uv_urls: List[str] = field(default_factory=list)  # every URL under a pyproject's [tool.uv]


Reader = Callable[[str], str]


def read_text_file(path: str) -> str:
    """Read an input file as text by envdoctor.infile's rules (a regular file only, at most MAX_INPUT_BYTES, UTF-8,
    a BOM dropped); OSError / ValueError for what cannot be read."""
    from envdoctor.infile import read_text

    return read_text(path, MAX_INPUT_BYTES)


def _why(exc: BaseException) -> str:
    from envdoctor.infile import why

    return why(exc)


def long_number(text: str) -> Optional[str]:
    """A problem message when text holds a number longer than MAX_VERSION_DIGITS digits, else None."""
    mm = _LONG_DIGITS.search(text)
    if mm is None:
        return None
    from envdoctor.gate.trust import quote_token

    return (f"a number with {len(mm.group(0))} digits in {quote_token(text, mm.start())} (versions have at most "
            f"{MAX_VERSION_DIGITS})")
