"""Binary truth: what the shared objects of an environment really carry and load.

- `elf`: section headers, DT_NEEDED, DT_RPATH / DT_RUNPATH of an ELF file (pyelftools, over an mmap);
- `fatbin`: the CUDA fat binary containers in `.nv_fatbin` (entry headers only: SASS archs, PTX targets);
- `ldcache`: the binary /etc/ld.so.cache (read, never `ldconfig`), so an image root works too;
- `loader`: the dynamic loader's search order, to say which file each DT_NEEDED soname loads;
- `compat`: NVIDIA's rules for which GPU can run which SASS / PTX, with the PTX ISA table (matrices/ptx_isa.toml);
- `scan`: one file's verdict (cached per path, size, mtime and inode under the user cache).

Nothing here reads a payload: a file costs its ELF header, its section header table, its dynamic
section and the fatbin entry headers, however large it is.
"""
from __future__ import annotations


class Unreadable(Exception):
    """A file that cannot be read as what it claims to be; the message is the reason, one line."""
