"""Reading install inputs for ``envdoctor gate``: what each line asks pip / uv / conda to install, with file:line.

One *input unit* is what one install command reads:

* a requirements file with everything it pulls in through ``-r`` / ``-c`` (pip reads them as one install: the
  index options of every included file apply to the whole install, the last ``--index-url`` wins);
* a ``pyproject.toml`` ([project] dependencies, [project.optional-dependencies], PEP 735 [dependency-groups],
  and uv's [tool.uv.sources] / [[tool.uv.index]] / [tool.uv] conflicts);
* a conda ``environment.yml`` (name / channels / dependencies with a nested ``- pip:`` list, read with PyYAML's
  safe parser, anchors, aliases and tags refused, nesting and size bounded before anything is built);
* a PEP 751 ``pylock.toml`` or a ``uv.lock`` (exact versions and the index each package comes from).

Nothing here judges a machine: markers are kept as text and evaluated by plan.py against the target.  Files are
only read, never written, through envdoctor.infile (regular files only, at most 16 MiB); includes nest at most
MAX_INCLUDE_DEPTH files, numbers in versions have at most MAX_VERSION_DIGITS digits.  Parsing never raises for bad input: every problem is an :class:`InputProblem` with the
file and line (the CLI turns them into exit code 2).

One module per input kind (as pip-audit's dependency sources): interface.py (the model), requirements.py,
pyproject.py, pylock.py, uvlock.py, conda.py (with yamlread.py), toml_lines.py (TOML with line numbers).  This
package re-exports their names, so ``envdoctor.gate.inputs`` keeps its import path.
"""
from __future__ import annotations

import os
import re
from typing import List, Mapping, Optional, Sequence, Tuple

from envdoctor.gate.inputs.conda import _pip_section, parse_conda_env, parse_conda_spec
from envdoctor.gate.inputs.interface import (KINDS, MAX_INCLUDE_DEPTH, MAX_INPUT_BYTES, MAX_NOTES,
                                             MAX_VERSION_DIGITS, MAX_YAML_DEPTH, MAX_YAML_NODES, IndexOption,
                                             InputProblem, InputRequirement, InputUnit, Location, Reader, _why,
                                             long_number, read_text_file)
from envdoctor.gate.inputs.pyproject import parse_pyproject
from envdoctor.gate.inputs.pylock import parse_pylock
from envdoctor.gate.inputs.requirements import (_RequirementsLoader, logical_lines, parse_options,
                                                parse_requirement_text, wheel_info)
from envdoctor.gate.inputs.toml_lines import json_quote
from envdoctor.gate.inputs.uvlock import parse_uv_lock
from envdoctor.gate.inputs.yamlread import YamlError, YNode, load_yaml, read_yaml
from envdoctor.gate.trust import Guard

__all__ = [
    "KINDS",
    "MAX_INCLUDE_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_NOTES",
    "MAX_VERSION_DIGITS",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "IndexOption",
    "InputProblem",
    "InputRequirement",
    "InputUnit",
    "Location",
    "Reader",
    "YNode",
    "YamlError",
    "input_kind",
    "json_quote",
    "load_inputs",
    "logical_lines",
    "load_yaml",
    "long_number",
    "parse_conda_env",
    "parse_conda_spec",
    "parse_options",
    "parse_pylock",
    "parse_pyproject",
    "parse_requirement_text",
    "parse_uv_lock",
    "read_text_file",
    "read_yaml",
    "wheel_info",
    "_RequirementsLoader",
    "_pip_section",
    "_why",
]


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


def load_inputs(paths: Sequence[str], env: Optional[Mapping[str, str]] = None,
                read: Reader = read_text_file,
                kinds: Optional[Mapping[str, str]] = None,
                guard: Optional[Guard] = None) -> Tuple[List[InputUnit], List[InputProblem]]:
    """One InputUnit per named file (its includes folded in), and every problem found, each with file:line.
    ``kinds``: the kind of each path (gate/sniff.py reads it from the content); by default from the name.
    ``env``: the variables ``${VAR}`` may expand to (gate passes only those the user named).  ``guard``
    (envdoctor/gate/trust.py): where includes may be read from, and the byte / line budget of all reads together."""
    units: List[InputUnit] = []
    problems: List[InputProblem] = []
    guard = guard or Guard()
    read = guard.reader(read)
    for path in paths:
        kind = (kinds or {}).get(path) or input_kind(path)
        unit = InputUnit(path=path, kind=kind)
        outside = guard.top_outside(path)
        if outside:
            problems.append(InputProblem(Location(path), f"not read: a symbolic link, and {outside}"))
            units.append(unit)
            continue
        try:
            text = read(path)
        except (OSError, ValueError) as exc:
            problems.append(InputProblem(Location(path), f"cannot read it: {_why(exc)}"))
            units.append(unit)
            continue
        unit.files.append(path)
        if kind == "json":
            problems.append(InputProblem(Location(path), "it is JSON, not an install input (a saved snapshot is the "
                                                         "target: --snapshot FILE)"))
        elif kind == "requirements":
            _RequirementsLoader(unit, problems, env or {}, read, guard).load(path, text)
        elif kind == "pyproject":
            parse_pyproject(text, path, unit, problems)
        elif kind == "conda":
            parse_conda_env(text, path, unit, problems, env or {}, read, guard)
        elif kind == "pylock":
            parse_pylock(text, path, unit, problems)
        else:
            parse_uv_lock(text, path, unit, problems)
        units.append(unit)
    for unit in units:  # bounded: a file of a million skipped entries says so once, not a million times
        if len(unit.notes) > MAX_NOTES:
            unit.notes[MAX_NOTES:] = [f"... and {len(unit.notes) - MAX_NOTES} more notes like these"]
    return units, problems
