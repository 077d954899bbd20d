"""The doctor's core, without the command line (the counterpart of pip-audit's ``_audit.py``): obtain a snapshot
(probe this machine, an interpreter's environment, an image's root, or load a saved one), select the rules a
command runs, judge, build the report, redact it. Every command's ``cli.py`` translates its options into calls
here (or into its own package's core); nothing here imports click or a CLI module.

Bad input raises :class:`envdoctor.errors.BadInput` (the CLI prints one line, exit 2).

Module-level imports stay light for start-up speed: the probes (only when probing), the snapshot loader (only
with --snapshot), the rules and the report (only when judging) and the formats (only when rendering) are
imported where they are used, so `lock` pays for no rule and `explain` for no probe.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from envdoctor.errors import BadInput
from envdoctor.fsroot import Root
from envdoctor.records import replace

if TYPE_CHECKING:  # the models, for the signatures only: each is imported where it is used (start-up speed)
    from envdoctor.formats.interface import FindingsDoc
    from envdoctor.knowledge.matrices import Matrices
    from envdoctor.report import Report
    from envdoctor.rules.base import Rule
    from envdoctor.snapshot import Snapshot

# (the rules to run, the matrices, the data's warnings): what judging needs besides the snapshot
Prepared = Tuple[List["Rule"], "Matrices", List[str]]


def split_ids(values: Optional[Iterable[str]]) -> List[str]:
    """--only / --skip values as rule selectors: each may be a comma-separated list."""
    out: List[str] = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


# --------------------------------------------------------------------------- the snapshot


def obtain_snapshot(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float,
                    kernels: bool = False) -> Snapshot:
    """Probe the machine in this process (or load a saved snapshot); bad input raises BadInput. The probes collect
    the commands prefetch() started for the same arguments."""
    if snapshot_file:
        if python_path or root_dir:
            raise BadInput("--snapshot cannot be combined with --python or --root")
        from envdoctor.snapshot_io import load_snapshot

        return load_snapshot(snapshot_file)
    from envdoctor.probes import ProbeContext, run_probes

    root = Root("/")
    if root_dir:
        if not os.path.exists(root_dir):
            raise BadInput(f"--root {root_dir}: no such directory")
        if not os.path.isdir(root_dir):
            raise BadInput(f"--root {root_dir}: not a directory")
        root = Root(os.path.abspath(root_dir))
    # An image's root carries none of this shell's variables: with --root only PATH (to find
    # commands) is kept, so the host's LD_LIBRARY_PATH or CUDA_HOME never describe the image.
    env = dict(os.environ) if root.is_live else {"PATH": os.environ.get("PATH", os.defpath)}
    ctx = ProbeContext(root=root, env=env, timeout=timeout, target_python=python_path, kernels=kernels)
    return run_probes(ctx)  # a --python that is not Python raises BadInput from its probe


def prefetch(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float,
             kernels: bool = False) -> None:
    """Start the probes' first commands now (obtain_snapshot's arguments; envdoctor.probes.prefetch), so that they
    run while the caller imports the rules and loads the data. Nothing for --snapshot or --root; never raises.
    `kernels`: obtain_snapshot's, accepted alike; the first commands do not depend on it."""
    if snapshot_file or root_dir:
        return
    from envdoctor.probes import prefetch as start

    start(python_path, root_dir, snapshot_file, timeout)


def snapshot_dict(snap: Snapshot, redact: bool) -> Dict[str, Any]:
    """The snapshot as JSON data, redacted (GPU UUIDs, host name, home, secrets) unless `redact` is False."""
    data: Dict[str, Any] = snap.to_dict()
    if redact and not snap.redacted:
        from envdoctor.redact import redact_dict  # its patterns: only when redacting (start-up speed)

        data = redact_dict(data)
    return data


# --------------------------------------------------------------------------- judging


def load_data() -> Tuple[Matrices, List[str]]:
    """The matrices and their load warnings."""
    from envdoctor.knowledge import load_matrices

    m = load_matrices()
    return m, list(getattr(m, "warnings", []))


def prepare_judgement(only: Optional[Sequence[str]] = None, skip: Optional[Sequence[str]] = None,
                      command: str = "check") -> Prepared:
    """Everything judging needs besides the snapshot: the rules `command` runs (its families in
    envdoctor.rules.engine.COMMAND_FAMILIES, narrowed by --only / --skip) and the data."""
    from envdoctor.rules.engine import COMMAND_FAMILIES, select_rules

    rules = select_rules(only, skip, families=COMMAND_FAMILIES[command], command=command)
    matrices, warnings = load_data()
    return rules, matrices, warnings


def build_report(snap: Snapshot, only: Optional[Sequence[str]] = None, skip: Optional[Sequence[str]] = None,
                 prepared: Optional[Prepared] = None, expect_cpu: Optional[Iterable[str]] = None) -> Report:
    """The machine rules' report on `snap`. `expect_cpu`: the frameworks the user expects on the CPU (a set,
    possibly empty), or None where the command does not know (envdoctor.rules.intent)."""
    from envdoctor.report import Report
    from envdoctor.context import Context
    from envdoctor.rules.engine import run_rules

    rules, matrices, warnings = prepared if prepared is not None else prepare_judgement(only, skip)
    extra: Dict[str, FrozenSet[str]] = {"expect_cpu": frozenset(expect_cpu)} if expect_cpu is not None else {}
    findings = run_rules(Context(snap, matrices, extra=extra), rules)
    return Report(snap, findings, data_collected=getattr(matrices, "collected", "") or "", data_warnings=warnings)


def expected_on_cpu(given: Iterable[str]) -> FrozenSet[str]:
    """--expect-cpu values and the configured ``expect-cpu`` (pyproject.toml / envdoctor.toml) together."""
    from envdoctor.rules import intent

    return frozenset(intent.normalise(given, "--expect-cpu") | intent.configured())


def fold_smoke(report: Report, snap: Snapshot, prepared: Prepared, python_path: Optional[str]) -> None:
    """check --smoke: run `envdoctor smoke` on the snapshot's environment and fold its findings into `report`
    (--only / --skip apply to the smoke rules too)."""
    from envdoctor.rules.engine import fold_causes, order
    from envdoctor.smoke import run_smoke, smoke_findings

    results = run_smoke(snap, python=python_path)
    selected = {r.id for r in prepared[0]}
    smoke = [f for f in smoke_findings(results, snap) if f.id in selected]
    report.findings = order(fold_causes(report.findings + smoke))
    report.extra["smoke"] = results.to_dict()


def redact_findings(report: Report, snap: Snapshot) -> None:
    """Findings quote paths and values from the machine: redact them like the snapshot they come from."""
    from envdoctor.redact import redactor_for

    text = redactor_for(snap).text
    report.findings = [
        replace(
            f, message=text(f.message), fix=[text(x) for x in f.fix], consequences=[text(x) for x in f.consequences],
            evidence=[replace(e, value=text(e.value), source=text(e.source)) for e in f.evidence])
        for f in report.findings]


def check_machine(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float,
                  *, strict: bool = False, only: Iterable[str] = (), skip: Iterable[str] = (), redact: bool = True,
                  smoke: bool = False, expect_cpu: Iterable[str] = (), kernels: bool = False, fmt: str = "text",
                  snap: Optional[Snapshot] = None, early: bool = True) -> Tuple[FindingsDoc, Snapshot]:
    """`check`'s judgement, for the command and the Python API alike: (the findings document, the snapshot
    judged). `snap`: a snapshot already in hand (the API's), judged instead of probing. `early`: start probing
    before the rules are imported (:func:`prefetch`; the API, called again and again in one process, probes where
    it is). `fmt`: the format the caller will render, imported while the machine is probed."""
    if smoke and (snapshot_file or root_dir or snap is not None):
        raise BadInput("--smoke runs the frameworks of a live environment: it cannot be combined with --snapshot or --root")
    if snap is None and early:
        # the probes' first commands start now and run while the rules are imported
        prefetch(python_path, root_dir, snapshot_file, timeout, kernels=kernels)
    expected = expected_on_cpu(expect_cpu)
    # Rules are selected first so a bad --only fails before any probing. (Loading the rules in a
    # thread beside the probes was measured slower: both are CPU-bound Python, and the GIL
    # ping-pong cost more than the subprocess waits it hid.)
    prepared = prepare_judgement(split_ids(only), split_ids(skip), "check --smoke" if smoke else "check")
    prepare_while_probing(fmt)
    if snap is None:
        snap = obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=kernels)
    report = build_report(snap, prepared=prepared, expect_cpu=expected)
    if smoke:
        fold_smoke(report, snap, prepared, python_path)
    doc = findings_document(report, snap, prepared[0], strict=strict, redact=redact)
    # the file SARIF reports the findings against (code scanning maps a result to a file of the checkout,
    # $GITHUB_WORKSPACE); a few stat calls, so the API's report renders SARIF as the command does
    found = environment_file(snapshot_file)
    doc.artifact = os.path.abspath(found) if os.environ.get("GITHUB_WORKSPACE") else found
    return doc, snap


# The files that state a project's environment, in the order the SARIF location prefers them (docs/report.md).
ENVIRONMENT_FILES = ("envdoctor.toml", "pyproject.toml", "requirements.txt", "environment.yml", "environment.yaml",
                     "uv.lock", "pylock.toml", "setup.cfg", "setup.py")
ENVIRONMENT_FALLBACK = "envdoctor.toml"


def environment_file(snapshot_file: Optional[str], folder: str = ".") -> str:
    """The file a finding of check is reported against where a tool needs a file (SARIF for code scanning): the
    --snapshot FILE judged, else the first of ENVIRONMENT_FILES in ``folder`` (then any requirements*.txt there), else
    ENVIRONMENT_FALLBACK, where envdoctor's own settings would state what the environment must be."""
    if snapshot_file and snapshot_file != "-":
        return snapshot_file
    for name in ENVIRONMENT_FILES:
        if os.path.isfile(os.path.join(folder, name)):
            return name
    try:
        reqs = sorted(n for n in os.listdir(folder) if n.startswith("requirements") and n.endswith(".txt"))
    except OSError:
        reqs = []
    return next((n for n in reqs if os.path.isfile(os.path.join(folder, n))), ENVIRONMENT_FALLBACK)


def findings_document(report: Report, snap: Snapshot, rules: List[Rule], *, strict: bool, redact: bool) -> FindingsDoc:
    """The report as the formats read it (envdoctor.formats.interface.FindingsDoc), redacted unless not `redact`."""
    from envdoctor.formats.interface import from_report

    sdict = snapshot_dict(snap, redact=redact)
    if redact:
        redact_findings(report, snap)
    doc = from_report(report, rules, sdict, strict=strict)
    if redact:
        # the area lines of text and Markdown read the redacted snapshot: FindingsDoc.machine builds it from sdict
        # when a format asks (JSON embeds sdict itself: ~2.5 ms saved there)
        doc.snapshot = None
    return doc


def prepare_while_probing(fmt: str) -> None:
    """Import now what judging and writing the report in `fmt` need once the snapshot is there (the report model,
    the pin memo, the redactor, the findings model, the format's module): check calls it before it probes, so that
    this happens while the commands prefetch() started run, not after them. An unknown format is left to
    render_findings to report."""
    import envdoctor.facts.pin_memo  # noqa: F401 (imported for later)
    import envdoctor.report  # noqa: F401 (imported for later)
    import envdoctor.snapshot_io  # noqa: F401 (imported for later)
    from envdoctor.formats import registry
    from envdoctor.formats.interface import from_report  # noqa: F401 (imported for later)
    from envdoctor.redact import redact_dict  # noqa: F401 (imported for later)

    try:
        registry.get(fmt)
    except BadInput:
        pass


def render_findings(doc: FindingsDoc, fmt: str, *, verbose: bool = False, color: bool = False) -> str:
    """A findings document in format `fmt` (envdoctor.formats.registry)."""
    from envdoctor.formats.registry import render

    return render(fmt, doc, verbose=verbose, color=color, workspace=os.environ.get("GITHUB_WORKSPACE"))


# --------------------------------------------------------------------------- the rule catalogue


def find_rule(rule_id: str) -> Rule:
    """The rule with this ID (any case) or name, of any family; BadInput naming `envdoctor rules` otherwise."""
    from envdoctor.rules.engine import all_rules

    wanted = rule_id.strip()
    for r in all_rules():
        if r.id.upper() == wanted.upper() or r.name == wanted:
            return r
    raise BadInput(f"unknown rule {rule_id!r} (see `envdoctor rules`)")
