"""What can be read out of text people paste into bug reports.

A paste mixes kinds: dmesg or journalctl output, rocminfo, ``ls -l
/dev/kfd``, ``id``/``groups``, ``uname -r``/``-a``, ``modinfo``, ``lspci -nn``,
kernel config fragments and diffs, modprobe.d lines, and often quoted with
``> ``. Each extractor looks for its own shapes and ignores the rest.
"""

from __future__ import annotations

import re

from kfdguard.facts import LogEvent, ModprobeDirective
from kfdguard.kernellog import scan
from kfdguard.parsers.kconfig import parse_kconfig
from kfdguard.parsers.modprobe import parse_modprobe_conf
from kfdguard.record import dataclass, field

_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_PROMPT = re.compile(r"^(?:\S+@\S+:[^$#]*[$#]|[$#])\s*")
_RELEASE = re.compile(r"^\d+\.\d+(?:\.\d+)?[-+][\w.+~-]+$")
_UNAME_A = re.compile(r"^Linux \S+ (?P<release>\d+\.\d+\S*) #")
_LINUX_VERSION = re.compile(r"Linux version (?P<release>\d+\.\d+\S*)")
_MODULES_DIR = re.compile(r"/lib/modules/(?P<release>\d+\.\d+[^/\s]*)")
_OS_DRM = re.compile(r"OS DRM version: (?P<release>\d+\.\d+(?:\.\d+)?)")
_LSPCI = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) "
    r"(?:VGA compatible controller|Display controller|3D controller)(?: \[03[0-9a-fA-F]{2}\])?: "
    r"(?P<name>.*?)\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\](?: \(rev (?P<rev>[0-9a-fA-F]{2})\))?"
)
_LS = re.compile(
    r"^(?P<mode>[cbdlps-][rwxsStT-]{9})[+.@]?\s+\d+\s+(?P<owner>\S+)\s+(?P<group>\S+)\s+"
    r"(?P<major>\d+),\s*(?P<minor>\d+)\s+.*?(?P<path>/dev/(?:kfd|dri/renderD\d+))\s*$"
)
_LS_MISSING = re.compile(r"cannot access '?(?P<path>/dev/(?:kfd|dri/renderD\d+))'?: No such file or directory")
_ID = re.compile(r"uid=(?P<uid>\d+)\((?P<user>[^)]+)\) gid=\d+\([^)]*\)(?: groups=(?P<groups>\S+))?")
_GROUPS_OF = re.compile(r"^(?P<user>[a-z_][\w.-]*) : (?P<groups>[\w.-]+(?: [\w.-]+)*)$")
_ROCK = re.compile(r"ROCk module (?:version (?P<version>\S+) )?is (?P<state>loaded|NOT loaded|NOT live)")
_OPEN_KFD = re.compile(r"Unable to open /dev/kfd read-write: (?P<error>.+)$")
_MEMBER = re.compile(r"(?P<user>\S+) is member of (?P<group>\S+) group")
_NOT_MEMBER = re.compile(r"(?P<user>\S+) is not member of \"(?P<group>[^\"]+)\" group")
_NO_USER = re.compile(r"Failed to get user name to check for (?P<group>\S+) group membership")
_AGENT_GFX = re.compile(r"^\s*Name:\s+(?P<gfx>gfx[0-9a-f]{3,4})\s*$")
_MARKETING = re.compile(r"^\s*Marketing Name:\s+(?P<name>.+?)\s*$")
_HSA_FAIL = re.compile(r"HSA_STATUS_ERROR_\w+|hsa api call failure")
_MODINFO_PARM = re.compile(r"^parm:\s+(?P<name>\w+):")
_MODINFO_FILE = re.compile(r"^filename:\s+(?P<path>\S+/(?P<module>amdgpu|amdkfd)\.ko\S*)")
_MODINFO_VERSION = re.compile(r"^version:\s+(?P<version>\S+)")
_CONTAINER = re.compile(
    r"root@[0-9a-f]{12}:|/\.dockerenv|\bdocker (?:run|exec)\b|\bpodman\b|\bapptainer\b|\bsingularity\b"
)
_MODPROBE_KINDS = ("options ", "softdep ", "install ", "blacklist ", "alias ", "remove ")


@dataclass
class PastedGpu:
    vendor: int
    device: int
    revision: int | None = None
    slot: str | None = None
    name: str | None = None  # as lspci or rocminfo names it


@dataclass
class KfdNode:
    path: str
    mode: str | None  # "crw-rw----"; None when missing
    owner: str | None = None
    group: str | None = None


@dataclass
class TextFacts:
    kinds: set[str] = field(default_factory=set)
    release: str | None = None
    release_from: str | None = None
    gpus: list[PastedGpu] = field(default_factory=list)
    nodes: dict[str, KfdNode] = field(default_factory=dict)
    user: str | None = None
    groups: list[str] | None = None
    rocm_module: str | None = None  # loaded / NOT loaded / NOT live
    open_error: str | None = None
    member_of: list[tuple[str, str]] = field(default_factory=list)
    not_member_of: list[tuple[str, str]] = field(default_factory=list)
    no_user_name: bool = False
    agents: list[str] = field(default_factory=list)  # gfx names of rocminfo GPU agents
    hsa_failure: bool = False
    kconfig: dict[str, str] = field(default_factory=dict)
    modprobe: list[ModprobeDirective] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)  # modinfo parm names
    module_file: str | None = None
    module_version: str | None = None
    container: bool = False
    events: list[LogEvent] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the paste without quote markers


def _add_gpu(facts: TextFacts, gpu: PastedGpu) -> None:
    for known in facts.gpus:
        if (
            known.device == gpu.device
            and known.vendor == gpu.vendor
            and (known.slot is None or gpu.slot is None or known.slot == gpu.slot)
        ):
            known.slot = known.slot or gpu.slot
            known.revision = known.revision if known.revision is not None else gpu.revision
            known.name = known.name or gpu.name
            return
    facts.gpus.append(gpu)


def _set_release(facts: TextFacts, release: str, source: str, strength: int) -> None:
    rank = {"uname": 3, "log": 2, "modules": 1, "drm": 0}
    if facts.release is None or strength > rank.get(facts.release_from or "", -1):
        facts.release, facts.release_from = release, source


def extract(text: str) -> TextFacts:
    facts = TextFacts()
    raw_lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [_QUOTE.sub("", line).rstrip() for line in raw_lines]
    facts.lines = lines
    previous = ""
    kconfig_lines: list[str] = []
    modprobe_lines: list[str] = []
    for line in lines:
        bare = (
            _PROMPT.sub("", line.strip()) if re.match(r"^(?:\S+@\S+:[^$#]*[$#]|[$#])\s", line.strip()) else line.strip()
        )
        if _CONTAINER.search(line):
            facts.container = True
        m = _UNAME_A.match(bare)
        if m:
            _set_release(facts, m["release"], "uname", 3)
            facts.kinds.add("uname")
        elif _RELEASE.match(bare) and ("uname" in previous or "-" in bare):
            _set_release(facts, bare, "uname", 3)
            facts.kinds.add("uname")
        m = _LINUX_VERSION.search(bare)
        if m:
            _set_release(facts, m["release"], "log", 2)
        m = _MODULES_DIR.search(bare)
        if m:
            _set_release(facts, m["release"], "modules", 1)
        m = _OS_DRM.search(bare)
        if m:
            _set_release(facts, m["release"], "drm", 0)
        m = _LSPCI.match(bare)
        if m:
            facts.kinds.add("lspci")
            slot = f"{m['domain'] or '0000'}:{m['bdf']}".lower()
            _add_gpu(
                facts,
                PastedGpu(
                    int(m["vendor"], 16),
                    int(m["device"], 16),
                    int(m["rev"], 16) if m["rev"] else None,
                    slot,
                    m["name"].strip(),
                ),
            )
        m = _LS.match(bare)
        if m:
            facts.kinds.add("ls")
            facts.nodes[m["path"]] = KfdNode(m["path"], m["mode"], m["owner"], m["group"])
        m = _LS_MISSING.search(bare)
        if m:
            facts.kinds.add("ls")
            facts.nodes[m["path"]] = KfdNode(m["path"], None)
        m = _ID.search(bare)
        if m:
            facts.kinds.add("id")
            facts.user = m["user"]
            facts.groups = re.findall(r"\d+\(([^)]+)\)", m["groups"] or "")
        m = _GROUPS_OF.match(bare)
        if m and not bare.startswith(("options", "softdep")):
            facts.kinds.add("groups")
            facts.user, facts.groups = m["user"], m["groups"].split()
        elif previous.rstrip().endswith("groups") and re.fullmatch(r"[\w.-]+(?: [\w.-]+)*", bare or "-"):
            facts.kinds.add("groups")
            facts.groups = bare.split()
        m = _ROCK.search(bare)
        if m:
            facts.kinds.add("rocminfo")
            facts.rocm_module = m["state"]
        m = _OPEN_KFD.search(bare)
        if m:
            facts.kinds.add("rocminfo")
            facts.open_error = m["error"].strip()
        m = _MEMBER.search(bare)
        if m:
            facts.member_of.append((m["user"], m["group"]))
        m = _NOT_MEMBER.search(bare)
        if m:
            facts.not_member_of.append((m["user"], m["group"]))
        if _NO_USER.search(bare):
            facts.no_user_name = True
        m = _AGENT_GFX.match(line)
        if m:
            facts.kinds.add("rocminfo")
            facts.agents.append(m["gfx"])
        if _HSA_FAIL.search(bare):
            facts.hsa_failure = True
        m = _MODINFO_FILE.match(bare)
        if m:
            facts.kinds.add("modinfo")
            facts.module_file = m["path"]
        m = _MODINFO_PARM.match(bare)
        if m:
            facts.kinds.add("modinfo")
            facts.declared.append(m["name"])
        m = _MODINFO_VERSION.match(bare)
        if m and "modinfo" in facts.kinds:
            facts.module_version = m["version"]
        config_line = bare.lstrip("+-").strip() if bare[:1] in "+-" and "CONFIG_" in bare else bare
        # In a diff, "-" lines are the old state: only the new one counts.
        if config_line.startswith(("CONFIG_", "# CONFIG_")) and not bare.startswith("-"):
            kconfig_lines.append(config_line)
        if bare.startswith(_MODPROBE_KINDS):
            modprobe_lines.append(bare)
        previous = bare
    if kconfig_lines:
        facts.kinds.add("kconfig")
        facts.kconfig, _ = parse_kconfig("\n".join(kconfig_lines))
    if modprobe_lines:
        directives, _ = parse_modprobe_conf("\n".join(modprobe_lines), "(pasted)")
        if directives:
            facts.kinds.add("modprobe")
            facts.modprobe = directives
    _, events = scan(lines, source="paste")
    facts.events = events
    if events:
        facts.kinds.add("kernel-log")
    for e in events:
        ids = e.ids
        event_slot = e.device if e.device and e.device != "kfd" else None
        if ids and ids[0] == 0x1002:
            _add_gpu(facts, PastedGpu(ids[0], ids[1], slot=event_slot))
    return facts
