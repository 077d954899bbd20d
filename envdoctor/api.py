"""envdoctor as a Python library (docs/api.md): the commands ``check``, ``probe``, ``lock``, ``gate``, ``explain`` and
``rules`` as functions that return typed results, on the same core the command line calls (envdoctor.doctor,
envdoctor.lock.core, envdoctor.gate.core), with the same bounds and the same errors, raised as exceptions instead of
one line and exit 2 (``rules`` is :func:`list_rules`: ``envdoctor.rules`` is the package of the rules themselves):

    import envdoctor
    report = envdoctor.check()          # the interpreter running this code (in a notebook: the kernel's own)
    report.exit_code, [f.id for f in report.findings]
    report.to_dict()                    # what `envdoctor check --format json` prints for the same machine

Nothing here imports click, the MCP SDK, or a framework (torch, tensorflow, jax are read from their files, as the
command does). The names in ``__all__`` are stable: they and the fields of ``to_dict()`` change incompatibly only
with a new major ``SCHEMA_VERSION`` (the version of check's JSON report, docs/report.md).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from envdoctor.errors import BadInput, EnvdoctorError, IndexUnavailable, NoIndexConfigured
from envdoctor.report import REPORT_SCHEMA_VERSION
from envdoctor.snapshot import Snapshot

if TYPE_CHECKING:
    from envdoctor.formats.interface import FindingsDoc

__all__ = ["SCHEMA_VERSION", "check", "probe", "lock", "gate", "explain", "list_rules", "Report", "Finding", "Evidence",
           "GateReport", "LockResult", "Rule", "Snapshot", "EnvdoctorError", "BadInput", "IndexUnavailable",
           "NoIndexConfigured"]

SCHEMA_VERSION = REPORT_SCHEMA_VERSION

PathLike = Union[str, "os.PathLike[str]"]
SnapshotSource = Union[PathLike, Snapshot, Mapping[str, Any]]
Names = Union[str, Iterable[str], None]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Evidence:
    """A fact a finding rests on, with where it was read."""

    fact: str
    value: str
    source: str


@dataclass(frozen=True)
class Finding:
    """One finding, as check's JSON report holds it (docs/report.md): ``fix`` lists concrete steps (commands start
    with "$ "), ``consequences`` what else the same cause explains."""

    id: str
    severity: str
    title: str
    message: str
    area: str
    subject: str
    evidence: Tuple[Evidence, ...] = ()
    fix: Tuple[str, ...] = ()
    consequences: Tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Finding":
        return cls(id=str(data["id"]), severity=str(data["severity"]), title=str(data.get("title", "")),
                   message=str(data.get("message", "")), area=str(data.get("area", "")),
                   subject=str(data.get("subject", "")),
                   evidence=tuple(Evidence(str(e["fact"]), str(e["value"]), str(e["source"]))
                                  for e in data.get("evidence", ())),
                   fix=tuple(str(x) for x in data.get("fix", ())),
                   consequences=tuple(str(x) for x in data.get("consequences", ())))

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "severity": self.severity, "title": self.title, "message": self.message,
                "area": self.area, "subject": self.subject,
                "evidence": [{"fact": e.fact, "value": e.value, "source": e.source} for e in self.evidence],
                "fix": list(self.fix), "consequences": list(self.consequences)}


class _Rendered:
    """A result the command line would print: the findings document, rendered through the one redactor."""

    def __init__(self, doc: "FindingsDoc", snap: Any, redact: bool) -> None:
        self._doc, self._snap, self._redact = doc, snap, redact
        self._data: Dict[str, Any] = json.loads(self.render("json"))

    def render(self, format: str = "text", *, verbose: bool = False) -> str:
        """The result in one of the command's formats (text, json, markdown, junit, github, sarif, prometheus),
        exactly as ``--format FORMAT`` writes it (redacted unless the call said ``redact=False``)."""
        from envdoctor.doctor import render_findings

        text = render_findings(self._doc, format, verbose=verbose)
        if self._redact:
            from envdoctor.redact import redact_output

            text = redact_output(text, self._snap)
        return text

    @property
    def exit_code(self) -> int:
        """The command's exit code: 1 when an error was found (with ``strict``: a warning too), else 0."""
        return int(self._doc.exit_code)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def summary(self) -> Dict[str, int]:
        """How many findings of each severity (error, warning, info, ok)."""
        return dict(self._data["summary"])

    def to_dict(self) -> Dict[str, Any]:
        """What ``--format json`` prints, as data (a copy)."""
        return json.loads(json.dumps(self._data))

    def to_json(self) -> str:
        return self.render("json")

    def _repr_markdown_(self) -> str:
        return self.render("markdown")

    def __repr__(self) -> str:
        s = self._data["summary"]
        return (f"<envdoctor.{type(self).__name__}: {s['error']} error(s), {s['warning']} warning(s), "
                f"{s['info']} info(s); exit {self.exit_code}>")


class Report(_Rendered):
    """check's answer about one machine: the findings (most severe first), the summary, the exit code, the
    snapshot judged; ``to_dict()`` is ``envdoctor check --format json``'s document (docs/report.schema.json). In a
    notebook cell it shows as the doctor's summary table (``_repr_html_``)."""

    @property
    def findings(self) -> List[Finding]:
        return [Finding.from_dict(f) for f in self._data["findings"]]

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot judged, as the report holds it (redacted unless ``redact=False``)."""
        return Snapshot.from_dict(self._data["snapshot"])

    def _repr_html_(self) -> str:
        from envdoctor.notebook import report_html

        html = report_html(self._doc)
        if self._redact:
            from envdoctor.redact import redact_output

            html = redact_output(html, self._snap, html=True)
        return html


class GateReport(_Rendered):
    """gate's answer: per input, what would be installed and the findings at its lines; ``to_dict()`` is
    ``envdoctor gate --format json``'s ``envdoctor-gate/1`` document (docs/gate.md)."""

    @property
    def inputs(self) -> List[Dict[str, Any]]:
        """Each input judged: its path, kind, plan and findings (with their ``locations``)."""
        return self.to_dict()["inputs"]

    @property
    def findings(self) -> List[Finding]:
        """The findings of every input, in order."""
        return [Finding.from_dict(f) for i in self._data["inputs"] for f in i["findings"]]


@dataclass
class LockResult:
    """lock's answer: ``text`` is the lock file in the format asked for (or the clash explained, or --check's
    verdict), ``to_dict()`` the same answer as ``--format json`` gives it; ``exit_code`` 0 (a lock, or --check: it
    fits) or 1 (nothing fits, or --check: it no longer fits); ``written``: the file written (``output=``)."""

    text: str
    exit_code: int
    data: Dict[str, Any] = field(repr=False, default_factory=dict)
    written: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(json.dumps(self.data))

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        fence = "````" if "```" in self.text else "```"
        return f"{fence}\n{self.text.rstrip()}\n{fence}\n"


@dataclass(frozen=True)
class Rule:
    """A rule of the catalogue, as ``envdoctor explain ID --format json`` describes it."""

    id: str
    name: str
    title: str
    severity: str
    area: str
    family: str
    rationale: str
    example: str
    references: Tuple[str, ...]
    fix: str
    module: str
    source: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Rule":
        values = {k: data[k] for k in cls.__dataclass_fields__}
        values["references"] = tuple(values["references"])
        return cls(**values)

    def to_dict(self) -> Dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


# --------------------------------------------------------------------------- the arguments, checked as the CLI checks them


def _path(value: Optional[PathLike]) -> Optional[str]:
    return None if value is None else os.fspath(value)


def _names(value: Names) -> Tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _seconds(timeout: float) -> float:
    """`timeout` within the bounds of the command line's --timeout (envdoctor.cli_spec.MACHINE)."""
    from envdoctor.cli_spec import BAD, MACHINE, seconds

    bounds = next(o.bounds for o in MACHINE if o.dest == "timeout")
    value = seconds(float(timeout), *bounds) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) \
        else BAD
    if not isinstance(value, float):
        raise BadInput(f"timeout {timeout!r}: a number of seconds from {bounds[0]:g} to {bounds[1]:g}")
    return value


def _snapshot(python: Optional[str], root: Optional[str], snapshot: Optional[SnapshotSource]) -> Tuple[Optional[str], Any]:
    """(a snapshot file to load, or a Snapshot in hand) from the `snapshot` argument."""
    if snapshot is None or isinstance(snapshot, (str, os.PathLike)):
        return _path(snapshot), None
    if python or root:
        raise BadInput("--snapshot cannot be combined with --python or --root")
    if isinstance(snapshot, Snapshot):
        return None, Snapshot.from_dict(snapshot.to_dict())  # a copy: judging never touches the caller's
    if isinstance(snapshot, Mapping):
        from envdoctor.snapshot_io import snapshot_from_data

        return None, snapshot_from_data(json.loads(json.dumps(dict(snapshot))), "the snapshot given")
    raise BadInput(f"snapshot: a file path, a Snapshot or its dict, not {type(snapshot).__name__}")


def _interpreter(python: Optional[PathLike], root: Optional[PathLike], snapshot: Any) -> Optional[str]:
    """The interpreter to inspect: the one named, else (probing this machine) the one running this code, where the
    command line prefers $VIRTUAL_ENV / $CONDA_PREFIX: a notebook's kernel (or a script) asks about itself. None
    where the core's own choice is that interpreter already (its environment is then read in this process)."""
    if python is not None:
        return _path(python)
    if root is not None or snapshot is not None or not sys.executable:
        return None
    from envdoctor.probes.pyenv import default_interpreter

    return None if default_interpreter(os.environ)[0] == sys.executable else sys.executable


# --------------------------------------------------------------------------- the commands


def check(python: Optional[PathLike] = None, root: Optional[PathLike] = None, snapshot: Optional[SnapshotSource] = None,
          *, timeout: float = 5.0, strict: bool = False, only: Names = None, skip: Names = None,
          expect_cpu: Names = None, kernels: bool = False, smoke: bool = False, redact: bool = True) -> Report:
    """Judge a machine, as ``envdoctor check`` does: this one (the environment of `python`, by default the
    interpreter running this code), an image's `root`, or a `snapshot` (a file, a :class:`Snapshot`, or its dict).

    `timeout`: seconds each external command may take; `only` / `skip`: rule IDs, prefixes or names;
    `expect_cpu`: frameworks meant to run on the CPU; `kernels`: judge every Jupyter kernel's interpreter too;
    `smoke`: run the frameworks' smoke programs as well; `redact`: GPU UUIDs, host name, home and secrets redacted.
    Raises :class:`BadInput` where the command would exit 2."""
    from envdoctor.doctor import check_machine

    snapshot_file, snap = _snapshot(_path(python), _path(root), snapshot)
    python_path = _interpreter(python, root, snapshot)
    doc, judged = check_machine(python_path, _path(root), snapshot_file, _seconds(timeout), strict=strict,
                                only=_names(only), skip=_names(skip), redact=redact, smoke=smoke,
                                expect_cpu=_names(expect_cpu), kernels=kernels, fmt="json", snap=snap, early=False)
    return Report(doc, judged, redact)


def probe(python: Optional[PathLike] = None, root: Optional[PathLike] = None, snapshot: Optional[PathLike] = None, *,
          timeout: float = 5.0, kernels: bool = False, redact: bool = True) -> Snapshot:
    """The machine's snapshot, as ``envdoctor probe --format json`` writes it (docs/snapshot.md): of this machine
    (`python`'s environment, by default the interpreter running this code), an image's `root`, or a saved
    `snapshot` file read back. Redacted unless ``redact=False``."""
    from envdoctor.doctor import obtain_snapshot, snapshot_dict
    from envdoctor.snapshot_io import dump_json

    snap = obtain_snapshot(_interpreter(python, root, snapshot), _path(root), _path(snapshot), _seconds(timeout),
                           kernels=kernels)
    text = dump_json(snapshot_dict(snap, redact=redact))
    if redact:
        from envdoctor.redact import redact_output

        text = redact_output(text, snap)
    return Snapshot.from_dict(json.loads(text))


def lock(python: Optional[PathLike] = None, root: Optional[PathLike] = None, snapshot: Optional[PathLike] = None, *,
         frameworks: Union[Mapping[str, Optional[str]], Iterable[str], None] = None, cuda: Optional[str] = None,
         driver: Optional[str] = None, gpus: Names = None, python_version: Optional[str] = None,
         platform: Optional[str] = None, glibc: Optional[str] = None, cpu: bool = False,
         companions: Optional[str] = None, timeout: float = 5.0, format: str = "requirements",
         name: Optional[str] = None, output: Optional[PathLike] = None, force: bool = False,
         check: Optional[PathLike] = None) -> LockResult:
    """Pin framework builds that fit together and fit the target, as ``envdoctor lock`` does (docs/lock.md).

    `frameworks`: names (``["torch", "jax"]``) or name -> SPEC (``{"torch": "2.5"}``; ``""`` any version); by
    default torch, plus what the target has installed. The target: stated facts (`cuda`, `driver`, `gpus`,
    `python_version`, `platform`, `glibc`, `cpu`), else this machine (`python`, `root`) or a `snapshot` file.
    `format`: requirements, conda or json. Nothing is written unless `output` names a file; `check`: re-verify
    that lock file instead (writes nothing). Nothing fitting is an answer (``exit_code`` 1), not an exception."""
    from envdoctor.lock.core import run_lock

    if frameworks is None:
        wanted: Optional[Dict[str, Optional[str]]] = None
    elif isinstance(frameworks, Mapping):
        wanted = {str(k): (None if v is None else str(v)) for k, v in frameworks.items()}
    else:
        wanted = {n: "" for n in _names(frameworks)}
    from envdoctor.lock.render import FORMATS

    if format not in FORMATS:
        raise BadInput(f"unknown lock format {format!r}; formats: {', '.join(FORMATS)}")
    run = run_lock(cuda=cuda, driver=driver, gpus=_names(gpus), python_opt=_path(python), python_version=python_version,
                   platform=platform, glibc=glibc, cpu=cpu, companions=companions, root_dir=_path(root),
                   snapshot_file=_path(snapshot), timeout=_seconds(timeout), fmt=format, env_name=name,
                   output=_path(output), force=force, check_file=_path(check), frameworks=wanted)
    return LockResult(run.text, run.exit_code, run.data, written=_path(output) if run.note else None)


def gate(files: Union[PathLike, Sequence[PathLike], None] = None, *, snapshot: Optional[PathLike] = None,
         python: Optional[PathLike] = None, python_version: Optional[str] = None, platform: Optional[str] = None,
         glibc: Optional[str] = None, driver: Optional[str] = None, gpus: Names = None, cuda: Optional[str] = None,
         cpu: bool = False, root: Optional[PathLike] = None, timeout: float = 5.0, extras: Names = None,
         groups: Names = None, offline: bool = False, kind: Optional[str] = None, together: bool = False,
         fresh: bool = False, pre: bool = False, strict: bool = False, only: Names = None, skip: Names = None,
         allow_index: Names = None, env_vars: Names = None, allow_outside: bool = False) -> GateReport:
    """Would installing these requirements / pyproject / environment.yml / pylock / uv.lock `files` (by default
    those in the current folder) work on the target? As ``envdoctor gate`` judges it (docs/gate.md): nothing is
    installed; `offline` plans from envdoctor's data alone instead of asking a resolver. The target: stated facts,
    a `snapshot` file, an image's `root`, or this machine (`python`'s environment)."""
    from envdoctor.doctor import split_ids
    from envdoctor.gate.core import named_inputs, run_gate, split_gpus
    from envdoctor.target_options import python_target

    given = [files] if isinstance(files, (str, os.PathLike)) else list(files or ())
    paths = named_inputs([os.fspath(f) for f in given])
    python_path, version = python_target(_path(python), python_version)
    result = run_gate(paths, snapshot_file=_path(snapshot), driver=driver, gpus=split_gpus(_names(gpus)),
                      python_opt=python_path, python_version=version, cuda=cuda, platform=platform, glibc=glibc,
                      cpu=cpu, root_dir=_path(root), timeout=_seconds(timeout), extras=_names(extras),
                      groups=_names(groups), together=together, fresh=fresh, pre=pre, strict=strict,
                      only=split_ids(_names(only)), skip=split_ids(_names(skip)), fmt="json", offline=offline,
                      kind=kind, allow_outside=allow_outside, env_vars=_names(env_vars),
                      allow_index=_names(allow_index))
    return GateReport(result.to_doc(), None, True)


def explain(rule: str) -> Rule:
    """A rule by its ID (any case) or name: rationale, example, fix, references, the file that registers it.
    :class:`BadInput` for an unknown rule."""
    from envdoctor.doctor import find_rule
    from envdoctor.rules.catalogue import rule_dict

    if not isinstance(rule, str) or not rule.strip():
        raise BadInput(f"a rule ID or name, e.g. ED100, not {rule!r}")
    return Rule.from_dict(rule_dict(find_rule(rule)))


def list_rules() -> List[Rule]:
    """Every rule of every family (machine, smoke, gate), as ``envdoctor rules --format json`` lists them."""
    from envdoctor.rules.catalogue import rule_dict
    from envdoctor.rules.engine import all_rules

    return [Rule.from_dict(rule_dict(r)) for r in all_rules()]
