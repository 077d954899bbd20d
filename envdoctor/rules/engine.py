"""Running the rules over a context: selection, isolation, ordering, root-cause folding.

Rules come in families, by the module that registers them: the machine rules (`envdoctor.rules`), the
smoke rules (ED700-ED749, `envdoctor.rules.smoke_rules`; their findings come from `envdoctor.smoke.findings`)
and the gate-plan rules (ED800-ED849, `envdoctor.rules.gate_rules`). Each command names the families it runs (COMMAND_FAMILIES); the
catalogue (`envdoctor rules`, `explain`) shows them all.
"""
from __future__ import annotations

import importlib
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from envdoctor.rules.base import REGISTRY, SEVERITY_RANK, Finding, Rule

FAMILIES = ("machine", "smoke", "gate")
# the modules that register each family's rules; a rule registered anywhere else counts as a machine rule
FAMILY_MODULES: Dict[str, Tuple[str, ...]] = {
    "machine": ("envdoctor.rules",),
    "smoke": ("envdoctor.rules.smoke_rules",),
    "gate": ("envdoctor.rules.gate_rules",),
}
FAMILY_WORDS = {"machine": "a machine rule", "smoke": "a smoke rule (it judges `envdoctor smoke` results)",
                "gate": "a gate rule (it judges an install plan)"}
# what each command runs (check --smoke folds the smoke results in; see envdoctor.doctor.fold_smoke)
COMMAND_FAMILIES: Dict[str, Tuple[str, ...]] = {
    "check": ("machine",),
    "check --smoke": ("machine", "smoke"),
    "gate": ("machine", "gate"),
    "smoke": ("smoke",),
}
CRASH_ID = "ED003"  # the finding for a rule that raised: envdoctor could not judge


def family_of(r: Rule) -> str:
    module = getattr(r, "module", "") or ""
    for fam in ("smoke", "gate"):
        if module in FAMILY_MODULES[fam]:
            return fam
    return "machine"


def _load(families: Iterable[str]) -> None:
    for fam in families:
        for name in FAMILY_MODULES[fam]:
            importlib.import_module(name)


def all_rules(complete: bool = True, families: Optional[Sequence[str]] = None) -> List[Rule]:
    """The registered rules of `families` (default: every family; `complete=False`: the machine rules only)."""
    if families is None:
        families = FAMILIES if complete else ("machine",)
    _load(families)
    return [REGISTRY[k] for k in sorted(REGISTRY) if family_of(REGISTRY[k]) in families]


def select_rules(only: Optional[Iterable[str]] = None, skip: Optional[Iterable[str]] = None,
                 complete: bool = True, families: Optional[Sequence[str]] = None,
                 command: str = "") -> List[Rule]:
    """The rules of `families` (default: all; `complete=False`: machine rules) by ID or ID prefix (ED1 selects
    ED100-ED199) or by name. A selector that names only rules of other families is bad input: `command`
    (e.g. "check") does not run them, and silently running nothing would read as a clean result."""
    if families is None:
        families = FAMILIES if complete else ("machine",)
    families = tuple(families)

    def matches(r: Rule, sel: str) -> bool:
        sel = sel.strip()
        return bool(sel) and (r.id.upper().startswith(sel.upper()) or r.name == sel)

    only_l = [s for s in (only or []) if s.strip()]
    skip_l = [s for s in (skip or []) if s.strip()]
    rules = all_rules(families=families)
    unknown = [s for s in only_l + skip_l if not any(matches(r, s) for r in rules)]
    if unknown:
        from envdoctor.errors import BadInput

        everything = all_rules(families=FAMILIES)
        for s in unknown:
            other = sorted({family_of(r) for r in everything if matches(r, s)})
            if other:
                who = f"`envdoctor {command}`" if command else "this command"
                runs = " and ".join(f"{f} rules" for f in families)
                raise BadInput(f"rule {s} is {FAMILY_WORDS[other[0]]}: {who} runs {runs} only "
                               f"(see `envdoctor rules`)")
        raise BadInput(f"unknown rule {', '.join(unknown)} (see `envdoctor rules`)")
    if only_l:
        rules = [r for r in rules if any(matches(r, s) for s in only_l)]
    return [r for r in rules if not any(matches(r, s) for s in skip_l)]


def crash_finding(r: Rule, exc: BaseException) -> Finding:
    """A rule that raised: the report says envdoctor could not judge that part (a warning, never a silent info)."""
    title = REGISTRY[CRASH_ID].title if CRASH_ID in REGISTRY else "envdoctor could not judge"
    return Finding(
        id=CRASH_ID, severity="warning", title=title, area=r.area, subject=r.id,
        message=f"envdoctor could not judge {r.id} ({r.name}: {r.title}): the rule failed with "
                f"{type(exc).__name__}: {exc}. This part of the machine is unchecked; please report it.",
    )


NO_FIX = "No fix known to envdoctor; `envdoctor explain {id}` says what this breaks and where to read more."


def first_step(fix: List[str]) -> List[str]:
    """A fix list whose first choice was not available (no driver for this GPU, say) starts at its alternative:
    the list never begins with "or ..."."""
    if fix and fix[0][:3].lower() == "or " and len(fix[0]) > 3:
        return [fix[0][3].upper() + fix[0][4:]] + list(fix[1:])
    return fix


def run_rules(ctx, rules: Optional[List[Rule]] = None) -> List[Finding]:
    findings: List[Finding] = []
    for r in rules if rules is not None else all_rules():
        try:
            findings.extend(r.check(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule never sinks the report
            findings.append(crash_finding(r, exc))
    for f in findings:  # a fix look-up that found nothing never leaves a problem without a fix line
        if f.severity in ("error", "warning") and not f.fix:
            f.fix = [NO_FIX.format(id=f.id)]
        f.fix = first_step(f.fix)
    return order(fold_causes(findings))


def fold_causes(findings: List[Finding]) -> List[Finding]:
    """Keep one finding per cause key: the most severe; the others become its consequences."""
    by_cause: Dict[str, Finding] = {}
    out: List[Finding] = []
    for f in sorted(findings, key=lambda f: -SEVERITY_RANK.get(f.severity, 0)):
        if f.cause is None:
            out.append(f)
            continue
        head = by_cause.get(f.cause)
        if head is None:
            by_cause[f.cause] = f
            out.append(f)
        else:
            note = f"{f.id}: {f.message}"
            if note not in head.consequences:
                head.consequences.append(note)
    return out


def order(findings: List[Finding]) -> List[Finding]:
    return sorted(findings, key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.id, f.subject))
