"""The service writes the fleet files (publish.serve), and still opens no network socket."""

from __future__ import annotations

import ast
import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.app.pipeline import ConfigSource
from kfdguard.fleet.publish import serve
from kfdguard.host.root import FLEET_NFD, FLEET_TEXTFILE, Root
from kfdguard.service.core import Service, error_status
from kfdguard.simulate.system import SimulatedSystem
from tests.paths import TOP

REPO = TOP
Make = Callable[[str], SimulatedSystem]


def _service(system: SimulatedSystem) -> Service:
    root = system.root
    for shown in (FLEET_TEXTFILE, FLEET_NFD):
        root.join(shown).parent.mkdir(parents=True, exist_ok=True)
    config = root.etc / "kfdguard/config.yaml"
    return Service(system, ConfigSource(config, root.display(config)), enforce=False)


async def _until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the fleet files were not written in time"
        await asyncio.sleep(0.02)


def test_files_follow_every_transition_and_the_timer(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    service = _service(system)
    prom = system.root.join(FLEET_TEXTFILE)
    nfd = system.root.join(FLEET_NFD)

    async def scenario() -> None:
        result = service.check()
        service.last = result
        service.transition(result.status, "boot pass")  # before the loop, as main.py does it
        task = asyncio.get_running_loop().create_task(serve(service, interval=0.3))
        try:
            await _until(lambda: prom.exists() and nfd.exists())
            assert "kfdguard_compute_ready 1\n" in prom.read_text()
            assert "kfdguard.ready=true" in nfd.read_text()
            first = nfd.read_text()
            # The timer: the expiry moves on while the service lives.
            await _until(lambda: nfd.read_text() != first, timeout=5)
        finally:
            task.cancel()

    asyncio.run(scenario())


def test_a_transition_is_written_at_once_not_at_the_next_tick(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    service = _service(system)
    prom = system.root.join(FLEET_TEXTFILE)
    nfd = system.root.join(FLEET_NFD)

    async def scenario() -> None:
        result = service.check()
        service.last = result
        service.transition(result.status, "boot pass")
        task = asyncio.get_running_loop().create_task(serve(service, interval=3600))
        try:
            await _until(lambda: nfd.exists() and "kfdguard.state=ready" in nfd.read_text())
            service.transition(error_status("the check failed: boom"), "test")
            await _until(lambda: "kfdguard.state=error" in nfd.read_text())
            assert 'kfdguard_state{state="error"} 1' in prom.read_text()
            assert "kfdguard.ready=false" in nfd.read_text()
        finally:
            task.cancel()

    asyncio.run(scenario())


def test_a_write_failure_does_not_stop_the_loop(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    service = _service(system)
    prom = system.root.join(FLEET_TEXTFILE)
    prom.mkdir()  # a directory where the file belongs: every write fails
    nfd = system.root.join(FLEET_NFD)

    async def scenario() -> None:
        result = service.check()
        service.last = result
        service.transition(result.status, "boot pass")
        task = asyncio.get_running_loop().create_task(serve(service, interval=0.1))
        try:
            await _until(nfd.exists)
            await asyncio.sleep(0.3)
            assert not task.done(), "the fleet task ended on a failed write"
            assert "kfdguard.ready=false" in nfd.read_text()
        finally:
            task.cancel()

    asyncio.run(scenario())


def test_nothing_is_written_before_a_check(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    service = _service(system)

    async def scenario() -> None:
        task = asyncio.get_running_loop().create_task(serve(service, interval=0.05))
        await asyncio.sleep(0.3)
        task.cancel()

    asyncio.run(scenario())
    assert not system.root.join(FLEET_TEXTFILE).exists()


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="the service owns a name on a system-like bus (CI runs as root)")
def test_the_running_service_writes_them(tmp_path: Path) -> None:
    from tests.servicekit import guardian

    def prepare(root: Path) -> None:
        for shown in (FLEET_TEXTFILE, FLEET_NFD):
            Root(root).join(shown).parent.mkdir(parents=True, exist_ok=True)

    with guardian("kfd-perms-0600", enforce=False, prepare=prepare) as g:
        prom, nfd = Root(g.root).join(FLEET_TEXTFILE), Root(g.root).join(FLEET_NFD)
        deadline = time.monotonic() + 20
        # One publish writes the textfile, then the NFD file: wait for both, not the first alone.
        while not (prom.exists() and "kfdguard_state" in prom.read_text() and nfd.exists()):
            assert time.monotonic() < deadline, "the service wrote no textfile and feature file"
            time.sleep(0.1)
        assert 'kfdguard_state{state="unavailable"} 1' in prom.read_text()
        assert "kfdguard.blocked=device-permissions" in nfd.read_text()


# --- no network port --------------------------------------------------------------------------


def test_the_unit_still_denies_ip() -> None:
    unit = (REPO / "units" / "kfdguard.service").read_text()
    lines = [line.strip() for line in unit.splitlines() if not line.lstrip().startswith("#")]
    assert "IPAddressDeny=any" in lines
    assert not any(line.startswith("IPAddressAllow=") for line in lines)
    families = next(line for line in lines if line.startswith("RestrictAddressFamilies="))
    assert "AF_INET" not in families  # nor AF_INET6: fleets read files, never a port


def test_the_unit_lets_the_service_write_the_fleet_directories() -> None:
    import os.path

    from kfdguard.host.root import FLEET_CDI

    unit = (REPO / "units" / "kfdguard.service").read_text()
    lines = [line.strip() for line in unit.splitlines() if not line.lstrip().startswith("#")]
    writable = {
        p.lstrip("-") for line in lines if line.startswith("ReadWritePaths=") for p in line.split("=", 1)[1].split()
    }
    for default in (FLEET_TEXTFILE, FLEET_NFD, FLEET_CDI):
        assert os.path.dirname(default) in writable, default
    assert "IPAddressDeny=any" in lines  # writing files, still no network


def test_the_fleet_code_uses_no_network_module() -> None:
    banned = {"socket", "http", "urllib", "asyncio.start_server", "ssl"}
    for path in sorted((REPO / "kfdguard" / "fleet").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] in banned for n in names), f"{path.name} imports {names}"
        assert "start_server" not in path.read_text()
