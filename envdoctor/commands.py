"""`check`, `rules` and `explain`: their options translated into calls of envdoctor.doctor (which holds the work).

The rules (and what imports them: the catalogue, the marks, the snapshot model) are imported when a command runs,
after click has parsed its line: `check --help` and a usage error never pay for them (start-up speed).
"""
from __future__ import annotations

import sys
from typing import Optional, Tuple

import click

from envdoctor import doctor
from envdoctor.cli_options import complete_rule_ids, force_option, format_option, machine_options
from envdoctor.emit import emit, write_stdout
from envdoctor.errors import BadInput


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
def check(python_path: Optional[str], root_dir: Optional[str], snapshot_file: Optional[str], timeout: float, fmt: str,
          strict: bool, only: Tuple[str, ...], skip: Tuple[str, ...], verbose: bool, no_redact: bool,
          output: Optional[str], force_output: bool, with_smoke: bool, expect_cpu: Tuple[str, ...],
          with_kernels: bool) -> None:
    """Judge the machine: findings with IDs, evidence and fixes. Exit 0 ok, 1 error (--strict: or warning), 2 usage."""
    from envdoctor.formats.marks import use_color

    if with_smoke and (snapshot_file or root_dir):
        raise BadInput("--smoke runs the frameworks of a live environment: it cannot be combined with --snapshot or --root")
    # the probes' first commands start now and run while the rules are imported and the data loaded (issue 18)
    doctor.prefetch(python_path, root_dir, snapshot_file, timeout)
    expected = doctor.expected_on_cpu(expect_cpu)
    # Rules are selected first so a bad --only fails before any probing. (Loading the rules in a
    # thread beside the probes was measured slower: both are CPU-bound Python, and the GIL
    # ping-pong cost more than the subprocess waits it hid.)
    prepared = doctor.prepare_judgement(doctor.split_ids(only), doctor.split_ids(skip),
                                        "check --smoke" if with_smoke else "check")
    snap = doctor.obtain_snapshot(python_path, root_dir, snapshot_file, timeout, kernels=with_kernels)
    report = doctor.build_report(snap, prepared=prepared, expect_cpu=expected)
    if with_smoke:
        doctor.fold_smoke(report, snap, prepared, python_path)
    doc = doctor.findings_document(report, snap, prepared[0], strict=strict, redact=not no_redact)
    text = doctor.render_findings(doc, fmt, verbose=verbose, color=use_color(sys.stdout.isatty(), output))
    emit(text, output, force_output, redact=not no_redact, snapshot=snap)
    sys.exit(doc.exit_code)


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
