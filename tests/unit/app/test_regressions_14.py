"""Issue 14's two bugs, each written as the user meets it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from kfdguard.app.pipeline import ConfigSource, enforce
from kfdguard.app.triggers import Trigger
from kfdguard.config import Config, ModuleConfig
from kfdguard.probe import probe
from kfdguard.service.core import Service
from kfdguard.service.loop import Loop
from kfdguard.service.options import Options
from kfdguard.service.status import PassResult
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec, OsSpec
from kfdguard.simulate.system import SimulatedSystem

Make = Callable[[str | MachineSpec], SimulatedSystem]


class HeldService(Service):
    """The real service; its first check waits until the test has sent SIGHUP."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.triggers: list[Trigger] = []
        self.first_check_running = threading.Event()
        self.finish_first_check = threading.Event()

    def check(self, trigger: Trigger = Trigger.BOOT) -> PassResult:
        self.triggers.append(trigger)
        if not self.first_check_running.is_set():
            self.first_check_running.set()
            self.finish_first_check.wait(10)
        return super().check(trigger)


def test_sighup_during_a_device_event_recheck_reloads_and_repairs(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")  # /dev/kfd is 0600: a repair is due
    path = system.root.etc / "kfdguard/config.yaml"
    service = HeldService(system, ConfigSource(path, "/etc/kfdguard/config.yaml"))
    assert service.loaded.config.device.group == "render"

    async def scenario() -> None:
        checks = Loop(service, Options()).checks
        checks.request(Trigger.DEVICE_EVENT, "udev change kfd kfd")
        await asyncio.get_running_loop().run_in_executor(None, service.first_check_running.wait, 10)
        # The administrator edits the file and runs systemctl reload kfdguard during the event's check.
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('device:\n  group: video\n  mode: "0660"\n')
        checks.request(Trigger.SIGHUP, "SIGHUP")
        service.finish_first_check.set()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if len(service.triggers) >= 2 and not checks.checking:
                break

    asyncio.run(scenario())
    assert service.triggers == [Trigger.DEVICE_EVENT, Trigger.SIGHUP]
    # The folded SIGHUP re-read the file ...
    assert service.loaded.config.device.group == "video"
    # ... and repaired: /dev/kfd now has the new group and mode.
    node = system.stat_node(system.root.kfd)
    video = next(g for g in probe(system, log="never").accounts.groups if g.name == "video")
    assert node is not None and (node.gid, node.mode) == (video.gid, 0o660)


def test_an_unknown_distribution_never_runs_a_sentence(fresh_machine: Make) -> None:
    opensuse = OsSpec("opensuse-tumbleweed", "20241201", "openSUSE Tumbleweed", ("opensuse", "suse"))
    spec = MachineBuilder("suse").with_gpu(0x744C).with_user("a", groups=["render"])
    spec = spec.with_kernel("6.12.1-1-default", amdgpu_in_initrd=True, kfd_interface=(1, 14))
    from kfdguard.record import replace

    machine = fresh_machine(replace(spec.build(), os=opensuse))
    config = Config(module=ModuleConfig(options=(("cwsr_enable", "0"),), initramfs="regenerate"))
    report, _, _ = enforce(machine, config)
    commands = (machine.root.path / ".kfdguard-sim/commands.log").read_text().splitlines()
    assert not any(line.startswith("regenerate") for line in commands), commands
    (change,) = [c for c in report.changes if c.action.kind == "regenerate-initramfs"]
    # Not run, not failed: a step for a person, with what kfdguard knows to say.
    assert change.status == "manual"
    assert "6.12.1-1-default" in change.detail
