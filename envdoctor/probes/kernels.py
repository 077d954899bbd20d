"""Jupyter kernelspecs and the VS Code workspace interpreter: which Python each notebook really runs.

The kernel directories are found without running jupyter, in jupyter_core.paths.jupyter_path()'s order:
$JUPYTER_PATH entries, the user data dir ($JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter or
~/.local/share/jupyter; ~/Library/Jupyter on macOS; %APPDATA%\\jupyter on Windows), the target
environment's sys.prefix/share/jupyter, then /usr/local/share/jupyter and /usr/share/jupyter
(%PROGRAMDATA%\\jupyter on Windows); conda environments (~/.conda/environments.txt and
<conda root>/envs/*) add their share/jupyter. Each <dir>/kernels/<name>/kernel.json names the interpreter
in argv[0]. With --kernels, each distinct Python interpreter is read like --python (the pyenv helper,
nothing imported), in parallel and bounded.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from typing import Dict, List, Optional, Tuple

from envdoctor.parsers.breadth import parse_jsonc
from envdoctor.probes.base import ProbeContext, ProbePartial, ProbeSkipped, parallel_map
from envdoctor.snapshot import Evidence, Kernel, Snapshot

MAX_KERNELS = 64
MAX_DIRS = 64
MAX_JSON = 256 * 1024


def _home(env) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def data_dirs(env, system: str, prefixes: List[str], caps: Optional[List[str]] = None) -> List[str]:
    """The Jupyter data directories, in jupyter_core's order (duplicates dropped); `caps` gets a line when more
    than MAX_DIRS were found."""
    out: List[str] = []
    home = _home(env)
    for d in (env.get("JUPYTER_PATH") or "").split(os.pathsep):
        if d.strip():
            out.append(d.strip())
    if env.get("JUPYTER_DATA_DIR"):
        out.append(env["JUPYTER_DATA_DIR"])
    elif system == "Darwin":
        out.append(os.path.join(home, "Library", "Jupyter"))
    elif system == "Windows":
        out.append(os.path.join(env.get("APPDATA") or os.path.join(home, "AppData", "Roaming"), "jupyter"))
    else:
        xdg = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
        out.append(os.path.join(xdg, "jupyter"))
    for prefix in prefixes:
        if prefix:
            out.append(os.path.join(prefix, "share", "jupyter"))
    if system == "Windows":
        out.append(os.path.join(env.get("PROGRAMDATA") or "C:\\ProgramData", "jupyter"))
    else:
        out.extend(["/usr/local/share/jupyter", "/usr/share/jupyter"])
    seen, uniq = set(), []
    for d in out:
        key = os.path.normpath(d)
        if key not in seen:
            seen.add(key)
            uniq.append(d)
    if len(uniq) > MAX_DIRS and caps is not None:
        caps.append(f"only the first {MAX_DIRS} of {len(uniq)} Jupyter data directories were searched")
    return uniq[:MAX_DIRS]


def conda_env_prefixes(env, caps: Optional[List[str]] = None) -> List[str]:
    """Conda environments this user has: ~/.conda/environments.txt, and <root>/envs/* of the active conda; `caps`
    gets a line when more than MAX_DIRS were found."""
    out: List[str] = []
    txt = os.path.join(_home(env), ".conda", "environments.txt")
    try:
        with open(txt, encoding="utf-8", errors="replace") as fh:
            out.extend(line.strip() for line in fh.read(MAX_JSON).splitlines() if line.strip())
    except OSError:
        pass
    roots = []
    if env.get("CONDA_EXE"):
        roots.append(os.path.dirname(os.path.dirname(env["CONDA_EXE"])))
    if env.get("CONDA_PREFIX"):
        p = env["CONDA_PREFIX"]
        roots.append(os.path.dirname(os.path.dirname(p)) if os.path.basename(os.path.dirname(p)) == "envs" else p)
    for root in roots:
        out.append(root)
        try:
            out.extend(os.path.join(root, "envs", n) for n in sorted(os.listdir(os.path.join(root, "envs"))))
        except OSError:
            pass
    if len(out) > MAX_DIRS and caps is not None:
        caps.append(f"only the first {MAX_DIRS} of {len(out)} conda environments were searched for kernels")
    return out[:MAX_DIRS]


def _read_json(path: str) -> Tuple[Optional[dict], str]:
    # O_NONBLOCK: a FIFO put in the file's place between the caller's stat and this open never blocks the open
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "is not a regular file"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_JSON + 1)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if len(raw) > MAX_JSON:
        return None, f"larger than {MAX_JSON} bytes"
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON: {exc}"
    return (data, "") if isinstance(data, dict) else (None, "not a JSON object")


def _is_python(argv0: str) -> bool:
    base = os.path.basename(argv0).lower()
    return base.startswith(("python", "pypy")) or base in ("py", "py.exe")


def _kernel_json(path: str) -> Optional[str]:
    """None when `path` is a kernelspec's readable kernel.json, "" when there is none (not a kernelspec: Jupyter
    passes over it too), else why it cannot be read: a FIFO (opening it would block), a link loop, a device."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "a dangling link" if os.path.islink(path) else ""
    except OSError as exc:  # ELOOP: a link loop; EACCES
        return f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISREG(st.st_mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode) else "a special file"
    return f"is {kind}, not a regular file (not opened)"


def find_kernelspecs(dirs: List[str], caps: Optional[List[str]] = None) -> List[Kernel]:
    """The kernelspecs of `dirs`, at most MAX_KERNELS; `caps` gets a line when there were more."""
    out: List[Kernel] = []
    seen = set()
    beyond = 0  # kernelspecs past MAX_KERNELS, not read
    for d in dirs:
        kdir = os.path.join(d, "kernels")
        try:
            names = sorted(os.listdir(kdir))
        except OSError:
            continue
        for name in names:
            if name.lower() in seen:
                continue  # the first directory that holds a name wins, like jupyter's KernelSpecManager
            path = os.path.join(kdir, name, "kernel.json")
            problem = _kernel_json(path)
            if problem == "":
                continue
            seen.add(name.lower())
            if len(out) >= MAX_KERNELS:
                beyond += 1
                continue
            k = Kernel(name=name, source="kernelspec", path=path)
            if problem is not None:  # said, never passed over: a kernel Jupyter lists may be this one
                k.status, k.reason = "failed", f"kernel.json {problem}"
                out.append(k)
                continue
            data, why = _read_json(path)
            if data is None:
                k.status, k.reason = "failed", f"kernel.json {why}"
                out.append(k)
                continue
            argv = data.get("argv")
            k.display_name = str(data.get("display_name") or "")[:200]
            k.language = str(data.get("language") or "")[:50]
            if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
                k.status, k.reason = "failed", "kernel.json has no argv"
                out.append(k)
                continue
            k.interpreter = argv[0]
            if k.language.lower() != "python" and not _is_python(argv[0]):
                k.status, k.reason = "not_python", f"a {k.language or 'non-Python'} kernel"
            out.append(k)
    if beyond and caps is not None:
        caps.append(f"only the first {MAX_KERNELS} of {MAX_KERNELS + beyond} kernelspecs were read")
    return out


def vscode_interpreter(cwd: str) -> Optional[Kernel]:
    path = os.path.join(cwd, ".vscode", "settings.json")
    if not os.path.isfile(path):
        return None
    k = Kernel(name="VS Code workspace", source="vscode", path=path, language="python")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            data = parse_jsonc(fh.read(MAX_JSON))
    except OSError as exc:
        k.status, k.reason = "failed", f"cannot read: {exc.strerror or exc}"
        return k
    if data is None:
        k.status, k.reason = "failed", "settings.json is not JSON (with comments)"
        return k
    value = data.get("python.defaultInterpreterPath") or data.get("python.pythonPath")
    if not isinstance(value, str) or not value.strip():
        return None  # the workspace names no interpreter: VS Code picks one itself
    value = value.replace("${workspaceFolder}", cwd).replace("${workspaceRoot}", cwd)
    value = os.path.expanduser(value)
    if not os.path.isabs(value) and (os.sep in value or (os.altsep and os.altsep in value)):
        value = os.path.normpath(os.path.join(cwd, value))
    k.interpreter = value
    return k


def _resolve(interpreter: str, ctx: ProbeContext) -> Optional[str]:
    if os.sep in interpreter or (os.altsep and os.altsep in interpreter):
        return interpreter if os.path.exists(interpreter) else None
    return ctx.runner.which(interpreter)


def _read_env(interpreter: str, ctx: ProbeContext):
    from envdoctor.probes import pyenv

    data, reason = pyenv.run_helper(interpreter, ctx.runner)
    if data is None:
        return None, reason
    problem = pyenv.helper_answer_problem(data)
    if problem:
        return None, f"answered in an unexpected shape: {problem}"
    return pyenv.python_env_from(data, "kernel.json"), ""


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    if not ctx.root.is_live:
        raise ProbeSkipped("the Jupyter kernels of an image root are not probed")
    prefixes = [snap.python.prefix, ctx.env.get("CONDA_PREFIX", ""), sys.prefix]
    caps: List[str] = []  # every bound that bit: the probe then answered only in part, and says so
    prefixes += conda_env_prefixes(ctx.env, caps)
    system = snap.platform.system
    if not system:  # the platform probe's answer, else platform's own (imported only then: ~2 ms)
        import platform

        system = platform.system()
    dirs = data_dirs(ctx.env, system, prefixes, caps)
    snap.kernels.data_dirs = dirs
    kernels = find_kernelspecs(dirs, caps)
    try:
        vs = vscode_interpreter(os.getcwd())
    except OSError:
        vs = None
    if vs is not None:
        kernels.append(vs)
    snap.kernels.probed = bool(ctx.kernels)
    todo: Dict[str, List[Kernel]] = {}
    for k in kernels:
        if k.status in ("failed", "not_python") or not k.interpreter:
            continue
        resolved = _resolve(k.interpreter, ctx)
        if resolved is None:
            k.status, k.reason = "missing", f"{k.interpreter}: no such interpreter"
            continue
        k.status = "unprobed"
        if ctx.kernels:
            todo.setdefault(resolved, []).append(k)
    if todo:
        answers = dict(zip(todo, parallel_map(lambda exe: _read_env(exe, ctx), list(todo), max_workers=4)))
        for exe, (env, reason) in answers.items():
            for k in todo[exe]:
                if env is None:
                    k.status, k.reason = "failed", reason
                else:
                    k.status, k.python_version, k.frameworks = "ok", env.version, list(env.frameworks)
    snap.kernels.kernels = kernels
    snap.kernels.evidence.append(Evidence("files:jupyter data dirs", "; ".join(
        f"{k.name}: {k.interpreter or '-'} ({k.status})" for k in kernels)[:600] or "no kernelspecs found"))
    if caps:
        raise ProbePartial("; ".join(caps))
