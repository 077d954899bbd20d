"""The onboarding report: Markdown and a self-contained HTML page (no script, no external resource), both
rendered from templates/onboard-report.{md,html}.j2.  The HTML environment autoescapes every value, so
machine-supplied strings (GPU names, environment variables, error messages) are text, never markup.
jinja2 is imported when a report is rendered (start-up speed: a dry run renders none)."""
from __future__ import annotations

import datetime
import json
import re
from typing import Any, Dict, List, Optional, Sequence

from envdoctor import __version__
from envdoctor.doctor import snapshot_dict
from envdoctor.errors import BadInput
from envdoctor.lock.render import template_dir
from envdoctor.redact import redactor_for

TEMPLATE_MD = "onboard-report.md.j2"
TEMPLATE_HTML = "onboard-report.html.j2"
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2, "ok": 3}
INSTALLED_NAMES = ("torch", "torchvision", "torchaudio", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "keras")


def _secs(ms: float) -> str:
    return f"{ms / 1000.0:.2f} s" if ms else ""


def _smoke_context(run: Any) -> Optional[Dict[str, Any]]:
    if run is None:
        return None
    fws = []
    for fw in run.frameworks:
        fws.append({
            "name": fw.name, "version": fw.version, "build": fw.build, "status": fw.status, "outcome": fw.outcome,
            "duration": _secs(fw.duration_ms),
            "steps": [{"label": s.label, "status": s.status, "duration": _secs(s.duration_ms),
                       "detail": (s.detail or "").strip().splitlines()[0][:300] if (s.detail or "").strip() else "",
                       "hint": s.hint} for s in fw.steps],
        })
    summary = run.summary()
    ok = summary["frameworks_ok"]
    line = f"{ok} of {summary['frameworks']} frameworks passed in {_secs(run.duration_ms) or '0 s'}"
    return {"frameworks": fws, "summary": line, "problems": list(run.problems), "ok": run.exit_code() == 0,
            "require_gpu": run.require_gpu, "python": run.python}


def _gpu_env(snap: Any) -> List[Dict[str, str]]:
    return [{"name": k, "value": str(v)} for k, v in sorted((snap.loader.gpu_env or {}).items())]  # redacted in context()


def context(plan: Any, snap: Any, report: Any, smoke: Any, steps: Sequence[Dict[str, Any]], log_path: str = "",
            state_path: str = "", rerun: str = "", initial_findings: Sequence[Any] = (),
            generated: Optional[str] = None) -> Dict[str, Any]:
    """Everything the templates show, as plain values."""
    p, d = snap.platform, snap.driver
    machine = [
        ("System", f"{p.distro_name or p.system} ({p.machine})".strip()),
        ("Kernel", p.kernel or "unknown"),
    ]
    if p.wsl:
        machine.append(("WSL", f"WSL {p.wsl}"))
    if p.container:
        machine.append(("Container", p.container))
    machine += [
        ("NVIDIA driver", d.version or "none"),
        ("CUDA the driver supports", d.cuda_version or "none"),
        ("GPU detection", plan.gpu.why),
    ]
    gpus = [{"index": g.index, "name": g.name, "cc": g.compute_capability or "unknown",
             "memory": f"{g.memory_total_mib} MiB" if g.memory_total_mib else ""} for g in snap.gpus]
    installed = []
    for fw in snap.python.frameworks:
        if fw.name in INSTALLED_NAMES or fw.distribution in INSTALLED_NAMES:
            installed.append({"name": fw.name, "distribution": fw.distribution, "version": fw.version,
                              "build": fw.build + (f" (CUDA {fw.cuda_version})" if fw.cuda_version else "")})
    findings = sorted(report.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 9)) if report is not None else []
    sdict = snapshot_dict(snap, redact=True)
    smoke_ctx = _smoke_context(smoke)
    failed = [s for s in steps if s.get("status") in ("failed", "interrupted") and s["name"] != "smoke"]
    smoke_failed = any(s.get("status") == "failed" for s in steps if s["name"] == "smoke") or \
        (smoke_ctx is not None and not smoke_ctx["ok"])
    outcome_ok = not failed and not smoke_failed
    t = plan.target
    return redactor_for(snap).dict({
        "envdoctor": __version__,
        "generated": generated or datetime.datetime.now(tz=datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "outcome": "ok" if outcome_ok else "failed",
        "outcome_text": ("the environment is installed and every framework passed its smoke test" if outcome_ok
                         else "stopped at step " + ", ".join(repr(s["name"]) for s in failed) if failed
                         else "the environment is installed, but the smoke test failed"),
        "machine": machine,
        "driver_state": d.state,
        "gpus": gpus,
        "gpu_env": _gpu_env(snap),
        "env": {"kind": t.kind, "tool": t.tool, "path": t.path, "name": t.name,
                "python": snap.python.version or plan.base.version, "base_python": plan.base.executable,
                "lock_path": plan.lock_path, "log_path": log_path, "state_path": state_path},
        "cpu": plan.cpu,
        "lock": {"summary": plan.lock_summary, "picks": list(plan.lock_picks), "text": plan.lock_text},
        "installed": installed,
        "steps": [{"name": s["name"], "title": s.get("title", ""), "status": s.get("status", ""),
                   "detail": s.get("detail") or "", "seconds": f"{s['seconds']:.1f} s" if s.get("seconds") else ""}
                  for s in steps],
        "smoke": smoke_ctx,
        "findings": [{"id": f.id, "severity": f.severity, "title": f.title, "message": f.message, "fix": list(f.fix)}
                     for f in findings],
        "summary": {s: (report.count(s) if report is not None else 0) for s in ("error", "warning", "info", "ok")},
        "snapshot_json": json.dumps(sdict, indent=2, ensure_ascii=False),
        "rerun": rerun,
    })


# --------------------------------------------------------------------------- rendering


def _md(text: Any) -> str:
    """Text for a Markdown table cell or list item: no markup, no HTML."""
    s = str(text if text is not None else "")
    s = s.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("|", "\\|").replace("`", "\\`").replace("*", "\\*").replace("_", "\\_").replace("[", "\\[")
    return " ".join(s.split())


def _fence(text: Any) -> str:
    """A code fence longer than any backtick run in text, so the text cannot close it."""
    runs = [len(m) for m in re.findall(r"`+", str(text))]
    return "`" * max(3, max(runs, default=0) + 1)


def _environment(autoescape: bool) -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir())), autoescape=autoescape,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["md"] = _md
    env.filters["fence"] = _fence
    return env


def _render(name: str, ctx: Dict[str, Any], autoescape: bool) -> str:
    try:
        template = _environment(autoescape).get_template(name)
    except Exception as exc:  # noqa: BLE001 - a missing template is an installation problem
        raise BadInput(f"cannot read the template {name} in {template_dir()}: {exc}") from None
    return template.render(**ctx)


def render_markdown(ctx: Dict[str, Any]) -> str:
    return _render(TEMPLATE_MD, ctx, autoescape=False)


def render_html(ctx: Dict[str, Any]) -> str:
    return _render(TEMPLATE_HTML, ctx, autoescape=True)
