"""Observations read out of text people paste into bug reports.

A paste mixes kinds: dmesg or journalctl output, rocminfo, ``ls -l
/dev/kfd /dev/dri``, ``id``/``groups``, ``uname -r``/``-a``, ``modinfo``,
``lspci -nn``, kernel config fragments and diffs, modprobe.d lines, often
quoted with ``> ``. Each extractor looks for its own shapes on one line and
ignores the rest; every observation carries the line it came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import compress, count, repeat
from operator import contains, is_not, ne, not_

from kfdguard.evidence.model import Observations, SeenAgent, SeenGpu, SeenMessage, SeenNode, SeenUser, Source
from kfdguard.evidence.repl import joined_answers
from kfdguard.facts import LogEvent
from kfdguard.kernellog import PREFILTER, SMALL, match, scan, scan_distinct, untimed
from kfdguard.knowledge import appformats, apus
from kfdguard.parsers.kconfig import parse_kconfig
from kfdguard.parsers.modprobe import parse_modprobe_conf
from kfdguard.record import dataclass, field

_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_PROMPT = re.compile(r"^(?:\S+@\S+:[^$#]*[$#]|[$#])\s")
_PROMPT_SUB = re.compile(r"^(?:\S+@\S+:[^$#]*[$#]|[$#])\s*")
_RELEASE = re.compile(r"^\d+\.\d+(?:\.\d+)?[-+][\w.+~-]+$")
# A release line that no "uname" names is taken for the kernel's only in a kernel's numbering (Linux 2.x to 9.x):
# a program's version alone on a line ("0.3.13-1" under an issue form's "Ollama version") is not one.
_KERNEL_MAJOR = re.compile(r"^[2-9]\.")
_UNAME_A = re.compile(r"^Linux \S+ (?P<release>\d+\.\d+\S*) #")
_LINUX_VERSION = re.compile(r"Linux version (?P<release>\d+\.\d+\S*)")
_MODULES_DIR = re.compile(r"/lib/modules/(?P<release>\d+\.\d+[^/\s]*)")
_DMESG_TIME = re.compile(r"^\[\s*\d+\.\d{6}\] ")
# The start of a kernel log line in any shape a wrapped paste's first piece has: dmesg's time, dmesg -T's
# date, journalctl's or syslog's "DATE TIME host kernel: " (short, ISO), `journalctl -o verbose`'s indented
# "MESSAGE=" field.
_LOG_LINE_START = re.compile(
    r"^(?:\[\s*\d+\.\d{6}\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] "
    r"|(?:[A-Z][a-z]{2} +\d{1,2} |\d{4}-\d\d-\d\dT)\d\d:\d\d:\d\d\S* \S+ kernel: |    MESSAGE="
    # a device's line without a time (dev_printk's "<driver> <PCI address>: "), as a mail or a form quotes it
    r"|amdgpu [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: )"
)
_OS_DRM = re.compile(r"OS DRM version: (?P<release>\d+\.\d+(?:\.\d+)?)")
_LSPCI = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) "
    r"(?:VGA compatible controller|Display controller|3D controller)(?: \[03[0-9a-fA-F]{2}\])?: "
    r"(?P<name>.*?)\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\](?: \(rev (?P<rev>[0-9a-fA-F]{2})\))?"
)
# lspci without -nn, and lshw (whose field names are localised: product, Produkt, produit...): the
# name alone, which pci.ids maps back to the device id when it is exactly one of its names.
_LSPCI_NAMED = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) "
    r"(?:VGA compatible controller|Display controller|3D controller): Advanced Micro Devices, Inc\. \[AMD/ATI\] "
    r"(?P<name>[^\[\n]+?(?: \[[^\]]+\])?)(?: \(rev (?P<rev>[0-9a-fA-F]{2})\))?$"
)
_LSHW_PRODUCT = re.compile(r"^(?:product|Produkt|produit|producto|prodotto|produto): (?P<name>.+?)\s*$")
_LSHW_BUS = re.compile(r"^(?:bus info|Bus-Informationen|informations bus|info bus): pci@(?P<slot>[0-9a-f:.]+)$")
# "ls -l" of a character device: mode, links, owner, group, "major, minor" (minor right-aligned), date, name.
_LS = re.compile(
    r"^(?P<mode>[cbdlps-][rwxsStT-]{9})(?P<acl>[+.@]?)\s+\d+\s+(?P<owner>\S+)\s+(?P<group>\S+)\s+"
    r"(?P<major>\d+),\s*(?P<minor>\d+)\s+.*?(?P<path>(?:/dev/)?(?:kfd|dri/renderD\d+|renderD\d+))\s*$"
)
_LS_DIR = re.compile(r"^(?P<dir>/dev/dri):$")
_LS_MISSING = re.compile(r"cannot access '?(?P<path>/dev/(?:kfd|dri/renderD\d+))'?: No such file or directory")
_ID = re.compile(r"uid=(?P<uid>\d+)\((?P<user>[^)]+)\) gid=\d+\([^)]*\)(?: groups=(?P<groups>\S+))?")
_GROUPS_OF = re.compile(r"^(?P<user>[a-z_][\w.-]*) : (?P<groups>[\w.-]+(?: [\w.-]+)*)$")
_ROCK = re.compile(r"ROCk module (?:version (?P<version>\S+) )?is (?P<state>loaded|NOT loaded|NOT live)")
_OPEN_KFD = re.compile(r"Unable to open /dev/kfd read-write: (?P<error>.+)$")
# rocminfo's line after a successful open (rocminfo.cc CheckInitialState): KFD is up, whatever its module check said.
_OPENED_KFD = re.compile(r"(?<![\w])Able to open /dev/kfd read-write\b")
_MEMBER = re.compile(r"(?P<user>\S+) is member of (?P<group>\S+) group")
_NOT_MEMBER = re.compile(r"(?P<user>\S+) is not member of \"(?P<group>[^\"]+)\" group")
_NO_USER = re.compile(r"Failed to get user name to check for (?P<group>\S+) group membership")
_AGENT_START = re.compile(r"^Agent \d+$")
_AGENT_FIELD = re.compile(r"^\s+(?P<key>Name|Marketing Name|Device Type|Chip ID|BDFID):\s+(?P<value>.*?)\s*$")
_HSA_FAIL = re.compile(r"HSA_STATUS_ERROR_\w+|hsa api call failure")
_MODINFO_PARM = re.compile(r"^parm:\s+(?P<name>\w+):")
_MODINFO_FILE = re.compile(r"^filename:\s+(?P<path>\S+/(?P<module>amdgpu|amdkfd)\.ko\S*)")
_MODINFO_VERSION = re.compile(r"^version:\s+(?P<version>\S+)")
_CONTAINER = re.compile(
    r"root@[0-9a-f]{12}:|/\.dockerenv|\bdocker (?:run|exec)\b|\bpodman\b|\bapptainer\b|\bsingularity\b"
)
_CONTAINER_CUES = ("root@", "dockerenv", "docker ", "podman", "apptainer", "singularity")
_NOT_SET = re.compile(r"^[+-]?# CONFIG_\w+ is not set$")
_MODPROBE_KINDS = ("options ", "softdep ", "install ", "blacklist ", "alias ", "remove ")
LineMatch = Callable[[str], re.Match[str] | None]
# Which source of the kernel release wins when a paste shows several.
_RELEASE_RANK = {"uname": 3, "log": 2, "modules": 1, "form": 1, "drm": 0}
# A release under a label, as issue forms and system summaries write it: "- Kernel : 4.15.0-29deepin-generic",
# "Kernel version: 6.8.0-45-generic", "**Kernel**: 6.12.9". A program's version has its own label.
_KERNEL_LABEL = re.compile(
    r"^\W{0,4}kernel(?:\s+(?:version|release))?\W{0,4}\s*:\s*[`*]*(?:linux\s+)?(?P<release>[2-7]\.\d+[\w.+~-]*)[`*]*\s*$",
    re.I,
)


class _Line:
    """The line the extractors look at (one object, refilled per line: a record per line costs more
    than most extractors)."""

    __slots__ = ("bare", "lowered", "number", "raw")

    def __init__(self, raw: str, bare: str, number: int) -> None:
        self.raw = raw  # without quote markers
        self.bare = bare  # also without a shell prompt
        self.number = number
        self.lowered = ""  # raw.lower(), filled only for the extractors that need it


@dataclass
class _State:
    previous: str = ""
    directory: str | None = None  # the directory ls is listing ("/dev/dri:" header)
    agent: dict[str, str] | None = None  # fields of the rocminfo agent block being read
    agent_line: int = 0
    kconfig: list[str] = field(default_factory=list)
    kconfig_old: list[str] = field(default_factory=list)  # a diff's "-" lines: how the machine was
    modprobe: list[str] = field(default_factory=list)
    smi: bool = False  # inside rocm-smi's banner block


def _add_gpu(obs: Observations, gpu: SeenGpu) -> None:
    for known in obs.gpus:
        if (
            known.device == gpu.device
            and known.vendor == gpu.vendor
            and (known.slot is None or gpu.slot is None or known.slot == gpu.slot)
        ):
            known.slot = known.slot or gpu.slot
            known.revision = known.revision if known.revision is not None else gpu.revision
            known.name = known.name or gpu.name
            return
    obs.gpus.append(gpu)


def _set_release(obs: Observations, release: str, how: str, number: int) -> None:
    current = obs.first("kernel-release")
    if current is None or _RELEASE_RANK[how] > _RELEASE_RANK.get(current.source.what, -1):
        obs.facts = [o for o in obs.facts if o.what != "kernel-release"]
        obs.add("kernel-release", release, Source(how, number))


def _release(obs: Observations, line: _Line, state: _State) -> None:
    bare = line.bare
    if "kernel-log" not in obs.kinds and (_DMESG_TIME.match(bare) or bare.startswith("Linux version ")):
        # A kernel log, even one without a line about amdgpu or KFD: what it lacks says something.
        obs.kinds.add("kernel-log")
    if not (
        "uname" in state.previous
        or "Linux" in bare
        or "/lib/modules/" in bare
        or "DRM version" in bare
        or bare[:1].isdigit()
        or "ernel" in bare[:12]
    ):
        return
    labelled = _KERNEL_LABEL.match(bare) if "ernel" in bare[:12] else None
    if labelled:
        _set_release(obs, labelled["release"], "form", line.number)
    m = _UNAME_A.match(bare)
    if m:
        _set_release(obs, m["release"], "uname", line.number)
        obs.kinds.add("uname")
    elif _RELEASE.match(bare) and ("uname" in state.previous or ("-" in bare and _KERNEL_MAJOR.match(bare))):
        _set_release(obs, bare, "uname", line.number)
        obs.kinds.add("uname")
    for pattern, how in ((_LINUX_VERSION, "log"), (_MODULES_DIR, "modules"), (_OS_DRM, "drm")):
        m = pattern.search(bare)
        if m:
            _set_release(obs, m["release"], how, line.number)


def _lspci(obs: Observations, line: _Line, state: _State) -> None:
    m = _LSPCI.match(line.bare) if "ontroller" in line.bare else None
    if not m:
        return
    obs.kinds.add("lspci")
    slot = f"{m['domain'] or '0000'}:{m['bdf']}".lower()
    revision = int(m["rev"], 16) if m["rev"] else None
    source = Source("lspci", line.number)
    _add_gpu(obs, SeenGpu(int(m["vendor"], 16), int(m["device"], 16), source, revision, slot, m["name"].strip()))


_NAMES: dict[str, int] = {}  # pci.ids name -> device id, filled on first use


def _device_named(name: str) -> int | None:
    """The PCI device id whose pci.ids name is exactly this (the lowest, where several share it)."""
    if not _NAMES:
        from kfdguard.knowledge.generated import PCI_NAMES

        for device, known in sorted(PCI_NAMES.items()):
            _NAMES.setdefault(known, device)
    return _NAMES.get(name)


def _named_gpu(obs: Observations, line: _Line, state: _State) -> None:
    """A GPU named without its ids: lspci without -nn, lshw's product line."""
    bare = line.bare
    m = _LSPCI_NAMED.match(bare) if "[AMD/ATI]" in bare else None
    if m is None and "rodu" not in bare:
        return
    if m and "[1002:" not in bare:
        device = _device_named(m["name"].strip())
        if device is not None:
            obs.kinds.add("lspci")
            slot = f"{m['domain'] or '0000'}:{m['bdf']}".lower()
            revision = int(m["rev"], 16) if m["rev"] else None
            _add_gpu(obs, SeenGpu(0x1002, device, Source("lspci", line.number), revision, slot, m["name"].strip()))
        return
    m = _LSHW_PRODUCT.match(bare) if ": " in bare else None
    if m:
        device = _device_named(m["name"])
        if device is not None:
            obs.kinds.add("lshw")
            _add_gpu(obs, SeenGpu(0x1002, device, Source("lshw", line.number), name=m["name"]))


def _node(obs: Observations, node: SeenNode) -> None:
    obs.nodes[node.path] = node
    if node.path == "/dev/kfd":
        obs.kfd = node


def _ls(obs: Observations, line: _Line, state: _State) -> None:
    bare = line.bare
    if not ("kfd" in bare or "renderD" in bare or "/dev/dri" in bare):
        return
    m = _LS_DIR.match(bare)
    if m:
        state.directory = m["dir"]
        return
    m = _LS.match(bare)
    if m:
        path = m["path"]
        if not path.startswith("/dev/"):
            # Inside "ls -l /dev/dri" the entries are bare names; the "/dev/dri:" header says where.
            if state.directory is None and path.startswith("renderD"):
                return
            path = f"{state.directory or '/dev'}/{path.removeprefix('dri/')}"
        obs.kinds.add("ls")
        source = Source("ls -l", line.number)
        _node(obs, SeenNode(path, m["mode"], m["owner"], m["group"], source, m["acl"] == "+"))
        return
    m = _LS_MISSING.search(bare)
    if m:
        obs.kinds.add("ls")
        _node(obs, SeenNode(m["path"], None, None, None, Source("ls -l", line.number)))


def _groups(obs: Observations, line: _Line, state: _State) -> None:
    bare = line.bare
    if not ("uid=" in bare or " : " in bare or state.previous.endswith("groups")):
        return
    m = _ID.search(bare)
    if m:
        obs.kinds.add("id")
        groups = tuple(re.findall(r"\d+\(([^)]+)\)", m["groups"] or ""))
        obs.user = SeenUser(m["user"], groups, Source("id", line.number))
        return
    m = _GROUPS_OF.match(bare)
    if m and not bare.startswith(("options", "softdep")):
        obs.kinds.add("groups")
        obs.user = SeenUser(m["user"], tuple(m["groups"].split()), Source("groups", line.number))
    elif state.previous.rstrip().endswith("groups") and re.fullmatch(r"[\w.-]+(?: [\w.-]+)*", bare or "-"):
        obs.kinds.add("groups")
        user = obs.user.user if obs.user else None
        obs.user = SeenUser(user, tuple(bare.split()), Source("groups", line.number))


def _rocminfo_done(obs: Observations, line: _Line, state: _State) -> None:
    """rocminfo's last line: the agent list above it is whole. Without it a paste may stop after the CPU
    agent, and no GPU agent shown proves no absence (issue 34). Before _rocminfo, which then finds no
    agent open and nothing of its own on the line."""
    if line.bare[:12] == "*** Done ***":
        _finish_agent(obs, state)
        obs.add("rocminfo-done", "yes", Source("rocminfo", line.number))


def _rocminfo(obs: Observations, line: _Line, state: _State) -> None:
    bare = line.bare
    if ":" in bare or "Agent" in bare or state.agent is not None:
        _agent_block(obs, line, state)
    if not (
        "ROCk" in bare
        or "Unable to open" in bare
        or "Able to open" in bare
        or " member of " in bare
        or "user name" in bare
        or "hsa" in bare
        or "HSA" in bare
    ):
        return
    source = Source("rocminfo", line.number)
    m = _ROCK.search(bare)
    if m:
        obs.kinds.add("rocminfo")
        obs.add("rock-module", m["state"], source)
    _kfd_open(obs, bare, source)
    if " member of " in bare:  # both patterns start with \S+, slow to search on every line
        m = _MEMBER.search(bare)
        if m:
            obs.member_of.append((m["user"], m["group"], source))
        m = _NOT_MEMBER.search(bare)
        if m:
            obs.not_member_of.append((m["user"], m["group"], source))
    if "user name" in bare and _NO_USER.search(bare):
        obs.add("no-user-name", "yes", source)
    if _HSA_FAIL.search(bare):
        obs.add("hsa-failure", bare[:160], source)


def _kfd_open(obs: Observations, bare: str, source: Source) -> None:
    """rocminfo's open of /dev/kfd: its error, or its success (which outweighs its module check)."""
    m = _OPEN_KFD.search(bare) if "Unable to open" in bare else None
    if m:
        obs.kinds.add("rocminfo")
        obs.add("kfd-open-error", m["error"].strip(), source)
    if "Able to open" in bare and _OPENED_KFD.search(bare):
        obs.kinds.add("rocminfo")
        obs.add("kfd-opened", "read-write", source)


def _agent_block(obs: Observations, line: _Line, state: _State) -> None:
    """rocminfo's "Agent N" blocks: Name (the gfx target on GPUs), Chip ID (PCI device id), BDFID."""
    if line.bare == "HSA Agents":
        obs.add("rocminfo-agents", "listed", Source("rocminfo", line.number))
        return
    if _AGENT_START.match(line.bare):
        _finish_agent(obs, state)
        state.agent, state.agent_line = {}, line.number
        return
    m = _AGENT_FIELD.match(line.raw)
    if m:
        if state.agent is None:
            state.agent, state.agent_line = {}, line.number
        # The ISA block repeats "Name:" deeper down (amdgcn-amd-amdhsa--gfx1030): keep the agent's own.
        state.agent.setdefault(m["key"], m["value"])


def _finish_agent(obs: Observations, state: _State) -> None:
    agent, state.agent = state.agent, None
    if not agent:
        return
    gfx = agent.get("Name", "")
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}", gfx) or agent.get("Device Type", "GPU") != "GPU":
        return
    obs.kinds.add("rocminfo")
    chip = re.match(r"\d+", agent.get("Chip ID", ""))
    device = int(chip[0]) if chip and 0 < int(chip[0]) <= 0xFFFF else None
    bdf = re.fullmatch(r"\d+", agent.get("BDFID", ""))
    slot = None
    if bdf and 0 < int(bdf[0]) <= 0xFFFF:
        # BDFID is bus << 8 | device << 3 | function (rocminfo; HSA_AMD_AGENT_INFO_BDFID).
        value = int(bdf[0])
        slot = f"0000:{value >> 8:02x}:{(value >> 3) & 0x1F:02x}.{value & 0x7}"
    source = Source("rocminfo", state.agent_line)
    obs.agents.append(SeenAgent(gfx, source, device, slot))
    if device is not None:
        _add_gpu(obs, SeenGpu(0x1002, device, source, slot=slot, name=agent.get("Marketing Name") or None))


def _modinfo(obs: Observations, line: _Line, state: _State) -> None:
    bare = line.bare
    if not bare.startswith(("parm:", "filename:", "version:")):
        return
    source = Source("modinfo", line.number)
    m = _MODINFO_FILE.match(bare)
    if m:
        obs.kinds.add("modinfo")
        obs.add("module-file", m["path"], source)
    m = _MODINFO_PARM.match(bare)
    if m:
        obs.kinds.add("modinfo")
        obs.declared.append(m["name"])
    m = _MODINFO_VERSION.match(bare)
    if m and "modinfo" in obs.kinds:
        obs.add("module-version", m["version"], source)


def _config_lines(obs: Observations, line: _Line, state: _State) -> None:
    if not ("CONFIG_" in line.raw or line.bare.startswith(_MODPROBE_KINDS) or _has_container_cue(line.raw)):
        return
    # "# CONFIG_X is not set" is a config line, not a root prompt followed by a command.
    bare = line.raw.strip() if _NOT_SET.match(line.raw.strip()) else line.bare
    if any(cue in line.raw for cue in _CONTAINER_CUES) and _CONTAINER.search(line.raw):
        obs.add("container", bare[:160], Source("paste", line.number))
    config_line = bare.lstrip("+-").strip() if bare[:1] in "+-" and "CONFIG_" in bare else bare
    # A config diff in a bug report is a proposed fix: its "-" side is how the reporter's kernel was
    # built, the "+" side what the fix changes it to. The "-" side wins where both name a symbol.
    if config_line.startswith(("CONFIG_", "# CONFIG_")) and not bare.startswith("+"):
        (state.kconfig_old if bare.startswith("-") else state.kconfig).append(config_line)
        symbol = config_line.removeprefix("# ").split("=")[0].split(" ")[0]
        obs.kconfig.setdefault(symbol, ("", Source("kernel config", line.number)))
    if bare.startswith(_MODPROBE_KINDS):
        state.modprobe.append(bare)


def _smi(obs: Observations, bare: str, state: _State) -> None:
    """rocm-smi's GPU rows, counted inside its banner's block."""
    if appformats.ROCM_SMI_BANNER in bare:
        state.smi = True
    elif appformats.ROCM_SMI_END in bare:
        state.smi = False
    elif state.smi and appformats.ROCM_SMI_ROW.match(bare):
        obs.smi_gpus += 1


def _message(
    fmt: appformats.AppFormat, m: re.Match[str], fields: tuple[re.Pattern[str], ...], line: _Line
) -> SeenMessage:
    values = {k: v for k, v in m.groupdict().items() if v}
    for extra in fields:
        found = extra.search(line.bare)
        if found:
            values.update({k: v for k, v in found.groupdict().items() if v})
    gfx = values.pop("gfx", None)
    source = Source(fmt.id, line.number)
    return SeenMessage(fmt.what, fmt.id, line.bare[:160], source, gfx, tuple(sorted(values.items())))


def _app_messages(obs: Observations, line: _Line, state: _State) -> None:
    """Userspace messages of the formats in knowledge/appformats.py: one alternation of their cues first."""
    bare = line.bare
    if state.smi or "ROCm S" in bare:
        _smi(obs, bare, state)
    if bare.endswith("is_available() -> False") or (bare == "False" and state.previous.endswith("is_available()")):
        # PyTorch's torch.cuda.is_available() answered False (joined to its question by evidence/repl, or a
        # False under it that repl could not join): HIP found no usable GPU.
        source = Source("torch.cuda.is_available()", line.number)
        obs.messages.append(SeenMessage("no-device", "torch-not-available", "is_available() -> False", source))
    if not appformats.CUES.search(bare):
        return
    for fmt, pattern, fields in appformats.COMPILED:
        m = pattern.search(bare) if fmt.cue in bare else None
        if m:
            obs.kinds.add("application")
            obs.messages.append(_message(fmt, m, fields, line))


def _retail_numbers(obs: Observations, pattern: re.Pattern[str], lowered: str, number: int) -> None:
    """Radeon model numbers ("RX 6600", "AMD 6700M") mapped to their gfx target."""
    for m in pattern.finditer(lowered):
        gfx = appformats.rx_target(int(m["number"]), m["suffix"] or "")
        if gfx:
            obs.prose_gfx.append((gfx, Source(f"paste: {m.group(0).strip()}", number)))


def _pro_names(obs: Observations, lowered: str, number: int) -> None:
    """Radeon Pro names the NAMED_GFX rows do not hold ("Radeon Pro WX 7100"), by pci.ids's chip for them."""
    from kfdguard.knowledge import identify

    for name, device in appformats.pro_devices(lowered):
        asic, _ = identify(device)
        if asic is not None and asic.gfx:
            obs.prose_gfx.append((asic.gfx, Source(f"paste: {name} ({asic.family})", number)))


def _apus(obs: Observations, lowered: str, number: int) -> None:
    """The iGPU an APU's processor name implies ("Ryzen 7 PRO 8700GE": gfx1103), kept apart from GPUs named."""
    if "ryzen" not in lowered and "amd " not in lowered:  # every row's match holds one (knowledge/apus.py)
        return
    for gfx, name, row in apus.apu_targets(lowered):
        obs.cpu_gpus.append((gfx, Source(f"paste: {name} ({row.igpu}, {row.family})", number)))


# A line that names what follows it (or itself) as the GPU: "### GPU", "GPU:", "Graphics card", "my iGPU ...".
_AS_GPU = re.compile(r"\b(?:i?gpu|graphics|video card|integrated|apu)\b", re.I)
_LABEL = re.compile(r"^\s*(?:#+\s*)?(?P<label>[\w ()/-]{1,30}?)\s*:?\s*$")


def _named_as_gpu(lines: list[str], index: int) -> bool:
    """Whether line ``index`` names the processor on it as the GPU: the line says so, or the nearest line above it
    that is not blank is a short label that says so (an issue form's "### GPU" heading)."""
    if _AS_GPU.search(lines[index]):
        return True
    for above in reversed(lines[max(0, index - 3) : index]):
        if above.strip():
            m = _LABEL.match(above)
            return m is not None and _AS_GPU.search(m["label"]) is not None
    return False


def _processors_as_gpus(obs: Observations) -> None:
    """The display engines of desktop processors (knowledge/apus.py's ``named_as_gpu`` rows), read after the lines
    (whatever path read them: the label above a line is not what the line reader sees) where the text names the
    processor as its GPU."""
    if "yzen" not in obs.text:
        return
    lines = obs.lines
    for index, line in enumerate(lines):
        if "yzen" not in line:
            continue
        lowered = line.lower()
        weak = [f for f in apus.apu_targets(lowered, named_as_gpu=True) if f[2].named_as_gpu]
        if weak and _named_as_gpu(lines, index):
            for gfx, name, row in weak:
                obs.cpu_gpus.append((gfx, Source(f"paste: {name} ({row.igpu}, {row.family})", index + 1)))


# Another vendor's product on the line: its numbers are not Radeon models ("RTX 6000 Ada").
_OTHER_VENDOR = re.compile(r"\b(?:nvidia|geforce|quadro|[rg]tx)\b", re.I)


def _first_line(obs: Observations, unit: str) -> int:
    """The index in obs.lines of the first line whose untimed form is ``unit`` (one of obs.unique)."""
    return obs.lines.index(obs.distinct[obs.units.index(unit)])


def _models_as_gpus(obs: Observations) -> None:
    """Radeon model numbers without "RX" (appformats.BARE_MODEL, LABELLED_MODEL) on the lines the text names as
    its GPU, read after the lines as _processors_as_gpus is (the label may be a heading above). Each distinct line
    once, searched in its untimed form (obs.unique): a repeated line names no other GPU."""
    lines = obs.lines
    for unit in obs.unique:
        labelled = appformats.LABELLED_MODEL.search(unit)
        if (labelled is None and appformats.BARE_MODEL.search(unit) is None) or _OTHER_VENDOR.search(unit):
            continue
        # The untimed form holds the line's words: only where it stands (a label above it) needs the line.
        index = _first_line(obs, unit)
        found = [labelled] if labelled else []
        if not found and _named_as_gpu(lines, index):
            found = list(appformats.BARE_MODEL.finditer(unit))
        for m in found:
            gfx = appformats.rx_target(int(m["number"]), (m.groupdict().get("suffix") or "").lower())
            if gfx:
                obs.prose_gfx.append((gfx, Source(f"paste: {m.group(0).strip()}", index + 1)))


def _codenames_as_gpus(obs: Observations) -> None:
    """Discrete GPUs named by their chip's code name ("Polaris 22", "Navi 31"): their target, and their ASIC.
    Each distinct line (its untimed form) that holds a code name's word once."""
    from kfdguard.knowledge.codenames import codename_asics, codename_cues

    cues = codename_cues()
    for unit in obs.unique:
        low = unit.lower()
        if not any(cue in low for cue in cues):
            continue
        for asic, name in codename_asics(unit):
            source = Source(f"paste: {name} ({asic.family})", _first_line(obs, unit) + 1)
            obs.prose_asics.append((asic.key, source))
            if asic.gfx:
                obs.prose_gfx.append((asic.gfx, source))


# A target that labels a value ("gfx1035: 13 matches", "gfx1100  121"): several of them on consecutive lines are a
# listing per target (a search's counts, a build's results), which names no GPU.
_TARGET_ROW = re.compile(r"^\s*(?P<gfx>gfx[0-9][0-9a-f]{2,3})\s*[:=|]?\s+\S")


def _drop_target_listings(obs: Observations) -> None:
    """Targets read from lines of a per-target listing taken back out of the GPUs named in prose."""
    if not obs.prose_gfx:
        return
    lines, listed = obs.lines, set[int]()
    run: list[tuple[int, str]] = []
    for number, line in enumerate([*lines, ""], 1):
        m = _TARGET_ROW.match(line) if "gfx" in line else None
        if m:
            run.append((number, m["gfx"].lower()))
            continue
        if len(run) >= 2 and len({g for _, g in run}) == len(run):
            listed.update(n for n, _ in run)
        run = []
    if listed:
        obs.prose_gfx = [(g, s) for g, s in obs.prose_gfx if s.line not in listed]


def _targets_in_prose(obs: Observations, text: str, lowered: str, number: int) -> None:
    """A target written in prose ("does not yet support your GPU (gfx1032)", "RX580/gfx803 support"): one per line
    only, since lines listing several are a program's list of what it supports, not the GPU; there, and beside a
    setting's "=", only a target attributed to a GPU ("the 9060xt is gfx1200, the 6600 gfx1032")."""
    targets = appformats.PROSE_GFX.findall(lowered) if "=" not in text else []
    if len(targets) == 1:
        obs.prose_gfx.append((targets[0], Source(f"paste: {targets[0]}", number)))
    elif "is" in lowered or "(" in lowered:
        for m in appformats.GPU_TARGET_ATTRIBUTED.finditer(lowered):
            obs.prose_gfx.append((m[1], Source(f"paste: {m.group(0)}", number)))


def _named_gfx(obs: Observations, text: str, lowered: str, number: int) -> None:
    """Instinct, Radeon Pro, Vega and cloud names (appformats.NAMED_GFX), then Radeon Pro names by pci.ids."""
    # appformats.NAMED_GFX_CUES, spelled out: a generator over the tuple costs twice as much on every line
    if (
        "Vega" in text
        or "VII" in text
        or "MI" in text
        or "CDNA" in text
        or "0M" in text
        or "0S" in text
        or "Pro " in text
        or "PRO " in text
        or "as_v4" in text
        or "ads_V" in text
        or "ads V" in text
        or "g4ad." in text
    ):
        before = len(obs.prose_gfx)
        for pattern, target in appformats.NAMED_GFX:
            named = pattern.search(text)
            if named:
                obs.prose_gfx.append((target, Source(f"paste: {named.group(0)}", number)))
        if len(obs.prose_gfx) == before and ("pro w" in lowered or "pro v" in lowered):
            _pro_names(obs, lowered, number)


def _gpus_in_prose(obs: Observations, text: str, lowered: str, number: int) -> None:
    if "rx" in lowered:
        _retail_numbers(obs, appformats.RADEON_RX, lowered, number)
    _apus(obs, lowered, number)
    if "amd " in lowered or "radeon " in lowered:
        _retail_numbers(obs, appformats.AMD_NUMBER, lowered, number)
    if "gfx" in lowered and "[" not in text:
        _targets_in_prose(obs, text, lowered, number)
    _named_gfx(obs, text, lowered, number)
    if (
        "nvidia" in lowered
        or "geforce" in lowered
        or "quadro" in lowered
        or "gtx" in lowered
        or "rtx" in lowered
        or ("gfx 10" in lowered)
    ):
        for m in appformats.NVIDIA.finditer(text):
            obs.nvidia.append((m.group(0).strip(), Source("paste", number)))


def _prose(obs: Observations, line: _Line, state: _State) -> None:
    """What prose and commands name: GPU-selecting variables, GPUs by retail name, the host's OS."""
    text = line.raw
    if "VISIBLE_DEVICES" in text:
        for m in appformats.VISIBILITY.finditer(text):
            obs.env.append((m["var"], m["value"], Source("environment", line.number)))
    override = appformats.OVERRIDE.search(text) if "HSA_OVERRIDE_GFX_VERSION" in text else None
    if override:
        obs.add("gfx-override", override["value"], Source("environment", line.number))
    lowered = line.lowered = text.lower()
    host = (
        appformats.FOREIGN_HOST.search(text)
        if obs.foreign_host is None
        and (
            "wsl" in lowered
            or "windows" in lowered
            or "microsoft" in lowered
            or "docker desktop" in lowered
            or "dxg" in lowered
            or "winver" in lowered
            or "macos" in lowered
            or ":\\users\\" in lowered
        )
        else None
    )
    if host:
        # "Windows 11 with WSL2": the Linux side runs under WSL, which the rules tell apart from Windows itself.
        wsl = appformats.WSL_WORD.search(text) if "wsl" in lowered else None
        obs.foreign_host = Source(f"paste: {(wsl or host).group(0)}", line.number)
    _gpus_in_prose(obs, text, lowered, line.number)


def _has_container_cue(raw: str) -> bool:
    return (
        "root@" in raw
        or "dockerenv" in raw
        or "docker " in raw
        or "podman" in raw
        or "apptainer" in raw
        or ("singularity" in raw)
    )


EXTRACTORS = (
    _release, _lspci, _named_gpu, _ls, _groups, _rocminfo_done, _rocminfo, _modinfo, _config_lines,
    _app_messages, _prose,
)  # fmt: skip


def _finish(obs: Observations, state: _State) -> None:
    _finish_agent(obs, state)
    _drop_target_listings(obs)
    _processors_as_gpus(obs)
    _models_as_gpus(obs)
    _codenames_as_gpus(obs)
    if state.kconfig or state.kconfig_old:
        obs.kinds.add("kconfig")
        values, _ = parse_kconfig("\n".join(state.kconfig))
        old, _ = parse_kconfig("\n".join(state.kconfig_old))
        values.update(old)
        where = {k: source for k, (_, source) in obs.kconfig.items()}
        obs.kconfig = {k: (v, where.get(k, Source("kernel config"))) for k, v in values.items()}
    if state.modprobe:
        directives, _ = parse_modprobe_conf("\n".join(state.modprobe), "(pasted)")
        if directives:
            obs.kinds.add("modprobe")
            obs.modprobe = list(directives)
    # A paste the size of a whole log is searched as the big-log path searches a text (kernellog.SMALL).
    lines = obs.lines
    # A wrapped line is joined again whatever the paste's size: the same log pasted five times says what it
    # said once (issue 34). Most long pastes have none, and keep the distinct lines' fast path.
    unwrapped = _unwrapped(lines)
    if len(lines) > SMALL:  # what scan(obs.text) finds, from the distinct lines
        events = scan_distinct(lines, obs.distinct, obs.units, source="paste", unique=obs.unique)
        # The few lines a wrap joined are read again whole, in place of their pieces.
        joined = list(compress(count(), map(is_not, lines, unwrapped)))
        if joined:
            events = _rejoined(events, unwrapped, joined)
    else:
        # Each line as pasted, but a wrap's continuation blank: its reading is its joined line's.
        pieces = ["" if a and not b else a for a, b in zip(lines, unwrapped, strict=True)]
        _, events = scan(pieces, source="paste")
        heads = [i for i, (a, b) in enumerate(zip(lines, unwrapped, strict=True)) if a != b and b]
        events = _heads_replaced(events, [e for i in heads for e in match(unwrapped[i], i + 1, source="paste")])
    obs.events = events
    if events:
        obs.kinds.add("kernel-log")
    # A long log repeats its messages: an event that names the GPU and slot of one before it adds nothing
    # (_add_gpu merges it into the GPU the first one added or completed), so each is read once.
    named: set[tuple[object, ...]] = set()
    for e in events:
        if (e.values, e.device) in named:
            continue
        named.add((e.values, e.device))
        ids = e.ids
        if ids and ids[0] == 0x1002:
            slot = e.device if e.device and e.device != "kfd" else None
            _add_gpu(obs, SeenGpu(ids[0], ids[1], Source("kernel log", e.line), slot=slot))


_NOT_CONTINUED = frozenset(" \t[`#$>*|-")  # how a line starts that continues no line above it
# ... but for ids in brackets, which start no line: KFD's "Topology: Add dGPU node" wrapped before
# "[0x73ff:0x1002]" (compared inline: this runs on every line of a long paste).
_BRACKETED_ID = "[0x"
_MONTHS = frozenset(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"])


def _dated(line: str) -> bool:
    """A journal or syslog line's start, told by slices (a month and a blank, or an ISO year and a dash): a
    new line, no continuation. A long journal paste is settled so without a regular expression a line."""
    return (line[3:4] == " " and line[:3] in _MONTHS) or (line[4:5] == "-" and line[:4].isdigit())


def _rejoined(events: list[LogEvent], unwrapped: list[str], joined: list[int]) -> list[LogEvent]:
    """A long paste's events with those of its wrapped lines' first pieces replaced by the whole lines' (numbered
    where the first piece was, as _unwrapped keeps them), where the whole line says something."""
    # Only a joined line the big-log search would look at (kernellog.PREFILTER: a kernel prefix, an old
    # kernel's bare words, a userspace rule's terms) can change the events: a long mixed paste joins thousands
    # of application lines to the line above them, and they need no rule.
    joined = [i for i in joined if unwrapped[i] and PREFILTER.search(unwrapped[i])]
    if not joined:
        return events
    whole = [e for i in joined for e in match(unwrapped[i], i + 1, source="paste")]
    return _heads_replaced(events, whole)


def _heads_replaced(events: list[LogEvent], whole: list[LogEvent]) -> list[LogEvent]:
    """``events`` with each line that ``whole`` (joined lines' events) reads replaced by that reading. A joined
    line that reads as nothing keeps its first piece's own events: what a wrap joined to a complete message
    may be the person's next sentence ("Hi, rocminfo does not see my GPU."), not its continuation."""
    replaced = {e.line for e in whole}
    return sorted([e for e in events if e.line not in replaced] + whole, key=lambda e: e.line)


def _unwrapped(lines: list[str]) -> list[str]:
    """Kernel log lines that a mail client or an issue form wrapped, joined again.

    "[ 2.86] amdgpu 0000:01:00.0: Direct firmware load for" followed by "amdgpu/vegam_pfp.bin failed
    with error -2": a line that starts with no timestamp, prompt, quote or indentation continues the
    dmesg line above it. The joined line keeps the first line's number; its continuation becomes empty,
    so the other line numbers stay as pasted.
    """
    out = list(lines)
    for i in range(len(out) - 1):
        # The next line first, by its first character alone: in a dmesg log it starts with "[" and nothing
        # is wrapped, which settles most lines of a long paste without a regular expression.
        follow = out[i + 1]
        if not follow or (follow[0] in _NOT_CONTINUED and follow[:3] != _BRACKETED_ID) or _dated(follow):
            continue
        if not out[i] or not _LOG_LINE_START.match(out[i]):
            continue
        j = i + 1
        while j < len(out) and j <= i + 2:
            follow = out[j]
            if (
                not follow
                or (follow[0] in _NOT_CONTINUED and follow[:3] != _BRACKETED_ID)
                or _LOG_LINE_START.match(follow)
                or len(follow) > 100
            ):
                break
            out[i] = f"{out[i]} {follow}"
            out[j] = ""
            j += 1
    return out


# What _stamp_key removes from a line that does not start with "[", as a match of the line's start (one call
# in C instead of half a dozen string operations, a third of the cost of a long paste): the first ":" among
# characters 2-23 with two digits before it and another ":" three after, a clock time. Blanks and digits are
# ASCII here: a line whose stamp has others keeps it in its key, which only means that its repeats are read
# again. The clock's ":" is the first at index 2 or later: before it any two characters, then none (or its
# digits start at index 0 or 1).
_CLOCK_STAMP = re.compile(r"(?:..[^:]{0,19}|.|)(?P<clock>[0-9]{2}:..:.{0,2})")


def _stamp_key(raw: str, clock: LineMatch = _CLOCK_STAMP.match) -> str:
    """The line without the digits of a leading dmesg time ("[   12.345678]") or clock time
    ("Dec 01 10:00:05", "2025-03-03T10:00:01"): lines that differ only there are the same to every
    extractor (none reads those digits), so what one of them showed, the others show again."""
    if raw[:1] == "[":
        # A dmesg time as kernellog.untimed removes it: one definition for the reader's keys (_unit_keys
        # takes the keys of lines that begin "[" from untimed directly) and the kernel-log scan.
        return untimed([raw])[0]
    m = clock(raw)
    return raw[: m.start("clock")] + raw[m.end() :] if m is not None else raw


def _written(obs: Observations) -> tuple[object, ...]:
    """What extractors overwrite rather than add to: the user (id, groups) and the device nodes (ls).

    A line that writes the value already there shows nothing, but only while it is there: user A, user
    B, then A's line again changes the user back. So this is part of the surroundings a line is
    remembered in (read_text), as the ls directory is."""
    user = (obs.user.user, obs.user.groups) if obs.user else None
    return user, tuple((n.path, n.mode, n.owner, n.group, n.acl) for n in obs.nodes.values())


def _size(obs: Observations, state: _State) -> tuple[object, ...]:
    """What an extractor can change that a repetition of a line could change again, cheaply compared.

    The lists of userspace messages and of GPUs named in prose are left out: the rules read the first of
    each and the distinct texts, so a repeated line adds nothing to them. The user and the device nodes
    are compared by content: an id line pasted twice shows the same user (see _written)."""
    return (
        len(obs.kinds), len(obs.facts), len(obs.gpus), _written(obs), len(obs.member_of),
        len(obs.not_member_of), len(obs.agents), len(obs.kconfig), len(obs.declared), len(obs.env),
        obs.smi_gpus, obs.foreign_host, state.directory, state.agent_line, state.agent is None, state.smi,
        len(state.kconfig), len(state.kconfig_old), len(state.modprobe),
        len(state.agent) if state.agent is not None else -1,
    )  # fmt: skip


def _after(bare: str) -> bool:
    """Whether the extractors read the next line in the light of this one (uname, groups, is_available)."""
    return "uname" in bare or bare.endswith(("groups", "is_available()"))


def _bare(raw: str) -> str:
    """The line without blanks around it and without a shell prompt."""
    stripped = raw.strip()
    if ("$" in stripped or "#" in stripped) and _PROMPT.match(stripped):
        return _PROMPT_SUB.sub("", stripped)
    return stripped


_INSIDE = frozenset(" \t0123456789")


def _unquoted(text: str, raw_lines: list[str]) -> list[str]:
    """The lines without trailing blanks and without "> " quote markers. Only lines that hold a ">" can
    be quoted: they are picked by a filter in C (one containment test a line), not by a test in Python,
    and counting the newlines before each ">" of the text cost more than that filter."""
    lines = list(map(str.rstrip, raw_lines))
    if ">" not in text:
        return lines
    sub = _QUOTE.sub
    done: dict[str, str] = {}  # a long paste quotes the same lines again: each is unquoted once
    for number in compress(count(), map(contains, raw_lines, repeat(">"))):
        line = raw_lines[number]
        out = done.get(line)
        if out is None:
            out = done[line] = sub("", line).rstrip() if line.lstrip()[:1] == ">" else lines[number]
        lines[number] = out
    return lines


def _uncoded(text: str, lines: list[str]) -> list[str]:
    """The lines a markdown writer wrapped whole in inline code ("`amdgpu, 2.2-31: added`"), without the two
    backticks: the command output inside is what the readers know. A fence ("```") is no inline code."""
    if "`" not in text:
        return lines
    for number in compress(count(), map(contains, lines, repeat("`"))):
        line = lines[number].strip()
        if len(line) > 2 and line[0] == "`" == line[-1] and line[1] != "`" and "`" not in line[1:-1]:
            lines[number] = line[1:-1]
    return lines


# A kernel log pasted as the "+" side of a diff (a patch that adds a log file, a diff of two boots' dmesg):
# its lines are "+[    3.25] kfd kfd: ...", and its wrapped lines' continuations "+amdgpu/...".
_DIFF_LOG_LINE = re.compile(r"^\+\[\s*\d+\.\d+\] ")
_DIFF_LOG_LINES = 3  # so many "+" dmesg lines make a paste a log inside a diff


def _undiffed(text: str, lines: list[str]) -> list[str]:
    """The lines of a log inside a diff without the diff's "+" (not "+++", a file header). A paste is such a
    log when it holds a few "+" dmesg lines; a config diff's "+CONFIG_..." is read by its own extractor and
    left alone otherwise. Most pastes hold no "+[": one search in C says so."""
    if "+[" not in text:
        return lines
    if sum(1 for line in lines if line[:2] == "+[" and _DIFF_LOG_LINE.match(line)) < _DIFF_LOG_LINES:
        return lines
    return [line[1:] if line[:1] == "+" and line[:3] != "+++" else line for line in lines]


# What only quoted-printable writes: "=3D" for "=", "=20" or "=09" for a blank before a line's end, and the bytes
# of a non-ASCII character ("=C5=9F"); a plain text's "=" is followed by a value ("VERSION=10.3.0"), rarely by these.
_QP_ESCAPE = re.compile(r"=(?:3D|20|09|[89A-F][0-9A-F])")


def _quoted_printable(text: str) -> str:
    """A mail body pasted as sent, quoted-printable (RFC 2045: "=3D" for "=", a line cut with "=" at its end,
    "failed w=" / "ith error -2"), decoded by the standard library's quopri. Taken for one only where both an escape
    only that encoding writes (_QP_ESCAPE) and a soft break appear."""
    import quopri

    return quopri.decodestring(text.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")


def _paste(text: str) -> Observations:
    """Observations of nothing yet but the paste's lines (unquoted), their text, the distinct lines, those
    untimed and the untimed forms each once."""
    obs = Observations()
    if "\r" in text:  # a search in C; each replace copies the whole paste
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "=\n" in text and _QP_ESCAPE.search(text):
        text = _quoted_printable(text)
    obs.lines = _undiffed(text, _uncoded(text, _unquoted(text, text.split("\n"))))
    if "torch" in text:
        obs.lines = joined_answers(obs.lines)
    obs.text = "\n".join(obs.lines)
    obs.distinct = list(dict.fromkeys(obs.lines))
    obs.units = untimed(obs.distinct)
    obs.unique = list(dict.fromkeys(obs.units))  # what the scan and the rules' index read (a few thousand)
    return obs


def _unit_keys(unique: list[str]) -> dict[str, str]:
    """The memo key of every line whose untimed form (kernellog.untimed) is in ``unique``: a line's key is a
    function of that form. A line's key is its _stamp_key, behind a newline for a line that an open block
    reads (its first character a blank or a digit; no line holds a newline, so the two kinds never meet).
    A line that untimed changed begins "[]": its _stamp_key is that form (the one definition of a dmesg
    time), and so is the key of a line that begins "[" with no time, which untimed left as it was. Any other
    line is its own form. So Python computes keys for a few thousand forms, not for every distinct line (a
    long paste's dmesg lines are all distinct, their times differ)."""
    keys = dict(zip(unique, unique, strict=True))
    stamp_key, inside = _stamp_key, _INSIDE
    for unit in unique:
        first = unit[:1]
        if first != "[":
            key = stamp_key(unit)
            keys[unit] = "\n" + key if first in inside else key
    return keys


# How many distinct lines _Keys enters at a time: a few calls of Python for a long paste, and as few
# lines entered past the last one asked for.
_BATCH = 4096


class _Keys(dict[str, str]):
    """Each distinct line's memo key (_unit_keys), entered as reading first meets the line.

    Reading goes through the lines in order, and the distinct lines are in the order they first appear, so
    a line not yet here is among the next distinct lines: they are entered in batches (in C, by
    update), from their untimed forms. A long paste's reading stops early (every key seen, _read_remembering)
    and most of its distinct lines never need a key."""

    __slots__ = ("_distinct", "_entered", "_unit_key", "_units")

    def __init__(self, distinct: list[str], units: list[str], unit_key: dict[str, str]) -> None:
        super().__init__()
        self._distinct, self._units, self._unit_key = distinct, units, unit_key
        self._entered = 0

    def __missing__(self, line: str) -> str:
        while self._entered < len(self._distinct):
            start, stop = self._entered, self._entered + _BATCH
            self._entered = stop
            units = map(self._unit_key.__getitem__, self._units[start:stop])
            self.update(zip(self._distinct[start:stop], units, strict=True))
            key = self.get(line)  # get does not call __missing__
            if key is not None:
                return key
        raise KeyError(line)


def _surroundings(obs: Observations, state: _State) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """Where a line that showed nothing is remembered, outside and inside an open block (read_text)."""
    directory, smi, written = state.directory, state.smi, _written(obs)
    return (directory, smi, written), (directory, state.agent_line, smi, written)


class _Reader:
    """One line read with every extractor (EXTRACTORS as the module holds it when reading starts)."""

    __slots__ = ("extractors", "line", "obs", "state")

    def __init__(self, obs: Observations, state: _State) -> None:
        self.obs, self.state, self.line = obs, state, _Line("", "", 0)
        self.extractors = EXTRACTORS

    def read(self, raw: str, number: int, previous: str) -> str:
        """Read the line; returns it bare (what the next line sees as the one before it)."""
        bare = _bare(raw)
        line, state, obs = self.line, self.state, self.obs
        line.raw, line.bare, line.number = raw, bare, number
        state.previous = previous
        for extract in self.extractors:
            extract(obs, line, state)
        state.previous = bare
        return bare


def _read_every_line(obs: Observations, state: _State) -> None:
    reader = _Reader(obs, state)
    previous = ""
    for number, raw in enumerate(obs.lines, 1):
        previous = reader.read(raw, number, previous)


def _read_remembering(obs: Observations, state: _State) -> None:
    """read_text's default path: the lines not yet seen showing nothing in their surroundings.

    Which those are is decided in C: the key of every line (_Keys, from the untimed forms), then
    ``compress`` over the keys not in the present surroundings' set. Python sees only the lines it reads.
    A line after one that names a command (_after) is read whatever its key, and such a line itself is
    never remembered. A line that changed what was seen may have changed the surroundings: then the set
    of those surroundings takes over (each line stays remembered where it showed nothing).

    A long paste shows all its kinds of line early and repeats them after: once the present surroundings
    remember every key, no line after can be read (a line is read only when its key is new there or the
    line before it was read), so reading stops without testing the rest."""
    lines = obs.lines
    unit_key = _unit_keys(obs.unique)
    key_of = _Keys(obs.distinct, obs.units, unit_key)
    keys = len(set(unit_key.values()))
    reader, size, after = _Reader(obs, state), _size, _after
    stores: dict[tuple[object, ...], set[str]] = {}
    where = _surroundings(obs, state)
    outside, inside = stores.setdefault(where[0], set()), stores.setdefault(where[1], set())
    seen = outside | inside  # what the lines not read are tested against, in C
    remaining = map(key_of.__getitem__, lines)  # the keys of the lines after the last one read
    chain = compress(count(0), map(not_, map(seen.__contains__, remaining)))
    index, last, bare, forced = -1, -1, "", False
    # What the extractors have seen so far. Only reading a line changes it, so the size after one read is
    # the size before the next: one call a line read, not two.
    now_size = size(obs, state)
    while True:
        if forced:  # the line after one that names a command
            index += 1
            if next(remaining, None) is None:
                break
        else:
            index = next(chain, -1)
            if index < 0:
                break
        raw = lines[index]
        before, was_forced = now_size, forced
        bare = reader.read(raw, index + 1, "" if index == 0 else bare if last == index - 1 else lines[index - 1])
        last, rebuild, forced, now_size = index, forced, after(bare), size(obs, state)
        if not was_forced and before == now_size:
            if not forced:
                key = key_of[raw]
                seen.add(key)
                (inside if raw[:1] in _INSIDE else outside).add(key)
                if len(seen) == keys:
                    break
        elif (now := _surroundings(obs, state)) != where:
            where = now
            outside, inside = stores.setdefault(where[0], set()), stores.setdefault(where[1], set())
            seen = outside | inside
            rebuild = True  # the chain must test against the new set
        if forced or rebuild:  # (after a line read out of the chain, the chain starts after it)
            chain = compress(count(index + 1), map(not_, map(seen.__contains__, remaining)))
    _kernel_log_kind(obs)


def _kernel_log_kind(obs: Observations) -> None:
    """The one thing an extractor reads in a dmesg time: whether it has printk's shape (_DMESG_TIME, six
    digits after the dot), which makes the text a kernel log (_release). Lines that differ only in their
    times share a key, so "[ 1.5] x" read and "[ 1.500000] x" skipped would lose the kind: it is decided
    here from every line untimed changed (those are the only lines whose keys hide a time), once the kind
    is not already known, and the first line of the right shape ends the search."""
    if "kernel-log" in obs.kinds:
        return
    distinct, units = obs.distinct, obs.units
    if any(map(_DMESG_TIME.match, compress(distinct, map(ne, distinct, units)))):
        obs.kinds.add("kernel-log")


def read_text(text: str, *, remember: bool = True) -> Observations:
    """Everything a paste shows; what it does not show stays absent.

    A long paste repeats itself: the same kernel, journal and application lines with other
    timestamps. A line that showed nothing (no extractor changed anything) is remembered by its text
    without the timestamp's digits (_stamp_key), and its repetitions are skipped, where nothing around
    them can change what they mean: the ls directory, an open rocminfo agent block or rocm-smi table
    (which read only lines that begin with a space or digit), the user and nodes shown (_written), and
    the line before, when it names a command whose output follows (uname, groups).
    ``remember=False`` reads every line (tests/unit/diagnose/test_paste_paths.py compares the two).
    """
    obs = _paste(text)
    state = _State()
    if remember:
        _read_remembering(obs, state)
    else:
        _read_every_line(obs, state)
    _finish(obs, state)
    return obs


__all__ = ["read_text"]
