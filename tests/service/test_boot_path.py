"""What the service imports before READY=1: only what the boot pass needs (issue 9's boot goal).

asyncio, the D-Bus library, pyudev and systemd-python come after READY
(READY itself is the bare datagram); dataclasses, inspect, typing and
threading not at all (kfdguard.record, _thread); pathlib not at all
(kfdguard.host.paths); yaml only when the config
file changed since it was last cached (this machine has none); kfdguard's
own modules that only other commands or other machines need, not at all. The
enforce oneshot (what the display manager waits for) does without signal too:
only the runner's kill of a timed-out helper needs it. A regression here
shows up as a slower boot long before anyone runs the benchmark.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from kfdguard.simulate import bundled
from kfdguard.simulate.render import render
from tests.paths import TOP

HEAVY = ("asyncio", "dbus_fast", "dbus_next", "pyudev", "dataclasses", "inspect", "typing", "threading", "logging",
         "socket", "systemd.daemon", "yaml",
         # the snapshot's recorder and writer (a target directory is only asked whether it is a bundle),
         # the PE reader (only where a UKI is found), the marker's reader side
         "kfdguard.snapshot.bundle", "kfdguard.snapshot.recorder", "kfdguard.probe.pe", "kfdguard.snapshot.take",
         # what only a pasted text needs: the userspace message formats and their rules (assess.rules.text_only)
         "kfdguard.knowledge.appformats", "kfdguard.assess.app_rules", "kfdguard.assess.claims",
         # systemd-boot's entry names and order (this machine boots with GRUB and has no fallback
         # history), and the quoting of a systemd-boot fallback's command
         "kfdguard.probe.bootspec", "shlex",
         # try/except where contextlib.suppress would do; the service's SIGHUP handler through _signal
         # (signal.py builds its enums at import), the oneshot with none
         "contextlib", "signal",
         # Root's paths are HostPaths (kfdguard/host/paths.py): pathlib brings urllib.parse, ipaddress,
         # fnmatch and ntpath, 11% of the oneshot's instructions
         "pathlib", "urllib.parse", "ipaddress", "fnmatch")  # fmt: skip
ONESHOT_HEAVY = HEAVY
PROBE = """
import sys
import kfdguard.service.main as main
def ready(text, **_):
    if text.startswith("READY=1"):
        print(" ".join(m for m in {heavy!r} if m in sys.modules))
        raise SystemExit(0)
main.notify = ready
main.main(["--root", {root!r}])
"""


def _heavy_imports(template: str, tmp_path: Path, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``heavy`` modules a fresh interpreter holds after ``template`` ran on a healthy machine."""
    root = render(bundled.load("rx7900xtx-ubuntu2404"), tmp_path / "m").path
    # -S and the package after the standard library, as a packaged install has it: a development
    # virtualenv's site hooks (.pth files) import modules of their own (contextlib) before kfdguard.
    paths = [str(TOP), sysconfig.get_paths()["purelib"]]
    code = f"import sys; sys.path += {paths!r}\n" + template.format(heavy=heavy, root=str(root))
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                            check=False, cwd="/")  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_nothing_heavy_before_ready(tmp_path: Path) -> None:
    assert _heavy_imports(PROBE, tmp_path) == [], "imported before READY"


ONESHOT = """
import sys
from kfdguard.app.oneshot import main
code = main(["enforce", "--record", "--root", {root!r}])
print(" ".join(m for m in {heavy!r} if m in sys.modules))
raise SystemExit(code)
"""


def test_nothing_heavy_in_the_enforce_oneshot(tmp_path: Path) -> None:
    """kfdguard-enforce.service is what the display manager waits for since the privilege split."""
    assert _heavy_imports(ONESHOT, tmp_path, ONESHOT_HEAVY) == [], "imported by the enforce oneshot"


COLLECTOR = """
import gc
import kfdguard.service.loop as loop
import kfdguard.service.main as main
seen = []
main.notify = lambda text, **_: seen.append(gc.isenabled())
def serve(service, opts, events):
    print("before READY", seen[0], "serving", gc.isenabled())
    return 0
loop.serve = serve
raise SystemExit(main.main(["--root", {root!r}]))
"""


def test_the_service_serves_with_the_cycle_collector_on(tmp_path: Path) -> None:
    """The collector waits for READY (service/main.py), and runs for the life of the service."""
    root = render(bundled.load("rx7900xtx-ubuntu2404"), tmp_path / "m").path
    code = COLLECTOR.format(root=str(root))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["before", "READY", "False", "serving", "True"]
