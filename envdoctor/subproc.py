"""The one module that starts subprocesses.

Every command gets an exact argv (never a shell) and a timeout, and runs in a session (process group)
of its own. Bounds, for every command:

* time: the timeout bounds the whole command, from the start to the last byte read. When the command
  exits, whatever it left running in its process group is killed, so a helper that keeps stdout open
  cannot stretch it; a process that left the group (setsid) and still holds a pipe is waited for at
  most EXIT_GRACE seconds more, and never past the timeout.
* memory: both streams are read as they come (never buffered whole). A command that prints more than
  MAX_OUTPUT bytes on a captured stream is killed with its group and reported as failed ("printed more
  than ..."), its first MAX_OUTPUT bytes kept. In streaming mode (``on_stdout_line``) every stdout line
  is handed over (a line longer than MAX_LINE in pieces) and only the first MAX_OUTPUT bytes are kept;
  stderr keeps its last MAX_OUTPUT bytes.
* lifetime: no command outlives envdoctor. Live commands are tracked; they are killed with their groups
  on a normal exit (atexit), by the CLI's SIGTERM / SIGHUP / SIGINT handlers (:func:`shutdown`), and,
  where ``/bin/sh`` exists, by a watchdog: one small shell process per envdoctor that holds a pipe from
  it and, when that pipe closes because envdoctor ended in any way (SIGKILL included), kills every group
  still registered (ENVDOCTOR_NO_WATCHDOG=1 turns it off, for tests of the rest). Limits: a command
  started in the microseconds before envdoctor was SIGKILLed, not yet registered, and a grandchild that
  left its group (setsid/daemonised) escape; catching those needs PID namespaces or a cgroup, which
  envdoctor does not ask for.
"""
from __future__ import annotations

import atexit
import os
import signal
import threading
import time
from typing import Callable, Dict, Optional, Mapping, Sequence, Tuple, Union

from envdoctor.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

# subprocess and selectors (with locale, select, fcntl: ~2 ms) are imported by the functions that start or read a
# command: a check whose every answer is kept (envdoctor.cache) runs none and never imports them

DEFAULT_TIMEOUT = 5.0
MAX_OUTPUT = 1 << 20  # keep at most 1 MiB of each stream; a captured stream past it gets the command killed
MAX_LINE = 64 * 1024  # streaming mode: a longer stdout line is handed over in pieces of this size
EXIT_GRACE = 1.0  # seconds to drain pipes held open by a process outside the command's group after it exited
_POLL = 0.05  # seconds between checks whether the command exited while its pipes stay open
_READ = 64 * 1024


@dataclass
class CmdResult:
    argv: list[str]
    status: str  # ok | missing | failed | timeout | error
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    reason: str = ""
    cached: bool = False  # the answer of an earlier run (Runner.run_fixed): nothing ran now
    truncated: bool = False  # killed at MAX_OUTPUT: stdout / stderr hold only the first part of what it printed

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


def which(name: str, path: str) -> str | None:
    """shutil.which(name, path=path) on POSIX, without importing shutil (and its compression modules: ~3 ms
    of every start); on Windows (PATHEXT) shutil's own."""
    if os.name == "nt":
        import shutil

        return shutil.which(name, path=path)
    if os.path.dirname(name):
        candidates = [name]
    else:
        seen = set()
        candidates = []
        for folder in path.split(os.pathsep) if path else ():
            if folder not in seen:
                seen.add(folder)
                candidates.append(os.path.join(folder, name))
    for candidate in candidates:
        if os.path.exists(candidate) and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


@dataclass
class Runner:
    """Runs commands found on a PATH with a default timeout."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout: float = DEFAULT_TIMEOUT

    def which(self, name: str) -> str | None:
        if os.sep in name:
            return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
        return which(name, self.env.get("PATH", os.defpath))

    def run(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        stdin_text: str | None = None,
        on_stdout_line: Optional[Callable[[str], None]] = None,
        cancel: Optional[threading.Event] = None,
    ) -> CmdResult:
        """Run argv; with `on_stdout_line`, each stdout line is handed over as it arrives (streaming).

        Setting `cancel` kills the command early, reported like a timeout. See the module's
        docstring for the bounds on time, memory and lifetime.
        """
        argv = list(argv)
        limit = self.timeout if timeout is None else timeout
        full_env = dict(env if env is not None else self.env)
        started: Union[CmdResult, Tuple[subprocess.Popen, float], None] = None
        if stdin_text is None and on_stdout_line is None and cancel is None and _STARTED:
            with _LIVE_LOCK:
                started = _STARTED.pop(_start_key(argv, limit, full_env), None)
        if started is None:
            started = self._spawn(argv, full_env, stdin_text is not None)
        if isinstance(started, CmdResult):
            return started
        proc, start = started
        try:
            return _collect(argv, proc, limit, start, stdin_text, on_stdout_line, cancel)
        finally:
            _finish(proc)

    def run_fixed(self, argv: Sequence[str], timeout: float | None = None, reads: Sequence[str] = ()) -> CmdResult:
        """run(argv, timeout) for a command whose answer the executable file fixes (`gcc --version`, `nvcc
        --list-gpu-arch`): a successful answer is kept in envdoctor's cache (envdoctor.cache) and given again,
        nothing run, while the executable (an ELF file, links resolved) has the same size, mtime, inode and ctime
        and the arguments, environment and working folder are the same. A script, and an executable not named after
        the command (ccache as gcc, a version manager's shim), is always run: a wrapper may answer anything.
        `reads`: the files the answer comes from besides the executable (`ldconfig -p` prints /etc/ld.so.cache),
        kept with it and checked the same way."""
        fixed = self._fixed(argv, reads)
        hit = self._kept(argv, fixed)
        if hit is not None:
            return hit
        res = self.run(argv, timeout)
        if fixed is not None and res.status == "ok":
            store, key, witness = fixed
            store.put(key, witness, {"stdout": res.stdout, "stderr": res.stderr})
        return res

    def start_fixed(self, argv: Sequence[str], timeout: float | None = None, reads: Sequence[str] = ()) -> None:
        """start(argv, timeout) for what run_fixed(argv, timeout, reads) will collect, unless the cache answers it."""
        if self.kept(argv, reads) is None:
            self.start(argv, timeout)

    def kept(self, argv: Sequence[str], reads: Sequence[str] = ()) -> Optional[CmdResult]:
        """What run_fixed(argv, reads=reads) would give from the cache, or None (it would run the command)."""
        return self._kept(argv, self._fixed(argv, reads))

    @staticmethod
    def _kept(argv: Sequence[str], fixed: Optional[tuple]) -> Optional[CmdResult]:
        if fixed is None:
            return None
        hit = fixed[0].get(fixed[1])
        if isinstance(hit, dict) and isinstance(hit.get("stdout"), str) and isinstance(hit.get("stderr"), str):
            return CmdResult(list(argv), "ok", 0, hit["stdout"], hit["stderr"], 0.0,
                             reason="the answer of an earlier run (the same executable file, arguments and environment)",
                             cached=True)
        return None

    def _fixed(self, argv: Sequence[str], reads: Sequence[str] = ()) -> Optional[tuple]:
        """(the cache store, the key, the witness) of run_fixed(argv), None when its answer is not kept."""
        from envdoctor import cache

        if not argv or not cache.enabled(self.env):
            return None
        exe = self.which(argv[0])
        if exe is None:
            return None
        real = os.path.realpath(exe)
        if os.path.basename(argv[0]) not in os.path.basename(real):
            return None  # a dispatcher (ccache's gcc, a version manager's shim) is named after itself: it may answer anything
        try:
            with open(real, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    return None
        except OSError:
            return None
        # the key holds the command as invoked and the file it found, not only the file the links lead to
        key = cache.make_key("cmd", [argv[0], os.path.abspath(exe), real, *argv[1:]], self.env)
        witness = [(real, cache.signature(real)), *cache.link_chain(exe)]
        return cache.store("commands", self.env), key, witness + [(str(f), cache.signature(str(f))) for f in reads]

    def start(self, argv: Sequence[str], timeout: float | None = None, env: Mapping[str, str] | None = None) -> None:
        """Start argv now, to be collected by the run() of the same argv, timeout and env that follows (a
        prefetch: the command works while this process does something else). Its timeout counts from now;
        one never collected is killed by :func:`discard_started` or at exit. Starts nothing for a command
        that cannot start (run() then says why) or that is already waiting to be collected."""
        argv = list(argv)
        limit = self.timeout if timeout is None else timeout
        full_env = dict(env if env is not None else self.env)
        key = _start_key(argv, limit, full_env)
        with _LIVE_LOCK:
            if key in _STARTED:
                return
        started = self._spawn(argv, full_env, False)
        if isinstance(started, CmdResult):
            return
        with _LIVE_LOCK:
            if key in _STARTED:  # another thread started the same meanwhile
                _finish(started[0])
            else:
                _STARTED[key] = started

    def _spawn(self, argv: list, env: Dict[str, str], with_stdin: bool) -> Union[CmdResult, Tuple[subprocess.Popen, float]]:
        """(the started process, its start time), or the CmdResult of a command that could not start."""
        import subprocess

        exe = self.which(argv[0])
        if exe is None:
            return CmdResult(argv, "missing", reason=f"{argv[0]}: not found on PATH")
        start = time.monotonic()
        with _LIVE_LOCK:  # held over the start, so shutdown() either sees this command or refuses it
            if _CLOSING.is_set():
                return CmdResult(argv, "error", reason=f"{argv[0]}: not started: envdoctor is exiting")
            try:
                proc = subprocess.Popen(
                    [exe, *argv[1:]],
                    stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                return CmdResult(argv, "error", reason=f"{argv[0]}: cannot run: {exc.strerror or exc}")
            _LIVE.add(proc)
            _watchdog_send(f"+ {proc.pid}\n")
        return proc, start


def _start_key(argv: list, limit: float, env: Dict[str, str]) -> tuple:
    return tuple(argv), limit, tuple(sorted(env.items()))


def _finish(proc: subprocess.Popen) -> None:
    _end(proc)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def discard_started() -> int:
    """Kill and reap every command start() began that no run() collected; how many there were."""
    with _LIVE_LOCK:
        left = [proc for proc, _ in _STARTED.values()]
        _STARTED.clear()
    for proc in left:
        _finish(proc)
    return len(left)


class _Stream:
    """What one pipe delivered: its first MAX_OUTPUT bytes (with `tail`, its last ones); lines for a callback."""

    def __init__(self, name: str, on_line: Optional[Callable[[str], None]] = None, tail: bool = False) -> None:
        self.name = name
        self.on_line = on_line
        self.tail = tail
        self.kept = bytearray()
        self.total = 0
        self.partial = bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if self.tail:
            self.kept.extend(data)
            if len(self.kept) > 2 * MAX_OUTPUT:
                del self.kept[: len(self.kept) - MAX_OUTPUT]
        elif len(self.kept) < MAX_OUTPUT:
            self.kept.extend(data[: MAX_OUTPUT - len(self.kept)])
        if self.on_line is not None:
            self.partial.extend(data)
            while True:
                cut = self.partial.find(b"\n")
                if cut < 0 and len(self.partial) < MAX_LINE:
                    break
                end = cut + 1 if 0 <= cut < MAX_LINE else MAX_LINE
                self._hand(bytes(self.partial[:end]))
                del self.partial[:end]

    def close(self) -> None:
        if self.on_line is not None and self.partial:
            self._hand(bytes(self.partial))
            self.partial.clear()

    def _hand(self, raw: bytes) -> None:
        if self.on_line is None:
            return
        try:
            self.on_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        except Exception:  # noqa: BLE001 - a broken callback never stops the reading
            pass

    @property
    def over(self) -> bool:
        return self.total > MAX_OUTPUT

    def text(self) -> str:
        return _text(bytes(self.kept[-MAX_OUTPUT:] if self.tail else self.kept))


def _collect(argv: list, proc: subprocess.Popen, limit: float, start: float, stdin_text: Optional[str],
             on_line: Optional[Callable[[str], None]], cancel: Optional[threading.Event]) -> CmdResult:
    import selectors
    import subprocess

    streaming = on_line is not None
    deadline = start + limit
    out = _Stream("stdout", on_line)
    err = _Stream("stderr", tail=streaming)
    sel = selectors.DefaultSelector()
    streams: Dict[int, _Stream] = {}
    for pipe, stream in ((proc.stdout, out), (proc.stderr, err)):
        assert pipe is not None, "run() starts every command with stdout and stderr piped"
        fd = pipe.fileno()
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
        streams[fd] = stream
    pending = memoryview(stdin_text.encode() if stdin_text is not None else b"")
    stdin = proc.stdin if stdin_text is not None else None  # piped when there is text to send
    if stdin is not None:
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_WRITE)
    stop = ""  # why the command is killed early: timeout | cancel | the stream that overflowed
    exited_at: Optional[float] = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and _exited(proc):
                exited_at = now
                _kill_group(proc)  # what it left in its group must not hold the pipes open
            if now >= deadline:
                stop = "timeout"
                break
            if cancel is not None and cancel.is_set():
                stop = "cancel"
                break
            if exited_at is not None and now >= exited_at + EXIT_GRACE:
                break  # a process outside its group holds a pipe: keep what came
            for key, _ in sel.select(timeout=max(0.0, min(deadline - now, _POLL))):
                fd = key.fd
                if fd not in streams:  # stdin
                    try:
                        n = os.write(fd, pending[:_READ])
                        pending = pending[n:]
                    except BlockingIOError:
                        continue
                    except OSError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(fd)
                        if stdin is not None:  # always, for the fd registered for writing
                            stdin.close()
                    continue
                try:
                    data = os.read(fd, _READ)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(fd)
                    continue
                streams[fd].add(data)
                if not streaming and streams[fd].over:
                    stop = streams[fd].name  # captured output has a cap: the command is killed there
            if stop:
                break
        if not stop:
            try:
                _wait_unreaped(proc, max(0.0, deadline - time.monotonic()), cancel)
            except subprocess.TimeoutExpired:
                stop = "cancel" if cancel is not None and cancel.is_set() else "timeout"
    finally:
        sel.close()
        out.close()
    _end(proc)
    duration = time.monotonic() - start
    stdout, stderr = out.text(), err.text()
    if stop in ("timeout", "cancel"):
        why = "cancelled (killed)" if stop == "cancel" else f"no answer within {limit:g} s (killed)"
        return CmdResult(argv, "timeout", None, stdout, stderr, duration, reason=f"{argv[0]}: {why}")
    if stop:
        return CmdResult(argv, "failed", None, stdout, stderr, duration, truncated=True,
                         reason=f"{argv[0]}: printed more than {MAX_OUTPUT // (1 << 20)} MiB on {stop} (killed)")
    if proc.returncode != 0:
        detail = ""
        if not streaming:
            first = (stderr.strip() or stdout.strip()).splitlines()
            detail = first[0][:200] if first else ""
        return CmdResult(argv, "failed", proc.returncode, stdout, stderr, duration,
                         reason=f"{argv[0]}: exit status {proc.returncode}" + (f": {detail}" if detail else ""))
    return CmdResult(argv, "ok", 0, stdout, stderr, duration)


def _exited(proc: subprocess.Popen) -> bool:
    """Whether the command exited, without reaping it (its process group id stays reserved until it is)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait_unreaped(proc: subprocess.Popen, limit: float, cancel: Optional[threading.Event] = None) -> None:
    """Wait for the command to end without reaping it, so its process group id stays reserved
    until the group is killed (a reaped leader's id could be reused by an unrelated process)."""
    import subprocess

    deadline = time.monotonic() + limit
    delay = 0.002
    while not _exited(proc):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.is_set()):
            raise subprocess.TimeoutExpired(proc.args, limit)
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, _POLL)


def _end(proc: subprocess.Popen) -> None:
    """Kill what is left of the command's group, forget it, reap it (in this order: its id stays
    reserved until the reap, so neither this kill nor the watchdog's can hit another process)."""
    import subprocess

    with _LIVE_LOCK:
        if proc not in _LIVE:
            return
    if proc.returncode is None:
        _kill_group(proc)
    with _LIVE_LOCK:
        _watchdog_send(f"- {proc.pid}\n")
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:  # unkillable (stuck in the kernel): init reaps it one day
        pass
    with _LIVE_LOCK:
        _LIVE.discard(proc)


# Commands running right now, so an interrupted envdoctor can end them at once instead of waiting out
# their timeouts: they run in their own sessions and never see the terminal's SIGINT. Re-entrant:
# a signal handler (main thread) may call kill_all() while the main thread itself is starting one.
_LIVE: set = set()
_LIVE_LOCK = threading.RLock()
_STARTED: Dict[tuple, Tuple[subprocess.Popen, float]] = {}  # Runner.start()ed commands waiting for their run(): key -> (proc, start time)
_CLOSING = threading.Event()


def kill_all() -> int:
    """Kill every command this process is running (with its process group); how many were still running."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    killed = 0
    for proc in procs:
        if proc.returncode is None:
            _kill_group(proc)
            killed += 1
    return killed


def shutdown() -> None:
    """envdoctor is ending: refuse new commands, kill the running ones with their groups, stop the watchdog.

    Safe to call from a signal handler and more than once; registered with atexit."""
    global _WATCHDOG
    with _LIVE_LOCK:
        _CLOSING.set()
    killed = kill_all()
    with _LIVE_LOCK:
        dog, _WATCHDOG = _WATCHDOG, None
    if dog is not None and dog.stdin is not None:
        import subprocess  # (a watchdog was started: imported already)

        try:
            dog.stdin.close()  # EOF: it kills what is still registered and exits
            if killed:  # it has groups to kill: let it finish; with none it exits at once on its own (~10 ms saved)
                dog.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            pass


atexit.register(shutdown)


# The watchdog: a shell reading "+ PGID" / "- PGID" lines from envdoctor; at end of input (envdoctor
# closed the pipe or died, SIGKILL included) it kills every group still listed. It ignores the signals
# a terminal or `timeout` sends, so it outlives envdoctor long enough to clean up, and no longer.
_WATCHDOG_SH = r"""trap '' INT HUP TERM QUIT PIPE
g=' '
while read -r op pg; do
  case $pg in ''|*[!0-9]*) continue ;; esac
  case $op in
    +) g="$g$pg " ;;
    -) case $g in *" $pg "*) g="${g%% $pg *} ${g#* $pg }" ;; esac ;;
  esac
done
for pg in $g; do kill -KILL -"$pg" 2>/dev/null; done
"""
_WATCHDOG: Optional[subprocess.Popen] = None
_WATCHDOG_TRIED = False


def _watchdog_send(line: str) -> None:
    """Tell the watchdog (started on first use) about a group; called with _LIVE_LOCK held. Never blocks."""
    global _WATCHDOG, _WATCHDOG_TRIED
    if not _WATCHDOG_TRIED and not _CLOSING.is_set():
        _WATCHDOG_TRIED = True
        _WATCHDOG = _start_watchdog()
    if _WATCHDOG is None or _WATCHDOG.stdin is None:
        return
    try:
        os.write(_WATCHDOG.stdin.fileno(), line.encode("ascii"))
    except (OSError, ValueError):  # gone, or its pipe is full: envdoctor's own kills still apply
        pass


def _start_watchdog() -> Optional[subprocess.Popen]:
    import subprocess

    sh = "/bin/sh"
    if os.name != "posix" or not os.access(sh, os.X_OK) or os.environ.get("ENVDOCTOR_NO_WATCHDOG"):
        return None
    try:
        dog = subprocess.Popen([sh, "-c", _WATCHDOG_SH], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env={"PATH": os.defpath, "LC_ALL": "C"},
                               start_new_session=True, close_fds=True)
    except OSError:
        return None
    assert dog.stdin is not None, "started with stdin=PIPE"
    os.set_blocking(dog.stdin.fileno(), False)
    return dog


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _text(data: bytes | None) -> str:
    if not data:
        return ""
    return data[:MAX_OUTPUT].decode("utf-8", errors="replace")
