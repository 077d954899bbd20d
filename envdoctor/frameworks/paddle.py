"""PaddlePaddle: ``paddlepaddle-gpu`` and the CPU-only ``paddlepaddle``.  Its builds are the rows of
matrices/paddle.toml (what the configured package index offers: CUDA 11.8 / cuDNN 8.6 builds, Paddle's GPU floor
of compute capability 3.5); the ``.postXYZ`` builds of PaddlePaddle's own indexes are recognised by the probe
(``2.6.1.post120`` -> CUDA 12.0) but are not candidates."""
from __future__ import annotations

from envdoctor.frameworks.table_spec import TableSpec


class PaddleSpec(TableSpec):
    name = "paddlepaddle"
    lock_examples = ("2.6.2", "2.6", ">=2.5,<2.7")
    table = "paddle.toml"
    gpu_distribution = "paddlepaddle-gpu"
    distributions = {"paddlepaddle-gpu": "gpu", "paddlepaddle": "cpu"}
    version_files = ("paddle/version/__init__.py",)
    version_parser = "envdoctor.parsers.assignments:simple_assignments"


SPEC = PaddleSpec()
