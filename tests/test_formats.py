"""The shared findings formats (envdoctor/formats/), through the real CLI of `check` and `gate`: every registered
format for both commands, SARIF validated against the SARIF 2.1.0 schema, JUnit XML against Jenkins' JUnit schema,
one mark per severity in both commands, a format added at run time offered and used by both, and format modules
imported only when used."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envdoctor.formats import registry
from envdoctor.formats.marks import MARK
from tests.snapfactory import machine, torch

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
RISE = FIX / "gate" / "rise-gen" / "requirements_cu121.txt"  # torch==2.3.0+cu121 on its line 10
OLD_DRIVER = ["--driver", "470.57.02", "--gpu", "sm_70", "--python", "3.10"]
BUILTIN = ("text", "json", "markdown", "junit", "github", "sarif", "prometheus")


def cli(args, capsys):
    from envdoctor.entry import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.fixture()
def old_driver_snapshot(tmp_path):
    """A V100 on driver 470 with torch 2.1.2+cu121: ED100 (an error) on the machine."""
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla V100-SXM2-16GB:7.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")])
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    return path


@pytest.fixture()
def cpu_snapshot(tmp_path):
    """A laptop without an NVIDIA GPU: ED001, an info."""
    path = tmp_path / "cpu.json"
    path.write_text(machine(frameworks=[torch("2.13.0+cpu")]).to_json())
    return path


def sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((FIX / "formats" / "sarif-schema-2.1.0.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def junit_schema():
    """Jenkins' junit-10.xsd with the two optional testcase attributes it lacks and gate writes (file, line: pytest's
    xunit1 family and CI reporters read them)."""
    xmlschema = pytest.importorskip("xmlschema")
    xsd = (FIX / "formats" / "junit-10.xsd").read_text()
    anchor = '<xs:attribute name="group" type="xs:string"/>\n        </xs:complexType>\n    </xs:element>\n\n    <xs:element name="testsuite">'
    assert anchor in xsd, "junit-10.xsd changed: revisit the testcase extension"
    xsd = xsd.replace(anchor, '<xs:attribute name="file" type="xs:string"/>\n<xs:attribute name="line" type="xs:string"/>\n'
                      + anchor, 1)
    return xmlschema.XMLSchema(xsd)


# --------------------------------------------------------------------------- both commands offer every format


def test_both_commands_offer_every_registered_format(capsys):
    assert tuple(registry.names()[:len(BUILTIN)]) == BUILTIN
    for command in ("check", "gate"):
        rc, out, _ = cli([command, "--help"], capsys)
        assert rc == 0 and "[" + "|".join(registry.names()) + "]" in out.replace("\n", "").replace(" ", "")


@pytest.mark.parametrize("fmt", BUILTIN)
def test_check_renders_every_format(capsys, old_driver_snapshot, fmt):
    rc, out, err = cli(["check", "--snapshot", str(old_driver_snapshot), "--format", fmt], capsys)
    assert rc == 1 and "ED100" in out and "Traceback" not in err and err == ""


@pytest.mark.parametrize("fmt", BUILTIN)
def test_gate_renders_every_format(capsys, fmt):
    rc, out, err = cli(["gate", str(RISE), *OLD_DRIVER, "--format", fmt], capsys)
    assert rc == 1 and "ED100" in out and "Traceback" not in err


# --------------------------------------------------------------------------- SARIF 2.1.0


def test_check_sarif_is_valid_and_machine_findings_have_logical_locations(capsys, old_driver_snapshot):
    rc, out, _ = cli(["check", "--snapshot", str(old_driver_snapshot), "--format", "sarif"], capsys)
    log = json.loads(out)
    validator = sarif_validator()
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, [e.message for e in errors[:5]]
    broken = json.loads(out)
    broken["runs"][0]["results"][0]["level"] = "fatal"  # not a SARIF level: the schema must say so
    assert list(validator.iter_errors(broken))
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    from envdoctor.rules.engine import COMMAND_FAMILIES, select_rules

    assert [r["id"] for r in rules] == [r.id for r in select_rules(families=COMMAND_FAMILIES["check"])]
    ed100 = next(r for r in run["results"] if r["ruleId"] == "ED100")
    assert rules[ed100["ruleIndex"]]["id"] == "ED100" and ed100["level"] == "error"
    rule = rules[ed100["ruleIndex"]]
    assert rule["name"] == "driver-too-old" and rule["shortDescription"]["text"] and rule["help"]["text"]
    assert rule["defaultConfiguration"]["level"] == "error"
    (loc,) = ed100["locations"]
    assert loc["logicalLocations"][0]["name"] == "driver"
    # the machine's finding is reported at the file that states the environment: here the snapshot judged
    assert loc["physicalLocation"]["artifactLocation"]["uri"].endswith("snap.json")
    assert "torch 2.1.2+cu121" in ed100["message"]["text"] and "\nFix: " in ed100["message"]["text"]
    assert run["invocations"][0]["exitCode"] == rc == 1


def github_refusals(log) -> list:
    """What GitHub code scanning's upload refuses or drops, per "SARIF support for code scanning" (docs.github.com,
    code-security/reference/code-scanning/sarif-files/sarif-support-for-code-scanning: required properties and the
    upload limits) and the errors upload-sarif reports ("locationFromSarifResult: expected artifact location",
    "unrecognized SARIF location URI scheme")."""
    from urllib.parse import urlparse

    out = []
    if log.get("version") != "2.1.0":
        out.append("version is not 2.1.0")
    for run in log.get("runs", []):
        driver = run.get("tool", {}).get("driver", {})
        if not driver.get("name"):
            out.append("tool.driver.name missing")
        rules = driver.get("rules", [])
        if len(rules) > 25_000 or len({r.get("id") for r in rules}) != len(rules):
            out.append("rules: more than 25,000 or ids not unique")
        for r in rules:
            if not r.get("id") or len(r.get("properties", {}).get("tags", [])) > 20:
                out.append(f"rule {r.get('id')}: no id or more than 20 tags")
        results = run.get("results", [])
        if len(results) > 25_000:
            out.append("more than 25,000 results")
        for res in results:
            rid = res.get("ruleId")
            if not rid or not res.get("message", {}).get("text"):
                out.append(f"{rid}: ruleId or message.text missing")
            locs = res.get("locations") or []
            if not locs or len(locs) > 1000:
                out.append(f"{rid}: no location (or more than 1,000)")
            for loc in locs:
                art = loc.get("physicalLocation", {}).get("artifactLocation", {})
                uri = art.get("uri") or ""
                if not uri:
                    out.append(f"{rid}: expected artifact location")
                elif urlparse(uri).scheme not in ("", "file"):
                    out.append(f"{rid}: unrecognized SARIF location URI scheme in {uri}")
                region = loc.get("physicalLocation", {}).get("region")
                if region is not None and int(region.get("startLine", 0)) < 1:
                    out.append(f"{rid}: region.startLine below 1")
    return out


@pytest.mark.parametrize("where", ["snapshot", "project", "bare"])
def test_check_sarif_has_a_location_github_accepts(capsys, tmp_path, monkeypatch, old_driver_snapshot, where):
    """Every result of check's SARIF carries a file of the checkout: the --snapshot judged, else the project's file
    that states the environment, else envdoctor.toml (docs/report.md)."""
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(project))
    if where == "project":
        (project / "requirements-gpu.txt").write_text("torch\n")
    snap = old_driver_snapshot
    if where != "snapshot":  # the same machine, not named as a file: a live probe reads no snapshot
        monkeypatch.setattr("envdoctor.doctor.obtain_snapshot",
                            lambda *a, **k: __import__("envdoctor.snapshot_io", fromlist=["x"]).load_snapshot(str(snap)))
        args = ["check", "--format", "sarif"]
    else:
        (project / "node.json").write_bytes(snap.read_bytes())
        args = ["check", "--snapshot", "node.json", "--format", "sarif"]
    rc, out, _ = cli(args, capsys)
    log = json.loads(out)
    assert rc == 1 and not list(sarif_validator().iter_errors(log))
    assert github_refusals(log) == []
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]
            for loc in r["locations"]}
    assert uris == {{"snapshot": "node.json", "project": "requirements-gpu.txt", "bare": "envdoctor.toml"}[where]}
    # the checker itself: a result with only a logical location is what GitHub refused
    log["runs"][0]["results"][0]["locations"] = [{"logicalLocations": [{"name": "driver"}]}]
    assert github_refusals(log) == [f"{log['runs'][0]['results'][0]['ruleId']}: expected artifact location"]


def test_gate_sarif_points_at_the_requirements_line(capsys, tmp_path, monkeypatch):
    workspace = RISE.parent.parent
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    out_file = tmp_path / "gate.sarif"
    rc, out, _ = cli(["gate", str(RISE), *OLD_DRIVER, "--format", "sarif", "-o", str(out_file)], capsys)
    assert rc == 1 and out == ""
    log = json.loads(out_file.read_text())
    assert not list(sarif_validator().iter_errors(log))
    run = log["runs"][0]
    ed100 = next(r for r in run["results"] if r["ruleId"] == "ED100")
    phys = ed100["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"] == {"uri": "rise-gen/requirements_cu121.txt", "uriBaseId": "%SRCROOT%"}
    assert phys["region"] == {"startLine": 10}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == workspace.as_uri() + "/"
    assert github_refusals(log) == []
    for r in run["results"]:  # every result names its rule, and every gate result is at the input file
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("requirements_cu121.txt")


# --------------------------------------------------------------------------- JUnit XML


def test_check_and_gate_junit_validate_against_the_junit_schema(capsys, old_driver_snapshot):
    schema = junit_schema()
    rc, out, _ = cli(["check", "--snapshot", str(old_driver_snapshot), "--format", "junit"], capsys)
    schema.validate(out)
    root = ET.fromstring(out.split("\n", 1)[1])
    (suite,) = root.findall("testsuite")
    failing = [c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None]
    assert rc == 1 and suite.get("name") == "machine" and failing == ["ED100 driver-too-old"]
    assert root.get("failures") == "1" and int(root.get("tests")) == len(suite.findall("testcase"))
    rc, out, _ = cli(["gate", str(RISE), *OLD_DRIVER, "--format", "junit"], capsys)
    schema.validate(out)
    case = next(c for c in ET.fromstring(out.split("\n", 1)[1]).iter("testcase") if c.find("failure") is not None)
    assert (case.get("name"), case.get("file"), case.get("line")) == ("ED100 driver-too-old", str(RISE), "10")


def test_junit_schema_rejects_what_it_should(capsys):
    """The schema is not a rubber stamp: a report without the required counts fails it."""
    schema = junit_schema()
    with pytest.raises(Exception):
        schema.validate('<testsuites><testsuite name="x"><testcase name="a"/></testsuite></testsuites>')


# --------------------------------------------------------------------------- the other formats for the new command


def test_check_github_annotations_have_no_file_and_gate_markdown_has_lines(capsys, old_driver_snapshot):
    rc, out, _ = cli(["check", "--snapshot", str(old_driver_snapshot), "--format", "github"], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("::error title=ED100::torch 2.1.2+cu121") and lines[-1].startswith("envdoctor check: 1 error")
    rc, out, _ = cli(["gate", str(RISE), *OLD_DRIVER, "--format", "markdown"], capsys)
    assert rc == 1 and out.startswith("## envdoctor gate report")
    assert f"- **ERROR ED100** `{RISE}:10`" in out and f"- would install: `{RISE}:10`" in out


def test_gate_prometheus_parses(capsys):
    parser = pytest.importorskip("prometheus_client.parser")
    rc, out, _ = cli(["gate", str(RISE), *OLD_DRIVER, "--format", "prometheus"], capsys)
    families = {f.name: f for f in parser.text_string_to_metric_families(out)}
    sample = next(s for s in families["envdoctor_finding"].samples if s.labels["id"] == "ED100")
    assert sample.value >= 1 and families["envdoctor_driver_info"].samples[0].labels["version"] == "470.57.02"


# --------------------------------------------------------------------------- one mark per severity


def test_an_info_finding_has_one_mark_in_check_and_gate(capsys, cpu_snapshot, tmp_path, monkeypatch):
    rc, out, _ = cli(["check", "--snapshot", str(cpu_snapshot)], capsys)
    assert rc == 0 and f"    {MARK['info']} ED001 " in out
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.txt").write_text("torch==2.3.0\n")
    rc, out, _ = cli(["gate", "requirements.txt", "--snapshot", str(cpu_snapshot), "-v"], capsys)
    infos = [ln for ln in out.splitlines() if " ED001 " in ln]
    assert infos and all(ln.lstrip().startswith(MARK["info"] + " ") for ln in infos)
    assert MARK["info"] == "i" and len(set(MARK.values())) == len(MARK)


# --------------------------------------------------------------------------- a new format is one module


TOY = '''
name = "toy"
description = "one line per finding, for the test"


def render(doc, options):
    return "".join(f"TOY {doc.command} {x.finding.id} {x.finding.severity} {len(x.locations)}\\n" for x in doc.items)
'''


def test_a_format_registered_at_run_time_is_offered_and_used_by_check_and_gate(capsys, tmp_path, monkeypatch,
                                                                               old_driver_snapshot):
    (tmp_path / "envdoctor_toy_format.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.FORMATS, "toy", "envdoctor_toy_format")
    for command in ("check", "gate"):
        rc, out, _ = cli([command, "--help"], capsys)
        assert "toy]" in out.replace("\n", "").replace(" ", "")
    rc, out, _ = cli(["check", "--snapshot", str(old_driver_snapshot), "--format", "toy"], capsys)
    assert rc == 1 and "TOY check ED100 error 0" in out.splitlines()
    rc, out, _ = cli(["gate", str(RISE), *OLD_DRIVER, "--format", "toy"], capsys)
    assert rc == 1 and "TOY gate ED100 error 1" in out.splitlines()
    rc, _, err = cli(["check", "--snapshot", str(old_driver_snapshot), "--format", "nope"], capsys)
    assert rc == 2 and "nope" in err


# --------------------------------------------------------------------------- lazy loading


def test_format_modules_are_imported_only_when_used(old_driver_snapshot):
    code = (
        "import sys\n"
        "import envdoctor.commands, envdoctor.gate.cli\n"
        "before = sorted(m for m in sys.modules if m.startswith('envdoctor.formats.'))\n"
        "from envdoctor.entry import main\n"
        "try:\n"
        f"    main(['check', '--snapshot', {str(old_driver_snapshot)!r}, '--format', 'text'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "after = sorted(m for m in sys.modules if m.startswith('envdoctor.formats.'))\n"
        "print(before, file=sys.stderr); print(after, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    before, after = [eval(line) for line in proc.stderr.strip().splitlines()[-2:]]  # noqa: S307 - our own output
    assert "envdoctor.formats.registry" in before  # the shared pieces (interface, marks) may be; no format module
    assert not set(registry.FORMATS.values()) & set(before), before
    assert "envdoctor.formats.text" in after
    assert not {f"envdoctor.formats.{n}" for n in BUILTIN if n != "text"} & set(after)


# --------------------------------------------------------------------------- the rule catalogue


def test_explain_shows_the_fix_and_the_source_file(capsys):
    rc, out, _ = cli(["explain", "ED100"], capsys)
    assert rc in (0, None) and out.startswith("ED100 (driver-too-old)")
    assert "\nFix: Upgrade the NVIDIA driver" in out
    source = next(ln for ln in out.splitlines() if ln.startswith("Source: "))
    path, _, line = source.split()[1].partition(":")
    assert path == "envdoctor/rules/cuda_driver.py" and source.endswith("(envdoctor.rules.cuda_driver)")
    assert 'id="ED100"' in (ROOT / path).read_text().splitlines()[int(line) - 1]


def test_rules_json_carries_fix_family_and_source_for_every_rule(capsys):
    rc, out, _ = cli(["rules", "--format", "json"], capsys)
    rules = json.loads(out)["rules"]
    from envdoctor.rules.base import REGISTRY

    assert sorted(r["id"] for r in rules) == sorted(REGISTRY)
    for r in rules:
        assert r["fix"] and r["family"] in ("machine", "smoke", "gate"), r["id"]
        path, _, line = r["source"].partition(":")
        assert f'"{r["id"]}"' in (ROOT / path).read_text().splitlines()[int(line) - 1], r
    assert next(r for r in rules if r["id"] == "ED805")["family"] == "gate"


def test_the_fix_catalogue_names_exactly_the_registered_rules():
    from envdoctor.rules.base import REGISTRY
    from envdoctor.rules.catalogue import fixes
    from envdoctor.rules.engine import all_rules

    all_rules()
    assert sorted(fixes()) == sorted(REGISTRY) and all(fixes().values())
