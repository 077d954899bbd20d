"""One requirement as written (PEP 508, a direct wheel URL / path, or ``name @ url``): the parser every reader of
declared requirements shares -- requirements files, pyproject.toml, pylock wheels and the local projects a
requirements file names. Below all of them: a requirements file can name a local project whose declared
requirements are parsed here again, so neither reader imports the other for it."""
from __future__ import annotations

import re
from typing import Optional, Tuple
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envdoctor.gate.inputs.interface import InputRequirement, Location, long_number
from envdoctor.gate.trust import quote_token

_NAME_AT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*@")
_ARCHIVE = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")


def _looks_like_url_or_path(text: str) -> bool:
    if _NAME_AT.match(text):
        return False
    head = text.split(";", 1)[0].strip()
    return ("://" in head or head.startswith((".", "/", "~", "file:")) or head.lower().endswith(_ARCHIVE)
            or bool(re.match(r"^[A-Za-z]:[\\/]", head)))


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
        return None, f"invalid URL {quote_token(url)}: {str(exc)[:120]}"


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
        return None, f"invalid requirement {quote_token(text, _stopped_at(exc))}: {str(exc).splitlines()[0][:200]}"
    except ValueError:  # a URL packaging cannot parse (its message quotes the URL)
        return None, f"invalid requirement {quote_token(text)}: a URL that cannot be parsed"
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


def _stopped_at(exc: Exception) -> Optional[int]:
    """Where packaging stopped reading a requirement (its message marks the column with ``^`` under the text)."""
    lines = str(exc).splitlines()
    if len(lines) >= 3 and "^" in lines[-1]:
        indent = len(lines[-2]) - len(lines[-2].lstrip())
        return max(lines[-1].index("^") - indent, 0)
    return None
