"""Observations: what a source showed, each with where it was seen.

A live machine (through the probe's Facts) and a pasted text yield the same
records; the rule set in ``kfdguard.assess.rules`` reads only these. What a
source did not show is absent (``None`` or an empty tuple), never a default
guess: the rules list it as unknown.
"""

from __future__ import annotations

from kfdguard.facts import LogEvent, ModprobeDirective
from kfdguard.record import dataclass, field


@dataclass(frozen=True, slots=True)
class Source:
    """Provenance: the command, file or log an observation came from, and the line in it."""

    what: str  # "uname -r", "ls -l", "rocminfo", "dmesg", "/sys/class/kfd/kfd/topology/nodes/1/properties"
    line: int = 0  # 1-based line of the paste or file; 0 when the source is not line-based

    def __str__(self) -> str:
        return f"{self.what} (line {self.line})" if self.line else self.what


@dataclass(frozen=True, slots=True)
class Observed:
    """One scalar observation: a fact's name, its value as shown, and where."""

    what: str  # "kernel-release", "kfd-open-error", "container", "no-user-name", "hsa-failure", ...
    value: str
    source: Source


@dataclass(slots=True)
class SeenGpu:
    """A display-class PCI device (lspci, a log line naming its ids, rocminfo's Chip ID, sysfs)."""

    vendor: int
    device: int
    source: Source
    revision: int | None = None
    slot: str | None = None  # "0000:03:00.0" when the source names it
    name: str | None = None  # as lspci or rocminfo names it


@dataclass(frozen=True, slots=True)
class SeenNode:
    """A device node as ``ls -l`` (or stat) shows it; ``mode`` None: it does not exist."""

    path: str
    mode: str | None  # "crw-rw----" (a trailing "+" for an ACL is dropped)
    owner: str | None
    group: str | None
    source: Source
    acl: bool = False  # ls -l's "+": an ACL grants more than the mode shows (udev's uaccess for the seat user)


@dataclass(frozen=True, slots=True)
class SeenAgent:
    """A GPU agent of the KFD topology (rocminfo's agent block, or a sysfs topology node)."""

    gfx: str
    source: Source
    device: int | None = None  # PCI device id (rocminfo "Chip ID", sysfs device_id)
    slot: str | None = None  # from rocminfo "BDFID" or sysfs location_id


@dataclass(frozen=True, slots=True)
class SeenUser:
    """The groups of the person whose commands the source shows (``id``, ``groups``)."""

    user: str | None
    groups: tuple[str, ...]
    source: Source


@dataclass(frozen=True, slots=True)
class SeenMessage:
    """A userspace message of a known format (``knowledge.appformats``): what it is evidence of."""

    what: str  # the format's kind: "no-code-object", "no-device", "kfd-eacces", ...
    format: str  # the format's id
    text: str  # the line, cut to 160 characters
    source: Source
    gfx: str | None = None  # the gfx target the message names
    values: tuple[tuple[str, str], ...] = ()  # other named values (path, error, supported, group...)

    def value(self, name: str) -> str | None:
        return next((v for k, v in self.values if k == name), None)


@dataclass
class Observations:
    kinds: set[str] = field(default_factory=set)  # kernel-log, rocminfo, ls, id, uname, lspci, kconfig...
    facts: list[Observed] = field(default_factory=list)
    gpus: list[SeenGpu] = field(default_factory=list)
    nodes: dict[str, SeenNode] = field(default_factory=dict)  # by path, as the source names it
    kfd: SeenNode | None = None  # the KFD node among them, where the source shows it
    user: SeenUser | None = None
    member_of: list[tuple[str, str, Source]] = field(default_factory=list)  # rocminfo's own verdicts
    not_member_of: list[tuple[str, str, Source]] = field(default_factory=list)
    agents: list[SeenAgent] = field(default_factory=list)
    kconfig: dict[str, tuple[str, Source]] = field(default_factory=dict)
    modprobe: list[ModprobeDirective] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)  # modinfo parm names
    events: list[LogEvent] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # a paste without quote markers, for claims
    # The same lines joined: rules that search the whole text share one copy (a 10 MB paste costs tens of
    # milliseconds per join). Its lower case is `lowered`, made when first asked for.
    text: str = ""
    # The distinct lines in the order they first appear, and each without its dmesg time (kernellog.untimed):
    # what a long paste's reading, its kernel-log scan and the rules' searches share (evidence/text.py).
    distinct: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    unique: list[str] = field(default_factory=list)  # the units, each once, in the order they first appear
    messages: list[SeenMessage] = field(default_factory=list)  # userspace messages of known formats
    env: list[tuple[str, str, Source]] = field(default_factory=list)  # GPU-selecting variables as set
    smi_gpus: int = 0  # GPUs a management tool (rocm-smi, amd-smi) lists: amdgpu drives them
    prose_gfx: list[tuple[str, Source]] = field(default_factory=list)  # gfx targets named in prose (RX 6600)
    # Discrete chips named by code name ("Polaris 22", "Navi 31"): their ASIC key, for what a target alone cannot
    # say (its first KFD release: gfx803 is Fiji from 4.17 and Vega M from 4.20).
    prose_asics: list[tuple[str, Source]] = field(default_factory=list)
    # The iGPU an APU's processor name implies ("Ryzen AI Max+ 395": gfx1151): weaker than a GPU's own name,
    # since the machine may compute on a discrete card beside it (knowledge/apus.py).
    cpu_gpus: list[tuple[str, Source]] = field(default_factory=list)
    nvidia: list[tuple[str, Source]] = field(default_factory=list)  # NVIDIA GPUs named anywhere
    foreign_host: Source | None = None  # a Windows/WSL/macOS host is named: no amdgpu/KFD driver there

    def saw(self, *what: str) -> list[SeenMessage]:
        return [m for m in self.messages if m.what in what]

    def first(self, what: str) -> Observed | None:
        return next((o for o in self.facts if o.what == what), None)

    def value(self, what: str) -> str | None:
        found = self.first(what)
        return found.value if found else None

    def add(self, what: str, value: str, source: Source) -> None:
        self.facts.append(Observed(what, value, source))

    @property
    def lowered(self) -> str:
        """The text in lower case, made once for the text as it is now: a long ASCII paste's rules never ask
        (they search its index, assess/claims.py), and its 10 MB are not lowered. Kept beside the fields, not
        as one: what was asked of the observations is not something they show."""
        made: tuple[str, str] | None = self.__dict__.get("_lowered_of")
        if made is None or made[0] is not self.text:
            made = self.__dict__["_lowered_of"] = (self.text, self.text.lower())
        return made[1]

    @property
    def release(self) -> str | None:
        return self.value("kernel-release")


__all__ = ["Observations", "Observed", "SeenAgent", "SeenGpu", "SeenMessage", "SeenNode", "SeenUser", "Source"]
