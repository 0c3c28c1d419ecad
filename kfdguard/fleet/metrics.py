"""The verdict as a node_exporter textfile (Prometheus text exposition format 0.0.4).

Pure: a Verdict, the Facts it came from and the time of the check in, text out.
node_exporter's textfile collector reads ``*.prom`` files from its directory
(Debian: /var/lib/prometheus/node-exporter) and serves them with its own
metrics, so kfdguard needs no port. Names follow Prometheus' conventions
(``kfdguard_`` prefix, base units, ``_seconds``, one HELP and TYPE per family);
label values are bounded (``labels.py``) and escaped as the format requires.
The collector refuses client-side timestamps, so samples carry none.
"""

from __future__ import annotations

from kfdguard import __version__
from kfdguard.fleet.labels import (
    APPLICATION,
    CODE,
    GFX_TARGET,
    KFD_VERSION,
    PCI_SLOT,
    RELEASE,
    bounded,
    known_name,
)
from kfdguard.verdict import Severity, State

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from kfdguard.facts import Facts
    from kfdguard.health.tracker import GpuHealth
    from kfdguard.verdict import Verdict

CONTENT_TYPE = "text/plain; version=0.0.4"


def escape_label(value: str) -> str:
    """A label value as the text format quotes it: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """HELP text: only backslash and line feed are escaped (quotes are literal there)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{name}="{escape_label(value)}"' for name, value in pairs)
    return "{" + inner + "}" if inner else ""


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


class _Families:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(
        self, name: str, kind: str, text: str, samples: Iterable[tuple[Iterable[tuple[str, str]], float]]
    ) -> None:
        self.lines.append(f"# HELP {name} {escape_help(text)}")
        self.lines.append(f"# TYPE {name} {kind}")
        seen: set[str] = set()
        for pairs, value in samples:
            labels = _labels(pairs)
            if labels in seen:
                continue  # two GPUs whose labels were all dropped: one series, not a duplicate error
            seen.add(labels)
            self.lines.append(f"{name}{labels} {_number(value)}")


# Live health counters (kfdguard/health): the family, the GpuHealth attribute, its HELP text.
HEALTH_COUNTERS = (
    ("kfdguard_gpu_resets_total", "resets", "GPU resets amdgpu began on this GPU since kfdguard started "
     "(GPU reset begin!, or a GPU reset(N) succeeded! whose begin was not seen)."),
    ("kfdguard_gpu_reset_failures_total", "reset_failures", "GPU resets that failed on this GPU since kfdguard "
     "started."),
    ("kfdguard_gpu_ring_timeouts_total", "ring_timeouts", "Ring timeouts (a job stopped making progress) on this "
     "GPU since kfdguard started, soft-recovered ones included."),
    ("kfdguard_gpu_hangs_total", "hangs", "Times the hardware scheduler (HWS) or MES stopped answering on this GPU "
     "since kfdguard started."),
    ("kfdguard_gpu_wedged_events_total", "wedged", "DRM WEDGED= uevents for this GPU since kfdguard started."),
)  # fmt: skip


def render(
    verdict: Verdict,
    facts: Facts,
    now: float,
    version: str = __version__,
    health: dict[str, GpuHealth] | None = None,
) -> str:
    """The textfile for one check at ``now`` (seconds since the epoch).

    ``health``: the running service's live counts per slot; None for a one-off run
    (``kfdguard metrics``), which has seen no resets and so writes no counters rather than zeros.
    """
    out = _Families()
    out.family(
        "kfdguard_compute_ready",
        "gauge",
        "1 when at least one AMD GPU can compute for the configured group (state ready or degraded), else 0.",
        [((), verdict.ready)],
    )
    _gpu_ready(out, verdict)
    _gpu_memory(out, verdict)
    if facts.software is not None:
        _userspace(out, facts)
    out.family(
        "kfdguard_state",
        "gauge",
        "kfdguard's state, one-hot: 1 for the current state, 0 for the others.",
        [((("state", str(s)),), s is verdict.state) for s in State],
    )
    counts: dict[tuple[str, str], int] = {}
    for f in verdict.findings:
        key = (bounded(f.code, CODE) or "unknown", str(f.severity))
        counts[key] = counts.get(key, 0) + 1
    out.family(
        "kfdguard_findings",
        "gauge",
        "Findings of the last check, by code and severity (codes: kfdguard(8)).",
        [((("code", code), ("severity", severity)), n) for (code, severity), n in sorted(counts.items())],
    )
    severities = {str(s): 0 for s in Severity}
    for (_, severity), n in counts.items():
        severities[severity] += n
    out.family(
        "kfdguard_findings_by_severity",
        "gauge",
        "Findings of the last check by severity, zero included, for alerts that need a series to exist.",
        [((("severity", s),), n) for s, n in severities.items()],
    )
    out.family(
        "kfdguard_last_check_timestamp_seconds",
        "gauge",
        "When kfdguard last checked the machine, in seconds since the epoch. Checks follow boots, device "
        "events and reloads, so a quiet machine keeps an old one; node_textfile_mtime_seconds tells whether "
        "kfdguard still writes the file.",
        [((), now)],
    )
    if health is not None:
        _health_counters(out, verdict, health)
    kfd = facts.kfd.version
    out.family(
        "kfdguard_info",
        "gauge",
        "kfdguard's version, the running kernel and the KFD interface version; always 1.",
        [
            (
                (
                    ("version", bounded(version, RELEASE)),
                    ("kernel", bounded(facts.kernel.release, RELEASE)),
                    ("kfd_version", bounded(f"{kfd[0]}.{kfd[1]}" if kfd else "", KFD_VERSION)),
                ),
                1,
            )
        ],
    )
    return "\n".join(out.lines) + "\n"


def _gpu_ready(out: _Families, verdict: Verdict) -> None:
    out.family(
        "kfdguard_gpu_compute_ready",
        "gauge",
        "1 when this AMD GPU can compute: a KFD topology node, the version ioctl answers, the group can open "
        "/dev/kfd and its render node.",
        [
            (
                (
                    ("slot", bounded(g.slot, PCI_SLOT)),
                    ("device_id", f"{g.device:04x}" if 0 <= g.device <= 0xFFFF else ""),
                    ("gfx_target", bounded(g.gfx, GFX_TARGET)),
                    ("name", known_name(g)),
                ),
                g.compute_ready,
            )
            for g in verdict.gpus
        ],
    )


def _gpu_memory(out: _Families, verdict: Verdict) -> None:
    """Issue 38: what compute may allocate on each GPU, and an APU's TTM limit; a GPU that does not say has
    no series (an absent series, not a 0 that an alert would read as no memory)."""
    for name, attribute, text in (
        ("kfdguard_gpu_compute_memory_bytes", "compute_memory",
         "Bytes ROCm tells programs they may allocate on this GPU (its KFD node's memory banks; a discrete "
         "card's VRAM without a node)."),
        ("kfdguard_gpu_ttm_limit_bytes", "ttm_limit",
         "An APU's TTM limit in force (ttm or amdttm pages_limit), in bytes: what GTT may take of system memory."),
    ):  # fmt: skip
        samples = [
            ((("slot", bounded(g.slot, PCI_SLOT)),), value)
            for g in verdict.gpus
            if (value := getattr(g, attribute)) is not None
        ]
        if samples:
            out.family(name, "gauge", text, samples)


VIAS = ("ROCm", "Vulkan", "CPU")


def _userspace(out: _Families, facts: Facts) -> None:
    """Issue 37, when the inventory was taken: each GPU's Vulkan readiness, and the backend each application
    takes on it, one-hot over ROCm, Vulkan and CPU (so an alert on 'ollama fell back to the CPU' has a series)."""
    from kfdguard.userspace.assess import assess_installed

    software = assess_installed(facts)
    if software.vulkan:
        out.family(
            "kfdguard_gpu_vulkan_ready",
            "gauge",
            "1 when a Vulkan program gets this AMD GPU: loader, a RADV or AMDVLK driver, amdgpu and its render node.",
            [((("slot", bounded(v.slot, PCI_SLOT)),), v.ready) for v in software.vulkan],
        )
    # One series set per application kind and GPU: two llama.cpp builds on one machine are one application
    # here (the first found, as check lists them), so that no two samples share their labels.
    apps = {(a.kind, a.slot): a for a in reversed(software.applications)}
    if apps:
        out.family(
            "kfdguard_application_backend",
            "gauge",
            "The backend an installed application takes on this AMD GPU, by its own rules, one-hot over "
            "ROCm, Vulkan and CPU (application: ollama, llama.cpp, pytorch, therock, rocm).",
            [
                (
                    (
                        ("application", bounded(a.kind, APPLICATION)),
                        ("slot", bounded(a.slot, PCI_SLOT)),
                        ("via", via),
                    ),
                    a.via == via,
                )
                for a in sorted(apps.values(), key=lambda a: (a.kind, a.slot))
                for via in VIAS
            ],
        )


def _health_counters(out: _Families, verdict: Verdict, health: dict[str, GpuHealth]) -> None:
    from kfdguard.health.tracker import GpuHealth

    # Every GPU of the check gets its series from the start (0 until something happens), so
    # rate() and increase() see the first reset; a slot no check found is not in health at all.
    zero = GpuHealth()
    for name, attribute, text in HEALTH_COUNTERS:
        samples = []
        for g in verdict.gpus:
            value = getattr(health.get(g.slot, zero), attribute)
            samples.append(((("slot", bounded(g.slot, PCI_SLOT)),), value))
        out.family(name, "counter", text, samples)
