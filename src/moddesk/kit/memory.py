"""Give freed memory back to the operating system after a big piece of work is dropped."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys


def return_freed_memory() -> None:
    """Collect garbage, then ask glibc to return free heap pages (``malloc_trim``).

    CPython frees big objects to the C allocator, but glibc keeps freed arenas mapped, so a
    discarded plan of a few hundred MB would otherwise stay in the process's RSS.
    """
    gc.collect()
    if not sys.platform.startswith("linux"):
        return  # Windows and macOS allocators return large freed blocks on their own
    name = ctypes.util.find_library("c")
    if name is None:
        return
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    if trim is not None:  # musl has none
        trim(0)
