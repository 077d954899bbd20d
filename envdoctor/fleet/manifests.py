"""`fleet manifest k8s|slurm|ansible`: collect a snapshot from every node through the engine already there.

Each writes one snapshot per node, named after the node, into a folder that `envdoctor fleet ingest` reads:
- Slurm: an sbatch script whose `srun --nodes=N --ntasks-per-node=1 envdoctor probe --format json --fleet
  -o DIR/%N.json` runs once on every node (the probe names the node from $SLURMD_NODENAME, expands %N itself
  and writes each file atomically, so a node that dies leaves no half file);
- Kubernetes: a DaemonSet (or with --job an Indexed Job, one pod per node) for the GPU nodes whose init
  container writes DIR/<node>.json on the node (hostPath) and prints it to its log;
- Ansible: a playbook that runs the probe on each host and copies the output to DIR/<host>.json here.

Every value the user gives lands in a script or a YAML file another program runs, so each is either checked
against the grammar of what it names (a Kubernetes namespace, a Slurm partition: BadInput, exit 2) or quoted for
the place it goes, comments included: a newline in a raw comment ends the comment and starts a command (sbatch)
or a YAML document. Shell words with a control character are written in bash's $'...' form, which stays on one
line; YAML strings are double-quoted with escapes, never raw.
"""
from __future__ import annotations

import json
import re
import shlex
from typing import Any, Dict, List, Optional

from envdoctor.errors import BadInput
from envdoctor.formats.safe_text import has_control

APP = "envdoctor-probe"
GPU_LABEL = "nvidia.com/gpu.present"  # set by NVIDIA GPU feature discovery / the GPU operator
GPU_TAINT = "nvidia.com/gpu"


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # RFC 1123 label: a namespace's grammar
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a RuntimeClass's name
_JINJA = ("{{", "{%", "{#")  # Ansible templates every string of a play: these would run on the controller


def dns_label(value: str, option: str) -> str:
    if not _DNS_LABEL.fullmatch(value):
        raise BadInput(f"{option} {json.dumps(value)}: not a Kubernetes name (lower-case letters, digits and '-', "
                       f"at most 63, starting and ending with a letter or digit)")
    return value


def plain_name(value: str, option: str) -> str:
    """A name that goes raw into a directive line: no control character, no blank."""
    if not value or has_control(value) or any(ch.isspace() for ch in value):
        raise BadInput(f"{option} {json.dumps(value)}: a name cannot hold blanks or control characters")
    return value


def no_control(value: str, option: str) -> str:
    if has_control(value):
        raise BadInput(f"{option} {json.dumps(value)}: cannot hold control characters")
    return value


def shell_word(value: str) -> str:
    """`value` as one bash word on one line: shlex's quoting, or $'...' when it holds a control character."""
    if not has_control(value):
        return shlex.quote(value)
    out = []
    for ch in value:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable() and ch not in "\n\t":
            out.append(ch)
        else:
            out.append("\\x%02x" % ord(ch) if ord(ch) < 0x100 else "\\u%04x" % ord(ch) if ord(ch) < 0x10000
                       else "\\U%08x" % ord(ch))
    return "$'" + "".join(out) + "'"


def to_yaml(obj: Any, indent: int = 0) -> str:
    """A small YAML writer (block style; every string double-quoted, which YAML reads as JSON reads it)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return pad + "{}\n"
        out = []
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{json.dumps(str(k))}:\n{to_yaml(v, indent + 1)}")
            else:
                out.append(f"{pad}{json.dumps(str(k))}: {to_yaml(v).strip()}\n")
        return "".join(out)
    if isinstance(obj, list):
        if not obj:
            return pad + "[]\n"
        out = []
        for v in obj:
            body = to_yaml(v, indent + 1)
            out.append(f"{pad}- {body.lstrip()}")
        return "".join(out)
    if isinstance(obj, bool):
        return pad + ("true" if obj else "false") + "\n"
    if isinstance(obj, (int, float)):
        return pad + str(obj) + "\n"
    if obj is None:
        return pad + "null\n"
    return pad + json.dumps(str(obj)) + "\n"


def k8s(image: str, namespace: str, out_dir: str, job: bool = False, nodes: int = 1,
        runtime_class: Optional[str] = "nvidia") -> List[Dict[str, Any]]:
    dns_label(namespace, "--namespace")
    if runtime_class and not _DNS_SUBDOMAIN.fullmatch(runtime_class):
        raise BadInput(f"--runtime-class {json.dumps(runtime_class)}: not a Kubernetes name (lower-case letters, "
                       f"digits, '-' and '.')")
    labels = {"app.kubernetes.io/name": APP}
    probe_cmd = ('envdoctor probe --format json --fleet --node-name "$NODE_NAME" -o /out/"$NODE_NAME".json '
                 '&& cat /out/"$NODE_NAME".json')
    probe = {
        "name": "probe", "image": image, "command": ["sh", "-c", probe_cmd],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                # the NVIDIA container runtime mounts the driver's tools and libraries without taking a GPU
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}],
        "volumeMounts": [{"name": "out", "mountPath": "/out"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
    }
    pod: Dict[str, Any] = {
        "nodeSelector": {GPU_LABEL: "true"},
        "tolerations": [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [{"name": "out", "hostPath": {"path": out_dir, "type": "DirectoryOrCreate"}}],
    }
    if runtime_class:
        pod["runtimeClassName"] = runtime_class
    meta = {"name": APP, "namespace": namespace, "labels": labels}
    if job:
        pod.update({"restartPolicy": "Never", "containers": [probe], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}}})
        return [{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {
            "completions": nodes, "parallelism": nodes, "completionMode": "Indexed", "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400, "template": {"metadata": {"labels": labels}, "spec": pod}}}]
    # A DaemonSet restarts containers that exit: the probe runs once as an init container, then a sleeper holds.
    pod.update({"initContainers": [probe], "containers": [{
        "name": "hold", "image": image, "command": ["sleep", "infinity"],
        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}}}]})
    return [{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": {
        "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}}]


def k8s_text(docs: List[Dict[str, Any]], namespace: str) -> str:
    dns_label(namespace, "--namespace")  # it goes raw into a comment
    head = (f"# envdoctor fleet manifest k8s: one snapshot per GPU node.\n"
            f"# kubectl apply -f this.yaml; then collect the snapshots from the logs:\n"
            f"#   kubectl logs -n {namespace} -l app.kubernetes.io/name={APP} -c probe --tail=-1 "
            f"--max-log-requests=50 > fleet.jsonl && envdoctor fleet ingest fleet.jsonl\n")
    return head + "".join("---\n" + to_yaml(d) for d in docs)


def slurm(nodes: int, out_dir: str, partition: Optional[str] = None, time_limit: str = "00:05:00",
          envdoctor: str = "envdoctor") -> str:
    """The sbatch script (envdoctor: the command that runs envdoctor on the nodes: its words, each quoted)."""
    d = shell_word(out_dir)
    if partition is not None:
        plain_name(partition, "--partition")
    plain_name(time_limit, "--time")
    words = shlex.split(no_control(envdoctor, "--envdoctor"))
    if not words:
        raise BadInput("--envdoctor: no command given")
    cmd = " ".join(shlex.quote(w) for w in words)
    lines = ["#!/bin/bash", "# envdoctor fleet manifest slurm: one snapshot per node into " + d,
             "#SBATCH --job-name=envdoctor-fleet", f"#SBATCH --nodes={nodes}", "#SBATCH --ntasks-per-node=1",
             f"#SBATCH --time={time_limit}", "#SBATCH --output=envdoctor-fleet-%j.log"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    label = f" --label {shlex.quote('partition=' + partition)}" if partition else ""
    lines += ["set -eu", f"mkdir -p -- {d}",
              "# each node writes DIR/<node>.json; --fleet keeps the node name ($SLURMD_NODENAME)",
              f"srun --nodes={nodes} --ntasks-per-node=1 {cmd} probe --format json --fleet -o {d}/%N.json",
              f"# then, anywhere the folder is visible: envdoctor fleet ingest{label} {d}", ""]
    return "\n".join(lines)


def ansible(hosts: str, out_dir: str) -> str:
    no_control(hosts, "--hosts")  # an inventory pattern, not a path: a control character is never meant
    for value, option in ((hosts, "--hosts"), (out_dir, "--dir")):
        if any(mark in value for mark in _JINJA):
            raise BadInput(f"{option} {json.dumps(value)}: Ansible would run the template in it ({{{{ }}}}, {{% %}})")
    play = [{
        "name": "envdoctor fleet snapshots", "hosts": hosts, "gather_facts": False,
        "tasks": [
            {"name": "probe the node", "ansible.builtin.command":
                "envdoctor probe --format json --fleet --node-name {{ inventory_hostname }}",
             "register": "envdoctor_probe", "changed_when": False},
            {"name": "keep its snapshot here", "ansible.builtin.copy":
                {"content": "{{ envdoctor_probe.stdout }}\n", "dest": out_dir.rstrip("/") + "/{{ inventory_hostname }}.json"},
             "delegate_to": "localhost"},
        ]}]
    head = (f"# envdoctor fleet manifest ansible: ansible-playbook -i INVENTORY this.yml\n"
            f"# (ad hoc, one host at a time: ansible HOST -m ansible.builtin.command -a "
            f"'envdoctor probe --format json --fleet')\n# then: envdoctor fleet ingest {shell_word(out_dir)}\n")
    return head + to_yaml(play)
