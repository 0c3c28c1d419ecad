"""Firmware files amdgpu asks for first and does without, each with the file it falls back to.

Kept apart from knowledge/firmware.py, which loads the generated firmware lists (and pathlib with them): the
rules read this table on every check, the boot pass's included.
"""

from __future__ import annotations

# Files amdgpu asks for first and does without, each with what it falls back to and where the driver says so.
# A failed request for one of these ("Direct firmware load for amdgpu/gc_11_0_0_mes_2.bin failed with error -2"
# on every RDNA3 GPU of a Debian 12 machine, whose firmware package predates the _2 files) is no missing
# firmware: the fallback's own failure would show as its own line. Hand-written from the driver sources below
# (the generator does not read request_firmware's call sites yet); a row is (suffix, fallback suffix, source).
FALLBACKS: tuple[tuple[str, str, str], ...] = (
    (
        "_mes_2.bin",
        "_mes.bin",
        "drivers/gpu/drm/amd/amdgpu/amdgpu_mes.c amdgpu_mes_init_microcode(): GC 11.x asks for <gc>_mes_2.bin, "
        "then 'try to fall back to' <gc>_mes.bin (upstream 97998b893c30, 6.2; in 6.1 stable since 6.1.y's backport)",
    ),
)


def fallback_of(name: str) -> str | None:
    """The file amdgpu loads when ``name`` (as the log names it, amdgpu/...) fails, if it has one."""
    for suffix, fallback, _source in FALLBACKS:
        if name.endswith(suffix):
            return name.removesuffix(suffix) + fallback
    return None
