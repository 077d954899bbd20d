"""What the fleet feeds other tools: `check --format prometheus` (parsed by prometheus_client's own text parser) and
the collection manifests (the Kubernetes one validated against the Kubernetes OpenAPI schema, no cluster)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from tests.fleet_nodes import REBOOT_580, node
from tests.test_fleet import envdoctor, ok

parser = pytest.importorskip("prometheus_client.parser")


def families(text):
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def test_check_prometheus_metrics_parse_and_carry_the_findings(tmp_path):
    snap = tmp_path / "reboot.json"
    snap.write_text(json.dumps(node("reboot0", "2026-11-30T00:00:00+00:00", gpu=REBOOT_580)))
    prom = tmp_path / "envdoctor.prom"
    proc = envdoctor("check", "--snapshot", str(snap), "--format", "prometheus", "-o", str(prom))
    assert proc.returncode == 1, proc.stderr  # ED013 is an error: check's exit code is kept
    fams = families(prom.read_text())
    assert fams["envdoctor_finding"].type == "gauge"
    finding = {(s.labels["id"], s.labels["severity"]): s.value for s in fams["envdoctor_finding"].samples}
    assert finding[("ED013", "error")] == 1
    assert finding[("ED100", "error")] == 0  # a rule that ran and found nothing
    assert len({i for i, _ in finding}) == len(finding)  # one gauge per rule ID
    counts = {s.labels["severity"]: s.value for s in fams["envdoctor_findings"].samples}
    assert counts["error"] == sum(v for (i, sev), v in finding.items() if sev == "error")
    (driver,) = fams["envdoctor_driver_info"].samples
    assert driver.labels["state"] == "version_mismatch" and driver.labels["kernel_module"] == "580.173.02"
    fws = {s.labels["name"]: s.labels for s in fams["envdoctor_framework_info"].samples}
    assert fws["torch"]["version"] == "2.8.0+cu128" and fws["torch"]["cuda"] == "12.8"
    assert "envdoctor_check_timestamp_seconds" in fams


def test_k8s_manifests_validate_against_the_kubernetes_schema():
    kv = pytest.importorskip("kubernetes_validate")
    version = kv.latest_version()
    for extra in ([], ["--job", "--nodes", "12"]):
        text = ok(envdoctor("fleet", "manifest", "k8s", "--namespace", "gpu-ops", *extra)).stdout
        docs = [d for d in yaml.safe_load_all(text) if d]
        assert len(docs) == 1
        kv.validate(docs[0], version, strict=True)  # raises ValidationError on any schema violation
        pod = docs[0]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        probe = (pod.get("initContainers") or pod["containers"])[0]
        assert "--fleet" in probe["command"][-1] and "$NODE_NAME" in probe["command"][-1]
        assert any(e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName" for e in probe["env"])
    assert docs[0]["kind"] == "Job" and docs[0]["spec"]["completions"] == 12
    broken = dict(docs[0], spec=dict(docs[0]["spec"], completions="twelve"))
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, version, strict=True)


def test_slurm_script_and_ansible_playbook(tmp_path):
    script = ok(envdoctor("fleet", "manifest", "slurm", "--nodes", "64", "--partition", "a100", "--dir", "/shared/ed")).stdout
    assert "#SBATCH --nodes=64" in script and "#SBATCH --partition=a100" in script
    assert "srun --nodes=64 --ntasks-per-node=1 envdoctor probe --format json --fleet -o /shared/ed/%N.json" in script
    (tmp_path / "job.sh").write_text(script)
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "job.sh")]).returncode == 0
    play = yaml.safe_load(ok(envdoctor("fleet", "manifest", "ansible", "--hosts", "gpu_nodes", "--dir", "out")).stdout)
    assert play[0]["hosts"] == "gpu_nodes"
    cmd, copy = play[0]["tasks"]
    assert "envdoctor probe --format json --fleet" in cmd["ansible.builtin.command"]
    assert copy["ansible.builtin.copy"]["dest"] == "out/{{ inventory_hostname }}.json" and copy["delegate_to"] == "localhost"
