"""envdoctor: diagnose whether the GPU software stack of a machine fits together."""

__version__ = "0.1.0"
