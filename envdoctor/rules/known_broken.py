"""ED450: a framework release that is broken in a known way here (matrices/known_broken.toml).

A row names distributions, a PEP 440 range of releases, the platforms, the extra the breakage needs and the
stage: "run" (the installed release misbehaves: check and gate judge it) or "install" (installing it fails: only
a planned install, which gate lays over the target, is judged). The message is the symptom users report and the
fix is the row's own.
"""
from __future__ import annotations

from typing import List, Optional

from envdoctor.rules.base import EvidenceItem, Finding, Rule, rule
from envdoctor.context import Context

PLANNED = "(planned)"  # Framework.location of what gate's plan lays over the target (envdoctor.gate.plan)


def _platform_ok(ctx, row) -> bool:
    if not row.platforms:
        return True
    from envdoctor.facts.platform import platform_key

    key = platform_key(ctx)
    return key in row.platforms or ("wsl2" in row.platforms and ctx.snap.platform.wsl == 2)


def _extra_ok(ctx, fw, extra: str) -> Optional[bool]:
    if not extra:
        return True
    from envdoctor.facts.libraries import extras_in_effect
    from envdoctor.facts.pins import norm

    return extras_in_effect(fw, ctx.snap, ctx.frameworks).get(norm(extra), False)


@rule(
    id="ED450",
    name="known-broken-release",
    title="This framework release is known to be broken here",
    severity="error",
    area="environment",
    rationale="""
Some releases fail on a platform or install path although nothing else about the machine is wrong (frameworks and
the extensions installed beside them alike, such as flash-attn 2.8.0.post2's undefined c10 symbol): TensorFlow
2.16.1 does not find the CUDA libraries its own [and-cuda] extra installed and lists no GPU; `pip install
tensorflow[and-cuda]==2.15.0` cannot resolve its tensorrt pins; torch 2.4.0 on Windows fails at import with
"Error loading fbgemm.dll or one of its dependencies". No compatibility table shows these: the build, the driver and
the libraries all match. envdoctor keeps them as data (matrices/known_broken.toml: affected releases as a PEP 440
specifier, platforms, the extra the breakage needs, the symptom users report, the fix, the public report) and
judges the installed release (check) and the planned one (gate). A row of stage "install" only judges a planned
install: an environment that already has the release got past the failure. Rows whose symptom is "no GPU" are
silent on a machine without a usable NVIDIA GPU. Severity is the row's own.
""",
    example="tensorflow[and-cuda] 2.16.1 on Linux with an A100: `ED450 error` 'TensorFlow 2.16.1 does not find the "
            "CUDA libraries its own [and-cuda] extra installed ...'.",
    references=[
        "https://github.com/tensorflow/tensorflow/issues/63362",
        "https://github.com/tensorflow/tensorflow/issues/66517",
        "https://github.com/pytorch/pytorch/issues/131662",
    ],
)
def known_broken_release(ctx: Context, r: Rule) -> List[Finding]:
    from envdoctor.knowledge.extra_tables import known_broken

    out: List = []
    out += _broken_extensions(ctx, r, known_broken().rows)
    for fw in ctx.frameworks:
        planned = fw.location == PLANNED
        for row in known_broken().rows:
            if not row.applies_to(fw.distribution, fw.version) or not _platform_ok(ctx, row):
                continue
            if row.stage == "install" and not planned:
                continue
            if row.gpu_only and not ctx.has_nvidia_gpu:
                continue
            if not _extra_ok(ctx, fw, row.extra):
                continue
            what = f"{fw.distribution}{f'[{row.extra}]' if row.extra else ''} {fw.version}"
            when = "planned" if planned else "installed"
            area = fw.name if fw.name in ("torch", "tensorflow", "jax") else r.area
            out.append(r.finding(
                f"{what} ({when}) is a known-broken release here: {row.symptom}",
                severity=row.severity, area=area, subject=f"{fw.distribution} {fw.version}",
                cause=f"known-broken:{row.id}:{fw.distribution}", fix=[row.fix],
                evidence=[EvidenceItem(f"{fw.name} release", f"{fw.distribution} {fw.version} ({when})",
                                       fw.evidence[0].source if fw.evidence else ""),
                          EvidenceItem("known-broken row", f"{row.id}: {row.versions}", row.source)],
            ))
    return out


def _broken_extensions(ctx: Context, r: Rule, rows) -> List[Finding]:
    """Rows for a distribution that is no framework of the snapshot (flash-attn, xformers, bitsandbytes: an
    extension is an installed package, with no Framework entry of its own), judged from python.packages. An
    extension has no extra or install stage of its own here: only "run" rows without an extra apply."""
    from envdoctor.facts.pins import canonical_name

    framework_dists = {canonical_name(fw.distribution) for fw in ctx.frameworks}
    out: List[Finding] = []
    for name, version in sorted(ctx.snap.python.packages.items()):
        dist = canonical_name(name)
        if dist in framework_dists or not version:
            continue
        for row in rows:
            if row.extra or row.stage != "run" or not row.applies_to(dist, str(version)) \
                    or not _platform_ok(ctx, row) or (row.gpu_only and not ctx.has_nvidia_gpu):
                continue
            out.append(r.finding(
                f"{name} {version} (installed) is a known-broken release here: {row.symptom}",
                severity=row.severity, subject=f"{name} {version}", cause=f"known-broken:{row.id}:{dist}",
                fix=[row.fix],
                evidence=[EvidenceItem("installed package", f"{name} {version}", f"python.packages:{name}"),
                          EvidenceItem("known-broken row", f"{row.id}: {row.versions}", row.source)]))
    return out
