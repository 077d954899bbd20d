"""The tools `envdoctor mcp` offers, without the MCP SDK: each one's input schema, output schema and body, a call of
the Python API (envdoctor.api). envdoctor.mcpserver.server puts them on the wire.

A call's arguments are checked against its input schema first (jsonschema, which the SDK depends on); an argument
the schema lets through but envdoctor refuses (a missing file, an unknown rule) is the API's BadInput. Either is a
:class:`ToolError`, which the server answers as a tool error (``isError``), never as a crash.

Read-only by default: no tool installs anything, redaction is always on, and a file is written only where a
tool's argument names one (lock's ``output``). gate plans from envdoctor's data alone unless ``offline`` is false.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from envdoctor.errors import EnvdoctorError

# the most a tool's answer may hold, as JSON text (the structured content; its text form is no longer)
MAX_ANSWER_BYTES = 4 << 20


class ToolError(Exception):
    """A call the tool cannot answer: bad arguments, bad input, an answer over the bounds. The message is what the
    client reads."""


# --------------------------------------------------------------------------- schemas


def _string(description: str, **more: Any) -> Dict[str, Any]:
    return {"type": "string", "description": description, **more}


def _strings(description: str) -> Dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _flag(description: str) -> Dict[str, Any]:
    return {"type": "boolean", "description": description}


def _timeout() -> Dict[str, Any]:
    from envdoctor.cli_spec import MACHINE

    low, high = next(o.bounds for o in MACHINE if o.dest == "timeout")
    return {"type": "number", "minimum": low, "maximum": high,
            "description": "Seconds each external command may take (default 5)."}


def _machine() -> Dict[str, Any]:
    return {
        "python": _string("Path of the Python interpreter whose environment is judged (default: the server's "
                          "environment: $VIRTUAL_ENV, $CONDA_PREFIX, else its own interpreter)."),
        "root": _string("Read system files under this folder instead of / (a mounted image)."),
        "snapshot": _string("Path of a saved snapshot (envdoctor probe --format json) to judge instead of probing."),
        "timeout": _timeout(),
    }


def _target() -> Dict[str, Any]:
    from envdoctor.target_options import PLATFORM_CHOICES

    return {
        "python_version": _string("Target Python X.Y."),
        "platform": {"enum": list(PLATFORM_CHOICES), "description": "Target platform."},
        "glibc": _string("Target glibc X.Y (Linux)."),
        "driver": _string("Target NVIDIA driver version."),
        "gpus": _strings("Target GPUs: sm_XX, X.Y or a GPU name."),
        "cuda": _string("Target CUDA line X.Y."),
        "cpu": _flag("Target a CPU-only machine."),
    }


def _rule_ids(what: str) -> Dict[str, Any]:
    return _strings(f"{what} these rules: IDs (ED100), prefixes (ED1) or names.")


def _object(properties: Dict[str, Any], required: Tuple[str, ...] = ()) -> Dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


RULE_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "title", "severity", "area", "family", "rationale", "example", "references", "fix",
                 "module", "source"],
    "properties": {**{k: {"type": "string"} for k in ("id", "name", "title", "severity", "area", "family", "rationale",
                                                       "example", "fix", "module", "source")},
                   "references": {"type": "array", "items": {"type": "string"}}},
}


def _snapshot_schema() -> Dict[str, Any]:
    from envdoctor.schema import snapshot_json_schema

    # its root is a $ref; a tool's output schema states the object type at the root too
    return {"type": "object", **snapshot_json_schema()}


def _report_schema() -> Dict[str, Any]:
    from envdoctor.schema import report_json_schema

    return report_json_schema()


# --------------------------------------------------------------------------- bodies (the Python API)


def _python(args: Dict[str, Any]) -> Optional[str]:
    """The interpreter to inspect: the one named, else, probing this machine, the one the command line would take
    (the server's environment: $VIRTUAL_ENV, $CONDA_PREFIX, else its own interpreter)."""
    if args.get("python") or args.get("root") or args.get("snapshot"):
        return args.get("python")
    import os

    from envdoctor.probes.pyenv import default_interpreter

    return default_interpreter(os.environ)[0]


def _check(args: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    from envdoctor import api

    report = api.check(_python(args), args.get("root"), args.get("snapshot"), timeout=args.get("timeout", 5.0),
                       strict=args.get("strict", False), only=args.get("only"), skip=args.get("skip"),
                       expect_cpu=args.get("expect_cpu"), kernels=args.get("kernels", False),
                       smoke=args.get("smoke", False))
    return report.to_dict(), report.render("text")


def _probe(args: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    from envdoctor import api

    snap = api.probe(_python(args), args.get("root"), args.get("snapshot"), timeout=args.get("timeout", 5.0),
                     kernels=args.get("kernels", False))
    from envdoctor.formats.snapshot_text import render_snapshot_text

    return snap.to_dict(), render_snapshot_text(snap)


def _explain(args: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    from envdoctor import api
    from envdoctor.doctor import find_rule
    from envdoctor.rules.catalogue import explain_text

    rule = api.explain(args["rule"])
    return rule.to_dict(), explain_text(find_rule(rule.id))


def _rules(args: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    from envdoctor import api

    found = api.list_rules()
    return ({"rules": [r.to_dict() for r in found]},
            "\n".join(f"{r.id}  {r.severity:<7}  {r.name:<34}  {r.title}" for r in found))


def _lock(args: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    from envdoctor import api

    result = api.lock(args.get("python"), args.get("root"), args.get("snapshot"), frameworks=args.get("frameworks"),
                      cuda=args.get("cuda"), driver=args.get("driver"), gpus=args.get("gpus"),
                      python_version=args.get("python_version"), platform=args.get("platform"),
                      glibc=args.get("glibc"), cpu=args.get("cpu", False), companions=args.get("companions"),
                      timeout=args.get("timeout", 5.0), format=args.get("format", "requirements"),
                      name=args.get("name"), output=args.get("output"), force=args.get("force", False),
                      check=args.get("check"))
    return ({"exit_code": result.exit_code, "text": result.text, "written": result.written,
             "answer": result.to_dict()}, result.text)


def _gate(args: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    from envdoctor import api

    report = api.gate(args["files"], snapshot=args.get("snapshot"), python=args.get("python"),
                      python_version=args.get("python_version"), platform=args.get("platform"),
                      glibc=args.get("glibc"), driver=args.get("driver"), gpus=args.get("gpus"),
                      cuda=args.get("cuda"), cpu=args.get("cpu", False), root=args.get("root"),
                      timeout=args.get("timeout", 5.0), extras=args.get("extras"), groups=args.get("groups"),
                      offline=args.get("offline", True), kind=args.get("kind"), together=args.get("together", False),
                      fresh=args.get("fresh", False), pre=args.get("pre", False), strict=args.get("strict", False),
                      only=args.get("only"), skip=args.get("skip"))
    return report.to_dict(), report.render("text")


# --------------------------------------------------------------------------- the table


class Tool:
    """One tool: what the client lists (name, description, schemas, hints) and its body."""

    def __init__(self, name: str, description: str, inputs: Callable[[], Dict[str, Any]],
                 outputs: Callable[[], Optional[Dict[str, Any]]],
                 body: Callable[[Dict[str, Any]], Tuple[Dict[str, Any], str]], *, read_only: bool = True,
                 open_world: bool = False) -> None:
        self.name, self.description, self.body = name, description, body
        self._inputs, self._outputs = inputs, outputs
        self.read_only, self.open_world = read_only, open_world

    def input_schema(self) -> Dict[str, Any]:
        return self._inputs()

    def output_schema(self) -> Optional[Dict[str, Any]]:
        return self._outputs()


def _lock_inputs() -> Dict[str, Any]:
    from envdoctor.frameworks.registry import names
    from envdoctor.lock.render import FORMATS

    machine = _machine()
    machine["python"] = _string("Path of a Python interpreter: the target is its environment.")
    return _object({
        **machine, **_target(),
        "frameworks": {"type": "object", "propertyNames": {"enum": list(names(lockable=True))},
                       "additionalProperties": {"type": "string"},
                       "description": "Frameworks to pin, each with a version or PEP 440 specifier (\"\": any), e.g. "
                                      "{\"torch\": \"2.5\"}; default: torch, plus what the target has installed."},
        "companions": _string("torch companions kept in lock-step: torchvision,torchaudio (default) or none."),
        "format": {"enum": list(FORMATS), "description": "requirements (pip / uv), conda, or json."},
        "name": _string("Name of the conda environment (format conda)."),
        "output": _string("Write the lock to this file (nothing is written without it)."),
        "force": _flag("With output: replace an existing, different file."),
        "check": _string("Re-verify this existing lock file against the target instead (writes nothing)."),
    })


def _gate_inputs() -> Dict[str, Any]:
    from envdoctor.gate.inputs.interface import KINDS

    machine = _machine()
    machine["snapshot"] = _string("Target: a saved snapshot (envdoctor probe --format json).")
    return _object({
        "files": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                  "description": "requirements*.txt, pyproject.toml, environment.yml, pylock.toml or uv.lock files."},
        **machine, **_target(),
        "extras": _strings("pyproject / uv.lock: judge these optional-dependency extras."),
        "groups": _strings("pyproject / uv.lock: judge these dependency groups."),
        "offline": _flag("Plan from envdoctor's data only (default true); false asks a resolver (uv, else pip), "
                         "which may contact the package index and fill its own cache."),
        "kind": {"enum": list(KINDS), "description": "Read every file as this kind (default: by its content)."},
        "together": _flag("Judge all files as one install."),
        "fresh": _flag("Install into an empty environment (ignore what the target has installed)."),
        "pre": _flag("Allow pre-releases."),
        "strict": _flag("Warnings fail too (exit_code 1)."),
        "only": _rule_ids("Run only"), "skip": _rule_ids("Skip"),
    }, required=("files",))


TOOLS: Dict[str, Tool] = {t.name: t for t in (
    Tool("check", "Judge the machine like `envdoctor check`: will torch / tensorflow / jax really use the GPU? "
         "Findings with IDs, evidence and fixes; the answer is check's JSON report (docs/report.schema.json).",
         lambda: _object({**_machine(), "strict": _flag("Warnings fail too."), "only": _rule_ids("Run only"),
                          "skip": _rule_ids("Skip"),
                          "expect_cpu": _strings("Frameworks meant to run on the CPU (torch, tensorflow, jax)."),
                          "kernels": _flag("Also judge every Jupyter kernel's interpreter."),
                          "smoke": _flag("Also run each framework's small smoke program in a child process.")}),
         _report_schema, _check),
    Tool("probe", "Take a snapshot of the machine like `envdoctor probe`: driver, GPUs, toolkits, cuDNN, frameworks, "
         "loader paths (docs/snapshot.schema.json), redacted.",
         lambda: _object({**_machine(), "kernels": _flag("Also read every Jupyter kernel's interpreter.")}),
         _snapshot_schema, _probe),
    Tool("explain", "Explain a rule like `envdoctor explain ID`: rationale, example, fix, references, source file.",
         lambda: _object({"rule": _string("A rule ID (ED100) or name.", minLength=1)}, required=("rule",)),
         lambda: RULE_SCHEMA, _explain),
    Tool("rules", "List every rule (machine, smoke and gate families) like `envdoctor rules`.",
         lambda: _object({}),
         lambda: {"type": "object", "required": ["rules"],
                  "properties": {"rules": {"type": "array", "items": RULE_SCHEMA}}}, _rules),
    Tool("lock", "Pin torch / tensorflow / jax builds that fit together and fit the target, like `envdoctor lock`: "
         "a requirements-cuda.txt or environment.yml as text (written to a file only when `output` names one). "
         "exit_code 1: nothing fits (the text says which constraints clash).",
         _lock_inputs,
         lambda: {"type": "object", "required": ["exit_code", "text", "written", "answer"],
                  "properties": {"exit_code": {"type": "integer"}, "text": {"type": "string"},
                                 "written": {"type": ["string", "null"]}, "answer": {"type": "object"}}},
         _lock, read_only=False),
    Tool("gate", "Would installing these requirements / pyproject / environment.yml / pylock / uv.lock files work on "
         "the target, like `envdoctor gate`? Judged before anything is downloaded; the answer is gate's "
         "envdoctor-gate/1 JSON.", _gate_inputs,
         lambda: {"type": "object", "required": ["schema", "summary", "exit_code", "inputs"]}, _gate,
         open_world=True),
)}


# --------------------------------------------------------------------------- a call

# One call at a time: the core keeps per-process state (the matrices, the rule registry, the commands it runs),
# and a call that ran past its time may still be ending when the next begins.
_ONE_AT_A_TIME = threading.Lock()


def check_arguments(tool: Tool, args: Mapping[str, Any]) -> Dict[str, Any]:
    """The arguments as the tool's input schema allows them; ToolError naming the first that is not."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(tool.input_schema()).iter_errors(dict(args)))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ToolError(f"bad arguments for {tool.name}: " + (f"{where}: " if where else "") + error.message)
    return dict(args)


def call(name: str, args: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Any], str]:
    """(structured answer, its text) of tool `name`; ToolError for what the client should be told."""
    tool = TOOLS.get(name)
    if tool is None:
        raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
    checked = check_arguments(tool, args or {})
    with _ONE_AT_A_TIME:
        try:
            data, text = tool.body(checked)
        except EnvdoctorError as exc:
            raise ToolError("error: " + "\n".join(exc.details)) from None
    size = len(json.dumps(data, ensure_ascii=False).encode("utf-8"))
    if size > MAX_ANSWER_BYTES:
        raise ToolError(f"the answer of {name} is {size} bytes, more than the {MAX_ANSWER_BYTES} a tool may answer; "
                        "narrow it (only / skip, fewer files)")
    return data, text


def listing() -> List[Tool]:
    return list(TOOLS.values())
