"""The running service: a simulated GPU reset degrades and restores it; a resume re-checks.

The real service on a private bus (dbus-daemon and dbus-broker), a simulated
machine whose kernel prints the reset lines into the log the service follows and
sends the WEDGED uevent, and logind's PrepareForSleep(false) emitted by a
test-owned org.freedesktop.login1.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from kfdguard.host.root import READY_MARKER, Root
from kfdguard.record import replace
from kfdguard.simulate import bundled, gpureset
from kfdguard.simulate.kernel import SimKernel
from kfdguard.simulate.system import SimulatedSystem
from tests.servicekit import NAME, PATH, REPO, Guardian, busctl, guardian
from tools.privatebus import PrivateBus

GPU = "0000:03:00.0"
pytestmark = pytest.mark.root


def _after(g: Guardian, start: int, prefix: str, timeout: float = 20.0) -> int:
    """The index of the first notify message from ``start`` on that starts with ``prefix``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for n, message in enumerate(list(g.messages)[start:], start):
            if message.startswith(prefix):
                return n
        time.sleep(0.02)
    raise AssertionError(f"no {prefix!r} after message {start}: {g.messages[start:]}")


def _devices(g: Guardian) -> list[dict[str, object]]:
    out = busctl("--json=short", "call", NAME, PATH, NAME, "GetStatus", env=g.env()).stdout
    status = json.loads(out)["data"][0]
    return [{k: v["data"] for k, v in d.items()} for d in status["Devices"]["data"]]


def _kernel(g: Guardian) -> SimKernel:
    return SimulatedSystem(Root(g.root)).kernel()


def dmesg_restrict(root: Path, value: str) -> None:
    """kernel.dmesg_restrict on the simulated machine (its /proc/sys/kernel)."""
    (root / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
    (root / "proc/sys/kernel/dmesg_restrict").write_text(value + "\n")


@pytest.mark.parametrize("release", ["6.8.0-45-generic", "7.2.13-amd64"])
def test_a_reset_degrades_then_restores_with_counts_in_getstatus(each_bus: str, release: str) -> None:
    spec = bundled.load("rx7900xtx-ubuntu2404")
    spec = replace(spec, kernel=replace(spec.kernel, release=release))
    # Every user may read this kernel's log: the status may quote it (the next test is the other case).
    with guardian(spec, prepare=lambda root: dmesg_restrict(root, "0")) as g:
        ready = _after(g, 0, "STATUS=ready")
        marker = g.root / READY_MARKER.lstrip("/")
        assert marker.exists()
        kernel = _kernel(g)
        gpureset.hang(kernel, GPU, ("llama-server", 777))
        kernel.save()
        degraded = _after(g, ready + 1, "STATUS=degraded")
        # The ring timeout (hung) comes first, the reset's begin line right after it.
        assert GPU in g.messages[degraded] and g.messages[degraded].endswith(("hung", "resetting"))
        time.sleep(0.2)
        device = _devices(g)[0]
        assert (device["Health"], device["Resets"], device["RingTimeouts"]) == ("resetting", 1, 1)
        assert device["ComputeReady"] is False and device["LastProcess"] == "llama-server (pid 777)"
        assert not marker.exists(), "compute is not ready while the GPU resets"
        kernel = _kernel(g)
        gpureset.recover(kernel, GPU, ("llama-server", 777))
        kernel.save()
        _after(g, degraded + 1, "STATUS=ready")
        device = _devices(g)[0]
        assert (device["Health"], device["Resets"], device["ComputeReady"]) == ("ok", 1, True)
        assert device["WedgedEvents"] == (1 if release.startswith("7.") else 0)
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()


@pytest.mark.parametrize("restrict", ["1", None])
def test_where_the_kernel_keeps_its_log_from_users_the_status_names_no_process(restrict: str | None) -> None:
    """Issue 35: with kernel.dmesg_restrict=1 (or unreadable) the published status carries the cause of a
    hang but not the kernel's line nor the process and pid it named; once the administrator sets 0, it does."""
    spec = bundled.load("rx7900xtx-ubuntu2404")
    spec = replace(spec, kernel=replace(spec.kernel, release="7.2.13-amd64"))
    prepare = None if restrict is None else (lambda root: dmesg_restrict(root, restrict))
    with guardian(spec, prepare=prepare) as g:
        ready = _after(g, 0, "STATUS=ready")
        kernel = _kernel(g)
        gpureset.hang(kernel, GPU, ("llama-server", 777))
        kernel.save()
        _after(g, ready + 1, "STATUS=degraded")
        time.sleep(0.2)
        device = _devices(g)[0]
        assert (device["Health"], device["Resets"], device["RingTimeouts"]) == ("resetting", 1, 1)
        assert (device["LastHealthLine"], device["LastProcess"]) == ("GPU reset begin", "")
        everything = busctl("call", NAME, PATH, NAME, "GetStatus", env=g.env()).stdout
        assert "gpu-hang" in everything and "resetting" in everything
        assert "llama-server" not in everything and "777" not in everything and "Source:" not in everything
        # The administrator lets everyone read the kernel log: the next publication quotes the kernel.
        dmesg_restrict(g.root, "0")
        kernel = _kernel(g)
        gpureset.recover(kernel, GPU, ("llama-server", 777))
        kernel.save()
        _after(g, ready + 1, "STATUS=ready")
        time.sleep(0.2)
        device = _devices(g)[0]
        assert str(device["LastHealthLine"]).startswith(("GPU reset(1) succeeded!", "uevent change drm")), device
        assert device["LastProcess"] == "llama-server (pid 777)"


def test_a_failed_reset_stays_degraded_with_an_error_finding() -> None:
    with guardian("rx7900xtx-ubuntu2404") as g:
        ready = _after(g, 0, "STATUS=ready")
        gpureset.reset(Root(g.root), GPU, ok=False)
        _after(g, ready + 1, "STATUS=degraded")
        time.sleep(0.5)  # a re-check, were one to run, must not bring it back: the kernel said it failed
        assert busctl("get-property", NAME, PATH, NAME, "State", env=g.env()).stdout == 's "degraded"\n'
        out = busctl("--json=short", "get-property", NAME, PATH, NAME, "Findings", env=g.env()).stdout
        findings = json.loads(out)["data"]
        assert findings[0][:2] == ["gpu-hang", "error"] and "could not be reset" in findings[0][2]


# --- resume ------------------------------------------------------------------------------------

LOGIN1_POLICY = """<policy user="root"><allow own="org.freedesktop.login1"/></policy>"""


async def _emit_prepare_for_sleep(address: str, value: bool, *, own: bool) -> None:
    from dbus_fast import BusType, Message, MessageType
    from dbus_fast.aio import MessageBus

    bus = await MessageBus(bus_address=address, bus_type=BusType.SYSTEM).connect()
    try:
        if own:
            await bus.request_name("org.freedesktop.login1")
        signal = Message.new_signal("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                                    "b", [value])  # fmt: skip
        await bus.send(signal)
        if not own:
            # The same member sent straight to the service by someone who is not logind.
            reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                           interface="org.freedesktop.DBus", member="GetNameOwner", signature="s",
                                           body=[NAME]))  # fmt: skip
            assert reply.message_type == MessageType.METHOD_RETURN
            direct = Message.new_signal("/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                        "PrepareForSleep", "b", [value])  # fmt: skip
            direct.destination = reply.body[0]
            await bus.send(direct)
        await asyncio.sleep(0.2)  # let the bus deliver before the connection (and the name) goes
    finally:
        bus.disconnect()


def _fix_the_node(g: Guardian) -> None:
    root = Root(g.root)
    render = next(int(line.split(":")[2]) for line in (g.root / "etc/group").read_text().splitlines()
                  if line.startswith("render:"))  # fmt: skip
    # Without a uevent: only a re-check can notice it.
    nodes = SimulatedSystem(root)
    nodes.set_node_owner(root.kfd, 0, render, 0o660)


def test_resume_rechecks_and_only_logind_can_ask(each_bus: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kfdguard-resume-") as tmp:
        Path(tmp).chmod(0o755)
        bus = PrivateBus(Path(tmp), extra=LOGIN1_POLICY).start()
        try:
            with guardian("kfd-perms-0600", enforce=False, bus=bus) as g:
                first = _after(g, 0, "STATUS=unavailable")
                _fix_the_node(g)
                # Someone else's PrepareForSleep(false), broadcast and sent straight: no re-check.
                asyncio.run(_emit_prepare_for_sleep(bus.address, False, own=False))
                # logind's PrepareForSleep(true): going to sleep, nothing to look at yet.
                asyncio.run(_emit_prepare_for_sleep(bus.address, True, own=True))
                time.sleep(1.0)
                assert not any(m.startswith("STATUS=ready") for m in g.messages[first:]), g.messages
                start = time.monotonic()
                asyncio.run(_emit_prepare_for_sleep(bus.address, False, own=True))
                _after(g, first + 1, "STATUS=ready", timeout=10)
                assert time.monotonic() - start < 5
            _, log = g.stop()
            assert "ignoring PrepareForSleep from :" in log
            assert "resume from sleep" in log
        finally:
            bus.stop()


# --- the per-kernel history learns from it (issues 17.4, 18.5) ---------------------------------

OLDER = "6.5.0-44-generic"


def _oneshot(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kfdguard", *argv, "--root", str(root)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def _fallback_json(root: Path) -> dict[str, Any]:
    result = _oneshot(root, "fallback", "--json")
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    assert isinstance(value, dict)
    return value


def _boot_pass(root: Path) -> None:
    """kfdguard-enforce.service, which runs (as root) before the resident service at every boot."""
    result = _oneshot(root, "enforce", "--record")
    assert result.returncode == 0, result.stderr


def test_resets_under_load_end_in_a_history_that_records_the_kernel_unstable_and_a_fallback_that_says_why() -> None:
    spec = bundled.load("rx7900xtx-ubuntu2404")
    running = spec.kernel.release
    # An older kernel that ran compute here before (its history says so), and no fallback policy beyond notify.
    spec = replace(spec, other_kernels=(replace(spec.kernel, release=OLDER),), history=((OLDER, "ok"), (OLDER, "ok")))
    with guardian(spec, args=("--starter", "child"), prepare=_boot_pass) as g:
        root = Root(g.root)
        first_boot = (g.root / "proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
        history = json.loads((root.var_lib / "kfdguard/history.json").read_text())
        assert [b["boot_id"] for b in history["kernels"][running]["boots"]] == [first_boot]
        ready = _after(g, 0, "STATUS=ready")
        for _ in range(3):  # three resets under load, each announced and recovered
            gpureset.reset(root, GPU, process=("llama-server", 777))
            ready = _after(g, _after(g, ready + 1, "STATUS=degraded") + 1, "STATUS=ready")
        record = root.var_lib / "kfdguard/health" / f"boot-{first_boot}.json"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (record.exists() and json.loads(record.read_text())["resets"] == 3):
            time.sleep(0.05)
        written = json.loads(record.read_text())
        assert (written["resets"], written["release"], written["last_process"]) == (
            3,
            running,
            "llama-server (pid 777)",
        )
        # Not in the history yet (the resident cannot write it); the recommendation already counts it.
        now = _fallback_json(g.root)
        assert (now["unstable"], now["needed"], now["recommended"]) == (True, False, OLDER)
        # The service's own re-check after the recovery says so on the bus, with a warning finding.
        deadline = time.monotonic() + 10
        while True:  # the re-check the last recovery asked for may still be running
            on_bus_out = busctl("--json=short", "get-property", NAME, PATH, NAME, "FallbackRecommendation", env=g.env())
            on_bus = {k: v["data"] for k, v in json.loads(on_bus_out.stdout)["data"].items()}
            if on_bus["Unstable"] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert (on_bus["Unstable"], on_bus["Needed"], on_bus["Kernel"]) == (True, False, OLDER)
        findings = busctl("--json=short", "get-property", NAME, PATH, NAME, "Findings", env=g.env()).stdout
        assert [f[1] for f in json.loads(findings)["data"] if f[0] == "kernel-unstable"] == ["warning"]
        g.stop()  # the machine shuts down
        # The next boot: a new boot id, and its enforce pass (root) folds the last boot's health into the history.
        (g.root / "proc/sys/kernel/random/boot_id").write_text("0f3e7c1a-5b2d-4e8f-a1c3-9d7b6e5f4a32\n")
        _boot_pass(g.root)
        history = json.loads((root.var_lib / "kfdguard/history.json").read_text())
        boots = history["kernels"][running]["boots"]
        assert [(b["boot_id"], b["resets"]) for b in boots] == [
            (first_boot, 3),
            ("0f3e7c1a5b2d4e8fa1c39d7b6e5f4a32", 0),
        ]
        assert (
            boots[0]["last_event"] in ("reset-done", "wedged") and boots[0]["last_process"] == "llama-server (pid 777)"
        )
        shown = _fallback_json(g.root)
        mine = next(k for k in shown["kernels"] if k["release"] == running)
        assert mine["health"]["unstable"] == 1 and mine["health"]["healthy"] == 1
        assert (shown["unstable"], shown["recommended"], shown["act_on_unstable"]) == (True, OLDER, False)
        assert shown["reason"].startswith(
            "it ran compute on 2 of its 2 boots kfdguard saw, the last one included (last known good)"
        )
        assert (
            f"; the running {running} runs compute but is unstable: the GPU reset repeatedly on 1 of its last 2 boots with compute (latest: 3 GPU resets, 3 ring timeouts in the boot of "
            in shown["reason"]
        )
        assert shown["reason"].endswith("(fallback.unstable: report, so kfdguard only recommends)")
        # The boot pass arranged nothing: the policy is notify, and fallback.unstable is report.
        assert json.loads((root.var_lib / "kfdguard/history.json").read_text())["attempts"] == []
