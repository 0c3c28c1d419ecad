"""Build machine descriptions in the domain's own words, for tests.

spec = (MachineBuilder("t").debian12()
        .with_gpu(0x744C, outcome="added")
        .with_user("alice", groups=["render"])
        .with_modprobe_option("amdgpu", sched_policy=9)
        .build())
"""

from __future__ import annotations

from kfdguard.record import replace
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import DkmsSpec, GpuSpec, KernelSpec, MachineSpec, OsSpec, UdevSpec, UserSpec

TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path

    from kfdguard.host.root import Root

DEBIAN12 = OsSpec("debian", "12", "Debian GNU/Linux 12 (bookworm)")
UBUNTU2404 = OsSpec("ubuntu", "24.04", "Ubuntu 24.04.1 LTS", ("debian",))
UBUNTU2204 = OsSpec("ubuntu", "22.04", "Ubuntu 22.04.5 LTS", ("debian",))


class MachineBuilder:
    def __init__(self, name: str = "test") -> None:
        self.spec = MachineSpec(
            name=name,
            description="built by a test",
            os=DEBIAN12,
            kernel=KernelSpec("6.1.0-27-amd64", kfd_interface=(1, 11)),
        )

    def _set(self, **changes: object) -> MachineBuilder:
        self.spec = replace(self.spec, **changes)  # type: ignore[arg-type]
        return self

    def debian12(self, release: str = "6.1.0-27-amd64") -> MachineBuilder:
        return self._set(os=DEBIAN12, kernel=KernelSpec(release, kfd_interface=(1, 11)))

    def ubuntu2404(self, release: str = "6.8.0-45-generic") -> MachineBuilder:
        return self._set(os=UBUNTU2404, kernel=KernelSpec(release, compression="zst", kfd_interface=(1, 14)))

    def ubuntu2204(self, release: str = "5.15.0-125-generic") -> MachineBuilder:
        return self._set(os=UBUNTU2204, kernel=KernelSpec(release, kfd_interface=(1, 6)))

    def with_kernel(self, release: str, **fields: object) -> MachineBuilder:
        return self._set(kernel=replace(self.spec.kernel, release=release, **fields))  # type: ignore[arg-type]

    def with_kernel_config(self, **symbols: str | None) -> MachineBuilder:
        config = {**self.spec.kernel.config, **symbols}
        return self._set(kernel=replace(self.spec.kernel, config=config))

    def with_other_kernel(self, release: str, **fields: object) -> MachineBuilder:
        kernel = KernelSpec(release, **fields)  # type: ignore[arg-type]
        return self._set(other_kernels=(*self.spec.other_kernels, kernel))

    def with_gpu(
        self,
        device: int,
        *,
        slot: str | None = None,
        outcome: str = "added",
        revision: int = 0xC0,
        vendor: int = 0x1002,
        driver: str | None = None,
        boot_vga: bool | None = None,
    ) -> MachineBuilder:
        index = len(self.spec.gpus)
        gpu = GpuSpec(
            slot=slot or f"0000:{3 + index * 4:02x}:00.0",
            device=device,
            vendor=vendor,
            revision=revision,
            outcome=outcome,
            driver=driver,
            boot_vga=index == 0 if boot_vga is None else boot_vga,
        )
        return self._set(gpus=(*self.spec.gpus, gpu))

    def with_user(
        self, name: str, uid: int | None = None, groups: list[str] | None = None, *, session: bool = False
    ) -> MachineBuilder:
        user = UserSpec(name, uid if uid is not None else 1000 + len(self.spec.users), tuple(groups or ()), session)
        return self._set(users=(*self.spec.users, user))

    def with_file(self, path: str, text: str) -> MachineBuilder:
        return self._set(files={**self.spec.files, path: text})

    def with_modprobe_option(
        self, module: str, file: str = "/etc/modprobe.d/test.conf", **params: object
    ) -> MachineBuilder:
        line = f"options {module} " + " ".join(f"{k}={v}" for k, v in params.items()) + "\n"
        return self.with_file(file, self.spec.files.get(file, "") + line)

    def without_kfd_udev_rule(self) -> MachineBuilder:
        return self._set(udev=replace(self.spec.udev, kfd_rule=False))

    def with_udev(self, **fields: object) -> MachineBuilder:
        return self._set(udev=replace(self.spec.udev, **fields))  # type: ignore[arg-type]

    def amdgpu_not_loaded(self) -> MachineBuilder:
        return self._set(amdgpu_loaded=False)

    def with_cmdline(self, cmdline: str) -> MachineBuilder:
        return self._set(cmdline=cmdline)

    def with_dkms(self, version: str, built: list[str], failed: list[str] | None = None) -> MachineBuilder:
        return self._set(dkms=DkmsSpec("amdgpu", version, tuple(built), tuple(failed or ())))

    def with_ram(self, mib: int) -> MachineBuilder:
        """The RAM the kernel manages (MemTotal), in MiB: an APU's carve-out is not part of it."""
        return self._set(ram_mib=mib)

    def with_log(self, *lines: str) -> MachineBuilder:
        return self._set(log=(*self.spec.log, *lines))

    def with_group(self, name: str, gid: int) -> MachineBuilder:
        return self._set(groups={**self.spec.groups, name: gid})

    def build(self) -> MachineSpec:
        return self.spec

    def render(self, dest: Path) -> Root:
        return render(self.spec, dest)


__all__ = ["MachineBuilder", "UdevSpec"]
