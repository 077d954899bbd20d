"""`check`, `rules` and `explain`: their options translated into calls of envdoctor.doctor (which holds the work);
check's options are declared in envdoctor.cli_spec and its body is envdoctor.commands_run.check (the fast door,
envdoctor.entry, calls the same body without click).

The rules (and what imports them: the catalogue, the marks, the snapshot model) are imported when a command runs,
after click has parsed its line: `check --help` and a usage error never pay for them (start-up speed).
"""
from __future__ import annotations

import sys
from typing import Any

import click

from envdoctor import cli_spec, commands_run, doctor
from envdoctor.cli_options import complete_rule_ids, spec_options
from envdoctor.emit import write_stdout


@click.command()
@spec_options(cli_spec.CHECK)
def check(**params: Any) -> None:
    """Judge the machine: findings with IDs, evidence and fixes. Exit 0 ok, 1 error (--strict: or warning), 2 usage."""
    commands_run.check(**params)


@click.command(name="rules")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def rules_cmd(fmt: str) -> None:
    """List the doctor's rules (every family: machine, smoke, gate)."""
    from envdoctor.rules.catalogue import rule_dict
    from envdoctor.rules.engine import all_rules
    from envdoctor.snapshot_io import dump_json

    rules = all_rules()
    if fmt == "json":
        write_stdout(dump_json({"rules": [rule_dict(r) for r in rules]}))
        return
    for r in rules:
        write_stdout(f"{r.id}  {r.severity:<7}  {r.name:<34}  {r.title}")


@click.command()
@click.argument("rule_id", shell_complete=complete_rule_ids)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def explain(rule_id: str, fmt: str) -> None:
    """Explain a rule: its rationale, an example, the fix, references and the source file that registers it."""
    from envdoctor.rules.catalogue import explain_text, rule_dict
    from envdoctor.snapshot_io import dump_json

    r = doctor.find_rule(rule_id)
    if fmt == "json":
        write_stdout(dump_json(rule_dict(r)))
    else:
        sys.stdout.write(explain_text(r))
