"""The real CLI in-process for the framework-module tests (tests/test_framework_*.py): lock / gate / check as JSON,
and a snapshot of a stated machine whose Python environment is a real probe of a venv holding real wheel files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import pytest

from envdoctor.snapshot_io import dump_json
from tests.snapfactory import machine
from tests.test_probe_pyenv import FakeVenv, ctx_for, run_probe


def cli(args: Sequence[str], capsys: Any) -> Tuple[int, str, str]:
    from envdoctor.entry import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return int(info.value.code or 0), out, err


def lock_json(capsys: Any, *args: str) -> Tuple[int, Any, str]:
    rc, out, err = cli(["lock", "--format", "json", *args], capsys)
    return rc, (json.loads(out) if out.strip() else None), err


def picks(data: Dict[str, Any]) -> Dict[str, str]:
    return {p["framework"]: p["requirement"] for p in data["record"]["picks"]}


def gate_json(capsys: Any, path: Path, *args: str) -> Tuple[int, List[Dict[str, Any]]]:
    rc, out, _ = cli(["gate", str(path), "--offline", "--format", "json", *args], capsys)
    return rc, [f for unit in json.loads(out)["inputs"] for f in unit["findings"]]


def check_json(capsys: Any, path: Path) -> Tuple[int, List[Dict[str, Any]]]:
    rc, out, _ = cli(["check", "--snapshot", str(path), "--format", "json"], capsys)
    return rc, json.loads(out)["findings"]


def snapshot_with(tmp_path: Path, dist_dir: str, metadata: str, files: Dict[str, str], **target: Any) -> Path:
    """A saved snapshot: the machine ``target`` (tests.snapfactory.machine) with the probed Python of a venv holding
    one distribution (``dist_dir`` with ``metadata`` and ``files``)."""
    v = FakeVenv(tmp_path / "venv")
    v.dist(dist_dir, metadata, files)
    snap = machine(**target)
    snap.python = run_probe(ctx_for(python=v.python)).python
    path = tmp_path / "snap.json"
    path.write_text(dump_json(snap.to_dict()))
    return path
