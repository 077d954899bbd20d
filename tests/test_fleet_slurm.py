"""A real single-host Slurm (Debian's slurm-wlm and munge): two node names in multiple-slurmd mode, the sbatch
script of `envdoctor fleet manifest slurm` runs `envdoctor probe --fleet` on both, `fleet ingest/report` read them.

Started here and torn down after: munged on a private socket, slurmctld and two slurmd on free ports (the slurmd
bind 127.0.0.1; slurmctld binds its port on every interface -- this Slurm has no option against it -- and talks
only to munge-authenticated peers). Skipped, with the reason, where the daemons cannot start."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import wait_until
from tests.test_fleet import envdoctor, ok

# In the slow part: real daemons take about 20 s to come up and go, and inside the fast part's network namespace
# (loopback only) slurmctld finds no address family to listen on, though every address here is 127.0.0.1.
pytestmark = [pytest.mark.slurm, pytest.mark.slow]
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def slurm(tmp_path):
    missing = [d for d in DAEMONS if not shutil.which(d) and not os.path.exists(f"/usr/sbin/{d}")]
    if missing:
        pytest.skip(f"Slurm / munge not installed ({', '.join(missing)}): apt-get install slurmctld slurmd slurm-client munge")
    if os.geteuid() != 0:
        pytest.skip("the single-host Slurm of this test runs its daemons as root")
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        pytest.skip("no /etc/munge/munge.key (the munge package creates it)")
    d = tmp_path / "slurm"
    (d / "state").mkdir(parents=True)
    d.chmod(0o700)
    sock = d / "munge.sock"
    started = []

    def run(*cmd, env=None):
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60, env=env)

    p = run("munged", "-f", "-S", sock, f"--key-file={key}", f"--log-file={d / 'munged.log'}",
            f"--pid-file={d / 'munged.pid'}", f"--seed-file={d / 'munged.seed'}")
    if p.returncode != 0:
        pytest.skip(f"munged cannot start: {p.stderr.strip()[:200]}")
    started.append(d / "munged.pid")
    host = socket.gethostname()
    conf = d / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=envdoctor-test", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={_port()}",
        f"SlurmdPort={_port()}", "AuthType=auth/munge", f"AuthInfo=socket={sock}", "CredType=cred/munge",
        "SlurmUser=root", "SlurmdUser=root", f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d}/spool-%n",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d}/slurmd-%n.pid",
        f"SlurmctldLogFile={d / 'slurmctld.log'}", f"SlurmdLogFile={d}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres", "ReturnToService=2", "MpiDefault=none", "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "CommunicationParameters=NoInAddrAny",
        f"NodeName=edn1 NodeHostname={host} NodeAddr=127.0.0.1 Port={_port()} CPUs=1 RealMemory=200",
        f"NodeName=edn2 NodeHostname={host} NodeAddr=127.0.0.1 Port={_port()} CPUs=1 RealMemory=200",
        "PartitionName=edp Nodes=edn1,edn2 Default=YES MaxTime=INFINITE State=UP", ""]))
    env = dict(os.environ, SLURM_CONF=str(conf))
    try:
        p = run("slurmctld", "-i", env=env)
        started.append(d / "slurmctld.pid")
        if p.returncode != 0:
            pytest.skip(f"slurmctld cannot start: {p.stderr.strip()[:200]}")
        for n in ("edn1", "edn2"):
            p = run("slurmd", "-N", n, env=env)
            started.append(d / f"slurmd-{n}.pid")
            if p.returncode != 0:
                pytest.skip(f"slurmd -N {n} cannot start (multiple-slurmd mode): {p.stderr.strip()[:200]}")
        if not wait_until(lambda: run("sinfo", "-h", "-o", "%T %D", env=env).stdout.split()[:2] == ["idle", "2"], 60):
            log = (d / "slurmctld.log").read_text()[-300:] if (d / "slurmctld.log").exists() else ""
            pytest.skip(f"the two Slurm nodes did not come up idle: {log}")
        yield env, d
    finally:
        for pid_file in reversed(started):
            try:
                pid = int(pid_file.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 15)


def test_srun_collects_snapshots_from_two_nodes(slurm, tmp_path):
    env, d = slurm
    out = tmp_path / "snapshots"
    cmd = f"{shlex.quote(sys.executable)} -m envdoctor"
    script = ok(envdoctor("fleet", "manifest", "slurm", "--nodes", "2", "--partition", "edp", "--dir", str(out),
                          "--envdoctor", cmd)).stdout
    (tmp_path / "job.sh").write_text(script)
    job_env = dict(env, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    p = subprocess.run(["sbatch", "--wait", str(tmp_path / "job.sh")], capture_output=True, text=True, timeout=240,
                       env=job_env, cwd=str(tmp_path))
    logs = "".join(f.read_text() for f in tmp_path.glob("envdoctor-fleet-*.log"))
    assert p.returncode == 0, p.stdout + p.stderr + logs
    assert sorted(f.name for f in out.glob("*.json")) == ["edn1.json", "edn2.json"], logs
    store = tmp_path / "fleet.db"
    ingested = ok(envdoctor("fleet", "ingest", "--label", "partition=edp", str(out), store=store)).stdout
    assert "2 snapshots read: 2 new" in ingested
    rep = json.loads(ok(envdoctor("fleet", "report", "--format", "json", "--where", "partition=edp", store=store)).stdout)
    assert rep["nodes"] == 2 and rep["configurations"] == 1  # one host: the same configuration twice
    assert rep["groups"][0]["nodes"] == ["edn1", "edn2"]
