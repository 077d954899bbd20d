"""`python -m envdoctor`.

A signal can come while Python is still importing envdoctor: Python's own SIGINT handler would then raise
KeyboardInterrupt in the middle of an import (a traceback). So before anything else is imported, a handler that
only remembers the signal goes in; envdoctor.entry.main replaces it with the real one and acts on what it
remembered. It uses the built-in _signal, not signal (which imports enum: a window of its own).
"""
import _signal  # type: ignore[import-not-found]  # (built in; typeshed has no stub for it)

if __name__ == "__main__":
    _EARLY: list = []

    def _remember(signum: int, frame: object) -> None:
        _EARLY.append(signum)

    _remember.envdoctor_early = True  # type: ignore[attr-defined]  # (entry.install_signal_handlers replaces it)
    for _name in ("SIGTERM", "SIGHUP", "SIGINT"):
        _sig = getattr(_signal, _name, None)
        # a signal the caller ignores (nohup) stays ignored
        if _sig is not None and _signal.getsignal(_sig) in (_signal.SIG_DFL, _signal.default_int_handler):
            _signal.signal(_sig, _remember)

    from envdoctor.entry import main

    main(early=_EARLY)
