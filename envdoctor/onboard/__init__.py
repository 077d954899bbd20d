"""``envdoctor onboard``: from a bare machine to a verified environment.

probe -> check (stop, printing what to run, when the NVIDIA driver is missing or broken) -> lock for this
machine -> create a venv / conda environment -> install the lock -> smoke test -> Markdown + HTML report.

    plan.py    the steps as data (pure): driver decision, lock constraints, commands, the --dry-run script
    steps.py   executing them through envdoctor.subproc.Runner, with a state file for resuming
    report.py  the report, rendered from templates/onboard-report.{md,html}.j2
    cli.py     the click command
"""
from __future__ import annotations
