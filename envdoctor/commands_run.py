"""The bodies of `check`, `probe`, `rules` and `explain`, without click: one body, two front doors. The click
commands' callbacks (envdoctor.commands, envdoctor.cli.probe) call these with the params click parsed, and
envdoctor.entry calls them with the params envdoctor.cli_spec.parse read from a plain command line (no click
imported at all).

The first thing each body does is start the probes' first commands (envdoctor.doctor.prefetch), so that they run
while the rules are imported and the data loaded; both doors get that.
"""
from __future__ import annotations

import os
import re
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
    doc, snap = doctor.check_machine(python_path, root_dir, snapshot_file, timeout, strict=strict, only=only, skip=skip,
                                     redact=not no_redact, smoke=with_smoke, expect_cpu=expect_cpu,
                                     kernels=with_kernels, fmt=fmt)
    from envdoctor.formats.marks import use_color

    text = doctor.render_findings(doc, fmt, verbose=verbose, color=use_color(sys.stdout.isatty(), output))
    emit(text, output, force_output, redact=not no_redact, snapshot=snap)
    sys.exit(doc.exit_code)


# A node name becomes a file name (-o DIR/%N.json) and a store key: letters, digits, '.', '_', '-' (what host
# names, Kubernetes node names and Slurm node names use), starting with a letter or digit (so never '.', '..'
# or a hidden file), at most 253 characters (a DNS name's limit).
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
# what the probe's output holds in place of the node name until it is redacted: the redactor removes this host's
# name wherever it appears, and under --fleet the node name usually is this host's name
_NODE_SLOT = "envdoctor-node-name-slot"


def node_name_for(node_name: Optional[str], hostname: Optional[str]) -> str:
    """The node name `probe --fleet` records: --node-name, else $ENVDOCTOR_NODE_NAME / $SLURMD_NODENAME, else the
    host name; BadInput (exit 2) for one that could not be a file name of its own."""
    if node_name is not None:
        name, origin = node_name, "--node-name"
    elif os.environ.get("ENVDOCTOR_NODE_NAME"):
        name, origin = os.environ["ENVDOCTOR_NODE_NAME"], "$ENVDOCTOR_NODE_NAME"
    elif os.environ.get("SLURMD_NODENAME"):
        name, origin = os.environ["SLURMD_NODENAME"], "$SLURMD_NODENAME"
    else:
        name, origin = hostname or "", "the host name"
    if not _NODE_NAME.fullmatch(name):
        raise BadInput(f"node name {name!r} (from {origin}) is not usable: a node name is 1 to 253 letters, digits, "
                       "'.', '_' or '-', starting with a letter or digit (no '/', not '.' or '..'); name it with "
                       "--node-name NAME")
    return name


def probe(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float, fmt: str,
          output: Optional[str], force_output: bool, no_redact: bool, fleet: bool, node_name: Optional[str],
          with_kernels: bool) -> None:
    """`envdoctor probe`: take a snapshot of the machine and write it (JSON or text)."""
    fleet = fleet or node_name is not None
    name = ""
    if fleet and (node_name is not None or os.environ.get("ENVDOCTOR_NODE_NAME") or os.environ.get("SLURMD_NODENAME")):
        name = node_name_for(node_name, None)  # a bad name fails before any probing
    doctor.prefetch(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    snap = doctor.obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    data = doctor.snapshot_dict(snap, redact=not no_redact)
    if fleet:  # an explicit opt-in: the node name is what a fleet report is about
        name = name or node_name_for(None, snap.platform.hostname)
        data["platform"]["hostname"] = _NODE_SLOT if not no_redact else name
        output = output.replace("%N", name) if output else output
    if fmt == "json":
        from envdoctor.snapshot_io import dump_json  # the snapshot model: not at every start (start-up speed)

        text = dump_json(data)
    else:
        from envdoctor.formats.snapshot_text import render_snapshot_text
        from envdoctor.snapshot import Snapshot

        text = render_snapshot_text(Snapshot.from_dict(data))
    if fleet and not no_redact:
        # the rest is redacted as always; only then the slot gets the name (the redactor would take it out again)
        from envdoctor.redact import redact_output

        text = redact_output(text, snap).replace(_NODE_SLOT, name)
        emit(text, output, force_output, redact=False)
    else:
        emit(text, output, force_output, redact=not no_redact, snapshot=snap)


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
