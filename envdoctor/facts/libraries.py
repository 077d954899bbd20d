"""Which CUDA libraries a framework really loads: first, whether an extra of its Requires-Dist is in effect.

A pin under `extra == 'and-cuda'` (TensorFlow), `extra == 'with-cuda'` (jax plugins) or `extra == 'cuda12'`
names a wheel the framework loads only when that extra was installed. A package of the same name being present
proves nothing on its own: another framework's own pins may have put it there (torch pins nvidia-cudnn-cu12, so a
TensorFlow 2.15 on the system CUDA 12.2 + cuDNN 8.9.7 next to torch is not "TensorFlow using cuDNN 9.1").

An extra counts as installed when a package that only that extra names (no other installed framework requires it)
is installed, and as not installed when none of those is; when every package of the extra is also required
elsewhere, nothing tells (None: each pin is then judged by its package being present, as before).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional


def extra_in_effect(pins: Iterable, extra: str, pkgs: Dict[str, str], others: Iterable) -> Optional[bool]:
    """Is `extra` of the framework whose parsed pins are `pins` installed? `others`: the pins (Pin objects) of
    every other installed framework distribution (their own requirements may explain a package)."""
    mine = [p for p in pins if p.extra == extra]
    if not mine:
        return False
    elsewhere = {p.name for p in others if p.extra is None or p.name in pkgs}
    exclusive = [p for p in mine if p.name not in elsewhere]
    if any(p.name in pkgs for p in exclusive):
        return True
    if exclusive:
        return False  # what only this extra would have installed is absent
    return None


def extras_in_effect(fw, snap, frameworks: List) -> Dict[str, Optional[bool]]:
    """{extra: installed?} for every extra the framework's Requires-Dist names here."""
    from envdoctor.rules.cudnn_pins import packages, parse_pins

    pkgs = packages(snap)
    pins = parse_pins(fw, snap)
    others = [p for o in frameworks if o is not fw and o.distribution != fw.distribution for p in parse_pins(o, snap)]
    return {e: extra_in_effect(pins, e, pkgs, others) for e in sorted({p.extra for p in pins if p.extra})}
