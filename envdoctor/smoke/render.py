"""Smoke results as text (with a live progress printer), JSON and Markdown."""
from __future__ import annotations

import sys
import threading
from typing import IO, Any, Dict, List, Optional

from envdoctor.formats.ansi import ansi
from envdoctor.progress import Status
from envdoctor.smoke.results import BAD, FrameworkResult, SmokeRun, StepResult
from envdoctor.snapshot_io import dump_json

MARK = {"ok": "✓", "failed": "✗", "crashed": "✗", "timeout": "✗", "not_available": "-", "skipped": "·"}
COLOR = {"ok": "green", "failed": "red", "crashed": "red", "timeout": "red", "not_available": None, "skipped": None}
WORDS = {"ok": "ok", "failed": "failed", "crashed": "crashed", "timeout": "timeout", "not_available": "not available",
         "skipped": "skipped"}


def _secs(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms < 10000 else f"{ms / 1000:.1f} s"


def _fw_title(fw: FrameworkResult) -> str:
    title = f"{fw.name} {fw.version}".strip()
    if fw.build:
        title += f" ({fw.build} build)"
    return title


def _fw_status_line(fw: FrameworkResult) -> str:
    if fw.status in BAD:
        where = next((s for s in fw.steps if s.status in BAD), None)
        what = fw.outcome if fw.status in ("crashed", "timeout") else "failed"
        return f"{what}" + (f" in {where.label}" if where is not None else "") + f", {_secs(fw.duration_ms)}"
    return f"ok in {_secs(fw.duration_ms)}"


def _step_line(s: StepResult) -> str:
    first = s.detail.strip().splitlines()[0] if s.detail.strip() else ""
    status = WORDS.get(s.status, s.status)
    text = f"{s.label:<24} {status:<13} {_secs(s.duration_ms) if s.duration_ms else '':>8}  {first}"
    return text.rstrip()


def render_text(run: SmokeRun, color: bool = False, verbose: bool = False) -> str:
    def style(text: str, status: str) -> str:
        fg = COLOR.get(status)
        return ansi(text, fg) if color and fg else text

    lines: List[str] = [f"Smoke test of {run.python}" + (f" (Python {run.python_version})" if run.python_version else "")
                        + f", timeout {run.timeout:g} s per framework" + (", with --bench" if run.bench else "")
                        + (", --require-gpu" if run.require_gpu else "")]
    if not run.frameworks:
        lines.append("No GPU framework (torch, tensorflow, jax, cupy) is installed there: nothing to test.")
    for fw in run.frameworks:
        lines.append("")
        status = fw.status if fw.status in BAD else "ok"
        lines.append(style(f"[{MARK[status]}] {_fw_title(fw)}: {_fw_status_line(fw)}", status))
        steps = list(fw.steps)
        # a machine without a GPU: one line for every GPU step, not one "not available" row each
        no_gpu = [s for s in steps if s.status == "not_available" and s.code == "no_gpu"]
        if len(no_gpu) > 1 and not verbose:
            steps = [s for s in steps if s not in no_gpu]
        else:
            no_gpu = []
        while steps:
            s = steps.pop(0)
            same = 0
            while s.status == "skipped" and not verbose and same < len(steps) and \
                    steps[same].status == "skipped" and steps[same].detail == s.detail:
                same += 1
            if same:
                del steps[:same]
                lines.append(f"    {MARK['skipped']} {s.label} and {same} more step{'s' if same > 1 else ''} "
                             f"skipped: {s.detail}")
                continue
            lines.append(style(f"    {MARK.get(s.status, '?')} {_step_line(s)}", s.status))
            if s.status in BAD:
                rest = [ln for ln in s.detail.strip().splitlines()[1:] if ln.strip()]
                for ln in rest[:(20 if verbose else 10)]:  # crash dumps put the innermost frames first
                    lines.append(f"        | {ln}")
                if s.hint:
                    lines.append(f"        hint: {s.hint}")
            elif verbose and s.numbers:
                lines.append("        " + ", ".join(f"{k}={_num(v)}" for k, v in s.numbers.items()))
        if no_gpu:
            names = ", ".join(dict.fromkeys(s.label.replace(" (gpu)", "") for s in no_gpu))
            detail = no_gpu[0].detail if all(s.detail == no_gpu[0].detail for s in no_gpu) else "no GPU"
            lines.append(f"    {MARK['not_available']} {len(no_gpu)} GPU steps not available ({detail}): {names}")
        shown = "\n".join(s.detail for s in fw.steps if s.status in BAD)
        for n in [n for n in fw.notes if n not in shown][:5]:
            if verbose or fw.status in BAD or not fw.gpus:
                lines.append(f"        note: {n}")
    lines.append("")
    for p in run.problems:
        lines.append(style(f"✗ {p}", "failed"))
    lines.append(_summary_line(run))
    return "\n".join(lines) + "\n"


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _summary_line(run: SmokeRun) -> str:
    if not run.frameworks:
        return "✗ Smoke test failed." if run.problems else "• Nothing tested."
    bad = [fw for fw in run.frameworks if fw.status in BAD]
    no_gpu = [fw.name for fw in run.frameworks
              if any(s.device == "gpu" and s.code == "no_gpu" for s in fw.steps)]
    text = (f"{len(run.frameworks) - len(bad)} of {len(run.frameworks)} framework"
            f"{'s' if len(run.frameworks) != 1 else ''} passed in {_secs(run.duration_ms)}")
    if bad:
        text += "; " + ", ".join(f"{fw.name} {fw.status}" for fw in bad)
    if no_gpu:
        text += f"; GPU steps not run (no GPU) for {', '.join(no_gpu)}"
    return ("✗ " if run.exit_code() else "• ") + text + "."


def render_json(run: SmokeRun) -> str:
    return dump_json(run.to_dict())


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render_markdown(run: SmokeRun) -> str:
    out: List[str] = ["# envdoctor smoke test", "",
                      f"Interpreter: `{run.python}`" + (f" (Python {run.python_version})" if run.python_version else "")
                      + f"; timeout {run.timeout:g} s per framework" + ("; `--bench`" if run.bench else "")
                      + ("; `--require-gpu`" if run.require_gpu else ""), ""]
    if not run.frameworks:
        out += ["No GPU framework (torch, tensorflow, jax, cupy) is installed there: nothing to test.", ""]
    for fw in run.frameworks:
        status = fw.status if fw.status in BAD else "ok"
        out += [f"## {MARK[status]} {_fw_title(fw)}: {_fw_status_line(fw)}", "",
                "| step | status | time | detail |", "|---|---|---:|---|"]
        for s in fw.steps:
            detail = s.detail.strip()
            if s.status not in BAD:
                detail = detail.splitlines()[0] if detail else ""
            else:
                lines = detail.splitlines()
                detail = "\n".join(lines[:1] + lines[1:][-6:])
            if s.hint:
                detail += f"\nhint: {s.hint}"
            out.append(f"| {s.label} | {MARK.get(s.status, '?')} {WORDS.get(s.status, s.status)} | "
                       f"{_secs(s.duration_ms) if s.duration_ms else ''} | {_md(detail)} |")
        if fw.notes:
            out += [""] + [f"- note: `{n}`" for n in fw.notes[:5]]
        out.append("")
    for p in run.problems:
        out.append(f"**✗ {p}**")
    out.append(f"**{_summary_line(run)}**")
    return "\n".join(out) + "\n"


class Progress:
    """Live progress lines on a stream (stderr): one line per finished step, thread-safe."""

    def __init__(self, stream: Optional[IO[str]] = None, color: bool = False, live: Optional[Status] = None) -> None:
        self.stream = stream or sys.stderr
        self.color = color
        self.lock = threading.Lock()
        self.printed: Dict[str, set] = {}
        # the waits between lines: a status line on a terminal (onboard passes the one of its own step)
        self.own = live is None
        self.live = live if live is not None else Status(stream=self.stream)
        self.running: List[str] = []

    def _write(self, text: str, status: str = "") -> None:
        if self.color and COLOR.get(status):
            text = ansi(text, COLOR[status])
        with self.lock:
            self.live.echo(text)

    def _waiting(self) -> None:
        if self.own:
            self.live.update("smoke: running " + ", ".join(self.running) if self.running else "smoke: finishing")

    def close(self) -> None:
        if self.own:
            self.live.close()

    def __call__(self, framework: str, ev: Dict[str, Any]) -> None:
        kind = ev.get("event")
        if kind in ("hello", "finished"):
            with self.lock:
                if kind == "hello" and framework not in self.running:
                    self.running.append(framework)
                elif kind == "finished" and framework in self.running:
                    self.running.remove(framework)
            self._waiting()
        if kind == "hello":
            self._write(f"  {framework + ':':<11} started (pid {ev.get('pid')}, Python {ev.get('python')})")
        elif kind == "end":
            s = StepResult.from_dict(ev)
            self.printed.setdefault(framework, set()).add((s.step, s.device))
            if s.status == "skipped":
                return
            self._write(f"  {framework + ':':<11} {MARK.get(s.status, '?')} {_step_line(s)}", s.status)
        elif kind == "finished":
            fw: FrameworkResult = ev["result"]
            seen = self.printed.get(framework, set())
            for s in fw.steps:
                if (s.step, s.device) not in seen and s.status != "skipped":
                    first = s.detail.strip().splitlines()[0] if s.detail.strip() else ""
                    self._write(f"  {framework + ':':<11} {MARK.get(s.status, '?')} {s.label:<24} "
                                f"{WORDS.get(s.status, s.status):<13} {first}".rstrip(), s.status)
            status = fw.status if fw.status in BAD else "ok"
            self._write(f"  {framework + ':':<11} {_fw_status_line(fw)}", status)
