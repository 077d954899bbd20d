"""A framework whose builds are the ``[[release]]`` rows of one matrices table read by
envdoctor/knowledge/framework_tables.py (onnxruntime.py, paddle.py): the rows become :class:`Candidate` builds,
judged by the generic part of ``fits`` (platform, Python, CUDA line, driver, GPU by the build's CUDA, cuDNN).

A subclass names its table, its GPU distribution and how its install line reads; nothing else is needed for
lock, gate and check to judge it.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from packaging.version import Version

from envdoctor.frameworks.base import Candidate, FrameworkSpec, Problem, Requirement, Target, Unknown, _pin_names, _v
from envdoctor.knowledge.framework_tables import BuildRow, all_versions, build_table, row_for


class TableSpec(FrameworkSpec):
    #: matrices file ("onnxruntime.toml")
    table: str = ""
    #: the folder that holds ``table``; None: envdoctor's own matrices/ (a framework registered from outside keeps its
    #: table beside its module, and the registry fills this in)
    matrices_dir: Optional[str] = None
    #: the GPU distribution its rows describe ("onnxruntime-gpu")
    gpu_distribution: str = ""
    #: Problem keys check leaves to a rule of the framework's own where the machine has a usable NVIDIA GPU
    #: ("driver": ED681 judges onnxruntime's driver there; without a GPU, ED690 does)
    check_skips: Tuple[str, ...] = ()

    def candidate(self, row: BuildRow, version: str) -> Candidate:
        label = f"{self.gpu_distribution} {version}"
        cand = Candidate(framework=self.name, version=version, build=f"cuda{row.cuda.split('.')[0]}", kind="cuda",
                         label=label, full_version=version, cuda=row.cuda, cudnn=row.cudnn or None,
                         python=row.python_for(version), platforms=row.platforms_for(version),
                         source=f"matrices/{self.table}: {row.source}")
        cand.requirements.append(Requirement(self.requirement_text(row, version), self.requirement_note(row)))
        if row.cudnn_pin:
            name, _, spec = row.cudnn_pin.partition("~=")
            cand.pins = _pin_names({name: "~=" + spec})
        else:
            cand.pins_known = "none"
        cand.unverified.append(Unknown(f"{label}: its compiled GPU architectures are not in the data (judged by its CUDA {row.cuda})"))
        if row.unverified:
            cand.unverified.append(f"{label}: {row.verified}")
        return cand

    def requirement_text(self, row: BuildRow, version: str) -> str:
        extras = f"[{','.join(row.extras)}]" if row.extras else ""
        return f"{self.gpu_distribution}{extras}=={version}"

    def requirement_note(self, row: BuildRow) -> str:
        cudnn = row.cudnn or f"{row.cudnn_major}.x"
        if row.extras:
            return f"built for CUDA {row.cuda}, cuDNN {cudnn}; the {','.join(row.extras)} extras install the nvidia-* wheels"
        return f"needs CUDA {row.cuda.split('.')[0]}.x and cuDNN {cudnn} installed (no CUDA wheels in its requirements)"

    def candidates(self, m: Any, target: Target) -> List[Candidate]:
        """The GPU builds of the table, newest first; none for a CPU-only target (the table lists GPU wheels)."""
        if target.cpu:
            return []
        out = [self.candidate(row, v) for row in build_table(self.table, self.matrices_dir).rows for v in row.versions]
        return sorted(out, key=lambda c: Version(c.version), reverse=True)

    def own_problems(self, m: Any, cand: Candidate, target: Target) -> List[Problem]:
        """The vendor's own GPU floor, where the table states one."""
        row = next((r for r in build_table(self.table, self.matrices_dir).rows if cand.version in r.versions), None)
        probs: List[Problem] = []
        if row is not None and row.cc_min:
            for g in target.gpus:
                if _v(g.cc) < _v(row.cc_min):
                    probs.append(Problem(f"gpu:{g.cc}", f"{cand.label} needs compute capability >= {row.cc_min} "
                                         f"(GPU {g.display()})"))
        return probs

    def known_versions(self, m: Any) -> List[str]:
        return all_versions(self.table, self.matrices_dir)

    def python_specs(self, m: Any) -> List[str]:
        return sorted({r.python_for(v) for r in build_table(self.table, self.matrices_dir).rows for v in r.versions})

    def pinned_candidate(self, version: str) -> Optional[Candidate]:
        """The build a lock's ``NAME==version`` line names, or None when the table lacks the release."""
        row = row_for(self.table, version, self.matrices_dir)
        return self.candidate(row, version) if row is not None else None

    def installed_candidate(self, fw: Any, platform: str, planned: bool = False) -> Optional[Candidate]:
        """The installed CUDA build ``fw`` (a snapshot Framework) as a candidate for ``platform``: its row, with the
        CUDA / cuDNN the installed files state; a release the table lacks is judged by those files alone.
        ``planned``: not installed yet (gate's plan), so the row's platforms are judged too."""
        if fw.build != "cuda":
            return None
        row = row_for(self.table, fw.version, self.matrices_dir)
        if row is not None:
            cand = self.candidate(row, fw.version)
        elif fw.cuda_version:
            cand = Candidate(framework=self.name, version=fw.version, build="cuda", kind="cuda",
                             label=f"{fw.distribution} {fw.version}", full_version=fw.version, pins_known="none",
                             source="the installed files")
        else:
            return None
        cand.cuda = fw.cuda_version or cand.cuda
        cand.cudnn = fw.cudnn_version or cand.cudnn
        if not planned or row is None:
            cand.platforms = [platform]  # it is installed: the wheel exists for this machine
        return cand

