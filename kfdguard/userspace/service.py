"""The software inventory in the service: taken on checks after READY, never on the boot pass."""

from __future__ import annotations

from kfdguard.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.config import SoftwareConfig
    from kfdguard.facts import Facts
    from kfdguard.host.root import Root
    from kfdguard.verdict import Verdict


def with_software(
    root: Root, facts: Facts, verdict: Verdict, config: SoftwareConfig | None = None
) -> tuple[Facts, Verdict]:
    """Facts with the inventory, and the verdict with the software findings instead of the static list.

    The service's own environment says nothing about its users' programs: only
    the units' Environment= is read. The state stays what the kernel side
    decided (the boot pass and this check agree on it).
    """
    from kfdguard.config import SoftwareConfig
    from kfdguard.userspace.assess import assess_installed
    from kfdguard.userspace.probe import probe_software

    config = config or SoftwareConfig()
    software = probe_software(root, None, units=config.units, paths=config.paths)
    facts = replace(facts, software=software)
    found = assess_installed(facts).findings
    kept = tuple(f for f in verdict.findings if not f.code.startswith("userspace-"))
    return facts, replace(verdict, findings=tuple(sorted((*kept, *found), key=lambda f: f.key())))
