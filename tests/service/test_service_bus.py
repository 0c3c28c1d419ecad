"""The service on a real dbus-daemon with the project's bus policy; clients busctl, gdbus and Python."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from kfdguard.host.root import Root
from kfdguard.publish.client import ServiceError
from kfdguard.publish.client import call as py_call
from kfdguard.publish.names import ERROR_PREFIX
from kfdguard.record import replace
from kfdguard.simulate import state
from kfdguard.simulate.system import SimulatedSystem
from tests.paths import unreachable_by
from tests.servicekit import NAME, PATH, REPO, busctl, call, guardian, run_as

NOBODY = 65534
BACKENDS = ["fast", "next"]
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root may own the name on a system-like bus (CI runs as root)"
)


def gdbus(*args: str, env: dict[str, str], user: int | None = None) -> subprocess.CompletedProcess[str]:
    return run_as(["gdbus", *args], env=env, user=user)


def contract() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    root = ET.parse(REPO / "dbus/org.kfdguard.Guardian1.xml").getroot()
    iface = next(i for i in root.iter("interface") if i.get("name") == NAME)
    props = {p.get("name", ""): p.get("type", "") for p in iface.iter("property")}
    methods = {m.get("name", ""): "".join(a.get("type", "") for a in m.iter("arg") if a.get("direction") == "out")
               for m in iface.iter("method")}  # fmt: skip
    signals = {s.get("name", ""): "".join(a.get("type", "") for a in s.iter("arg")) for s in iface.iter("signal")}
    return props, methods, signals


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.usefixtures("each_bus")
def test_status_through_three_clients(backend: str) -> None:
    with guardian("rx7900xtx-ubuntu2404", backend=backend) as g:
        env = g.env()
        assert busctl("get-property", NAME, PATH, NAME, "State", env=env).stdout == 's "ready"\n'
        out = gdbus(
            "call", "--system", "--dest", NAME, "--object-path", PATH, "--method", f"{NAME}.GetStatus", env=env
        ).stdout
        assert "'State': <'ready'>" in out and "'KfdVersion': <'1.14'>" in out
        status = py_call("GetStatus", g.address)[0]
        assert status["Ready"] is True and status["KernelRelease"] == "6.8.0-45-generic"
        (device,) = status["Devices"]
        assert device["GfxTarget"] == "gfx1100" and device["DeviceId"] == 0x744C and device["KfdNode"] == 1
        # The same answer for an unprivileged caller: reading needs no authorization.
        as_nobody = busctl("get-property", NAME, PATH, NAME, "Ready", env=env, user=NOBODY)
        assert as_nobody.stdout == "b true\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_running_service_exposes_exactly_the_xml_contract(backend: str) -> None:
    props, methods, signals = contract()
    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False) as g:
        env = g.env()
        rows = [
            r.split() for r in busctl("introspect", NAME, PATH, NAME, env=env).stdout.splitlines() if r.startswith(".")
        ]
        members = {r[0]: {"type": r[1], "signature": r[2], "result": r[3] if len(r) > 3 else ""} for r in rows}
        got = {name.lstrip("."): m for name, m in members.items()}
        assert {n for n, m in got.items() if m["type"] == "property"} == set(props)
        assert {n for n, m in got.items() if m["type"] == "method"} == set(methods)
        assert {n for n, m in got.items() if m["type"] == "signal"} == set(signals)
        # Every property is served with the signature the XML promises.
        status = busctl(
            "call", NAME, PATH, "org.freedesktop.DBus.Properties", "GetAll", "s", NAME, "--json=short", env=env
        ).stdout
        served = json.loads(status)["data"][0]
        assert {k: v["type"] for k, v in served.items()} == props
        # Every method answers with its declared out-signature (or an authorization error).
        for method, out in methods.items():
            assert got[method]["result"] == out
            assert got[method]["signature"] == INS.get(method, "-"), method  # busctl writes "-" for none
            args = ARGS[INS[method]] if method in INS else ()
            reply = call(method, *args, env=env, check=False)
            if reply.returncode == 0:
                assert reply.stdout.split()[0] == out, (method, reply.stdout)
            else:  # the fallback methods on a machine with nothing to fall back to; no ollama to set up
                assert method in ("ApplyFallback", "ClearFallback", "ApplyRemedy"), (method, reply.stderr)
                assert "Traceback" not in reply.stderr, reply.stderr


def test_introspect_reply_is_the_installed_xml() -> None:
    with guardian("nvidia-only", enforce=False) as g:
        out = busctl(
            "call", NAME, PATH, "org.freedesktop.DBus.Introspectable", "Introspect", "--json=short", env=g.env()
        ).stdout
        assert json.loads(out)["data"][0] == (REPO / "dbus/org.kfdguard.Guardian1.xml").read_text()
        parent = busctl(
            "call", NAME, "/org/kfdguard", "org.freedesktop.DBus.Introspectable", "Introspect", env=g.env()
        ).stdout
        assert 'node name=\\"Guardian1\\"' in parent


@pytest.mark.usefixtures("each_bus")
def test_only_root_may_own_the_name() -> None:
    with guardian("nvidia-only", enforce=False) as g:
        taken = busctl("call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su",
                       "org.kfdguard.Guardian1", "4", env=g.env(), user=NOBODY, check=False)  # fmt: skip
        assert taken.returncode != 0 and "Access denied" in taken.stderr  # the policy: only root owns it


@pytest.mark.usefixtures("each_bus")
def test_check_access_for_the_caller() -> None:
    with guardian("rx7900xtx-ubuntu2404") as g:
        env = g.env()
        render_gid = next(int(line.split(":")[2]) for line in (g.root / "etc/group").read_text().splitlines()
                          if line.startswith("render:"))  # fmt: skip
        root_says = call("CheckAccess", env=env).stdout
        assert root_says.startswith("bs true")
        denied = call("CheckAccess", env=env, user=NOBODY).stdout
        assert denied.startswith("bs false") and "cannot open /dev/kfd" in denied and "usermod -aG render" in denied
        # dbus-daemon drops callers it cannot look up: use a real system account (daemon, uid 1).
        member = call("CheckAccess", env=env, user=1, groups=(render_gid,)).stdout
        assert member.startswith("bs true") and "can open /dev/kfd, /dev/dri/renderD128" in member


# The methods that take arguments (every other one takes none), as the XML declares them.
INS = {"CheckAccessWithEnvironment": "a{ss}", "ApplyRemedy": "s", "ClearRemedy": "s"}
ARGS = {"a{ss}": ("a{ss}", "0"), "s": ("s", "ollama")}  # an empty environment; the one application


@pytest.mark.usefixtures("each_bus")
def test_check_access_with_the_callers_environment() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        plain = call("CheckAccessWithEnvironment", "a{ss}", "0", env=g.env()).stdout  # busctl, an a{ss} of none
        assert plain.startswith("bsbs true ") and 'true "no visibility variable is set' in plain

        def ask(env: dict[str, str]) -> list[Any]:
            return py_call("CheckAccessWithEnvironment", g.address, signature="a{ss}", body=[env])

        allowed, text, visible, why = ask({"ROCR_VISIBLE_DEVICES": ""})
        assert allowed is True and text == "root (uid 0) can open /dev/kfd, /dev/dri/renderD128"
        assert visible is False
        assert (
            why
            == "ROCR_VISIBLE_DEVICES='' hides every AMD GPU (the 1 on this machine): ROCm programs started here see no GPU"
        )
        _, _, visible, why = ask({"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1"})
        assert visible is False and why.startswith(
            "HIP_VISIBLE_DEVICES='1' hides every AMD GPU (the 1 left by ROCR_VISIBLE_DEVICES)"
        )
        _, _, visible, why = ask({"CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin"})
        assert visible is True and why == "CUDA_VISIBLE_DEVICES='0' leaves 1 of 1"
        # The old method is unchanged: a client written before the new one keeps working.
        assert call("CheckAccess", env=g.env()).stdout.startswith("bs true")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.usefixtures("each_bus")
def test_hostile_environments_get_invalid_args(backend: str) -> None:
    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False) as g:
        member = "CheckAccessWithEnvironment"
        cases: list[tuple[str, list[Any], str]] = [
            ("", [], "takes (a{ss})"),
            ("s", ["x"], "takes (a{ss})"),
            ("a{ss}", [{f"V{i}": "0" for i in range(65)}], "65 entries (at most 64)"),
            ("a{ss}", [{"ROCR_VISIBLE_DEVICES": "0," * 4000}], "name or value too long"),
            ("a{ss}", [{"X" * 300: ""}], "name or value too long"),
        ]
        for sig, body, text in cases:
            name, message = raw_call(g.address, backend, NAME, member, sig, body)
            assert name == ERROR_PREFIX + "InvalidArgs", (sig, name, message)
            assert text in message and "Traceback" not in message
        assert raw_call(g.address, backend, NAME, member, "a{ss}", [{"HIP_VISIBLE_DEVICES": "\u2603,-1"}]) == (
            None, "bsbs"
        )  # fmt: skip
        assert g.proc.poll() is None


# What each bus says when its policy refuses a method call (dbus-daemon 1.14 bus/bus.c wording;
# dbus-broker 33 src/bus/driver.c, DRIVER_E_SEND_DENIED).
REJECTED = {"daemon": "Rejected send message", "broker": "Sender is not authorized to send message"}


def raw_call(address: str, backend: str, interface: str, member: str, signature: str = "",
             body: list[Any] | None = None) -> tuple[str | None, str]:  # fmt: skip
    """One call with the given library; returns (error name or None, error text or reply signature)."""

    async def go() -> tuple[str | None, str]:
        from kfdguard.service.backend import load

        b = load(backend)
        bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
        try:
            reply = await asyncio.wait_for(bus.call(b.Message(destination=NAME, path=PATH, interface=interface,
                                                              member=member, signature=signature, body=body or [])), 20)  # fmt: skip
        finally:
            bus.disconnect()
        if reply.message_type == b.MessageType.ERROR:
            return reply.error_name, str(reply.body[0]) if reply.body else ""
        return None, reply.signature

    return asyncio.run(go())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.usefixtures("each_bus")
def test_bad_calls_get_clear_errors_and_the_service_keeps_serving(backend: str) -> None:
    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False) as g:
        cases: list[tuple[tuple[str, str, str, list[Any]], str, str]] = [
            ((NAME, "GetStatus", "s", ["x"]), ERROR_PREFIX + "InvalidArgs", "takes no arguments"),
            ((NAME, "Reload", "s", ["x" * 4_000_000]), ERROR_PREFIX + "InvalidArgs", "takes no arguments"),
            ((NAME, "CheckAccess", "ai", [list(range(100_000))]), ERROR_PREFIX + "InvalidArgs", ""),
            ((NAME, "Frobnicate", "", []), "org.freedesktop.DBus.Error.UnknownMethod", "Frobnicate"),
            # The bus policy allows only kfdguard's and the standard interfaces: the bus refuses the rest
            # (same error name on both buses, each with its own text: docs/PLATFORMS.md).
            (("org.example.Nope", "X", "", []), "org.freedesktop.DBus.Error.AccessDenied", REJECTED[g.bus.kind]),
            (("org.freedesktop.DBus.Properties", "Get", "ss", [NAME, "Nope"]), "org.freedesktop.DBus.Error.UnknownProperty", "Nope"),
            (("org.freedesktop.DBus.Properties", "Set", "ssv", [NAME, "State", _variant(backend, "s", "ready")]),
             "org.freedesktop.DBus.Error.PropertyReadOnly", "read-only"),
            (("org.freedesktop.DBus.Properties", "Get", "s", [NAME]), "org.freedesktop.DBus.Error.InvalidArgs", "bad call"),
        ]  # fmt: skip
        for (iface, member, sig, body), error, text in cases:
            name, message = raw_call(g.address, backend, iface, member, sig, body)
            assert name == error, (member, name, message)
            assert text in message and "Traceback" not in message
        assert raw_call(g.address, backend, NAME, "GetStatus") == (None, "a{sv}")
        assert g.proc.poll() is None


def _variant(backend: str, signature: str, value: Any) -> Any:
    from kfdguard.service.backend import load

    return load(backend).Variant(signature, value)


@pytest.mark.usefixtures("each_bus")
def test_a_flood_from_one_client_gets_busy_and_others_are_served() -> None:
    async def flood(address: str) -> tuple[list[str], float]:
        from kfdguard.service.backend import load

        b = load()
        bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
        calls = [bus.call(b.Message(destination=NAME, path=PATH, interface=NAME, member="Diagnose")) for _ in range(40)]
        replies = await asyncio.gather(*calls)
        start = time.monotonic()
        other = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
        ok = await other.call(b.Message(destination=NAME, path=PATH, interface=NAME, member="GetStatus"))
        elapsed = time.monotonic() - start
        assert ok.message_type == b.MessageType.METHOD_RETURN
        bus.disconnect()
        other.disconnect()
        return [r.error_name or "ok" for r in replies], elapsed

    with guardian("dgpu-plus-igpu-atomics", enforce=False) as g:
        results, elapsed = asyncio.run(flood(g.address))
        assert results.count(ERROR_PREFIX + "Busy") >= 30  # at most 4 in flight per caller
        assert "ok" in results
        assert elapsed < 2
        assert g.proc.poll() is None


@pytest.mark.usefixtures("each_bus")
def test_state_change_is_signalled() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        env = g.env()
        monitor = subprocess.Popen(["gdbus", "monitor", "--system", "--dest", NAME, "--object-path", PATH],
                                   env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(0.5)
        # Someone tightens /dev/kfd behind kfdguard's back; the uevent makes it look again.
        devices = state.read_devices(Root(g.root))
        devices["/dev/kfd"] = replace(devices["/dev/kfd"], mode=0o600, gid=0)
        state.write_devices(Root(g.root), devices)
        g.uevent("change kfd kfd")
        deadline = time.monotonic() + 10
        while busctl("get-property", NAME, PATH, NAME, "State", env=env).stdout != 's "unavailable"\n':
            assert time.monotonic() < deadline, "the state never changed"
            time.sleep(0.2)
        time.sleep(0.3)  # the signal is sent before the property is readable; let gdbus print it
        monitor.terminate()
        seen = monitor.communicate(timeout=10)[0]
        assert "org.kfdguard.Guardian1.StateChanged ('ready', 'unavailable'" in seen
        assert "org.freedesktop.DBus.Properties.PropertiesChanged ('org.kfdguard.Guardian1', {" in seen
        assert "'State': <'unavailable'>" in seen


def test_events_only_observe_and_reload_repairs() -> None:
    """A device event re-evaluates without acting; Reload (a request to act) repairs."""
    with guardian("rx7900xtx-ubuntu2404", enforce=True) as g:
        env, root = g.env(), Root(g.root)
        # Another package's rule, applied by udev's coldplug: the simulated udev announces the nodes it touched.
        (g.root / "etc/udev/rules.d/99-vendor-tools.rules").write_text('KERNEL=="kfd", MODE="0600"\n')
        SimulatedSystem(root).run(["udevadm", "trigger", "--action=add"], timeout=5)
        deadline = time.monotonic() + 10
        while busctl("get-property", NAME, PATH, NAME, "State", env=env).stdout != 's "unavailable"\n':
            assert time.monotonic() < deadline, "the event was not noticed"
            time.sleep(0.1)
        assert state.read_devices(root)["/dev/kfd"].mode == 0o600
        # A member of the group is told what is wrong: the node, not their groups.
        render_gid = state.read_devices(root)["/dev/kfd"].gid
        member = call("CheckAccess", env=env, user=1, groups=(render_gid,)).stdout
        assert member.startswith("bs false") and "not your groups" in member and "usermod" not in member
        assert call("Reload", env=env).stdout == 's "ready"\n'
        assert state.read_devices(root)["/dev/kfd"].mode == 0o660


def test_sighup_rereads_the_config_and_sigterm_stops_cleanly() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        env = g.env()
        assert busctl("get-property", NAME, PATH, NAME, "FallbackPolicy", env=env).stdout == 's "notify"\n'
        (g.root / "etc/kfdguard").mkdir(parents=True, exist_ok=True)
        (g.root / "etc/kfdguard/config.yaml").write_text("fallback:\n  policy: off\n")
        g.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while busctl("get-property", NAME, PATH, NAME, "FallbackPolicy", env=env).stdout != 's "off"\n':
            assert time.monotonic() < deadline, "SIGHUP did not reload the configuration"
            time.sleep(0.1)
        g.proc.send_signal(signal.SIGTERM)
        assert g.proc.wait(10) == 0
        g.read_notify(0.5)
        assert any("STOPPING=1" in m for m in g.messages)


@pytest.mark.usefixtures("each_bus")
def test_reload_without_polkit_is_root_only() -> None:
    with guardian("rx7900xtx-ubuntu2404") as g:
        env = g.env()
        refused = call("Reload", env=env, user=NOBODY, check=False)
        assert refused.returncode != 0 and "polkit unavailable" in refused.stderr and "only root" in refused.stderr
        assert call("Reload", env=env).stdout == 's "ready"\n'


def test_cli_clients(tmp_path: Path) -> None:
    import sys

    if why := unreachable_by(NOBODY):
        pytest.skip(why)

    with guardian("kfd-perms-0600", enforce=False) as g:

        def kfd(*args: str, user: int | None = None) -> subprocess.CompletedProcess[str]:
            return run_as(
                [sys.executable, "-m", "kfdguard", *args, "--bus", g.address], env=g.env(), user=user, check=False
            )

        status = kfd("status", "--json")
        assert status.returncode == 2 and json.loads(status.stdout)["State"] == "unavailable"
        access = kfd("access", user=NOBODY)
        assert access.returncode == 1 and access.stdout.startswith("no: nobody (uid 65534) cannot open /dev/kfd")
        # The CLI sends its visibility variables: whatever /dev/kfd allows, this shell hides the GPU.
        hidden = run_as([sys.executable, "-m", "kfdguard", "access", "--json", "--bus", g.address],
                        env={**g.env(), "HIP_VISIBLE_DEVICES": "5"}, check=False)  # fmt: skip
        said = json.loads(hidden.stdout)
        assert hidden.returncode == 1 and said["visible"] is False and said["explanation"].startswith("root (uid 0)")
        assert said["environment"].startswith("HIP_VISIBLE_DEVICES='5' hides every AMD GPU"), said
        diag = kfd("diagnose", "--json", user=NOBODY)
        codes = {f["code"] for f in json.loads(diag.stdout)["findings"]}
        assert "device-permissions" in codes and diag.returncode == 2
        reload_ = kfd("reload", user=NOBODY)
        assert reload_.returncode == 77 and "not allowed" in reload_.stderr
    missing = run_as(
        [sys.executable, "-m", "kfdguard", "status", "--bus", f"unix:path={tmp_path}/nothing"],
        env=dict(os.environ),
        check=False,
    )
    assert missing.returncode == 69 and "cannot connect" in missing.stderr


@pytest.mark.usefixtures("each_bus")
def test_python_client_error_names() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        assert py_call("ClearFallback", g.address) == ["nothing was arranged"]
        with pytest.raises(ServiceError) as caught:
            py_call("ApplyFallback", g.address)  # a healthy machine has nothing to fall back to
        assert caught.value.name == ERROR_PREFIX + "Failed"
        assert caught.value.text.startswith("nothing to boot: the running kernel can run compute")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.usefixtures("each_bus")
def test_losing_the_bus_ends_the_service_with_failure_for_systemd_to_restart(backend: str) -> None:
    """Alive but off the bus, the service would answer nobody; exiting non-zero lets Restart=on-failure act."""
    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False) as g:
        assert g.bus.proc is not None
        g.bus.proc.kill()
        g.bus.proc.wait(5)
        assert g.proc.wait(10) == 1
        _, stderr = g.stop()
    assert "lost the connection to the bus" in stderr and "restarts kfdguard" in stderr, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
