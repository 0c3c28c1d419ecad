"""The extension in the real GNOME Shell, headless, against the real service.

Two Shells: Debian 12's GNOME Shell 43 with the GNOME 43 build, and Debian 13's
GNOME Shell 48 (in the chroot scripts/trixie-chroot builds once) with the GNOME
45+ build; the service and its private bus run on the host for both.

gnome-shell runs as an unprivileged user (nobody, with the simulated machine's
render group) on a private session bus; its system bus is the private bus
kfdguard serves a simulated RX 7900 XTX on. The test reads the panel label
and the menu through a test-only helper extension, changes the machine, and
saves screenshots. `make screenshots` runs it with KFDGUARD_SCREENSHOTS set
to docs/screenshots.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gnome.kit import HELPER, NOBODY, SCREEN, HeadlessShell, build, helper_45, png_size, trixie_chroot
from tests.servicekit import Guardian, guardian
from tools.privatebus import PrivateBus

MACHINE = "rx7900xtx-ubuntu2404"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="only root may own the name on a system-like bus (CI runs as root)"),
]


def render_gid(g: Guardian) -> int:
    for line in (g.root / "etc/group").read_text().splitlines():
        name, _, gid, *_ = line.split(":")
        if name == "render":
            return int(gid)
    raise AssertionError("the simulated machine has no render group")


def break_kfd_permissions(g: Guardian) -> None:
    """/dev/kfd crw------- root:root, as devtmpfs creates it without a udev rule."""
    devices = g.root / ".kfdguard-sim/devices"
    devices.write_text(re.sub(r"^/dev/kfd .*$", "/dev/kfd char 240 0 0 0 0600 -", devices.read_text(), flags=re.M))
    g.uevent("change kfd kfd")


def _chroot(version: str) -> Path | None:
    """Where Shell ``version`` runs: the host for 43, the Debian 13 chroot for 48 (skipped without it)."""
    if version != "48":
        return None
    chroot = trixie_chroot()
    if chroot is None:
        pytest.skip("GNOME Shell 48 runs in a Debian 13 chroot: build it once with scripts/trixie-chroot")
    return chroot


def _extension(version: str, tmp_path: Path) -> tuple[Path, Path]:
    """The built extension for Shell ``version`` and the test-only helper extension beside it."""
    built = build(tmp_path / "build")
    return (built["shell43"], HELPER) if version == "43" else (built["shell45"], helper_45(tmp_path / "h"))


@contextlib.contextmanager
def _shell_on(version: str, tmp_path: Path, bus: PrivateBus, g: Guardian) -> Iterator[HeadlessShell]:
    """Shell ``version`` with the extension, started, as nobody with the machine's render group; its log is
    printed when the body fails, and no JavaScript error of the extension may be in it afterwards."""
    chroot = _chroot(version)
    extension, helper = _extension(version, tmp_path)
    shell = HeadlessShell(extension, bus.address, groups=(render_gid(g),), user=NOBODY, chroot=chroot, helper=helper)
    try:
        shell.start()
        yield shell
    except BaseException:
        print(shell.log_text()[-20000:])
        raise
    finally:
        shell.stop()
    assert not [line for line in shell.final_log.splitlines() if "JS ERROR" in line or "kfdguard@" in line], (
        "the Shell logged errors:\n" + shell.final_log[-5000:]
    )


@pytest.mark.parametrize("version", ["43", "48"])
def test_indicator_in_headless_gnome_shell(tmp_path: Path, version: str) -> None:
    shots = Path(os.environ.get("KFDGUARD_SCREENSHOTS") or tmp_path / "screenshots")
    # 43 keeps the screenshot names the README has always used; later Shells say their version.
    suffix = "" if version == "43" else f"-shell{version}"
    # The bus in /tmp, 0755: the Shell's user reaches its socket.
    with (
        PrivateBus() as bus,
        guardian(MACHINE, bus=bus, enforce=False) as g,
        _shell_on(version, tmp_path, bus, g) as shell,
    ):
        _run(shell, g, bus, shots, version, suffix)


def _run(shell: HeadlessShell, g: Guardian, bus: PrivateBus, shots: Path, version: str, suffix: str) -> None:
    running = shell.state()
    assert running is not None and running["shellVersion"].split(".")[0] == version, running

    # 1. Ready: label, icon, the GPU with its gfx target, and "Can I compute?" for this user.
    ind = shell.wait_label("GPU ready")
    assert "kfdguard-ready" in ind["styleClasses"] and ind["iconName"] == "object-select-symbolic"
    shell.open_menu()
    shell.call("Press", "s", "access")
    answer = shell.wait_text("Yes: ")
    assert answer == "Yes: nobody (uid 65534) can open /dev/kfd, /dev/dri/renderD128"
    texts = shell.indicator()["menuTexts"]
    assert texts[0] == "1 GPU can compute: AMD Radeon RX 7900 XTX (gfx1100, 0000:03:00.0)"
    assert "Kernel 6.8.0-45-generic, KFD 1.14" in texts
    # The hardware line: what the simulated card's sysfs says (simulate/hardware.py), through Devices.
    assert (
        "AMD Radeon RX 7900 XTX\ngfx1100 · ready\nDiscrete · 24.0 GiB VRAM · 16.0 GiB GTT · 96 CUs · PCIe 16.0 GT/s x16"
        in texts
    )
    ready = shell.screenshot_menu(f"indicator-ready{suffix}.png", shots)

    # Disabled, the indicator leaves the panel; enabled again, it is back with the same state.
    shell.call("SetEnabled", "b", "false")
    shell.wait(lambda s: s["indicator"] is None, "the indicator to leave the panel")
    shell.call("SetEnabled", "b", "true")
    shell.wait_label("GPU ready")
    shell.open_menu()

    # Re-check needs org.kfdguard.reload; without polkitd only root may: the service's message is shown.
    shell.call("Press", "s", "reload")
    refused = shell.wait_text("Reload is not allowed")
    assert "only root is allowed" in refused and "org.kfdguard.reload" in refused
    shell.call("CloseMenu")

    # 2. The machine changes: /dev/kfd loses its group; PropertiesChanged/StateChanged reach the panel.
    break_kfd_permissions(g)
    ind = shell.wait_label("GPU not ready")
    assert "kfdguard-unavailable" in ind["styleClasses"] and ind["iconName"] == "dialog-error-symbolic"
    shell.open_menu()
    shell.call("Press", "s", "access")
    answer = shell.wait_text("No: ")
    assert answer.startswith("No: nobody (uid 65534) cannot open /dev/kfd (crw------- group root)")
    texts = shell.indicator()["menuTexts"]
    assert any(t.startswith("AMD Radeon RX 7900 XTX\ngfx1100 · /dev/kfd not accessible to the group\n") for t in texts)
    # The summary is the main finding's message; the finding below it adds severity, code and the remedy.
    assert texts[0].startswith("/dev/kfd is crw------- root:root")
    remedy = texts[texts.index("error · device-permissions") + 1]
    assert remedy.startswith("run 'sudo kfdguard enforce'")
    since = r"Kernel 6.8.0-45-generic, KFD 1.14\nSince \d\d:\d\d:\d\d; before: GPU ready"
    assert re.fullmatch(since, texts[1]), texts[1]
    assert not [t for t in texts if t.startswith("Reload is not allowed")], "answers of the earlier state are cleared"

    problem = shell.screenshot_menu(f"indicator-permissions{suffix}.png", shots)

    # A remedy is copied to the clipboard with a click (which closes the menu, as any menu item does).
    shell.call("CopyRemedy", "i", "0")
    assert shell.call("Clipboard") == [remedy]

    # 3. The service goes away: greyed, buttons off; it comes back: the indicator recovers.
    g.stop()
    ind = shell.wait_label("GPU ?")
    assert "kfdguard-absent" in ind["styleClasses"]
    assert not ind["accessSensitive"] and not ind["reloadSensitive"]
    assert "kfdguard is not running" in shell.indicator()["menuTexts"]
    absent = shell.screenshot_menu(f"indicator-absent{suffix}.png", shots)

    shell.call("CloseMenu")
    with guardian(MACHINE, bus=bus, enforce=False):
        ind = shell.wait_label("GPU ready")
        assert ind["accessSensitive"] and ind["reloadSensitive"]

    for shot in (ready, problem, absent):
        width, height = png_size(shot)
        assert 200 <= width <= SCREEN[0] and 100 <= height <= SCREEN[1], (shot, width, height)


@pytest.mark.parametrize("version", ["43", "48"])
def test_software_lines_in_headless_gnome_shell(tmp_path: Path, version: str) -> None:
    """A Radeon 780M (gfx1103) with ollama's bundled ROCm, which has no gfx1103 code: the menu's Software
    section says so, from the Software property the service publishes after its first scan."""
    import yaml

    from kfdguard.simulate.spec import spec_from_dict

    data = Path(__file__).resolve().parents[1] / "data/userspace/machines/780m-ollama.yaml"
    spec = spec_from_dict("780m-ollama", yaml.safe_load(data.read_text()))
    with (
        PrivateBus() as bus,
        guardian(spec, bus=bus, enforce=False) as g,
        _shell_on(version, tmp_path, bus, g) as shell,
    ):
        shell.wait_label("GPU ready")
        shell.open_menu()
        line = shell.wait_text("ollama (bundled ROCm): ")
        assert line == "ollama (bundled ROCm): no code for gfx1103 (runs a neighbour's with an override)"
        texts = shell.indicator()["menuTexts"]
        # The section comes before the findings, among them the override's (message, then its tag).
        tag = next(i for i, t in enumerate(texts) if t.endswith("warning · userspace-override-workaround"))
        assert texts.index(line) < tag, texts
        # The Applications section (issue 37): this ollama (no binary says its version, no ggml backend
        # directories) is one before 0.12.4, which skips the 780M's 512 MiB carve-out as an iGPU; its fix
        # follows as a line to copy.
        app = shell.wait_text("ollama (version unknown): on the CPU")
        assert "skips a GPU with less than 1 GiB of VRAM (512 MiB) as an iGPU" in app, app
        texts = shell.indicator()["menuTexts"]
        assert texts[texts.index(app) + 1] == (
            "a UMA frame buffer of 1 GiB or more in the firmware setup, or ollama 0.30 or later"
        )
        assert texts.index(line) < texts.index(app) < tag, texts
        shots = Path(os.environ.get("KFDGUARD_SCREENSHOTS") or tmp_path / "screenshots")
        shot = shell.screenshot_menu(
            f"indicator-applications{'' if version == '43' else '-shell' + version}.png", shots
        )
        width, height = png_size(shot)
        assert 200 <= width <= SCREEN[0] and 100 <= height <= SCREEN[1], (shot, width, height)


@pytest.mark.parametrize("version", ["43", "48"])
def test_an_application_on_vulkan_in_headless_gnome_shell(tmp_path: Path, version: str) -> None:
    """Issue 37's 780M case: ollama 0.32 whose bundle has no gfx1103 code takes the GPU through Vulkan (RADV),
    the integrated GPU let in by OLLAMA_IGPU_ENABLE=1: the menu says so, with no fix to copy."""
    from kfdguard.simulate.builder import MachineBuilder
    from tests.service.test_userspace_service import CASES

    device, release, prepare, _ = CASES["gfx1103-ollama-vulkan"]
    spec = MachineBuilder("780m-vulkan").ubuntu2404(release).with_gpu(device, revision=0xC1).build()
    with (
        PrivateBus() as bus,
        guardian(spec, bus=bus, enforce=False, prepare=prepare) as g,
        _shell_on(version, tmp_path, bus, g) as shell,
    ):
        shell.wait_label("GPU ready")
        shell.open_menu()
        app = shell.wait_text("ollama 0.32.15: ")
        assert app == "ollama 0.32.15: on the GPU through Vulkan", app
        texts = shell.indicator()["menuTexts"]
        assert not [t for t in texts if t.startswith("systemctl edit ollama.service")], "no fix to copy: it runs"
