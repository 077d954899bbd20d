"""envdoctor: diagnose whether the GPU software stack of a machine fits together.

As a library (docs/api.md): ``envdoctor.check()``, ``probe()``, ``lock()``, ``gate()``, ``explain(rule)``,
``list_rules()`` and their result types, from envdoctor.api, which is imported when one of them is first used (the
command line never pays for it).
"""

__version__ = "0.1.0"

TYPE_CHECKING = False
if TYPE_CHECKING:  # what a type checker sees; at run time __getattr__ below loads them
    from envdoctor.api import (SCHEMA_VERSION, BadInput, EnvdoctorError, Evidence, Finding, GateReport,  # noqa: F401
                               IndexUnavailable, LockResult, NoIndexConfigured, Report, Rule, Snapshot, check,
                               explain, gate, list_rules, lock, probe)

__all__ = ["SCHEMA_VERSION", "check", "probe", "lock", "gate", "explain", "list_rules", "Report", "Finding", "Evidence",
           "GateReport", "LockResult", "Rule", "Snapshot", "EnvdoctorError", "BadInput", "IndexUnavailable",
           "NoIndexConfigured"]

# `lock` and `gate` are also the names of subpackages: importing one (as the API itself does) makes the package's
# attribute name the subpackage, so each of them is callable as the function (envdoctor.packages.call_as).
_PACKAGES = ("lock", "gate")


def __getattr__(name: str):  # -> Any (typing is not imported at every start)
    if name in _PACKAGES:
        import importlib

        return importlib.import_module(f"envdoctor.{name}")
    if name in __all__:
        from envdoctor import api

        return getattr(api, name)
    raise AttributeError(f"module 'envdoctor' has no attribute {name!r}")


def __dir__():  # -> List[str]
    return sorted(set(globals()) | set(__all__))
