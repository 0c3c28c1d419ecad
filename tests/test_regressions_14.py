"""Issue 14's two bugs, each written as the user meets it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from kfdguard.config import Config, ModuleConfig
from kfdguard.enforce import enforce
from kfdguard.service.loop import Loop
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec, OsSpec
from kfdguard.simulate.system import SimulatedSystem

Make = Callable[[str | MachineSpec], SimulatedSystem]


class RecordingService:
    """What the loop drives: it records the calls; the first check waits until told to finish."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.first_check_running = threading.Event()
        self.finish_first_check = threading.Event()
        self.last: object = None

    def reload_config(self) -> None:
        self.calls.append("reload")

    def check(self, *, enforce: bool | None = None) -> object:
        self.calls.append(f"check enforce={enforce}")
        if not self.first_check_running.is_set():
            self.first_check_running.set()
            self.finish_first_check.wait(10)
        return type("Result", (), {"status": None})()

    def transition(self, status: object, reason: str) -> None:
        pass

    def record_and_fallback(self, result: object) -> str:
        return ""

    def republish(self, reason: str) -> None:
        pass


def test_sighup_during_a_device_event_recheck_reloads_and_repairs() -> None:
    service = RecordingService()

    async def scenario() -> None:
        loop = Loop(service, object())  # type: ignore[arg-type]
        loop.request("udev add kfd kfd")
        await asyncio.get_running_loop().run_in_executor(None, service.first_check_running.wait, 10)
        loop.request("SIGHUP", reload=True)  # systemctl reload kfdguard, while the event's check runs
        service.finish_first_check.set()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if len(service.calls) >= 3 and not loop.checking:
                break

    asyncio.run(scenario())
    # The device event only re-evaluates; the SIGHUP folded behind it must still re-read the
    # configuration and act (enforce=None: the service's own setting, which is to repair).
    assert service.calls == ["check enforce=False", "reload", "check enforce=None"]


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
