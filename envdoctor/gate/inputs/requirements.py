"""pip's requirements-file format: logical lines, options, -r / -c includes (relative to the including file,
cycles refused), PEP 508 lines, direct wheel URLs / paths (judged by their file-name tags)."""
from __future__ import annotations

import os
import re
import shlex
from typing import Dict, List, Mapping, Optional, Tuple

from envdoctor.gate.trust import ENV_REF, Guard, has_env_ref, quote_token
from envdoctor.gate.inputs.local_project import add_local_project, local_dir, split_extras
from envdoctor.gate.inputs.requirement_line import _ARCHIVE, _NAME_AT, parse_requirement_text
from envdoctor.gate.inputs.requirement_line import wheel_info  # noqa: F401 - re-exported (gate.inputs, pylock)
from envdoctor.gate.inputs.interface import (MAX_INCLUDE_DEPTH, IndexOption, InputProblem, InputUnit, Location, Reader,
                                             _why)

# --------------------------------------------------------------------------- requirements files (pip's format)

# pip's own rules (pip/_internal/req/req_file.py): a comment starts at '#' at the line start or after whitespace;
# a line ending in a backslash continues on the next one (not a comment line); ${VAR} is expanded from the
# environment when set; the first token starting with '-' ends the requirement and starts its options.
_COMMENT = re.compile(r"(^|\s+)#.*$")

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


def _expand_env(line: str, env: Mapping[str, str], unexpanded: Optional[List[str]] = None) -> str:
    """pip's ${VAR} expansion, from ``env`` only (gate hands it just the variables the user named); the names left
    unexpanded are added to ``unexpanded``."""
    def one(mm) -> str:
        name = mm.group("name")
        if name in env:
            return env[name]
        if unexpanded is not None and name not in unexpanded:
            unexpanded.append(name)
        return mm.group(0)
    return ENV_REF.sub(one, line)


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
            return out, f"pip does not accept {quote_token(tok)} in a requirements file"
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


def _shown(path: str) -> str:
    """A path an input names, as printed: control characters dropped, at most 80 characters."""
    clean = "".join(ch for ch in path if ch.isprintable())
    return clean if len(clean) <= 80 else clean[:80] + "…"


class _RequirementsLoader:
    """Reads a requirements file and its -r / -c includes (relative to the including file, cycles refused)."""

    def __init__(self, unit: InputUnit, problems: List[InputProblem], env: Mapping[str, str], read: Reader,
                 guard: Optional[Guard] = None) -> None:
        self.unit = unit
        self.problems = problems
        self.env = env
        self.read = read
        self.guard = guard or Guard()
        self.stack: List[str] = []
        self.unexpanded: List[str] = []

    def load(self, display: str, text: str, constraint: bool = False, group: Optional[Tuple[str, str]] = None) -> None:
        real = os.path.realpath(display)
        self.stack.append(real)
        try:
            for n, line in logical_lines(text):
                self._line(display, n, line, constraint, group)
        finally:
            self.stack.pop()
        if not self.stack and self.unexpanded:
            names = ", ".join("${%s}" % n for n in self.unexpanded[:5]) + (" …" if len(self.unexpanded) > 5 else "")
            self.unit.notes.append(f"{display}: {names} not expanded: gate expands only the environment variables "
                                   f"named with --env-var NAME (pip would expand them)")

    def _line(self, display: str, n: int, line: str, constraint: bool, group) -> None:
        loc = Location(display, n)
        line = _COMMENT.sub("", line).strip()
        if not line:
            return
        line = _expand_env(line, self.env, self.unexpanded)
        args, opts_text = _break_args_options(line)
        opts, err = parse_options(opts_text) if opts_text else ([], None)
        if err:
            self.problems.append(InputProblem(loc, err))
            return
        if args:
            if self._local(display, loc, args, constraint, group):
                return
            req, perr = parse_requirement_text(args, loc)
            if perr:
                if has_env_ref(args):
                    perr += " (an environment variable in it is not expanded: --env-var NAME expands it)"
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
                # an editable local project is judged by its static metadata; a VCS checkout is not read
                self._local(display, loc, value or "", constraint, group, editable=True)
            # --pre, --trusted-host, --only-binary ... do not change what is judged

    def _local(self, display: str, loc: Location, args: str, constraint: bool, group, editable: bool = False) -> bool:
        """True when ``args`` names a local project (a path, a file: URL, ``name @ file:...``): its static
        dependencies are added, or a note / problem says why not. A bare ``dir/x`` counts only when it exists, so
        other text stays an invalid requirement."""
        text = args.split(";", 1)[0].strip()
        if _NAME_AT.match(text):
            text = text.split("@", 1)[1].strip()
            if not text.startswith("file:"):
                return False
        path_text, extras = split_extras(text)
        if path_text.lower().endswith(_ARCHIVE) or "\x00" in path_text:
            return False
        explicit = editable or path_text.startswith((".", "/", "file:"))
        where = local_dir(path_text, os.path.dirname(display))
        # pip takes a bare word for a name even when a folder has it; a word with a slash is a path when it exists
        if where is None or not (explicit or ("/" in path_text and os.path.isdir(where))):
            return False
        add_local_project(where, extras, _shown(path_text), loc,
                          self.unit, self.problems, self.read, self.guard, group=group, constraint=constraint)
        return True

    def _include(self, display: str, loc: Location, spelling: str, target: str, constraint: bool, group) -> None:
        if "\x00" in target:
            self.problems.append(InputProblem(loc, f"{spelling}: the file name contains a NUL byte"))
            return
        if "://" in target:
            self.unit.notes.append(f"{loc}: {spelling} {_shown(target)} not read (gate reads no remote file)")
            return
        base = os.path.dirname(display)
        child = os.path.normpath(os.path.join(base, target)) if not os.path.isabs(target) else target
        outside = self.guard.outside(child, self.unit.path)
        if outside:
            self.problems.append(InputProblem(loc, f"{spelling} {_shown(target)}: not read: {outside}"))
            return
        real = os.path.realpath(child)
        if real in self.stack:
            cycle = self.stack[self.stack.index(real):] + [real]
            chain = " -> ".join(os.path.relpath(p) for p in cycle)
            self.problems.append(InputProblem(loc, f"cyclic include: {spelling} {_shown(target)} ({chain})"))
            return
        if len(self.stack) >= MAX_INCLUDE_DEPTH:
            self.problems.append(InputProblem(loc, f"includes nested deeper than {MAX_INCLUDE_DEPTH} files"))
            return
        try:
            text = self.read(child)
        except (OSError, ValueError) as exc:
            self.problems.append(InputProblem(loc, f"{spelling} {_shown(target)}: cannot read it: {_why(exc)}"))
            return
        if child not in self.unit.files:
            self.unit.files.append(child)
        self.load(child, text, constraint=constraint, group=group)
