"""Redaction: every kind of secret planted on a fake machine, and every format of every command
grepped for it (envdoctor/redact.py). Also: what must never be redacted."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.redact import REDACTED, Redactor, redact_output
from envdoctor.snapshot import Evidence, Toolkit
from tests import snapfactory as sf
from tests.fakes import make_exe, write
from tests.test_onboard import _env, fake  # noqa: F401 - the fake base python, pip and smoke of onboard's tests

FIX = Path(__file__).parent / "fixtures"

UUID = "GPU-3b1c5f6e-5a0e-9c4d-8b7e-1f2a3b4c5d6e"
MIG = "MIG-7d2e9a41-0b3c-5d6e-8f90-a1b2c3d4e5f6"
SERIAL = "1324321000123"
DB_PWD = "s3cr3t-db-pw-77"
PASSPHRASE = "open-sesame-ib-42"
TOKEN = "tok9Xq2LmZ7pW4vR8sN1bC6dF3gH5jK0"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
HOST = "gpu-node-17.example"


def secrets(home: Path):
    """(what, value) of every secret planted; none may appear in any output."""
    return [("GPU UUID", UUID[4:]), ("MIG UUID", MIG[4:]), ("GPU serial", SERIAL), ("TF_DB_PWD", DB_PWD),
            ("NCCL_IB_PASSPHRASE", PASSPHRASE), ("token URL", TOKEN), ("HF_TOKEN", HF), ("host name", HOST),
            ("home path", str(home) + "/")]


def assert_clean(text: str, home: Path, what: str, paths_as_given: bool = False) -> None:
    leaks = [name for name, value in secrets(home) if value in text and not (paths_as_given and name == "home path")]
    assert not leaks, f"{what} leaks {leaks}:\n{text[:3000]}"


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A home folder holding a snapshot with every secret, a venv-like python, a requirements file;
    an environment with secret variables; a fake nvidia-smi printing the UUID."""
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    env = {
        "HOME": str(home),
        "TF_DB_PWD": DB_PWD,
        "NCCL_IB_PASSPHRASE": PASSPHRASE,
        "HF_TOKEN": HF,
        "CUDA_VISIBLE_DEVICES": f"{UUID},{MIG}",
        "PIP_INDEX_URL": f"https://{TOKEN}@127.0.0.1:9/simple",
        "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"),
        "NO_COLOR": "1",
    }
    s = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"])
    s.platform.hostname = HOST
    s.driver.messages = [f"nvidia-smi -q: Serial Number : {SERIAL}"]
    s.driver.evidence = [Evidence("cmd:nvidia-smi -q", f"GPU UUID : {UUID}\nSerial Number : {SERIAL}\n")]
    s.gpus[0].uuid, s.gpus[0].serial = UUID, SERIAL
    s.python.prefix = str(home / "venv")
    s.loader.gpu_env = {k: env[k] for k in ("TF_DB_PWD", "NCCL_IB_PASSPHRASE", "CUDA_VISIBLE_DEVICES", "PIP_INDEX_URL")}
    s.python.executable = str(home / "venv" / "bin" / "python")
    s.toolkits = [Toolkit(path=str(home / "cuda-12.4"), version="12.4.131", version_source="nvcc", is_default=True)]
    snap = write(home / "snap.json", s.to_json())
    reqs = write(home / "proj" / "requirements.txt", "torch==2.3.0+cu121\n")
    venv_python = home / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    bindir = tmp_path / "bin"
    make_exe(bindir / "nvidia-smi", "\n".join([
        'case "$1" in',
        f'  --query-gpu=*) echo "0, NVIDIA A10G, 8.6, 23028, 00000000:00:1E.0, {UUID}, 535.247.01"; exit 0;;',
        "esac",
        f'cat "{FIX / "nvidia" / "smi_535.247.01_a10g.txt"}"',
    ]))
    root = tmp_path / "root"
    root.mkdir()
    env["PATH"] = f"{bindir}:{os.environ['PATH']}"
    for k, v in env.items():
        monkeypatch.setenv(k, v)

    class M:
        pass

    m = M()
    m.home, m.snap, m.reqs, m.python, m.root, m.env, m.tmp = home, snap, reqs, venv_python, root, dict(os.environ), tmp_path
    return m


def run(m, *args):
    proc = subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=m.env,
                          timeout=180, cwd=str(m.tmp))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def outputs(m, argv, formats, check_planted=None):
    """Every format of one command, printed and written with -o; each must be clean. (Progress lines on
    stderr are not reports: they show the paths as given.)"""
    for fmt in formats:
        out_file = m.home / f"out.{fmt}"
        for extra in ([], ["-o", str(out_file)]):
            proc = run(m, *argv, "--format", fmt, *extra)
            assert proc.returncode in (0, 1), proc.stderr
            text = out_file.read_text() if extra else proc.stdout
            assert text.strip(), f"{argv} {fmt}: no output"
            assert_clean(text, m.home, f"{' '.join(argv[:1])} --format {fmt} {' '.join(extra)}")
            if check_planted:
                check_planted(fmt, text)
            if extra:
                out_file.unlink()


def test_probe_every_format_from_a_snapshot(machine):
    def planted(fmt, text):  # the values were there to leak: their names and markers are shown
        if fmt == "json":
            data = json.loads(text)
            assert data["loader"]["gpu_env"]["TF_DB_PWD"] == REDACTED
            assert data["loader"]["gpu_env"]["CUDA_VISIBLE_DEVICES"] == f"GPU-{REDACTED},MIG-{REDACTED}"
            assert data["python"]["executable"] == "~/venv/bin/python"
    outputs(machine, ["probe", "--snapshot", str(machine.snap)], ["text", "json"], planted)


def test_check_every_format_from_a_snapshot(machine):
    outputs(machine, ["check", "-v", "--snapshot", str(machine.snap)], ["text", "json", "markdown"])


def test_probe_and_check_of_a_live_fake_machine(machine):
    """The UUID comes from a fake nvidia-smi, the secrets from the environment."""
    def planted(fmt, text):
        assert "A10G" in text
    outputs(machine, ["probe", "--root", str(machine.root)], ["text", "json"], planted)
    outputs(machine, ["check", "-v", "--root", str(machine.root)], ["text", "json", "markdown"], planted)


def test_no_redact_keeps_everything(machine):
    proc = run(machine, "probe", "--snapshot", str(machine.snap), "--format", "json", "--no-redact")
    for _, value in secrets(machine.home):
        if value not in (TOKEN, HF, MIG[4:]):  # HF_TOKEN is only in the environment, not in the snapshot
            assert value in proc.stdout, value


def test_gate_every_format(machine):
    argv = ["gate", str(machine.reqs), "--driver", "550.144.03", "--gpu", "sm_75", "--python-version", "3.10"]
    outputs(machine, argv, ["text", "json", "junit", "github"])


def test_lock_every_format_and_check(machine):
    argv = ["lock", "--snapshot", str(machine.snap)]
    for fmt in ("requirements", "conda", "json"):
        proc = run(machine, *argv, "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert_clean(proc.stdout, machine.home, f"lock --format {fmt}")
        assert "~/snap.json" in proc.stdout  # the regenerate command names the snapshot under ~
    out = machine.home / "requirements-cuda.txt"
    proc = run(machine, *argv, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert_clean(out.read_text(), machine.home, "lock -o")
    proc = run(machine, "lock", "--check", str(out), "--snapshot", str(machine.snap))
    assert_clean(proc.stdout, machine.home, "lock --check")


def test_smoke_every_format(machine):
    # no framework in this interpreter: a short run whose report names the interpreter under ~
    outputs(machine, ["smoke", "--python", str(machine.python)], ["text", "json", "markdown"])


def test_onboard_reports(machine, fake, capsys):
    """onboard's Markdown and HTML reports: the tables (GPU env, paths) as well as the embedded snapshot."""
    from envdoctor.entry import main
    from tests.test_onboard import FW

    fake.snap.write_text(machine.snap.read_text())
    with pytest.raises(SystemExit) as exc:
        main(["onboard", "--snapshot", str(fake.snap), "--python", str(fake.base), "--env-dir", str(machine.home / "env"),
              *FW, "--yes"])
    out, err = capsys.readouterr()
    assert exc.value.code == 0, err
    from envdoctor.onboard import plan as P

    for name in (P.REPORT_MD, P.REPORT_HTML):
        text = (machine.home / "env" / name).read_text()
        assert "TF_DB_PWD" in text and "NCCL_IB_PASSPHRASE" in text  # the rows are there, their values are not
        assert_clean(text, machine.home, name)
    # the closing lines are instructions (`source .../bin/activate`): paths as given, but no secret
    assert_clean(out, machine.home, "onboard stdout", paths_as_given=True)


# -- the redactor alone: each shape, and what must survive ---------------------------------------

@pytest.mark.parametrize("text, secret", [
    ("TF_DB_PWD=hunter2-x", "hunter2-x"),
    ("NCCL_IB_PASSPHRASE=opensesame", "opensesame"),
    ("MY_PASS=abcdef12", "abcdef12"),
    (f"https://{TOKEN}@host.invalid/simple", TOKEN),
    ("https://user:pa55word@host.invalid/simple", "pa55word"),
    (f"CUDA_VISIBLE_DEVICES={UUID}", UUID[4:]),
    ("CUDA_VISIBLE_DEVICES=GPU-3b1c5f6e", "3b1c5f6e"),
    (f"MIG-GPU-{UUID[4:]}/1/0", UUID[4:]),
    ("id 3b1c5f6e-5a0e-9c4d-8b7e-1f2a3b4c5d6e", "3b1c5f6e-5a0e"),
    (f"Serial Number : {SERIAL}", SERIAL),
    (f"token {HF} here", HF),
    ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789"),
    ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("key=aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"),
])
def test_each_shape_is_redacted(text, secret):
    out = Redactor(home="/home/alice").text(text)
    assert secret not in out and REDACTED in out, out


@pytest.mark.parametrize("text", [
    "torch==2.3.0+cu121 --hash=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    '"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
    "sm_86 sm_90a compute_90 CUDA 12.4.131 driver 550.54.15 cuDNN 9.1.0.70",
    "GPU-accelerated builds; MIG-enabled A100",
    "nvidia_cuda_nvcc_cu12-12.8.93.dist-info /usr/lib/x86_64-linux-gnu/libcudnn_engines_precompiled.so.9",
    "git+ssh://git@github.com/org/repo.git@0123456789abcdef0123456789abcdef01234567",
    "PWD=/srv/data OLDPWD=/srv",
    "https://download.pytorch.org/whl/cu121 NVIDIA GeForce RTX 4090 Laptop GPU",
])
def test_what_is_not_a_secret_survives(text):
    assert Redactor(home="/home/alice").text(text) == text


def test_html_output_gets_an_escaped_marker():
    out = redact_output(f"<td>{UUID}</td>", html=True, env={})
    assert UUID[4:] not in out and "<redacted>" not in out and "&lt;redacted&gt;" in out


def test_environment_secrets_are_scrubbed_anywhere(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "plain-lowercase-value-123")
    assert "plain-lowercase-value-123" not in redact_output("echo plain-lowercase-value-123 done")


# -- the redactor's skips against running every pattern -------------------------------

def _every_pattern(r: Redactor, s: str) -> str:
    """Redactor.text as it was before it learnt to skip patterns that cannot match: every pattern on every text."""
    import re

    from envdoctor import redact as R

    if not s:
        return s
    mark = r.marker
    s = R._GPU_ID_RE.sub(lambda m: f"{m.group(1)}-{mark}", s)
    s = R._UUID_RE.sub(mark, s)
    s = R._URL_CRED_RE.sub(lambda m: m.group(1) + mark + "@", s)
    s = R._ENV_ASSIGN_RE.sub(lambda m: f"{m.group(1)}={mark}" if R.is_secret_name(m.group(1)) and m.group(2) != mark
                             else m.group(0), s)
    s = R._SERIAL_RE.sub(lambda m: m.group(1) + mark, s)
    s = R._TOKEN_PREFIX_RE.sub(mark, s)
    s = R._LONG_WORD_RE.sub(lambda m: mark if R._high_entropy(m.group(1))
                            and not R._DIGEST_BEFORE_RE.search(s[max(0, m.start() - 8):m.start()]) else m.group(0), s)
    for secret in r.secrets:
        if secret in s:
            s = s.replace(secret, mark)
    home = r.home
    if home and home not in ("/", "") and len(home) > 1:
        s = re.sub(re.escape(home.rstrip("/")) + r"(?=/|$|\W)", "~", s)
    for h in r.hosts:
        s = re.sub(r"(?<![\w.-])" + re.escape(h) + r"(?![\w-])", mark, s)
    return s


ODD = [
    "", "x", "Serial Number : 12345678", "ſerial Number : 12345678", "SERİAL: abcd1234", "KEY=ſecret-value-1",
    f"é {UUID} é", f"{UUID[4:].upper()}", "ghp_short", "xoxb-0123456789-abc", "sk-" + "A1b2" * 6,
    "w" * 31 + " " + "Ab1" * 11, "é" + "Ab1" * 11 + "é", "3b1c5f6e-", "GPU-3B1C5F6E", "http://u:p@h", "a=b c=d",
    "<redacted>", "gpu-node-17.example.com gpu-node-17.example", "/home/alice /home/alicex /home/alice/x",
]


def test_skipping_patterns_changes_no_output(machine):
    """Real unredacted outputs (check and probe of the fake machine with every secret planted, every format),
    the shapes above and odd texts (non-ASCII case folds, near misses) redact exactly as with every pattern run,
    for both markers and with a host name equal to the marker."""
    texts = list(ODD)
    for argv in (["check", "--snapshot", str(machine.snap)], ["probe", "--snapshot", str(machine.snap)]):
        for fmt in (("text", "json", "markdown", "sarif", "junit", "github", "prometheus")
                    if argv[0] == "check" else ("text", "json")):
            proc = run(machine, *argv, "--no-redact", "--format", fmt)
            assert proc.returncode in (0, 1), proc.stderr
            texts += [proc.stdout] + proc.stdout.splitlines()
    assert any(UUID in t for t in texts) and any(SERIAL in t for t in texts)
    from envdoctor.redact import REDACTED_HTML

    for marker in (REDACTED, REDACTED_HTML):
        for r in (Redactor(home=str(machine.home), hostnames=[HOST, REDACTED], secrets=[SERIAL, DB_PWD], marker=marker),
                  Redactor(home="/home/alice", marker=marker)):
            for t in texts:
                assert r.text(t) == _every_pattern(r, t), t[:200]
