"""Running the rules over a context: selection, isolation, ordering, root-cause folding."""
from __future__ import annotations

from typing import Iterable, List, Optional

from envdoctor.rules.base import REGISTRY, SEVERITY_RANK, Finding, Rule


def all_rules(complete: bool = True) -> List[Rule]:
    """The registered rules; `complete=False` leaves out the smoke and gate-plan rules (silent in check)."""
    import envdoctor.rules  # registers the machine rules

    if complete:
        envdoctor.rules.load_extra_rules()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def select_rules(only: Optional[Iterable[str]] = None, skip: Optional[Iterable[str]] = None,
                 complete: bool = True) -> List[Rule]:
    """Rules by ID or ID prefix (ED1 selects ED100-ED199) or by name."""
    wanted = [s for s in list(only or []) + list(skip or []) if s.strip()]
    # naming a rule the machine rules lack (ED8..., a smoke rule) loads the complete catalogue
    rules = all_rules(complete or bool(wanted))

    def matches(r: Rule, sel: str) -> bool:
        sel = sel.strip()
        return bool(sel) and (r.id.upper().startswith(sel.upper()) or r.name == sel)

    only_l = [s for s in (only or []) if s.strip()]
    skip_l = [s for s in (skip or []) if s.strip()]
    unknown = [s for s in only_l + skip_l if not any(matches(r, s) for r in rules)]
    if unknown:
        from envdoctor.errors import BadInput

        raise BadInput(f"unknown rule {', '.join(unknown)} (see `envdoctor rules`)")
    if only_l:
        rules = [r for r in rules if any(matches(r, s) for s in only_l)]
    return [r for r in rules if not any(matches(r, s) for s in skip_l)]


def run_rules(ctx, rules: Optional[List[Rule]] = None) -> List[Finding]:
    findings: List[Finding] = []
    for r in rules if rules is not None else all_rules():
        try:
            findings.extend(r.check(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule never sinks the report
            findings.append(Finding(
                id=r.id, severity="info", title=r.title, area=r.area,
                message=f"rule {r.id} could not run: {type(exc).__name__}: {exc}",
            ))
    return order(fold_causes(findings))


def fold_causes(findings: List[Finding]) -> List[Finding]:
    """Keep one finding per cause key: the most severe; the others become its consequences."""
    by_cause = {}
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
