"""Facts about the GPUs a snapshot records, shared by the rules and the fleet report."""
from __future__ import annotations

import re
from typing import Optional

from envdoctor.snapshot import Snapshot

# the nvidia probe's disagreement between layers' GPU counts
_COUNT_RE = re.compile(r"^(.+?) lists (\d+) GPUs? but (.+?) lists (\d+) GPUs?$", re.ASCII)


def hidden_gpus(snap: Snapshot) -> Optional[str]:
    """GPUs the kernel module or PCI sees but NVML / nvidia-smi do not (the probe records the counts)."""
    for text in snap.driver.disagreements:
        m = _COUNT_RE.match(text)
        if m and int(m.group(4)) > int(m.group(2)):
            return text
    return None
