"""`envdoctor check` never imports torch, tensorflow or jax — neither in the target environment nor in its own process."""
import os
import subprocess
import sys
import venv

FRAMEWORKS = {
    "torch": ("torch", "2.3.1+cu121", "torch/version.py", "__version__ = '2.3.1+cu121'\ncuda = '12.1'\nhip = None\n"),
    "tensorflow": ("tensorflow", "2.16.1", "tensorflow/python/platform/build_info.py",
                   "build_info = {'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True}\n"),
    "jax": ("jax", "0.4.30", "jax/version.py", "_version = '0.4.30'\n"),
    "jaxlib": ("jaxlib", "0.4.30", "jaxlib/version.py", "_version = '0.4.30'\n"),
}


def _plant(site, marker):
    for pkg, (dist, version, vfile, vtext) in FRAMEWORKS.items():
        pdir = site / pkg
        pdir.mkdir(parents=True, exist_ok=True)
        (pdir / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write('{pkg} imported\\n')\nraise RuntimeError('{pkg} must not be imported')\n")
        vpath = site / vfile
        vpath.parent.mkdir(parents=True, exist_ok=True)
        vpath.write_text(vtext)
        di = site / f"{dist}-{version}.dist-info"
        di.mkdir()
        (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (di / "RECORD").write_text(f"{vfile},,\n{pkg}/__init__.py,,\n")


def test_check_imports_no_framework(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    marker = tmp_path / "imported.log"
    _plant(site, marker)
    # the same packages importable by envdoctor's own process too
    own = tmp_path / "own-site"
    own.mkdir()
    _plant(own, marker)
    env = dict(os.environ, PYTHONPATH=str(own) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for fmt in ("text", "json", "markdown"):
        proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--python", str(py), "--format", fmt],
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        assert "2.3.1+cu121" in proc.stdout
    assert not marker.exists(), marker.read_text()
