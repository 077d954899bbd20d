"""JUnit XML for CI test reports: a test suite per section (gate: per input; check: the machine), a test case per rule
that ran: a failure when that rule found an error there (or a warning under --strict); its other findings go to the
test case's system-out. A test case names the input line of its first finding (``file``/``line``, as pytest's
xunit1 family writes them and CI reporters read them)."""
from __future__ import annotations

from typing import List

from envdoctor.formats.interface import FindingsDoc, Item, RenderOptions, sorted_items, where

name = "junit"
description = "JUnit XML: a test suite per input (check: the machine), a test case per rule"


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name=f"envdoctor {doc.command}")
    total = fails = 0
    rules = doc.catalogue()
    for section in doc.sections:
        suite_name = section.name or "machine"
        suite = ET.SubElement(root, "testsuite", name=suite_name)
        n = nf = 0
        items = sorted_items(section.items)
        for r in rules:
            mine = [x for x in items if x.finding.id == r.id]
            n += 1
            case = ET.SubElement(suite, "testcase", classname=f"envdoctor.{doc.command}.{suite_name}",
                                 name=f"{r.id} {r.name}")
            failing = [x for x in mine if doc.failing(x.finding.severity)]
            first = (failing or mine)[0] if mine else None
            if first is not None and first.locations:
                case.set("file", first.locations[0].file)
                case.set("line", str(first.locations[0].line))
            if failing:
                nf += 1
                fail = ET.SubElement(case, "failure", message=_one_line(failing[0]), type=failing[0].finding.severity)
                fail.text = "\n\n".join(_detail(x) for x in failing)
            others = [x for x in mine if x not in failing]
            if others:
                out = ET.SubElement(case, "system-out")
                out.text = "\n\n".join(_detail(x) for x in others)
        suite.set("tests", str(n))
        suite.set("failures", str(nf))
        suite.set("errors", "0")
        total += n
        fails += nf
    root.set("tests", str(total))
    root.set("failures", str(fails))
    root.set("errors", "0")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _one_line(x: Item) -> str:
    at = where(x)
    return (f"{at}: " if at else "") + f"{x.finding.id} {x.finding.message}"


def _detail(x: Item) -> str:
    f = x.finding
    lines: List[str] = [f"{f.severity}: {_one_line(x)}"]
    lines += [f"  fix: {s}" for s in f.fix]
    lines += [f"  evidence: {e.fact}: {e.value}" + (f" [{e.source}]" if e.source else "") for e in f.evidence]
    lines += [f"  also: {c}" for c in f.consequences]
    return "\n".join(lines)
