"""KFD sysfs topology: ``nodes/N/properties`` and single-number files."""

from __future__ import annotations

# Values are unsigned 64-bit (unique_id, hive_id) or small signed numbers.
_MIN, _MAX = -(2**63), 2**64 - 1


def parse_properties(text: str) -> tuple[dict[str, int], list[str]]:
    """Parse "key value" lines leniently: unknown keys are kept, bad lines reported.

    KFD ends every line with a newline (kfd_topology.c: sysfs_show_64bit_prop, "%s %llu\n"),
    so a last line without one is a cut copy's: "simd_count 2" may be what is left of
    "simd_count 24". It is reported and left out, so the value is unknown rather than wrong.
    """
    props: dict[str, int] = {}
    complaints: list[str] = []
    lines = text.splitlines(keepends=True)
    for number, ended in enumerate(lines, 1):
        line = ended.strip()
        if not line:
            continue
        if number == len(lines) and ended.splitlines() == [ended]:
            complaints.append(f"line {number}: {line[:40]!r} has no newline at its end (a cut copy?); left out")
            continue
        parts = line.split()
        if len(parts) != 2:
            complaints.append(f"line {number}: expected 'key value'")
            continue
        key, value = parts
        number_value = parse_int(value)
        if number_value is None or not key.replace("_", "").isalnum() or not key.isascii():
            complaints.append(f"line {number}: {key[:40]!r} has non-numeric value {value[:40]!r}")
            continue
        props[key] = number_value
    return props, complaints


def parse_int(text: str) -> int | None:
    """A decimal (or 0x-hex) integer in range, else None."""
    text = text.strip()
    # int() would also take "1_000"; sysfs never writes that.
    if not text or not text.isascii() or "_" in text:
        return None
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        return None
    return value if _MIN <= value <= _MAX else None
