"""Root cause first: the floor of the stack each finding is about, and what blocks what.

A GPU computes only when every floor works, from the bottom up: the hardware
and its PCIe path, the kernel (amdgpu, KFD, firmware, modules), the device
nodes, their permissions and the user's groups, and last the userspace
libraries. When several findings hold, the lowest blocking one is the
headline; a finding on a higher floor about the same GPU (or about every GPU,
when the blocker concerns the machine) cannot matter until that is fixed and
is marked with ``blocked_by``.
"""

from __future__ import annotations

from kfdguard.record import replace
from kfdguard.verdict import Finding, Severity

HARDWARE, KERNEL, NODE, ACCESS, USERSPACE, OTHER = range(6)
FLOOR_NAMES = ("hardware", "kernel", "device node", "permissions", "userspace", "configuration")

FLOOR: dict[str, int] = {
    "pcie-atomics": HARDWARE,
    "device-lost": HARDWARE,
    "asic-not-supported": HARDWARE,
    "iommu-required": HARDWARE,
    "host-without-kfd": KERNEL,
    "gpu-psp-init-failed": KERNEL,
    "kfd-not-built": KERNEL,
    "kernel-too-old": KERNEL,
    "dkms-not-built": KERNEL,
    "module-signature-rejected": KERNEL,
    "module-not-loaded": KERNEL,
    "module-symbol-mismatch": KERNEL,
    "module-dependency-missing": KERNEL,
    "firmware-missing": KERNEL,
    "gpu-init-failed": KERNEL,
    "kfd-init-failed": KERNEL,
    "kfd-device-failed": KERNEL,
    "kfd-no-gpu-node": KERNEL,
    "gpu-hang": KERNEL,
    "device-node-missing": NODE,
    "kfd-ioctl-failed": NODE,
    "kfd-open-einval": NODE,
    "device-permissions": ACCESS,
    "render-node-permissions": ACCESS,
    "user-not-in-group": ACCESS,
    "rootless-gid-unmapped": ACCESS,
    "mac-policy-denies": ACCESS,
    "userspace-target-unsupported": USERSPACE,
    "userspace-no-rocm-build": USERSPACE,
    "userspace-library-missing": USERSPACE,
    "env-visibility-hides-gpu": USERSPACE,
    "env-override-wrong": USERSPACE,
    "env-override-unneeded": USERSPACE,
}


# Codes that, without a PCI slot, stop every GPU: a GPU-specific code without a slot (a paste's log
# line named only the PCI id) does not; the rules mark what it blocks on that GPU themselves.
MACHINE_WIDE = frozenset(
    {
        "kfd-not-built",
        "host-without-kfd",
        "kfd-open-einval",
        "kfd-init-failed",
        "module-not-loaded",
        "module-symbol-mismatch",
        "module-dependency-missing",
        "module-signature-rejected",
        "dkms-not-built",
        "device-node-missing",
        "kfd-ioctl-failed",
        "kfd-no-gpu-node",
        "device-permissions",
        "user-not-in-group",
        "rootless-gid-unmapped",
    }
)


def floor(code: str) -> int:
    return FLOOR.get(code, OTHER)


def headline(findings: tuple[Finding, ...] | list[Finding]) -> Finding | None:
    """The root cause: the error on the lowest floor (the first one to fix), else the first finding."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if errors:
        return min(errors, key=lambda f: (f.blocked_by is not None, floor(f.code), f.code, f.gpu or ""))
    return findings[0] if findings else None


def root_cause_first(findings: list[Finding]) -> tuple[Finding, ...]:
    """Findings above a blocker of the same GPU (or of the machine) marked as after it.

    The list stays in ``Finding.key`` order (errors first: clients and tests rely on it);
    ``headline`` picks the root cause out of it.
    """
    blockers = [
        f
        for f in findings
        if f.severity is Severity.ERROR and floor(f.code) < OTHER and (f.gpu is not None or f.code in MACHINE_WIDE)
    ]
    marked = []
    for finding in findings:
        here = floor(finding.code)
        below = [
            b
            for b in blockers
            if floor(b.code) < here < OTHER and (b.gpu is None or b.gpu == finding.gpu) and b is not finding
        ]
        if below and finding.code != "kfd-ready" and finding.blocked_by is None:
            first = min(below, key=lambda b: (floor(b.code), b.code))
            marked.append(replace(finding, blocked_by=first.code))
        else:
            marked.append(finding)
    return tuple(sorted(marked, key=lambda f: f.key()))
