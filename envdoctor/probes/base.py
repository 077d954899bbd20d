"""What every probe gets and how it reports.

A probe is a function `probe(ctx, snap) -> None` that fills its own part of the
snapshot. It may raise ProbeUnknown("reason") to say its part stays unknown, or
ProbeSkipped("reason") when it did not look on purpose; any other exception is
caught by the runner and recorded as "error", so one failing probe never sinks
the report. The rules tell a part that is absent from one that is unknown by the
probe's status (ED002 reports every probe that could not answer).
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, List, Mapping, Optional, Sequence, TypeVar

from envdoctor.fsroot import Root
from envdoctor.snapshot import Snapshot
from envdoctor.subproc import DEFAULT_TIMEOUT, Runner
from envdoctor.records import dataclass, field


T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Sequence[T], max_workers: Optional[int] = None) -> List[R]:
    """``fn`` over ``items`` in threads (at most ``max_workers`` at once), the results in order; an exception
    is raised, the first in ``items``' order, once every call has ended (as ThreadPoolExecutor.map and
    shutdown(wait=True) would). Plain threads: concurrent.futures costs ~6 ms of imports (logging) per start."""
    todo = list(items)
    if len(todo) <= 1:  # no thread for one call (what a thread costs, ~0.3 ms with its start and join, buys nothing)
        return [fn(x) for x in todo]
    results: List[Any] = [None] * len(todo)
    errors: List[Optional[BaseException]] = [None] * len(todo)
    pending = iter(range(len(todo)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            try:
                results[i] = fn(todo[i])
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                errors[i] = exc

    threads = [threading.Thread(target=work, name=f"envdoctor-probe-{n}")
               for n in range(min(len(todo), max_workers or len(todo)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for exc in errors:
        if exc is not None:
            raise exc
    return results


class ProbeUnknown(Exception):
    """The probe could not answer; its part of the snapshot stays unknown (status "unknown", a finding: ED002)."""


class ProbePartial(ProbeUnknown):
    """The probe answered in part (a cap bit, an entry could not be read): what it found is kept in the snapshot
    and the reason says what is missing (status "partial", a finding: ED002), never a plain "ok"."""


class ProbeSkipped(ProbeUnknown):
    """The probe did not look, on purpose (e.g. the Python environment of an image root): status "skipped"."""


@dataclass
class ProbeContext:
    root: Root = field(default_factory=Root)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout: float = DEFAULT_TIMEOUT
    target_python: Optional[str] = None  # --python PATH; None: the active env or this interpreter
    use_nvml: bool = True  # tests turn NVML off to exercise the file and command layers
    kernels: bool = False  # --kernels: read the environment of every Jupyter kernel's interpreter too

    _memo: dict = field(default_factory=dict, repr=False, compare=False)
    _memo_lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def runner(self) -> Runner:
        return Runner(env=self.env, timeout=self.timeout)

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """Compute a value once per probing run (probes of one stage run in threads)."""
        with self._memo_lock:
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]

    def ldconfig_p(self):
        """The live loader cache: the CmdResult of `ldconfig -p` (run once), or None on an image root."""
        if not self.root.is_live:
            return None

        def run():
            res = None
            for exe in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
                res = self.runner.run_fixed([exe, "-p"], timeout=self.timeout, reads=LD_SO_CACHE)
                if res.status != "missing":
                    break
            return res

        return self.memo("ldconfig -p", run)


ProbeFn = Callable[[ProbeContext, Snapshot], None]
LD_SO_CACHE = ("/etc/ld.so.cache",)  # what `ldconfig -p` prints: its answer is kept while this file is unchanged
