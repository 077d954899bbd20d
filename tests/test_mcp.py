"""`envdoctor mcp` (envdoctor/mcpserver/): the real server started as a subprocess and driven with the MCP SDK's
own stdio client (the SDK is in the test extra on Python 3.10+; without it these tests skip, saying so). Its
answers are the CLI's JSON on the same fake machine; a bad argument, an unknown rule, a call past its time are tool
errors and the server goes on; it writes no file unasked; only envdoctor/mcpserver/server.py imports the SDK.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.cli_run import one_line_error, run
from tests.fakes import make_exe, process_gone, wait_until
from tests.test_api import ubuntu_root, v100_snapshot  # noqa: F401 (a fixture: check finds ED100 there)

ROOT = Path(__file__).resolve().parent.parent
SDK = ("mcp", "mcp_types")


def _sdk():
    return pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install -e '.[test]' on Python 3.10+)")


def session(env: Dict[str, str], calls, *extra: str) -> Any:
    """Start `envdoctor mcp EXTRA` with the SDK's stdio client, initialise, and run `calls(session)`; its value."""
    _sdk()
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "envdoctor", "mcp", *extra],
                                   env={**os.environ, **env}, cwd=str(ROOT))

    async def main() -> Any:
        with anyio.fail_after(240):
            async with stdio_client(params) as (read, write_):
                async with ClientSession(read, write_) as s:
                    await s.initialize()
                    return await calls(s)

    return anyio.run(main)


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_the_server_lists_its_tools_and_answers_check_and_explain_as_the_cli(tmp_path, v100_snapshot):
    from envdoctor.schema import report_json_schema

    env = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}

    async def calls(s):
        listed = await s.list_tools()
        check = await s.call_tool("check", {"snapshot": str(v100_snapshot)})
        explain = await s.call_tool("explain", {"rule": "ED100"})
        return listed, check, explain

    listed, check, explain = session(env, calls)
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"check", "probe", "explain", "lock", "gate", "rules"}
    assert all(t.input_schema["type"] == "object" and t.description for t in tools.values())
    assert tools["check"].output_schema == report_json_schema()
    assert tools["explain"].input_schema["required"] == ["rule"]
    assert tools["check"].annotations.read_only_hint and not tools["lock"].annotations.read_only_hint

    expected = json.loads(run("check", "--snapshot", str(v100_snapshot), "--format", "json", env=env).stdout)
    assert not check.is_error and check.structured_content == expected  # the client checked it against the schema
    assert "ED100" in text_of(check) and json.loads(check.content[-1].text) == expected
    expected = json.loads(run("explain", "ED100", "--format", "json", env=env).stdout)
    assert not explain.is_error and explain.structured_content == expected
    assert text_of(explain).startswith("ED100 (")


@pytest.mark.parametrize("tool, arguments, says", [
    ("explain", {"rule": "ED999"}, "unknown rule 'ED999'"),
    ("explain", {"rule": 100}, "bad arguments for explain: rule: 100 is not of type 'string'"),
    ("explain", {}, "'rule' is a required property"),
    ("check", {"timeout": 0}, "bad arguments for check: timeout"),
    ("check", {"snapshot": "/nonexistent/snap.json"}, "/nonexistent/snap.json"),
    ("check", {"verbose": True}, "Additional properties are not allowed"),
    ("gate", {"files": []}, "bad arguments for gate: files"),
    ("uninstall", {}, "unknown tool 'uninstall'"),
], ids=lambda v: v if isinstance(v, str) and " " not in v else None)
def test_a_bad_call_is_a_tool_error_and_the_server_goes_on(tmp_path, tool, arguments, says):
    env = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}

    async def calls(s):
        bad = await s.call_tool(tool, arguments)
        after = await s.call_tool("rules", {})
        return bad, after

    bad, after = session(env, calls)
    assert bad.is_error and says in text_of(bad), text_of(bad)
    assert "Traceback" not in text_of(bad)
    assert not after.is_error and {"ED100", "ED701", "ED805"} <= {r["id"] for r in after.structured_content["rules"]}
    if tool == "explain" and arguments.get("rule") == "ED999":  # the CLI's own line, as a tool error
        assert text_of(bad) == one_line_error(run("explain", "ED999", env=env)).replace("envdoctor: ", "", 1)


def test_the_server_writes_no_file_unless_an_argument_names_one(tmp_path, v100_snapshot):
    """check and probe on an image root probe for real (Ubuntu 22.04's os-release, no NVIDIA tools on PATH): the
    cache folder stays empty; lock writes only its `output`."""
    root = ubuntu_root(tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    cache = tmp_path / "cache"
    out = tmp_path / "out" / "requirements-cuda.txt"
    out.parent.mkdir()
    env = {"ENVDOCTOR_CACHE_DIR": str(cache), "PATH": str(empty)}

    async def calls(s):
        return [await s.call_tool("check", {"root": str(root)}), await s.call_tool("probe", {"root": str(root)}),
                await s.call_tool("lock", {"snapshot": str(v100_snapshot)}),
                await s.call_tool("lock", {"snapshot": str(v100_snapshot), "output": str(out)})]

    check, probe, lock, written = session(env, calls)
    assert not (check.is_error or probe.is_error or lock.is_error or written.is_error)
    assert "ED001" in {f["id"] for f in check.structured_content["findings"]}
    assert probe.structured_content["platform"]["distro_id"] == "ubuntu"
    assert not cache.exists() or not any(cache.rglob("*")), sorted(cache.rglob("*"))
    assert lock.structured_content["written"] is None and lock.structured_content["exit_code"] == 0
    assert written.structured_content["written"] == str(out) and out.read_text() == lock.structured_content["text"]
    assert [p.name for p in out.parent.iterdir()] == [out.name]


def test_a_call_past_its_time_is_a_tool_error_and_its_commands_are_killed(tmp_path):
    """An nvidia-smi that hangs (a fake on PATH), probed with a long per-command timeout, under --call-timeout 2."""
    root = ubuntu_root(tmp_path)
    bindir = tmp_path / "bin"
    pidfile = tmp_path / "smi.pid"
    make_exe(bindir / "nvidia-smi", f'echo $$ > {pidfile}\nexec sleep 120')
    env = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"), "PATH": f"{bindir}:/usr/bin:/bin"}

    async def calls(s):
        start = time.monotonic()
        slow = await s.call_tool("check", {"root": str(root), "timeout": 100})
        took = time.monotonic() - start
        return slow, took, await s.call_tool("explain", {"rule": "ED100"})

    slow, took, after = session(env, calls, "--call-timeout", "2")
    assert slow.is_error and "longer than 2 s" in text_of(slow), text_of(slow)
    assert took < 30, took
    assert not after.is_error and after.structured_content["id"] == "ED100"
    assert pidfile.exists() and wait_until(lambda: process_gone(int(pidfile.read_text())), 10)


def test_an_answer_over_the_bound_is_a_tool_error(monkeypatch):
    pytest.importorskip("jsonschema")
    from envdoctor.mcpserver import tools

    one_rule = len(json.dumps(tools.call("explain", {"rule": "ED100"})[0], ensure_ascii=False).encode())
    monkeypatch.setattr(tools, "MAX_ANSWER_BYTES", one_rule)  # one rule fits; the list of them all does not
    with pytest.raises(tools.ToolError, match=f"more than the {one_rule} "):
        tools.call("rules", {})
    assert tools.call("explain", {"rule": "ED100"})[0]["id"] == "ED100"


# --------------------------------------------------------------------------- where the SDK is imported


def _imports_of(path: Path) -> List[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append(node.module or "")
    return out


def test_only_the_server_module_imports_the_sdk():
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "envdoctor").rglob("*.py")
                   if any(n.split(".")[0] in SDK + ("anyio",) for n in _imports_of(p)))
    assert users == ["envdoctor/mcpserver/server.py"], users


@pytest.mark.parametrize("argv", [["--help"], ["mcp", "--help"], ["check", "--snapshot", "{snap}"],
                                  ["explain", "ED100"]], ids=lambda a: " ".join(a))
def test_other_commands_never_load_the_sdk(argv, v100_snapshot):
    code = ("import sys\nfrom envdoctor.entry import main\n"
            "try:\n"
            f"    main({[a.replace('{snap}', str(v100_snapshot)) for a in argv]!r})\n"
            "except SystemExit:\n    pass\n"
            f"print('--loaded--', sorted(m for m in sys.modules if m.split('.')[0] in {SDK!r}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.stdout.rpartition("--loaded--")[2].strip() == "[]", proc.stdout[-500:] + proc.stderr


def test_without_the_sdk_the_command_says_how_to_get_it():
    proc = run("mcp", prelude="import sys\nsys.modules['mcp'] = None\nsys.modules['mcp_types'] = None")
    line = one_line_error(proc)
    assert "pip install 'envdoctor[mcp]'" in line
