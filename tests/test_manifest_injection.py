"""`fleet manifest`: a value with a newline (or a template) never adds a command to the sbatch script or a document
to the YAML, comments included; names with a grammar (a k8s namespace, a Slurm partition) are refused, exit 2.
Reproduced by a user: `--dir $'snaps\\ntouch PWNED\\n#'` made the script run `touch PWNED`."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest
import yaml

from tests.cli_run import one_line_error
from tests.test_fleet import envdoctor, ok

HOSTILE = "snaps\ntouch PWNED\n#"


def _fake(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(not shutil.which("bash"), reason="the sbatch script is a bash script")
def test_slurm_script_with_a_hostile_dir_runs_no_injected_command(tmp_path):
    script = ok(envdoctor("fleet", "manifest", "slurm", "--dir", HOSTILE, "--partition", "a100")).stdout
    assert not any(line.startswith("touch") for line in script.splitlines()), script
    job = tmp_path / "job.sh"
    job.write_text(script)
    assert subprocess.run(["bash", "-n", str(job)], capture_output=True).returncode == 0
    # run it as sbatch would, a fake srun recording its arguments (NUL-separated: one holds newlines)
    fakes = tmp_path / "bin"
    fakes.mkdir()
    _fake(fakes / "srun", 'printf "%s\\0" "$@" > "$SRUN_ARGS"\n')
    env = dict(os.environ, PATH=f"{fakes}{os.pathsep}{os.environ['PATH']}", SRUN_ARGS=str(tmp_path / "args"))
    p = subprocess.run(["bash", str(job)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "PWNED").exists()
    assert (tmp_path / HOSTILE).is_dir()  # the folder is the one named, newlines and all
    args = (tmp_path / "args").read_text().split("\0")
    assert args[args.index("-o") + 1] == HOSTILE + "/%N.json"


@pytest.mark.parametrize("option", ["--envdoctor"])
def test_slurm_command_words_are_quoted(tmp_path, option):
    script = ok(envdoctor("fleet", "manifest", "slurm", option, "/venv/bin/envdoctor; touch PWNED")).stdout
    srun = next(line for line in script.splitlines() if line.startswith("srun"))
    assert "'/venv/bin/envdoctor;' touch PWNED probe" in srun


@pytest.mark.parametrize("partition", ["a100\ntouch PWNED", "gpu x", ""])
def test_slurm_partition_with_blanks_or_controls_is_refused(partition):
    line = one_line_error(envdoctor("fleet", "manifest", "slurm", "--partition", partition))
    assert "--partition" in line and "\x1b" not in line


@pytest.mark.parametrize("namespace", ["gpu-ops\n---\nkind: Pod", "Gpu", "-x", "a" * 64, "gpu.ops", "x\x1b[2J"])
def test_k8s_namespace_outside_the_dns_label_grammar_is_refused(namespace):
    line = one_line_error(envdoctor("fleet", "manifest", "k8s", "--namespace", namespace))
    assert "--namespace" in line and "not a Kubernetes name" in line


def test_k8s_hostile_dir_and_image_stay_one_document():
    text = ok(envdoctor("fleet", "manifest", "k8s", "--namespace", "gpu-ops", "--dir", "/x\n---\nkind: Pod",
                        "--image", "img\n---\nkind: Secret")).stdout
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert len(docs) == 1 and docs[0]["kind"] == "DaemonSet"
    pod = docs[0]["spec"]["template"]["spec"]
    assert pod["volumes"][0]["hostPath"]["path"] == "/x\n---\nkind: Pod"
    assert pod["containers"][0]["image"] == "img\n---\nkind: Secret"


def test_ansible_hostile_dir_stays_one_document_and_in_its_string():
    hostile = "out\n---\n- hosts: all\n  tasks: [{shell: touch PWNED}]"
    text = ok(envdoctor("fleet", "manifest", "ansible", "--dir", hostile)).stdout
    docs = list(yaml.safe_load_all(text))
    assert len(docs) == 1
    (play,) = docs[0]
    assert play["hosts"] == "gpu" and len(play["tasks"]) == 2
    assert play["tasks"][1]["ansible.builtin.copy"]["dest"] == hostile + "/{{ inventory_hostname }}.json"
    assert all(line.startswith("#") for line in text.splitlines()[:3])  # the comment header stays comments


@pytest.mark.parametrize("args", [["--hosts", "gpu\n---"], ["--hosts", "{{ lookup('pipe', 'id') }}"],
                                  ["--dir", "{% raw %}x"]])
def test_ansible_controls_and_templates_are_refused(args):
    line = one_line_error(envdoctor("fleet", "manifest", "ansible", *args))
    assert args[0] in line
