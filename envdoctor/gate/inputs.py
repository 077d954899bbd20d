"""Reading install inputs for ``envdoctor gate``: what each line asks pip / uv / conda to install, with file:line.

One *input unit* is what one install command reads:

* a requirements file with everything it pulls in through ``-r`` / ``-c`` (pip reads them as one install: the
  index options of every included file apply to the whole install, the last ``--index-url`` wins);
* a ``pyproject.toml`` ([project] dependencies, [project.optional-dependencies], PEP 735 [dependency-groups],
  and uv's [tool.uv.sources] / [[tool.uv.index]] / [tool.uv] conflicts);
* a conda ``environment.yml`` (name / channels / dependencies with a nested ``- pip:`` list, read by a small
  strict reader of the YAML subset conda uses: never PyYAML, no anchors or aliases, nesting bounded);
* a PEP 751 ``pylock.toml`` or a ``uv.lock`` (exact versions and the index each package comes from).

Nothing here judges a machine: markers are kept as text and evaluated by plan.py against the target.  Files are
only read, never written, through envdoctor.infile (regular files only, at most 16 MiB); includes nest at most
MAX_INCLUDE_DEPTH files, numbers in versions have at most MAX_VERSION_DIGITS digits.  Parsing never raises for bad input: every problem is an :class:`InputProblem` with the
file and line (the CLI turns them into exit code 2).
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

MAX_INPUT_BYTES = 16 * 1024 * 1024  # as envdoctor.infile.MAX_INPUT_BYTES
MAX_INCLUDE_DEPTH = 50
MAX_YAML_DEPTH = 64
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


# --------------------------------------------------------------------------- entry points


def input_kind(path: str) -> str:
    """requirements | pyproject | conda | pylock | uv.lock, from the file name (anything else: requirements)."""
    base = os.path.basename(path).lower()
    if base == "pyproject.toml":
        return "pyproject"
    if base == "uv.lock":
        return "uv.lock"
    if re.match(r"^pylock\.([^.]+\.)?toml$", base):
        return "pylock"
    if base.endswith((".yml", ".yaml")):
        return "conda"
    return "requirements"


Reader = Callable[[str], str]


def read_text_file(path: str) -> str:
    """Read an input file as text by envdoctor.infile's rules (a regular file only, at most MAX_INPUT_BYTES, UTF-8,
    a BOM dropped); OSError / ValueError for what cannot be read."""
    from envdoctor.infile import read_text

    return read_text(path, MAX_INPUT_BYTES)


def load_inputs(paths: Sequence[str], env: Optional[Mapping[str, str]] = None,
                read: Reader = read_text_file,
                kinds: Optional[Mapping[str, str]] = None) -> Tuple[List[InputUnit], List[InputProblem]]:
    """One InputUnit per named file (its includes folded in), and every problem found, each with file:line.
    ``kinds``: the kind of each path (gate/sniff.py reads it from the content); by default from the name."""
    units: List[InputUnit] = []
    problems: List[InputProblem] = []
    for path in paths:
        kind = (kinds or {}).get(path) or input_kind(path)
        unit = InputUnit(path=path, kind=kind)
        try:
            text = read(path)
        except (OSError, ValueError) as exc:
            problems.append(InputProblem(Location(path), f"cannot read it: {_why(exc)}"))
            units.append(unit)
            continue
        unit.files.append(path)
        if kind == "requirements":
            _RequirementsLoader(unit, problems, env or {}, read).load(path, text)
        elif kind == "pyproject":
            parse_pyproject(text, path, unit, problems)
        elif kind == "conda":
            parse_conda_env(text, path, unit, problems, env or {}, read)
        elif kind == "pylock":
            parse_pylock(text, path, unit, problems)
        else:
            parse_uv_lock(text, path, unit, problems)
        units.append(unit)
    for unit in units:  # bounded: a file of a million skipped entries says so once, not a million times
        if len(unit.notes) > MAX_NOTES:
            unit.notes[MAX_NOTES:] = [f"... and {len(unit.notes) - MAX_NOTES} more notes like these"]
    return units, problems


def _why(exc: BaseException) -> str:
    from envdoctor.infile import why

    return why(exc)


# --------------------------------------------------------------------------- requirements files (pip's format)

# pip's own rules (pip/_internal/req/req_file.py): a comment starts at '#' at the line start or after whitespace;
# a line ending in a backslash continues on the next one (not a comment line); ${VAR} is expanded from the
# environment when set; the first token starting with '-' ends the requirement and starts its options.
_COMMENT = re.compile(r"(^|\s+)#.*$")
_ENV_VAR = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)\}")
_NAME_AT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*@")
_ARCHIVE = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")

# option -> (canonical, takes a value)
_PIP_OPTIONS: Dict[str, Tuple[str, bool]] = {
    "-r": ("requirement", True), "--requirement": ("requirement", True),
    "-c": ("constraint", True), "--constraint": ("constraint", True),
    "-i": ("index-url", True), "--index-url": ("index-url", True),
    "--extra-index-url": ("extra-index-url", True),
    "-f": ("find-links", True), "--find-links": ("find-links", True),
    "--no-index": ("no-index", False),
    "-e": ("editable", True), "--editable": ("editable", True),
    "--pre": ("pre", False), "--prefer-binary": ("prefer-binary", False), "--require-hashes": ("require-hashes", False),
    "--trusted-host": ("trusted-host", True), "--only-binary": ("only-binary", True), "--no-binary": ("no-binary", True),
    "--use-feature": ("use-feature", True),
    # per-requirement options (pip keeps these on a requirement line)
    "--hash": ("hash", True), "--global-option": ("global-option", True), "--config-settings": ("config-settings", True),
    "--install-option": ("install-option", True),
}
_PER_REQUIREMENT = ("hash", "global-option", "config-settings", "install-option")
_INDEX_KINDS = ("index-url", "extra-index-url", "find-links", "no-index")


def logical_lines(text: str) -> List[Tuple[int, str]]:
    """(first line number, text) of each logical line: continuations joined as pip joins them."""
    out: List[Tuple[int, str]] = []
    parts: List[str] = []
    first = 0
    for n, line in enumerate(text.splitlines(), 1):
        comment_only = bool(re.match(r"^\s*#", line))
        if line.endswith("\\") and not comment_only:
            if not parts:
                first = n
            parts.append(line[:-1])
            continue
        if parts:
            parts.append(" " + line if comment_only else line)
            out.append((first, "".join(parts)))
            parts = []
        else:
            out.append((n, line))
    if parts:
        out.append((first, "".join(parts)))
    return out


def _expand_env(line: str, env: Mapping[str, str]) -> str:
    return _ENV_VAR.sub(lambda mm: env.get(mm.group("name"), mm.group(0)), line)


def _break_args_options(line: str) -> Tuple[str, str]:
    tokens = line.split(" ")
    args: List[str] = []
    rest = list(tokens)
    for token in tokens:
        if token.startswith("-"):
            break
        args.append(token)
        rest.pop(0)
    return " ".join(args).strip(), " ".join(rest).strip()


def _match_option(token: str) -> Optional[Tuple[str, str, Optional[str]]]:
    """(spelling, canonical, attached value) of a pip option token; long options may be abbreviated (optparse)."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        if name in _PIP_OPTIONS:
            return name, _PIP_OPTIONS[name][0], (value if eq else None)
        hits = [o for o in _PIP_OPTIONS if o.startswith("--") and o.startswith(name)]
        if len(hits) == 1:
            return hits[0], _PIP_OPTIONS[hits[0]][0], (value if eq else None)
        return None
    if len(token) >= 2 and token[:2] in _PIP_OPTIONS:
        attached = token[2:]
        return token[:2], _PIP_OPTIONS[token[:2]][0], (attached or None)
    return None


def parse_options(text: str) -> Tuple[List[Tuple[str, str, Optional[str]]], Optional[str]]:
    """[(spelling, canonical option, value)], or an error message, for the options part of a line."""
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        return [], f"cannot split the options ({exc})"
    out: List[Tuple[str, str, Optional[str]]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        hit = _match_option(tok)
        if hit is None:
            return out, f"pip does not accept {tok!r} in a requirements file"
        spelling, canon, value = hit
        takes = _PIP_OPTIONS[spelling][1]
        if takes and value is None:
            if i + 1 >= len(tokens):
                return out, f"option {spelling} needs a value"
            value = tokens[i + 1]
            i += 1
        elif not takes and value is not None:
            return out, f"option {spelling} takes no value"
        out.append((spelling, canon, value))
        i += 1
    return out, None


def _looks_like_url_or_path(text: str) -> bool:
    if _NAME_AT.match(text):
        return False
    head = text.split(";", 1)[0].strip()
    return ("://" in head or head.startswith((".", "/", "~", "file:")) or head.lower().endswith(_ARCHIVE)
            or bool(re.match(r"^[A-Za-z]:[\\/]", head)))


def long_number(text: str) -> Optional[str]:
    """A problem message when text holds a number longer than MAX_VERSION_DIGITS digits, else None."""
    mm = _LONG_DIGITS.search(text)
    if mm is None:
        return None
    return f"a number with {len(mm.group(0))} digits in {text[:40]!r}... (versions have at most {MAX_VERSION_DIGITS})"


def wheel_info(url: str) -> Optional[Tuple[str, str, Tuple[str, ...]]]:
    """(canonical name, version, tags) from a wheel URL or path; None when it does not name a wheel file.
    ValueError for a URL that cannot be parsed (an unclosed IPv6 bracket) or a version with a huge number."""
    path = urlparse(url).path if "://" in url else url
    base = unquote(path.rsplit("/", 1)[-1].split("#", 1)[0])
    if not base.lower().endswith(".whl"):
        return None
    too_long = long_number(base)
    if too_long:
        raise ValueError(too_long)
    try:
        name, version, _build, tags = parse_wheel_filename(base)
    except (InvalidWheelFilename, ValueError):
        return None
    tag_text = tuple(sorted({f"{t.interpreter}-{t.abi}-{t.platform}" for t in tags}))
    return str(name), str(version), tag_text


def _wheel_or_problem(url: str) -> Tuple[Optional[Tuple[str, str, Tuple[str, ...]]], Optional[str]]:
    try:
        return wheel_info(url), None
    except ValueError as exc:
        return None, f"invalid URL {url[:80]!r}: {exc}"


def parse_requirement_text(text: str, loc: Location) -> Tuple[Optional[InputRequirement], Optional[str]]:
    """A requirement (PEP 508, a direct wheel URL / path, or ``name @ url``) -> (requirement or None, problem)."""
    text = text.strip()
    url_like = _looks_like_url_or_path(text)
    before, _, marker = text.partition(";")
    # every part but a URL (its hashes may be long digit runs) is checked for numbers no version has
    problem = long_number(marker if url_like else (before.split("@", 1)[0] if _NAME_AT.match(text) else before)
                          + ";" + marker)
    if problem:
        return None, problem
    if url_like:
        url = before.strip()
        info, problem = _wheel_or_problem(url)
        if info is None:
            return None, problem  # no problem: a source archive, a VCS URL or a local project, not a judged wheel
        name, version, tags = info
        return InputRequirement(name=name, raw=text, loc=loc, specifier=f"=={version}", url=url, version=version,
                                wheel_tags=tags, marker=marker.strip() or None), None
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        return None, f"invalid requirement {text[:200]!r}: {str(exc).splitlines()[0][:200]}"
    except ValueError as exc:  # a URL packaging cannot parse
        return None, f"invalid requirement {text[:200]!r}: {str(exc)[:200]}"
    r = InputRequirement(name=canonicalize_name(req.name), raw=text, loc=loc,
                         extras=tuple(sorted(canonicalize_name(x) for x in req.extras)),
                         specifier=str(req.specifier), marker=str(req.marker) if req.marker is not None else None)
    if req.url:
        r.url = req.url
        info, problem = _wheel_or_problem(req.url)
        if problem:
            return None, problem
        if info is not None:
            r.version, r.wheel_tags = info[1], info[2]
            r.specifier = f"=={info[1]}"
    return r, None


class _RequirementsLoader:
    """Reads a requirements file and its -r / -c includes (relative to the including file, cycles refused)."""

    def __init__(self, unit: InputUnit, problems: List[InputProblem], env: Mapping[str, str], read: Reader) -> None:
        self.unit = unit
        self.problems = problems
        self.env = env
        self.read = read
        self.stack: List[str] = []

    def load(self, display: str, text: str, constraint: bool = False, group: Optional[Tuple[str, str]] = None) -> None:
        real = os.path.realpath(display)
        self.stack.append(real)
        try:
            for n, line in logical_lines(text):
                self._line(display, n, line, constraint, group)
        finally:
            self.stack.pop()

    def _line(self, display: str, n: int, line: str, constraint: bool, group) -> None:
        loc = Location(display, n)
        line = _COMMENT.sub("", line).strip()
        if not line:
            return
        line = _expand_env(line, self.env)
        args, opts_text = _break_args_options(line)
        opts, err = parse_options(opts_text) if opts_text else ([], None)
        if err:
            self.problems.append(InputProblem(loc, err))
            return
        if args:
            req, perr = parse_requirement_text(args, loc)
            if perr:
                if "${" in args:
                    perr += " (an environment variable in it is not set)"
                self.problems.append(InputProblem(loc, perr))
                return
            if req is None:
                return
            req.constraint = constraint
            req.group = group
            req.ignored_options = [(sp, v or "") for sp, canon, v in opts if canon not in _PER_REQUIREMENT]
            self.unit.requirements.append(req)
            return
        for spelling, canon, value in opts:
            if canon in ("requirement", "constraint"):
                self._include(display, loc, spelling, value or "", constraint=(canon == "constraint"), group=group)
            elif canon in _INDEX_KINDS:
                self.unit.indexes.append(IndexOption(canon, value or "", loc))
            elif canon == "editable":
                continue  # an editable local project or VCS checkout: not a framework wheel
            # --pre, --trusted-host, --only-binary ... do not change what is judged

    def _include(self, display: str, loc: Location, spelling: str, target: str, constraint: bool, group) -> None:
        if "\x00" in target:
            self.problems.append(InputProblem(loc, f"{spelling}: the file name contains a NUL byte"))
            return
        if "://" in target:
            self.unit.notes.append(f"{loc}: {spelling} {target} not read (envdoctor gate works offline)")
            return
        base = os.path.dirname(display)
        child = os.path.normpath(os.path.join(base, target)) if not os.path.isabs(target) else target
        real = os.path.realpath(child)
        if real in self.stack:
            cycle = self.stack[self.stack.index(real):] + [real]
            chain = " -> ".join(os.path.relpath(p) for p in cycle)
            self.problems.append(InputProblem(loc, f"cyclic include: {spelling} {target} ({chain})"))
            return
        if len(self.stack) >= MAX_INCLUDE_DEPTH:
            self.problems.append(InputProblem(loc, f"includes nested deeper than {MAX_INCLUDE_DEPTH} files"))
            return
        try:
            text = self.read(child)
        except (OSError, ValueError) as exc:
            self.problems.append(InputProblem(loc, f"{spelling} {target}: cannot read {child}: {_why(exc)}"))
            return
        if child not in self.unit.files:
            self.unit.files.append(child)
        self.load(child, text, constraint=constraint, group=group)


# --------------------------------------------------------------------------- TOML helpers (line numbers)


def _toml_loads(text: str, display: str, problems: List[InputProblem]) -> Optional[dict]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except RecursionError:
        problems.append(InputProblem(Location(display), "invalid TOML: arrays or tables nested too deeply"))
        return None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        mm = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        line = int(mm.group(1)) if mm else int(getattr(exc, "lineno", 0) or 0)
        if not line and "end of document" in msg:
            line = max(len(text.splitlines()), 1)
        short = re.sub(r"\s*\(at line \d+, column \d+\)$", "", msg)
        problems.append(InputProblem(Location(display, line), f"invalid TOML: {short}"))
        return None


class _LineFinder:
    """Finds the line of a string literal (each occurrence used once) or a key, after a header line."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.used: set = set()

    def header(self, pattern: str, start: int = 0) -> int:
        rx = re.compile(pattern)
        for i in range(start, len(self.lines)):
            if rx.match(self.lines[i]):
                return i + 1
        return 0

    def literal(self, value: str, after: int = 0) -> int:
        needles = [json_quote(value), "'" + value + "'"]
        for i in range(max(after - 1, 0), len(self.lines)):
            for nd in needles:
                col = self.lines[i].find(nd)
                while col >= 0:
                    if (i, col) not in self.used:
                        self.used.add((i, col))
                        return i + 1
                    col = self.lines[i].find(nd, col + 1)
        return after

    def key(self, key: str, after: int) -> int:
        rx = re.compile(r"^\s*(\"|')?" + re.escape(key) + r"(\"|')?\s*=")
        for i in range(max(after - 1, 0), len(self.lines)):
            if rx.match(self.lines[i]):
                return i + 1
        return after


def json_quote(value: str) -> str:
    import json

    return json.dumps(value)


def _str_list(value: Any) -> Optional[List[str]]:
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    return None


# --------------------------------------------------------------------------- pyproject.toml


def parse_pyproject(text: str, display: str, unit: InputUnit, problems: List[InputProblem]) -> None:
    data = _toml_loads(text, display, problems)
    if data is None:
        return
    lf = _LineFinder(text)
    project = data.get("project", {})
    if not isinstance(project, dict):
        problems.append(InputProblem(Location(display, lf.header(r"^\s*\[\s*project\s*\]")), "[project] is not a table"))
        return
    head = lf.header(r"^\s*\[\s*project\s*\]")
    deps = project.get("dependencies", [])
    if _str_list(deps) is None:
        problems.append(InputProblem(Location(display, lf.key("dependencies", head)),
                                     "[project] dependencies must be a list of requirement strings"))
        deps = []
    dep_line = lf.key("dependencies", head) if deps else head
    for dep in deps:
        _add_pep508(dep, Location(display, lf.literal(dep, dep_line)), None, unit, problems)
    opt = project.get("optional-dependencies", {})
    opt_head = lf.header(r"^\s*\[\s*project\.optional-dependencies\s*\]") or lf.key("optional-dependencies", head)
    if not isinstance(opt, dict):
        problems.append(InputProblem(Location(display, opt_head), "[project.optional-dependencies] is not a table"))
        opt = {}
    for extra, items in opt.items():
        eline = lf.key(extra, opt_head)
        if _str_list(items) is None:
            problems.append(InputProblem(Location(display, eline),
                                         f"optional dependency group {extra!r} must be a list of strings"))
            continue
        unit.extras.append(canonicalize_name(extra))
        for dep in items:
            _add_pep508(dep, Location(display, lf.literal(dep, eline)), ("extra", canonicalize_name(extra)), unit, problems)
    groups = data.get("dependency-groups", {})
    g_head = lf.header(r"^\s*\[\s*dependency-groups\s*\]")
    if not isinstance(groups, dict):
        problems.append(InputProblem(Location(display, g_head), "[dependency-groups] is not a table"))
        groups = {}
    norm_groups = {canonicalize_name(k): (k, v) for k, v in groups.items()}
    for key, (name, _items) in norm_groups.items():
        unit.groups.append(key)
        gline = lf.key(name, g_head)
        for dep, where in _expand_group(key, norm_groups, [], Location(display, gline), problems):
            _add_pep508(dep, Location(display, lf.literal(dep, where.line)), ("group", key), unit, problems)
    _uv_settings(data, display, lf, unit, problems)


def _expand_group(key: str, groups: Dict[str, Tuple[str, Any]], stack: List[str], loc: Location,
                  problems: List[InputProblem]) -> List[Tuple[str, Location]]:
    """PEP 735: a group's requirement strings, {include-group = "..."} expanded (cycles refused)."""
    if key in stack:
        problems.append(InputProblem(loc, f"dependency group {key!r} includes itself ({' -> '.join(stack + [key])})"))
        return []
    if key not in groups:
        problems.append(InputProblem(loc, f"include-group {key!r}: no such dependency group"))
        return []
    if len(stack) >= MAX_INCLUDE_DEPTH:
        problems.append(InputProblem(loc, f"dependency groups include each other deeper than {MAX_INCLUDE_DEPTH}"))
        return []
    name, items = groups[key]
    if not isinstance(items, list):
        problems.append(InputProblem(loc, f"dependency group {name!r} must be a list"))
        return []
    out: List[Tuple[str, Location]] = []
    for item in items:
        if isinstance(item, str):
            out.append((item, loc))
        elif isinstance(item, dict) and set(item) == {"include-group"} and isinstance(item["include-group"], str):
            out.extend(_expand_group(canonicalize_name(item["include-group"]), groups, stack + [key], loc, problems))
        else:
            problems.append(InputProblem(loc, f"dependency group {name!r}: {item!r} is neither a requirement string "
                                              f"nor {{include-group = \"...\"}}"))
    return out


def _add_pep508(dep: str, loc: Location, group, unit: InputUnit, problems: List[InputProblem]) -> None:
    req, err = parse_requirement_text(dep, loc)
    if err:
        problems.append(InputProblem(loc, err))
        return
    if req is not None:
        req.group = group
        unit.requirements.append(req)


def _uv_settings(data: dict, display: str, lf: _LineFinder, unit: InputUnit, problems: List[InputProblem]) -> None:
    tool = data.get("tool", {})
    uv = tool.get("uv", {}) if isinstance(tool, dict) else {}
    if not isinstance(uv, dict):
        return
    idx = uv.get("index", [])
    idx_line = lf.header(r"^\s*\[\[\s*tool\.uv\.index\s*\]\]")
    if isinstance(idx, list):
        for i, entry in enumerate(idx):
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                problems.append(InputProblem(Location(display, idx_line), "[[tool.uv.index]] entries need a url"))
                continue
            line = lf.literal(entry["url"], idx_line) or idx_line
            unit.indexes.append(IndexOption("uv-index", entry["url"], Location(display, line),
                                            name=str(entry.get("name", "")), explicit=bool(entry.get("explicit", False)),
                                            default=bool(entry.get("default", False))))
    for key in ("index-url", "extra-index-url", "find-links"):
        vals = uv.get(key)
        vals = [vals] if isinstance(vals, str) else (vals if isinstance(vals, list) else [])
        for v in vals:
            if isinstance(v, str):
                unit.indexes.append(IndexOption(key, v, Location(display, lf.literal(v, 0))))
    if any(o.kind == "uv-index" for o in unit.indexes) or "sources" in uv:
        unit.strategy = "first-index"
    sources = uv.get("sources", {})
    if isinstance(sources, dict):
        for name, spec in sources.items():
            items = spec if isinstance(spec, list) else [spec]
            clean = [{k: str(v) for k, v in s.items() if isinstance(v, (str, bool))} for s in items if isinstance(s, dict)]
            unit.sources[canonicalize_name(name)] = clean
    conflicts = uv.get("conflicts", [])
    if isinstance(conflicts, list):
        for group in conflicts:
            if not isinstance(group, list):
                continue
            items = []
            for item in group:
                if isinstance(item, dict):
                    if isinstance(item.get("extra"), str):
                        items.append(("extra", canonicalize_name(item["extra"])))
                    elif isinstance(item.get("group"), str):
                        items.append(("group", canonicalize_name(item["group"])))
            if items:
                unit.conflicts.append(items)


# --------------------------------------------------------------------------- pylock.toml (PEP 751) and uv.lock


def _block_lines(text: str, header: str) -> List[int]:
    rx = re.compile(r"^\s*\[\[\s*" + re.escape(header) + r"\s*\]\]\s*(#.*)?$")
    return [i + 1 for i, line in enumerate(text.splitlines()) if rx.match(line)]


def _locked(name: Any, version: Any, loc: Location, *, marker: Optional[str], index: Optional[str],
            wheels: Any) -> Tuple[Optional[InputRequirement], Optional[str]]:
    """A locked package -> (requirement, None), or (None, the problem)."""
    if not isinstance(name, str) or not isinstance(version, str):
        return None, None
    if not isinstance(wheels, list):
        return None, f"{name}: wheels must be an array of tables, not {type(wheels).__name__}"
    problem = long_number(version) or long_number(marker or "")
    if problem:
        return None, problem
    tags: List[str] = []
    for w in wheels:
        if isinstance(w, dict):
            try:
                info = wheel_info(str(w.get("name") or w.get("url") or w.get("path") or ""))
            except ValueError as exc:
                return None, f"{name}: a wheel's URL or file name cannot be read: {exc}"
            if info is not None:
                tags.extend(info[2])
    return InputRequirement(name=canonicalize_name(name), raw=f"{name} {version}", loc=loc, specifier=f"=={version}",
                            version=version, marker=marker, index=index, wheel_tags=tuple(sorted(set(tags)))), None


def parse_pylock(text: str, display: str, unit: InputUnit, problems: List[InputProblem]) -> None:
    data = _toml_loads(text, display, problems)
    if data is None:
        return
    lv = data.get("lock-version")
    if not isinstance(lv, str) or not lv.startswith("1."):
        problems.append(InputProblem(Location(display, _LineFinder(text).key("lock-version", 1) or 1),
                                     f"not a PEP 751 lock file (lock-version {lv!r}; envdoctor reads 1.x)"))
        return
    pkgs = data.get("packages", [])
    if not isinstance(pkgs, list):
        problems.append(InputProblem(Location(display, 1), "packages must be an array of tables"))
        return
    heads = _block_lines(text, "packages")
    lf = _LineFinder(text)
    for i, p in enumerate(pkgs):
        if not isinstance(p, dict):
            continue
        head = heads[i] if i < len(heads) else 0
        line = lf.key("name", head) if head else lf.literal(str(p.get("name", "")), 0)
        marker = p.get("marker") if isinstance(p.get("marker"), str) else None
        index = p.get("index") if isinstance(p.get("index"), str) else None
        req, problem = _locked(p.get("name"), p.get("version"), Location(display, line), marker=marker, index=index,
                               wheels=p.get("wheels", []))
        if problem:
            problems.append(InputProblem(Location(display, line), problem))
            continue
        if req is None:
            if isinstance(p.get("name"), str) and "version" not in p:
                unit.notes.append(f"{Location(display, line)}: {p['name']} has no version (a directory or VCS entry): "
                                  f"not judged")
                continue
            problems.append(InputProblem(Location(display, line), "a [[packages]] entry needs string name and version"))
            continue
        unit.requirements.append(req)


def parse_uv_lock(text: str, display: str, unit: InputUnit, problems: List[InputProblem]) -> None:
    data = _toml_loads(text, display, problems)
    if data is None:
        return
    pkgs = data.get("package", [])
    if not isinstance(data.get("version"), int) or not isinstance(pkgs, list):
        problems.append(InputProblem(Location(display, 1), "not a uv.lock file (no integer version / [[package]] array)"))
        return
    heads = _block_lines(text, "package")
    lf = _LineFinder(text)
    unit.strategy = "first-index"
    for i, p in enumerate(pkgs):
        if not isinstance(p, dict):
            continue
        head = heads[i] if i < len(heads) else 0
        line = lf.key("name", head) if head else 0
        src = p.get("source") if isinstance(p.get("source"), dict) else {}
        if not isinstance(p.get("version"), str) or not src.get("registry") and not src.get("url"):
            continue  # the project itself, an editable / directory / git source: not a wheel from an index
        markers = p.get("resolution-markers")
        marker = None
        if isinstance(markers, list) and markers and all(isinstance(x, str) for x in markers):
            marker = " or ".join(f"({x})" for x in markers)
        req, problem = _locked(p.get("name"), p.get("version"), Location(display, line), marker=marker,
                               index=src.get("registry") if isinstance(src.get("registry"), str) else None,
                               wheels=p.get("wheels", []))
        if problem:
            problems.append(InputProblem(Location(display, line), problem))
            continue
        if req is None:
            problems.append(InputProblem(Location(display, line), "a [[package]] entry needs string name and version"))
            continue
        unit.requirements.append(req)


# --------------------------------------------------------------------------- environment.yml (conda)


class YamlError(ValueError):
    def __init__(self, line: int, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.message = message
        self.unsupported = unsupported


@dataclass
class YNode:
    kind: str  # scalar | seq | map | null
    value: Any
    line: int


_KEY = re.compile(
    r"""^(?:"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>(?:[^']|'')*)'"""
    r"""|(?P<plain>[^\s'"#\-?:\[\]{},&*!|>%@`][^#]*?|-[^\s#][^#]*?))\s*:(?:\s+|$)(?P<rest>.*)$""")


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"" and (i == 0 or line[i - 1] in " \t[,{:-"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


class _YamlSubset:
    """A strict reader for the YAML that conda environment files (and pre-commit / action files) use: block
    mappings and sequences, plain and quoted scalars, one-line flow sequences, comments.  Anchors, tags, block
    scalars and flow mappings raise YamlError(unsupported=True)."""

    def __init__(self, text: str) -> None:
        self.lines: List[Tuple[int, int, str]] = []
        for n, raw in enumerate(text.splitlines(), 1):
            lead = raw[: len(raw) - len(raw.lstrip(" \t"))]
            if "\t" in lead and raw.strip():
                raise YamlError(n, "a tab character is used for indentation (YAML allows spaces only)")
            body = _strip_comment(raw)
            s = body.strip()
            if not s:
                continue
            if s == "---" and not self.lines:
                continue
            if s == "...":
                break
            if s.startswith("%"):
                raise YamlError(n, "YAML directives are not supported", unsupported=True)
            self.lines.append((n, len(body) - len(body.lstrip(" ")), s))
        self.i = 0
        self.depth = 0

    def document(self) -> YNode:
        if not self.lines:
            return YNode("null", None, 1)
        node = self.block(self.lines[0][1])
        if self.i < len(self.lines):
            n, _ind, s = self.lines[self.i]
            raise YamlError(n, f"unexpected indentation or content {s[:40]!r}")
        return node

    @staticmethod
    def _is_item(s: str) -> bool:
        return s == "-" or s.startswith("- ")

    def block(self, indent: int) -> YNode:
        n, ind, s = self.lines[self.i]
        if self._is_item(s):
            return self.seq(ind)
        if _KEY.match(s):
            return self.mapping(ind)
        self.i += 1
        node = self.scalar(s, n)
        if self.i < len(self.lines) and self.lines[self.i][1] > indent:
            raise YamlError(self.lines[self.i][0], "multi-line plain scalars are not supported", unsupported=True)
        return node

    def _nested(self, read: Callable[[int], YNode], indent: int) -> YNode:
        """read(indent) one level deeper; YamlError beyond MAX_YAML_DEPTH (the reader recurses per level)."""
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise YamlError(self.lines[self.i][0], f"nested deeper than {MAX_YAML_DEPTH} levels")
            return read(indent)
        finally:
            self.depth -= 1

    def seq(self, indent: int) -> YNode:
        return self._nested(self._seq, indent)

    def mapping(self, indent: int) -> YNode:
        return self._nested(self._mapping, indent)

    def _seq(self, indent: int) -> YNode:
        items: List[YNode] = []
        start = self.lines[self.i][0]
        while self.i < len(self.lines):
            n, ind, s = self.lines[self.i]
            if ind < indent or not self._is_item(s):
                if ind > indent:
                    raise YamlError(n, "bad indentation: this line is deeper than the sequence entries around it")
                break
            if ind > indent:
                raise YamlError(n, "bad indentation of a sequence entry")
            rest = s[1:].lstrip(" ")
            self.i += 1
            if not rest:
                if self.i < len(self.lines) and self.lines[self.i][1] > indent:
                    items.append(self.block(self.lines[self.i][1]))
                else:
                    items.append(YNode("null", None, n))
                continue
            col = indent + (len(s) - len(rest))
            if self._is_item(rest):
                raise YamlError(n, "nested sequences on one line ('- - x') are not supported", unsupported=True)
            if _KEY.match(rest):
                self.i -= 1  # re-read this line as the mapping's first 'key: value' (in place: no O(n) insert)
                self.lines[self.i] = (n, col, rest)
                items.append(self.mapping(col))
            else:
                items.append(self.scalar(rest, n))
                if self.i < len(self.lines) and self.lines[self.i][1] > indent and not self._is_item(self.lines[self.i][2]):
                    raise YamlError(self.lines[self.i][0], "multi-line plain scalars are not supported", unsupported=True)
        return YNode("seq", items, start)

    def _mapping(self, indent: int) -> YNode:
        out: Dict[str, YNode] = {}
        start = self.lines[self.i][0]
        while self.i < len(self.lines):
            n, ind, s = self.lines[self.i]
            if ind < indent:
                break
            if ind > indent:
                raise YamlError(n, "bad indentation of a mapping entry")
            mm = _KEY.match(s)
            if not mm:
                if self._is_item(s):
                    raise YamlError(n, "a sequence entry where a 'key: value' line was expected")
                raise YamlError(n, f"expected 'key: value', found {s[:40]!r}")
            key = mm.group("dq") if mm.group("dq") is not None else (
                mm.group("sq").replace("''", "'") if mm.group("sq") is not None else mm.group("plain").strip())
            rest = mm.group("rest").strip()
            if key in out:
                raise YamlError(n, f"duplicate key {key!r}")
            self.i += 1
            if rest:
                value = self.scalar(rest, n)
                if self.i < len(self.lines) and self.lines[self.i][1] > indent:
                    raise YamlError(self.lines[self.i][0], "bad indentation: a value was already given on the line above")
            elif self.i < len(self.lines) and self.lines[self.i][1] > indent:
                value = self.block(self.lines[self.i][1])
            elif self.i < len(self.lines) and self.lines[self.i][1] == indent and self._is_item(self.lines[self.i][2]):
                value = self.seq(indent)
            else:
                value = YNode("null", None, n)
            out[key] = value
        return YNode("map", out, start)

    def scalar(self, s: str, n: int) -> YNode:
        if s[0] in "&*!":
            raise YamlError(n, "anchors, aliases and tags are not supported", unsupported=True)
        if s[0] in "|>":
            raise YamlError(n, "block scalars (| or >) are not supported", unsupported=True)
        if s[0] == "{":
            raise YamlError(n, "flow mappings ({...}) are not supported", unsupported=True)
        if s[0] == "[":
            if not s.endswith("]"):
                raise YamlError(n, "a flow sequence must close on the same line", unsupported=True)
            inner = s[1:-1].strip()
            items = []
            if inner:
                for part in _split_flow(inner, n):
                    items.append(self.scalar(part, n))
            return YNode("seq", items, n)
        if s[0] == '"':
            mm = re.match(r'^"((?:[^"\\]|\\.)*)"$', s)
            if not mm:
                raise YamlError(n, "unterminated or malformed double-quoted string")
            return YNode("scalar", _unescape(mm.group(1), n), n)
        if s[0] == "'":
            mm = re.match(r"^'((?:[^']|'')*)'$", s)
            if not mm:
                raise YamlError(n, "unterminated or malformed single-quoted string")
            return YNode("scalar", mm.group(1).replace("''", "'"), n)
        if s in ("~", "null", "Null", "NULL"):
            return YNode("null", None, n)
        return YNode("scalar", s, n)


def _split_flow(inner: str, n: int) -> List[str]:
    parts, buf, quote = [], "", ""
    for ch in inner:
        if quote:
            buf += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
            buf += ch
        elif ch in "[{":
            raise YamlError(n, "nested flow collections are not supported", unsupported=True)
        elif ch == ",":
            parts.append(buf.strip())
            buf = ""
        else:
            buf += ch
    if quote:
        raise YamlError(n, "unterminated quoted string in a flow sequence")
    if buf.strip():
        parts.append(buf.strip())
    if any(not p for p in parts):
        raise YamlError(n, "empty entry in a flow sequence")
    return parts


def _unescape(body: str, n: int) -> str:
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "0": "\0", " ": " "}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            hexd = body[i + 2:i + 2 + width]
            if len(hexd) != width or not re.match(r"^[0-9a-fA-F]+$", hexd):
                raise YamlError(n, f"bad escape \\{nxt}{hexd}")
            if int(hexd, 16) > 0x10FFFF:
                raise YamlError(n, f"bad escape \\{nxt}{hexd} (beyond Unicode)")
            out.append(chr(int(hexd, 16)))
            i += 2 + width
        else:
            raise YamlError(n, f"unknown escape \\{nxt}")
    return "".join(out)


def read_yaml(text: str) -> YNode:
    """The document as YNodes (each with its line), read by the built-in subset reader only (never PyYAML: no
    aliases, so no alias bombs; nesting at most MAX_YAML_DEPTH levels).  YamlError (with a line) when the text
    is not valid YAML or uses what the subset does not read."""
    try:
        return _YamlSubset(text).document()
    except YamlError as exc:
        tail = " (by envdoctor's built-in YAML reader)" if exc.unsupported else ""
        raise YamlError(exc.line, f"invalid YAML: {exc.message}{tail}", unsupported=exc.unsupported) from None


_CONDA_SPEC = re.compile(r"^(?:(?P<channel>[A-Za-z0-9_.\-/:]+)::)?(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<rest>.*)$")


def parse_conda_spec(text: str, loc: Location) -> Tuple[Optional[InputRequirement], Optional[str]]:
    """A conda match spec ("pytorch", "pytorch=2.1.2", "pytorch::pytorch==2.1.2=py3.10_cuda12.1_cudnn8.9.2_0",
    "python>=3.9", "pytorch-cuda=12.1") -> InputRequirement(conda=True) with a PEP 440 specifier where it converts."""
    too_long = long_number(text)
    if too_long:
        return None, too_long
    mm = _CONDA_SPEC.match(text.strip())
    if not mm:
        return None, f"invalid conda package spec {text[:200]!r}"
    name = canonicalize_name(mm.group("name"))
    rest = mm.group("rest").strip()
    build = None
    spec = ""
    if rest.startswith("["):
        return InputRequirement(name=name, raw=text, loc=loc, conda=True, conda_channel=mm.group("channel")), None
    if rest and " " in rest and not re.match(r"^[<>=!~]", rest):
        parts = rest.split()
        rest, build = parts[0], (parts[1] if len(parts) > 1 else None)
    if rest.startswith("==") or rest.startswith("="):
        exact = rest.startswith("==")
        body = rest[2:] if exact else rest[1:]
        ver, _, b = body.partition("=")
        build = b or build
        ver = ver.strip()
        if ver and ver != "*":
            spec = f"=={ver}" if exact or ver.endswith("*") else f"=={ver}.*"
            spec = spec.replace("**", "*").replace(".*.*", ".*")
    elif rest and rest[0] in "<>!~":
        spec = rest.replace(" ", "")
    elif rest:
        ver = rest.split("=", 1)[0]
        build = rest.split("=", 1)[1] if "=" in rest else build
        spec = f"=={ver}" if ver.endswith("*") else f"=={ver}.*"
    if "|" in spec:
        spec = ""  # conda's OR: not judged
    if spec:
        try:
            from packaging.specifiers import SpecifierSet

            SpecifierSet(spec)
        except Exception:  # noqa: BLE001
            return None, f"cannot read the version in conda package spec {text!r}"
    return InputRequirement(name=name, raw=text, loc=loc, specifier=spec, conda=True, conda_build=build,
                            conda_channel=mm.group("channel")), None


def parse_conda_env(text: str, display: str, unit: InputUnit, problems: List[InputProblem],
                    env: Optional[Mapping[str, str]] = None, read: Reader = read_text_file) -> None:
    try:
        root = read_yaml(text)
    except YamlError as exc:
        problems.append(InputProblem(Location(display, exc.line), exc.message))
        return
    if root.kind == "null":
        unit.notes.append(f"{display}: empty environment file")
        return
    if root.kind != "map":
        problems.append(InputProblem(Location(display, root.line), "a conda environment file is a mapping "
                                                                   "(name:, channels:, dependencies:)"))
        return
    channels = root.value.get("channels")
    if channels is not None and channels.kind != "null":
        if channels.kind != "seq" or any(c.kind != "scalar" for c in channels.value):
            problems.append(InputProblem(Location(display, channels.line), "channels must be a list of channel names"))
        else:
            unit.channels = [str(c.value) for c in channels.value]
    deps = root.value.get("dependencies")
    if deps is None or deps.kind == "null":
        unit.notes.append(f"{display}: no dependencies")
        return
    if deps.kind != "seq":
        problems.append(InputProblem(Location(display, deps.line), "dependencies must be a list"))
        return
    for item in deps.value:
        loc = Location(display, item.line)
        if item.kind == "scalar":
            req, err = parse_conda_spec(str(item.value), loc)
            if err:
                problems.append(InputProblem(loc, err))
                continue
            if req is None:
                continue
            if req.name == "python":
                unit.python = (req.specifier or "", loc)
                continue
            unit.requirements.append(req)
        elif item.kind == "map":
            for key, sub in item.value.items():
                if key != "pip":
                    unit.notes.append(f"{Location(display, sub.line)}: '{key}:' section not read (only 'pip:' is)")
                    continue
                if sub.kind == "null":
                    continue
                if sub.kind != "seq" or any(x.kind != "scalar" for x in sub.value):
                    problems.append(InputProblem(Location(display, sub.line), "the pip: section must be a list of "
                                                                              "requirement lines"))
                    continue
                _pip_section(sub.value, display, unit, problems, env or {}, read)
        elif item.kind != "null":
            problems.append(InputProblem(loc, "a dependency must be a package spec or a 'pip:' list"))


def _pip_section(items: List[YNode], display: str, unit: InputUnit, problems: List[InputProblem],
                 env: Mapping[str, str], read: Reader) -> None:
    """conda writes the pip: list to a requirements file next to environment.yml and runs pip on it."""
    loader = _RequirementsLoader(unit, problems, env, read)
    loader.stack.append(os.path.realpath(display))
    for x in items:
        loader._line(display, x.line, str(x.value), False, ("pip", ""))
