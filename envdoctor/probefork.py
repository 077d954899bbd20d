"""Probing in a forked child, on the second core, while this process imports the rules.

A ``check`` is CPU-bound Python in one process: importing the probe modules and the probes' own work on one side,
importing click, the commands and the rules and loading the data on the other. Threads only take turns there (the
GIL); a fork runs the first half on another core. :func:`envdoctor.doctor.prefetch` calls :func:`start`: the child
runs exactly what :func:`envdoctor.doctor.obtain_snapshot` would (``doctor.probe_here``, same arguments; the child is
a copy of this process, so the same environment, working directory and interpreter) and sends the finished Snapshot
back over an anonymous pipe; ``obtain_snapshot`` calls :func:`collect`, which takes it when the arguments, os.environ
and the working directory are still those of the fork. In every other case (other arguments, a changed environment,
a child that died, was killed, sent bad data, or is still working after :func:`stuck_after`) the child is ended and
reaped and ``collect`` returns None: the probes then run in this process as they would without the fork. The child
can make a run slower, never different. A BadInput a probe raises in the child (a ``--python`` that is not Python)
is raised again here, the same exception with the same message and exit code.

When: Linux only (os.fork, and only while this process has one thread, in the main thread, may run on two CPUs or
more, and envdoctor.subproc's shutdown has not begun). Not on macOS: Apple documents fork without exec as unsafe once system
frameworks are loaded; envdoctor loads none itself, but the interpreter or a library may, and a wrong guess there is
a hang, so macOS and the other POSIX systems keep the in-process path (with its first-command prefetch, as on
Windows). ``ENVDOCTOR_NO_FORK=1`` turns the fork off (tests, debugging, comparisons).

The child (:func:`_child_main`): closes this process's ends of the pipes; forgets the commands, prefetched commands
and watchdog it inherited (they are the parent's: envdoctor.subproc._after_fork); puts /dev/null on its stdin, stdout
and stderr (it never writes to the terminal, and never flushes the parent's buffered output: it ends with os._exit,
so no atexit handler of the parent runs twice); handles SIGINT / SIGTERM / SIGHUP by killing its own commands
(subproc.shutdown: their groups, its own watchdog) and exiting; and watches a second pipe whose only writer is this
process: when it closes (this process ended, even by SIGKILL, or gave up on the child) the child does the same.

This process: :func:`end_all` ends every child still running (SIGTERM, then SIGKILL after GRACE, then reaps it): at
exit (atexit) and from envdoctor.subproc.shutdown (the CLI's SIGTERM / SIGHUP / SIGINT handlers). No child is left
running or unreaped by a run that ends early (a usage error after prefetch, an exception, a signal).

Module-level imports stay light (os, sys, threading, time): this runs before the fork, on the critical path.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

GRACE = 1.0  # seconds a child asked to stop (its pipe closed, SIGTERM) gets to kill its commands before SIGKILL
_READ = 1 << 16
_STDIO = 3  # descriptors 0, 1, 2
_HEADER = 8  # bytes before a child's answer: its length

# Modules the probes import that judging imports too (the snapshot model: the probes fill it, this process unpickles
# and judges it): imported here, before the fork, they are shared instead of built twice. The
# child needs them anyway, so its work is the same; tests/test_probefork.py keeps every name one both sides import.
SHARED = ("envdoctor.snapshot", "envdoctor.lazyre", "envdoctor.infile", "envdoctor.cachedir",
          "envdoctor.binaries", "envdoctor.parsers.breadth", "envdoctor.parsers.jax_build", "envdoctor.parsers.nvidia_smi")

_CHILDREN: List["Child"] = []  # forked and not reaped yet: ended by end_all()
_AT_EXIT = False  # end_all registered with atexit
_PENDING: Optional[Tuple[tuple, "Child"]] = None  # the probing child start() began: (what it was started for, it)


def stuck_after(timeout: float) -> float:
    """Seconds after which a probing child is taken for stuck (ended; the probes run in this process). Probing has
    no single bound of its own: every command has `timeout`, a probe runs a few in a row, and the longest probe, the
    binaries scan, stops after max(30 s, 6 x timeout) (envdoctor.probes.binaries.TIME_BOUND_FACTOR). Two stages of
    that, plus a margin; a healthy run stays far below it."""
    return 2 * max(30.0, 6.0 * timeout) + 10.0


def enabled() -> bool:
    """Whether this process may fork a child now (see the module's docstring)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork") or os.environ.get("ENVDOCTOR_NO_FORK"):
        return False
    if threading.active_count() != 1 or threading.current_thread() is not threading.main_thread():
        return False  # another thread may hold a lock the child would need: it would hang there
    if len(os.sched_getaffinity(0)) < 2:
        return False  # one CPU (taskset, a cpuset): the two would take turns, and the fork only costs
    subproc = sys.modules.get("envdoctor.subproc")
    return subproc is None or not subproc.closing()


# --------------------------------------------------------------------------- the probing child


def _key(python_path: Optional[str], root_dir: Optional[str], timeout: float, kernels: bool) -> tuple:
    """What a child's snapshot depends on besides the machine: obtain_snapshot's arguments, the environment and
    the working directory (a relative --root or --python)."""
    return python_path, root_dir, float(timeout), bool(kernels), os.getcwd(), sorted(os.environ.items())


def start(python_path: Optional[str], root_dir: Optional[str], timeout: float, kernels: bool = False) -> bool:
    """Fork a child that probes as obtain_snapshot(python_path, root_dir, None, timeout, kernels) would; whether
    one was started (False: not allowed here, or the fork failed; nothing changed then). Never raises."""
    global _PENDING
    try:
        key = _key(python_path, root_dir, timeout, kernels)
    except OSError:  # the working directory is gone: probe in-process, which says what it finds
        key = None
    if _PENDING is not None and _PENDING[0] == key:
        return True  # already probing for the same (an earlier call, e.g. before the command line was parsed)
    discard()
    if key is None:
        return False

    def probe() -> bytes:
        from envdoctor.doctor import probe_here
        from envdoctor.errors import BadInput

        try:
            outcome: Tuple[str, Any] = ("snapshot", probe_here(python_path, root_dir, timeout, kernels))
        except BadInput as exc:
            outcome = ("bad input", exc)
        return _pickle().dumps(outcome, protocol=-1)  # the highest protocol

    if not enabled():
        return False
    for name in SHARED:
        __import__(name)
    child = fork(probe, stuck_after(timeout))
    if child is None:
        return False
    _PENDING = (key, child)
    return True


def collect(python_path: Optional[str], root_dir: Optional[str], timeout: float, kernels: bool = False) -> Any:
    """The Snapshot of the child start() began for these same arguments (and the same environment and working
    directory), or None: no such child, or it failed in any way (it is ended and reaped; probe in-process then).
    Raises the child's BadInput."""
    global _PENDING
    if _PENDING is None:
        return None
    (key, child), _PENDING = _PENDING, None
    try:
        same = key == _key(python_path, root_dir, timeout, kernels)
    except OSError:
        same = False
    if not same:
        child.end()
        return None
    from envdoctor.errors import BadInput
    from envdoctor.snapshot import Snapshot  # (loaded before the fork: unpickling needs it)

    loads = _pickle().loads
    payload = child.result()
    if payload is None:
        return None
    try:
        kind, value = loads(payload)
    except Exception:  # noqa: BLE001 - bad data is a failed child: probe in-process
        return None
    if kind == "bad input" and isinstance(value, BadInput):
        raise value
    return value if kind == "snapshot" and isinstance(value, Snapshot) else None


def _pickle() -> Any:
    """pickle's C implementation: 1 ms to import where the pickle module takes 3 (struct, re, its Python half).

    Pickle, not JSON, because this is IPC between a process and its own fork (same code, same user, an anonymous
    pipe no other process inherits), never a file: it rebuilds the very objects (exact: types, shared references
    and all) in ~0.5 ms, where to_dict + JSON + Snapshot.from_dict takes ~3.5 ms. Only a process of the same user
    could reach the pipe (through /proc), and such a process can already ptrace either end. The rule that cache
    files are JSON only is about files, which outlive the run and which others could write."""
    try:
        import _pickle as impl
    except ImportError:  # an interpreter without the accelerator
        import pickle as impl  # type: ignore[no-redef]  # the same module, its Python half
    return impl


def discard() -> None:
    """End the child start() began, if nobody collected it."""
    global _PENDING
    pending, _PENDING = _PENDING, None
    if pending is not None:
        pending[1].end()


# --------------------------------------------------------------------------- forking


class Child:
    """A forked child working for this process; see fork()."""

    def __init__(self, pid: int, result_fd: int, life_fd: int, limit: float, froze: bool = False) -> None:
        self.pid = pid
        self._froze = froze  # fork() froze the collector's objects for this child: thawed once it is done
        self._result_fd = result_fd  # its answer: read here, written there
        self._life_fd = life_fd  # written by nobody: its closing tells the child to stop
        self.deadline = time.monotonic() + limit
        self.returncode: Optional[int] = None  # once reaped: its exit status, or -N for signal N
        self.delivered = False  # its whole answer came

    def result(self) -> Optional[bytes]:
        """What the child sent, once all of it came; None when it failed in any way (died, killed, sent less than
        it announced) or is still working at its deadline: then it is ended and reaped. A child that delivered is
        exiting on its own; it is reaped now if it is done, else by end_all() at exit (it is not waited for here:
        its exit, the teardown of its memory, comes after its answer)."""
        import select

        data = bytearray()
        want = _HEADER
        try:
            while len(data) < want:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    break
                if not select.select([self._result_fd], [], [], left)[0]:
                    continue
                chunk = os.read(self._result_fd, _READ)
                if not chunk:  # its end closed before the whole answer: it died
                    break
                data += chunk
                if want == _HEADER and len(data) >= _HEADER:
                    want += int.from_bytes(data[:_HEADER], "big")
            if want > _HEADER and len(data) == want:
                self.delivered = True
                self._close()  # the child sees its life line close: it exits now even if something of its hangs
                if self._wait(time.monotonic()) is not None and self in _CHILDREN:
                    _CHILDREN.remove(self)
                return bytes(data[_HEADER:])
        except (OSError, ValueError):
            pass
        except BaseException:  # KeyboardInterrupt without the CLI's handlers (which end it themselves)
            self.end()
            raise
        self.end()
        return None

    def end(self) -> None:
        """Stop the child if it still runs and reap it: its pipes close (it notices and stops), SIGTERM (it kills its
        commands and exits), SIGKILL after GRACE (its watchdog kills its commands). One that delivered its answer
        gets GRACE to exit on its own first. Never raises; idempotent (a signal handler may call it while the main
        thread is inside it)."""
        if self in _CHILDREN:
            _CHILDREN.remove(self)
        self._close()
        if self._wait(time.monotonic() + (GRACE if self.delivered else 0.0)) is not None:
            return
        self._signal(signal.SIGTERM)
        if self._wait(time.monotonic() + GRACE) is None:
            self._signal(signal.SIGKILL)
            self._wait(None)

    def _close(self) -> None:
        if self._froze:
            self._froze = False
            gc.unfreeze()
        for name in ("_life_fd", "_result_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _signal(self, sig: int) -> None:
        if self.returncode is None:  # not reaped: its pid cannot belong to another process yet
            try:
                os.kill(self.pid, sig)
            except OSError:
                pass

    def _wait(self, deadline: Optional[float]) -> Optional[int]:
        """Reap the child, by `deadline` (None: however long it takes); its exit status, None while it runs."""
        delay = 0.0002
        while self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG if deadline is not None else 0)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): its status is lost
                self.returncode = -1
                break
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                break
            left = deadline - time.monotonic() if deadline is not None else 0.0
            if left <= 0:
                return None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.02)
        return self.returncode


def fork(work: Callable[[], bytes], limit: float) -> Optional[Child]:
    """Run work() in a forked child (see the module's docstring); its bytes come back from Child.result() within
    `limit` seconds (its length first, so that the answer is known complete before the child has exited). None when this process may not fork now (enabled()) or the fork failed."""
    global _AT_EXIT
    if not enabled():
        return None
    fds: List[int] = []
    try:
        fds.extend(os.pipe())  # the answer: child -> parent (non-inheritable: no command of either gets it)
        fds.extend(os.pipe())  # the life line: the parent holds the only write end
        # Objects made so far move out of the collector's reach while the child lives (Python's advice for a fork
        # without exec: gc.freeze): a collection on either side no longer writes their headers, so fewer pages are
        # copied. Measured: ~10-15 ms less CPU a check, 5-10 ms less wall. Only when nothing else froze.
        froze = gc.get_freeze_count() == 0
        if froze:
            gc.freeze()
        try:
            pid = os.fork()
        except OSError:
            if froze:
                gc.unfreeze()
            raise
    except OSError:
        for fd in fds:
            os.close(fd)
        return None
    result_r, result_w, life_r, life_w = fds
    if pid == 0:
        _child_main(work, result_w, life_r, (result_r, life_w))  # never returns
    os.close(result_w)
    os.close(life_r)
    child = Child(pid, result_r, life_w, limit, froze)
    _CHILDREN.append(child)
    if not _AT_EXIT:
        import atexit

        atexit.register(end_all)
        _AT_EXIT = True
    return child


def end_all() -> int:
    """End and reap every child still running (at exit; envdoctor.subproc.shutdown); how many there were."""
    left = list(_CHILDREN)
    for child in left:
        child.end()
    return len(left)


# --------------------------------------------------------------------------- in the child


def _child_main(work: Callable[[], bytes], result_fd: int, life_fd: int, parents: Tuple[int, ...]) -> None:
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _stop)
        for fd in parents:
            os.close(fd)
        del _CHILDREN[:]  # the parent's other children are not this one's
        subproc = sys.modules.get("envdoctor.subproc")
        if subproc is not None:
            subproc._after_fork()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in range(_STDIO):  # stdin, stdout, stderr
            os.dup2(null, fd)
        if null >= _STDIO:
            os.close(null)
        threading.Thread(target=_watch_parent, args=(life_fd,), name="envdoctor-parent-watch", daemon=True).start()
        answer = work()
        view = memoryview(len(answer).to_bytes(_HEADER, "big") + answer)
        while view:
            view = view[os.write(result_fd, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - any failure is the parent's cue to probe in-process
        code = 1
    finally:
        _end_commands()
        os._exit(code)


def _end_commands() -> None:
    """Kill this child's commands (with their groups) and close its watchdog, as envdoctor's exit would."""
    subproc = sys.modules.get("envdoctor.subproc")
    if subproc is not None:
        try:
            subproc.shutdown()
        except BaseException:  # noqa: BLE001 - exiting anyway
            pass


def _stop(signum: int, frame: Any) -> None:
    _end_commands()
    os._exit(128 + signum)


def _watch_parent(fd: int) -> None:
    try:
        os.read(fd, 1)  # returns when the parent's end closes: it ended (however), or gave up on this child
    except OSError:
        pass
    _end_commands()
    os._exit(1)
