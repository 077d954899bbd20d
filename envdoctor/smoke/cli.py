"""`envdoctor smoke`: run each framework's smoke program and report (registered in envdoctor.cli.COMMANDS).

Imports inside functions are for start-up speed: the rules (--format json, and the hints for a failed step) load
only when used.
"""
from __future__ import annotations

import os
import sys
from typing import IO, Any, Optional, Tuple

import click

from envdoctor.cli_options import Seconds, force_option
from envdoctor.doctor import obtain_snapshot
from envdoctor.emit import emit
from envdoctor.smoke import DEFAULT_TIMEOUT, FRAMEWORKS, SmokeRun, render
from envdoctor.smoke.runner import run_smoke, target_snapshot

HELPER_LIMIT = 20.0  # seconds the Python helper may take at most (a smaller --timeout bounds it)
from envdoctor.snapshot_io import dump_json


@click.command()
@click.option("--python", "python_path", metavar="PATH",
              help="Test the frameworks of this Python interpreter (default: the active venv/conda env, else envdoctor's).")
@click.option("--framework", "frameworks", multiple=True, type=click.Choice(FRAMEWORKS), metavar="NAME",
              help=f"Test only this framework (repeatable; {', '.join(FRAMEWORKS)}). Default: every one installed.")
@click.option("--timeout", type=Seconds(0.5, 86400), default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds each framework's program may take in all; a hung one is killed.")
@click.option("--bench", is_flag=True, help="Also measure matmul throughput (GFLOP/s) and host-to-device bandwidth.")
@click.option("--require-gpu", is_flag=True, help="A missing GPU is an error (exit 1), not 'not available'.")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text", show_default=True)
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE (atomically) instead of stdout.")
@force_option
@click.option("-q", "--quiet", is_flag=True, help="No live progress on stderr.")
@click.option("-v", "--verbose", is_flag=True, help="Show the numbers of every step and more of each error.")
def smoke(python_path: Optional[str], frameworks: Tuple[str, ...], timeout: float, bench: bool, require_gpu: bool,
          fmt: str, output: Optional[str], force_output: bool, quiet: bool, verbose: bool) -> None:
    """Run a small program per framework (torch, tensorflow, jax, cupy) in its own process: import,
    devices, matmul and conv checked against a CPU reference, mixed precision, the compiler path.
    GPU steps run when the framework sees a GPU. Exit 0 ok, 1 a step failed (or no GPU with --require-gpu), 2 usage."""
    # a --python that is no interpreter: BadInput, exit 2; its helper is bounded by --timeout too (at most the
    # probe's own 20 s: the default --timeout is a framework program's, minutes)
    snap = target_snapshot(python_path, probe_timeout=min(timeout, HELPER_LIMIT))
    progress = None
    if not quiet and (fmt == "text" or sys.stderr.isatty()):
        progress = render.Progress(sys.stderr, color=_color(sys.stderr))
        names = [n for n in FRAMEWORKS if n in (frameworks or {f.name for f in snap.python.frameworks})]
        progress._write(f"envdoctor smoke: {', '.join(names) or 'no framework'} in {snap.python.executable or python_path}"
                        f" (timeout {timeout:g} s each)")
    try:
        run = run_smoke(snap, python=python_path, frameworks=list(frameworks) or None, timeout=timeout, bench=bench,
                        require_gpu=require_gpu, on_event=progress)
    finally:
        if progress is not None:
            progress.close()
    if run.exit_code():
        _add_hints(run, python_path)
    if fmt == "json":
        from envdoctor.rules.engine import COMMAND_FAMILIES, select_rules
        from envdoctor.smoke.findings import smoke_findings

        selected = {r.id for r in select_rules(families=COMMAND_FAMILIES["smoke"])}
        data = run.to_dict()  # the results, and the doctor's findings (the smoke rules, ED700-ED749) for them
        data["findings"] = [f.to_dict() for f in smoke_findings(run, snap) if f.id in selected]
        text = dump_json(data)
    elif fmt == "markdown":
        text = render.render_markdown(run)
    else:
        text = render.render_text(run, color=_color(sys.stdout) and not output, verbose=verbose)
    emit(text, output, force_output, snapshot=snap)
    sys.exit(run.exit_code())


def _add_hints(run: SmokeRun, python_path: Optional[str]) -> None:
    """Explain failed steps with the whole machine's facts (driver, cuDNN, loader): probed only on failure."""
    try:
        from envdoctor.smoke.findings import add_hints

        add_hints(run, obtain_snapshot(python_path, None, None, 5.0))
    except Exception:  # noqa: BLE001 - hints are a bonus; the results stand without them
        if os.environ.get("ENVDOCTOR_DEBUG"):
            raise


def _color(stream: IO[Any]) -> bool:
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
