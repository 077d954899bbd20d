"""`check`, `rules` and `explain`: their options are declared in envdoctor.cli_spec and their bodies are in
envdoctor.commands_run (the fast door, envdoctor.entry, calls the same bodies without click).

The rules (and what imports them: the catalogue, the marks, the snapshot model) are imported when a command runs,
after click has parsed its line: `check --help` and a usage error never pay for them (start-up speed).
"""
from __future__ import annotations

from typing import Any

import click

from envdoctor import cli_spec, commands_run
from envdoctor.cli_options import spec_options


@click.command()
@spec_options(cli_spec.CHECK)
def check(**params: Any) -> None:
    """Judge the machine: findings with IDs, evidence and fixes. Exit 0 ok, 1 error (--strict: or warning), 2 usage."""
    commands_run.check(**params)


@click.command(name="rules")
@spec_options(cli_spec.RULES)
def rules_cmd(**params: Any) -> None:
    """List the doctor's rules (every family: machine, smoke, gate)."""
    commands_run.rules(**params)


@click.command()
@spec_options(cli_spec.EXPLAIN)
def explain(**params: Any) -> None:
    """Explain a rule: its rationale, an example, the fix, references and the source file that registers it."""
    commands_run.explain(**params)
