"""The named sections of a PE file (a unified kernel image), read with pefile and bounded I/O.

A UKI is 30-100 MB; kfdguard needs three short texts in it (``.osrel``,
``.uname``, ``.cmdline``). pefile (erocarrera/pefile, python3-pefile in
Debian) parses the DOS header, the PE/COFF header, the optional header and
the section table (``fast_load``: no directories, imports or resources). It
indexes a whole file as bytes; kfdguard hands it a ``_Window`` instead, which
reads the file on demand through the caller's ``read(offset, size)`` (the
Reader: the one seam through which a probe sees, and a snapshot records, the
machine), in 4 KiB pages, at most ``HEADER_BUDGET`` bytes of them. What stays
here, because pefile's limits are its own and larger:

- at most 96 sections and 4 MiB per section read, systemd's own limits
  (src/shared/bootspec.c ``find_sections``/``PE_SECTION_SIZE_MAX``): a file
  costs at most 64 pages of headers plus 3 x 4 MiB whatever its headers claim;
- the section's data is ``VirtualSize`` bytes at ``PointerToRawData``, the
  first section of a name in *table* order (pefile sorts by address), as
  systemd reads it; a NUL inside the text refuses it, trailing NULs are padding;
- a section table pefile stopped reading (it gives up silently after a
  null entry or three anomalies in one entry) is refused, not half-used;
- every pefile failure becomes a ``PeError`` saying what was wrong.

A cost of the library, measured: pefile 2024.8.26 (PyPI; bookworm's 2023.2.7 does not) runs a full
``gc.collect()`` when it closes after refusing a file, ~5-20 ms in the service and up to 200 ms in a
test process holding millions of objects; a valid image costs ~1 ms. Bounded, and paid only for
malformed .efi files on the ESP, but it makes the PE fuzz campaign (make fuzz) take tens of minutes.
"""

from __future__ import annotations

import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

MAX_SECTIONS = 96
SECTION_LIMIT = 4 << 20
DOS_HEADER = 64
PAGE = 4096
HEADER_BUDGET = 64 * PAGE  # pefile's reads of the headers; a real UKI's fit in its first page


class PeError(ValueError):
    """A file that is not a PE image kfdguard can read (the text says why)."""


def read_exact(read: Callable[[int, int], bytes], offset: int, size: int, size_of_file: int, what: str) -> bytes:
    if offset < 0 or offset + size > size_of_file:
        raise PeError(f"{what} ({size} bytes at offset {offset}) runs past the end of the file ({size_of_file} bytes)")
    data = read(offset, size)
    if len(data) != size:
        raise PeError(f"{what}: short read ({len(data)} of {size} bytes at offset {offset}); the file changed?")
    return data


class _Window:
    """The file as the bytes pefile indexes (``len``, slices, single bytes), read on demand in pages."""

    def __init__(self, read: Callable[[int, int], bytes], size: int) -> None:
        self.read, self.size = read, size
        self.pages: dict[int, bytes] = {}

    def __len__(self) -> int:
        return self.size

    def _page(self, n: int) -> bytes:
        page = self.pages.get(n)
        if page is None:
            if len(self.pages) * PAGE >= HEADER_BUDGET:
                raise PeError(f"the headers reach beyond {HEADER_BUDGET} bytes of reads (offset {n * PAGE})")
            start = n * PAGE
            page = read_exact(self.read, start, min(PAGE, self.size - start), self.size, "PE headers")
            self.pages[n] = page
        return page

    def __getitem__(self, key: int | slice) -> bytes | int:
        if isinstance(key, int):
            at = key + self.size if key < 0 else key
            if not 0 <= at < self.size:
                raise IndexError(key)
            return self._page(at // PAGE)[at % PAGE]
        start, stop, step = key.indices(self.size)
        if step != 1:
            raise PeError("pefile asked for a strided slice")
        if stop <= start:
            return b""
        first, last = start // PAGE, (stop - 1) // PAGE
        if (last - first + 1) * PAGE > HEADER_BUDGET:
            raise PeError(f"a header region of {stop - start} bytes at offset {start}")
        data = b"".join(self._page(n) for n in range(first, last + 1))
        return data[start - first * PAGE : stop - first * PAGE]


def _parse(read: Callable[[int, int], bytes], size_of_file: int) -> list[tuple[bytes, int, int]]:
    """(name, VirtualSize, PointerToRawData) of every section, in section-table order."""
    # Imported here: 20 ms that only a machine with unified kernel images pays, not every boot pass.
    import pefile

    window = _Window(read, size_of_file)
    _count_before_pefile(window, size_of_file)
    try:
        image = pefile.PE(data=window, fast_load=True)
    except pefile.PEFormatError as exc:
        raise PeError(f"not a PE image: {exc.value} (pefile, on a file of {size_of_file} bytes)") from None
    except (struct.error, ValueError, OverflowError, IndexError, AttributeError, TypeError) as exc:
        if isinstance(exc, PeError):
            raise
        raise PeError(f"malformed PE headers: {exc}") from None
    count = int(image.FILE_HEADER.NumberOfSections)
    if count > MAX_SECTIONS:
        raise PeError(f"{count} sections, more than the {MAX_SECTIONS} systemd accepts")
    found = sorted(image.sections, key=lambda s: s.get_file_offset())
    if len(found) < count:
        why = next((w for w in reversed(image.get_warnings()) if "section" in w.lower()), "no reason given")
        raise PeError(f"section table of {count} entries: pefile read {len(found)} of them ({why})")
    return [(bytes(s.Name).rstrip(b"\0"), int(s.Misc_VirtualSize), int(s.PointerToRawData)) for s in found]


def _count_before_pefile(window: _Window, size_of_file: int) -> None:
    """systemd's section limit, checked before pefile parses: pefile reads up to 2048 section headers
    (its own MAX_SECTIONS), ~50 us each, before the count could be refused after it. Only the count is
    read here (e_lfanew, then NumberOfSections in the COFF header); pefile parses everything else."""
    head = window[0:DOS_HEADER]
    assert isinstance(head, bytes)
    if head[:2] != b"MZ":
        return  # pefile says what is wrong
    (pe_at,) = struct.unpack_from("<I", head, 0x3C)
    if pe_at + 8 > size_of_file:
        return
    field = window[pe_at + 6 : pe_at + 8]
    assert isinstance(field, bytes)
    (count,) = struct.unpack("<H", field)
    if count > MAX_SECTIONS:
        raise PeError(f"{count} sections, more than the {MAX_SECTIONS} systemd accepts")


def sections(read: Callable[[int, int], bytes], size_of_file: int, wanted: Iterable[str]) -> dict[str, str]:
    """The text of each ``wanted`` section present (the first one of a name), by name."""
    names = {name.encode("ascii") for name in wanted}
    if any(len(n) > 8 for n in names):
        raise ValueError("PE section names are at most 8 bytes")
    if size_of_file < DOS_HEADER:
        raise PeError(f"truncated: {size_of_file} bytes, shorter than a DOS header")
    found: dict[str, str] = {}
    for raw_name, virtual_size, pointer in _parse(read, size_of_file):
        if raw_name not in names or raw_name.decode("ascii") in found:
            continue
        name = raw_name.decode("ascii")
        if virtual_size > SECTION_LIMIT:
            raise PeError(f"section {name} is {virtual_size} bytes, more than {SECTION_LIMIT}")
        data = read_exact(read, pointer, virtual_size, size_of_file, f"section {name}").rstrip(b"\0")
        if b"\0" in data:
            raise PeError(f"section {name} holds a NUL byte inside its text")
        found[name] = data.decode("utf-8", errors="replace")
    return found
