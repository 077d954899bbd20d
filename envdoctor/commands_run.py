"""The bodies of `check`, `probe`, `rules` and `explain`, without click: one body, two front doors. The click
commands' callbacks (envdoctor.commands, envdoctor.cli.probe) call these with the params click parsed, and
envdoctor.entry calls them with the params envdoctor.cli_spec.parse read from a plain command line (no click
imported at all).

The first thing each body does is start probing (envdoctor.doctor.prefetch: a forked child, or the probes' first
commands), so it runs while the rules are imported and the data loaded (issue 18); both doors get that.
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Tuple

from envdoctor import doctor
from envdoctor.emit import emit, write_stdout
from envdoctor.errors import BadInput


def check(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float, fmt: str,
          strict: bool, only: Tuple[str, ...], skip: Tuple[str, ...], verbose: bool, no_redact: bool,
          output: Optional[str], force_output: bool, with_smoke: bool, expect_cpu: Tuple[str, ...],
          with_kernels: bool) -> None:
    """`envdoctor check`: judge the machine, write the report, exit 0 / 1 (envdoctor.errors)."""
    if with_smoke and (snapshot_file or root_dir):
        raise BadInput("--smoke runs the frameworks of a live environment: it cannot be combined with --snapshot or --root")
    # probing starts now (a forked child, or its first commands) and runs while the rules are imported (issue 18)
    doctor.prefetch(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    from envdoctor.formats.marks import use_color

    expected = doctor.expected_on_cpu(expect_cpu)
    # Rules are selected first so a bad --only fails before any probing. (Loading the rules in a
    # thread beside the probes was measured slower: both are CPU-bound Python, and the GIL
    # ping-pong cost more than the subprocess waits it hid.)
    prepared = doctor.prepare_judgement(doctor.split_ids(only), doctor.split_ids(skip),
                                        "check --smoke" if with_smoke else "check")
    doctor.prepare_while_probing(fmt)
    snap = doctor.obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    report = doctor.build_report(snap, prepared=prepared, expect_cpu=expected)
    if with_smoke:
        doctor.fold_smoke(report, snap, prepared, python_path)
    doc = doctor.findings_document(report, snap, prepared[0], strict=strict, redact=not no_redact)
    if fmt == "sarif":  # code scanning maps a result to a file of the checkout ($GITHUB_WORKSPACE)
        found = doctor.environment_file(snapshot_file)
        doc.artifact = os.path.abspath(found) if os.environ.get("GITHUB_WORKSPACE") else found
    text = doctor.render_findings(doc, fmt, verbose=verbose, color=use_color(sys.stdout.isatty(), output))
    emit(text, output, force_output, redact=not no_redact, snapshot=snap)
    sys.exit(doc.exit_code)


def probe(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float, fmt: str,
          output: Optional[str], force_output: bool, no_redact: bool, fleet: bool, node_name: Optional[str],
          with_kernels: bool) -> None:
    """`envdoctor probe`: take a snapshot of the machine and write it (JSON or text)."""
    doctor.prefetch(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    snap = doctor.obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    data = doctor.snapshot_dict(snap, redact=not no_redact)
    if fleet or node_name:  # an explicit opt-in: the node name is what a fleet report is about
        data["platform"]["hostname"] = (node_name or os.environ.get("ENVDOCTOR_NODE_NAME")
                                        or os.environ.get("SLURMD_NODENAME") or snap.platform.hostname)
        output = output.replace("%N", data["platform"]["hostname"] or "node") if output else output
    if fmt == "json":
        from envdoctor.snapshot_io import dump_json  # the snapshot model: not at every start (start-up speed)

        emit(dump_json(data), output, force_output, redact=not no_redact, snapshot=snap)
    else:
        from envdoctor.formats.snapshot_text import render_snapshot_text
        from envdoctor.snapshot import Snapshot

        emit(render_snapshot_text(Snapshot.from_dict(data)), output, force_output, redact=not no_redact,
             snapshot=snap)


def rules(fmt: str) -> None:
    """`envdoctor rules`: every rule of every family, as text lines or JSON."""
    from envdoctor.rules.catalogue import rule_dict
    from envdoctor.rules.engine import all_rules
    from envdoctor.snapshot_io import dump_json

    found = all_rules()
    if fmt == "json":
        write_stdout(dump_json({"rules": [rule_dict(r) for r in found]}))
        return
    for r in found:
        write_stdout(f"{r.id}  {r.severity:<7}  {r.name:<34}  {r.title}")


def explain(rule_id: str, fmt: str) -> None:
    """`envdoctor explain ID`: a rule's rationale, example, fix, references and source file."""
    from envdoctor.rules.catalogue import explain_text, rule_dict
    from envdoctor.snapshot_io import dump_json

    r = doctor.find_rule(rule_id)
    if fmt == "json":
        write_stdout(dump_json(rule_dict(r)))
    else:
        sys.stdout.write(explain_text(r))
