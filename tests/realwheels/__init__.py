"""The real-wheels referee: real CUDA stacks from the package index, built once into a cache folder (stacks.py),
the real dynamic loader's record of what it opened (ldtrace.py), compared with envdoctor's loader simulation and
verdicts by tests/test_realwheels.py (marker `realwheels`)."""
