"""``envdoctor gate``: judge what an install *would* put on a target machine, before anything is downloaded.

    inputs/     requirements files (-r / -c includes, index options), pyproject.toml, environment.yml, pylock.toml,
                uv.lock  ->  InputUnit (requirements with file:line)
    plan.py     InputUnit + target Snapshot + Matrices  ->  Plan (what pip / uv / conda would install, as Framework
                entries) and the Snapshot with the plan laid over it (pure; the data is the only source, no network)
    render.py   GateResult -> the shared findings formats (envdoctor/formats/: text, json, markdown, JUnit XML,
                GitHub annotations, SARIF, prometheus)
    core.py     find the inputs, build the target, plan and judge each input -> GateResult (no click)
    cli.py      the click command ``gate``: options translated into core.run_gate (registered in
                envdoctor.cli.COMMANDS)

The same rules as ``envdoctor check`` judge the overlaid snapshot; the gate-only rules (ED800-ED849,
envdoctor/rules/gate_rules.py) read the plan from ``Context.extra["gate"]`` and stay silent without one.
See docs/gate.md.
"""
from __future__ import annotations

# envdoctor.gate(...) is the Python API's gate() (envdoctor.api): the package answers a call as the function
from envdoctor.packages import call_as

call_as(__name__)
