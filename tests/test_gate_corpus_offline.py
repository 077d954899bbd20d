"""The held-out gate corpus (tests/fixtures/gate_corpus): every file x target of TRUTH.toml that is judged (not
``unsure``, not ``unjudgeable``) runs through the real CLI with ``--offline`` and must give the truth: truth "ok" means
no error finding, truth "error" means exactly the truth's set of error IDs (benchmarks/gate_corpus.py scores the same
way, in both modes).  Pairs envdoctor gets wrong today are strict xfails named by the class of the defect, so fixing
one flips it to XPASS and the suite says so.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.errors import BadInput

CORPUS = Path(__file__).parent / "fixtures" / "gate_corpus"
TARGETS = {k: v["args"] for k, v in tomllib.loads((CORPUS / "TARGETS.toml").read_text()).items()}
TRUTH = tomllib.loads((CORPUS / "TRUTH.toml").read_text())

# (file, target) -> the class of the defect, for pairs where the offline gate is wrong today.
NO_ROW = ("a conflict only a package's own Requires-Dist shows (chex==0.1.89 needs jax>=0.4.27): the offline planner "
          "has no row for chex; the resolving mode says ED804")
KNOWN_WRONG: dict[tuple[str, str], str] = {
    ("alphafold/requirements.txt", "pascal-470-py310"): NO_ROW,
    ("alphafold/requirements.txt", "a100-535-py311"): NO_ROW,
    ("alphafold/requirements.txt", "rtx5090-580-py312"): NO_ROW,
    ("alphafold/requirements.txt", "h100-570-py313"): NO_ROW,
    ("alphafold/requirements.txt", "cpu-py311"): NO_ROW,
}


def _pairs():
    for f in sorted(TRUTH):
        for t, tr in TRUTH[f].items():
            if tr.get("unsure") or tr["verdict"] == "unjudgeable":
                continue
            marks = ()
            if (f, t) in KNOWN_WRONG:
                marks = pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[(f, t)])
            yield pytest.param(f, t, tr, id=f"{f}@{t}", marks=marks)


@pytest.mark.parametrize("rel,target,truth", list(_pairs()))
def test_offline_gate_matches_truth(rel, target, truth):
    res = CliRunner().invoke(cli, ["gate", str(CORPUS / rel), *TARGETS[target], "--offline", "--format", "json"])
    if truth["verdict"] == "invalid":  # pip rejects the file: so must gate, as an input error (exit 2 from the CLI)
        assert isinstance(res.exception, BadInput), (res.exit_code, res.output[-500:])
        assert "invalid requirement" in str(res.exception), res.exception
        return
    report = json.loads(res.output)
    errors = {f["id"] for i in report["inputs"] for f in i["findings"] if f["severity"] == "error"}
    if truth["verdict"] == "ok":
        assert not errors, truth["why"]
    else:
        assert errors == set(truth["errors"]), truth["why"]
