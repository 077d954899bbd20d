"""`check`, `rules` and `explain` (and, when present, the `matrices` group)."""
from __future__ import annotations

import os
import sys

import click

from envdoctor.cli import emit, force_option, machine_options, obtain_snapshot, snapshot_dict
from envdoctor.formats.registry import format_option
from envdoctor.target_options import complete_rule_ids


def _split_ids(values) -> list:
    out = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def load_data():
    """The matrices, or (None, [why]) when they cannot be loaded at all."""
    try:
        from envdoctor.knowledge import load_matrices
    except ImportError as exc:  # pragma: no cover - only while the data layer is missing
        return None, [f"compatibility data unavailable: {exc}"]
    m = load_matrices()
    return m, list(getattr(m, "warnings", []))


def prepare_judgement(only=None, skip=None, command="check"):
    """Everything judging needs besides the snapshot: the rules `command` runs (its families in
    envdoctor.rules.engine.COMMAND_FAMILIES, narrowed by --only / --skip) and the data."""
    from envdoctor.rules.engine import COMMAND_FAMILIES, select_rules

    rules = select_rules(only, skip, families=COMMAND_FAMILIES[command], command=command)
    matrices, warnings = load_data()
    return rules, matrices, warnings


def build_report(snap, only=None, skip=None, prepared=None, expect_cpu=None):
    """`expect_cpu`: the frameworks the user expects on the CPU (a set, possibly empty), or None where the
    command does not know (envdoctor.rules.intent)."""
    from envdoctor.report import Report
    from envdoctor.rules.context import Context
    from envdoctor.rules.engine import run_rules

    rules, matrices, warnings = prepared if prepared is not None else prepare_judgement(only, skip)
    extra = {"expect_cpu": frozenset(expect_cpu)} if expect_cpu is not None else {}
    findings = run_rules(Context(snap, matrices, extra=extra), rules)
    return Report(snap, findings, data_collected=getattr(matrices, "collected", "") or "", data_warnings=warnings)


def _redact_findings(report, snap) -> None:
    """Findings quote paths and values from the machine: redact them like the snapshot they come from."""
    import dataclasses

    from envdoctor.redact import redactor_for

    text = redactor_for(snap).text
    report.findings = [
        dataclasses.replace(
            f, message=text(f.message), fix=[text(x) for x in f.fix], consequences=[text(x) for x in f.consequences],
            evidence=[dataclasses.replace(e, value=text(e.value), source=text(e.source)) for e in f.evidence])
        for f in report.findings]


@click.command()
@machine_options
@format_option()
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option("--only", multiple=True, metavar="IDS", shell_complete=complete_rule_ids,
              help="Run only these rules (IDs, prefixes like ED1, or names; comma-separated).")
@click.option("--skip", multiple=True, metavar="IDS", shell_complete=complete_rule_ids, help="Skip these rules.")
@click.option("-v", "--verbose", is_flag=True, help="Show the evidence behind each finding.")
@click.option("--no-redact", is_flag=True, help="Keep GPU UUIDs, host name, home directory and secret-looking values.")
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE (atomically) instead of stdout.")
@force_option
@click.option("--smoke", "with_smoke", is_flag=True,
              help="Also run `envdoctor smoke` (tiny kernels, each framework in a child process) and fold in its results.")
@click.option("--expect-cpu", "expect_cpu", multiple=True, metavar="FRAMEWORK",
              help="torch, tensorflow or jax is meant to run on the CPU: its CPU-only build is an info, not an error "
                   "(also `expect-cpu = [...]` under [tool.envdoctor] in pyproject.toml or in envdoctor.toml).")
@click.option("--kernels", "with_kernels", is_flag=True,
              help="Also judge every Jupyter kernel's interpreter (and the VS Code workspace one) like --python.")
def check(python_path, root_dir, snapshot_file, timeout, fmt, strict, only, skip, verbose, no_redact, output,
          force_output, with_smoke, expect_cpu, with_kernels):
    """Judge the machine: findings with IDs, evidence and fixes. Exit 0 ok, 1 error (--strict: or warning), 2 usage."""
    from envdoctor.rules import intent

    expected = intent.normalise(expect_cpu, "--expect-cpu") | intent.configured()
    # Rules are selected first so a bad --only fails before any probing. (Loading the rules in a
    # thread beside the probes was measured slower: both are CPU-bound Python, and the GIL
    # ping-pong cost more than the subprocess waits it hid.)
    prepared = prepare_judgement(_split_ids(only), _split_ids(skip), "check --smoke" if with_smoke else "check")
    snap = obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    report = build_report(snap, prepared=prepared, expect_cpu=expected)
    if with_smoke:
        if snapshot_file or root_dir:
            from envdoctor.errors import BadInput

            raise BadInput("--smoke runs the frameworks of a live environment: it cannot be combined with --snapshot or --root")
        from envdoctor.rules.engine import fold_causes, order
        from envdoctor.smoke import run_smoke, smoke_findings

        results = run_smoke(snap, python=python_path)
        selected = {r.id for r in prepared[0]}  # --only / --skip apply to the smoke rules too
        smoke = [f for f in smoke_findings(results, snap) if f.id in selected]
        report.findings = order(fold_causes(report.findings + smoke))
        report.extra["smoke"] = results.to_dict()
    sdict = snapshot_dict(snap, redact=not no_redact)
    if not no_redact:
        from envdoctor.snapshot import Snapshot

        _redact_findings(report, snap)
        report.snapshot = Snapshot.from_dict(sdict)  # the area lines of text and Markdown read it
    from envdoctor.formats.interface import from_report
    from envdoctor.formats.marks import use_color
    from envdoctor.formats.registry import render

    doc = from_report(report, prepared[0], sdict, strict=strict)
    text = render(fmt, doc, verbose=verbose, color=use_color(sys.stdout.isatty(), output),
                  workspace=os.environ.get("GITHUB_WORKSPACE"))
    emit(text, output, force_output, redact=not no_redact, snapshot=snap)
    sys.exit(doc.exit_code)


@click.command(name="rules")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def rules_cmd(fmt):
    """List the doctor's rules (every family: machine, smoke, gate)."""
    from envdoctor.rules.engine import all_rules

    rules = all_rules()
    if fmt == "json":
        from envdoctor.rules.catalogue import rule_dict
        from envdoctor.snapshot_io import dump_json

        click.echo(dump_json({"rules": [rule_dict(r) for r in rules]}))
        return
    for r in rules:
        click.echo(f"{r.id}  {r.severity:<7}  {r.name:<34}  {r.title}")


@click.command()
@click.argument("rule_id", shell_complete=complete_rule_ids)
def explain(rule_id):
    """Explain a rule: its rationale, an example, the fix, references and the source file that registers it."""
    from envdoctor.errors import BadInput
    from envdoctor.rules.catalogue import explain_text
    from envdoctor.rules.engine import all_rules

    wanted = rule_id.strip().upper()
    for r in all_rules():
        if r.id.upper() == wanted or r.name == rule_id.strip():
            click.echo(explain_text(r), nl=False)
            return
    raise BadInput(f"unknown rule {rule_id!r} (see `envdoctor rules`)")


# Every command besides `probe`, as name -> (module, attribute): envdoctor.cli imports a command's
# module only when that command runs (or help lists them), so `check` never pays for `gate`'s imports.
COMMANDS = {
    "check": ("envdoctor.commands", "check"),
    "rules": ("envdoctor.commands", "rules_cmd"),
    "explain": ("envdoctor.commands", "explain"),
    "matrices": ("envdoctor.knowledge.cli", "matrices"),
    "lock": ("envdoctor.lock.cli", "lock"),
    "smoke": ("envdoctor.smoke.cli", "smoke"),
    "gate": ("envdoctor.gate.cli", "gate"),
    "onboard": ("envdoctor.onboard.cli", "onboard"),
    "fleet": ("envdoctor.fleet.cli", "fleet"),
}
