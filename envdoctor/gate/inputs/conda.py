"""conda environment.yml: name / channels / dependencies (match specs) with a nested ``- pip:`` list, read as a
requirements file next to it."""
from __future__ import annotations

import os
import re
from typing import List, Mapping, Optional, Tuple

from packaging.utils import canonicalize_name

from envdoctor.gate.inputs.interface import (InputProblem, InputRequirement, InputUnit, Location, Reader, long_number,
                                             read_text_file)
from envdoctor.gate.inputs.requirements import _RequirementsLoader
from envdoctor.gate.trust import Guard, quote_token
from envdoctor.gate.inputs.yamlread import YamlError, YNode, read_yaml


_CONDA_SPEC = re.compile(r"^(?:(?P<channel>[A-Za-z0-9_.\-/:]+)::)?(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<rest>.*)$")


def parse_conda_spec(text: str, loc: Location) -> Tuple[Optional[InputRequirement], Optional[str]]:
    """A conda match spec ("pytorch", "pytorch=2.1.2", "pytorch::pytorch==2.1.2=py3.10_cuda12.1_cudnn8.9.2_0",
    "python>=3.9", "pytorch-cuda=12.1") -> InputRequirement(conda=True) with a PEP 440 specifier where it converts."""
    too_long = long_number(text)
    if too_long:
        return None, too_long
    mm = _CONDA_SPEC.match(text.strip())
    if not mm:
        return None, f"invalid conda package spec {quote_token(text)}"
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
            return None, f"cannot read the version in conda package spec {quote_token(text)}"
    return InputRequirement(name=name, raw=text, loc=loc, specifier=spec, conda=True, conda_build=build,
                            conda_channel=mm.group("channel")), None


def parse_conda_env(text: str, display: str, unit: InputUnit, problems: List[InputProblem],
                    env: Optional[Mapping[str, str]] = None, read: Reader = read_text_file,
                    guard: Optional[Guard] = None) -> None:
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
                _pip_section(sub.value, display, unit, problems, env or {}, read, guard)
        elif item.kind != "null":
            problems.append(InputProblem(loc, "a dependency must be a package spec or a 'pip:' list"))


def _pip_section(items: List[YNode], display: str, unit: InputUnit, problems: List[InputProblem],
                 env: Mapping[str, str], read: Reader, guard: Optional[Guard] = None) -> None:
    """conda writes the pip: list to a requirements file next to environment.yml and runs pip on it."""
    loader = _RequirementsLoader(unit, problems, env, read, guard)
    loader.stack.append(os.path.realpath(display))
    for x in items:
        loader._line(display, x.line, str(x.value), False, ("pip", ""))
