"""ApplyRemedy and ClearRemedy on the private bus (issue 37, item 4): polkit-guarded, the drop-in written by the
service itself (root's test bed) or by kfdguard-remedy@.service's command (the child starter), the Applications
property following before the reply.

The machine is issue 37's gfx1103 (Radeon 780M) with ollama 0.32.15 as its install script lays it out,
ollama.service, and Debian's RADV: ollama drops the integrated GPU until OLLAMA_IGPU_ENABLE=1.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kfdguard.app import runstate
from kfdguard.host.root import Root
from kfdguard.publish.names import ACTION_CONFIGURE
from tests.service.test_service_polkit import NOBODY, MockPolkit, mock_polkit  # noqa: F401 (fixture)
from tests.servicekit import busctl, call, guardian
from tests.unit.userspace.test_userspace_dropin import DROP_IN, machine

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="owning names on a system-type bus needs root")
NAME, PATH = "org.kfdguard.Guardian1", "/org/kfdguard/Guardian1"


def phoenix_with_ollama() -> object:
    from kfdguard.simulate.builder import MachineBuilder

    return MachineBuilder("780m-ollama-remedy").ubuntu2404("6.8.0-45-generic").with_gpu(0x15BF, revision=0xC1).build()


def applications(env: dict[str, str], timeout: float = 60) -> str:
    """The Applications property once filled: the inventory is taken by the first check after READY, so a
    service just started shows none for a while (long on a loaded machine: the deadline is for a hang)."""
    deadline = time.monotonic() + timeout
    while (out := busctl("get-property", NAME, PATH, NAME, "Applications", env=env).stdout) == "a(ssssss) 0\n":
        assert time.monotonic() < deadline, "no software inventory after READY"
        time.sleep(0.1)
    return out


def test_apply_and_clear_need_polkit_and_the_verdict_follows(mock_polkit: MockPolkit) -> None:  # noqa: F811
    with guardian(phoenix_with_ollama(), bus=mock_polkit.bus, prepare=machine()) as g:  # type: ignore[arg-type]
        env = g.env()
        assert '"ollama 0.32.15" "ollama" "0000:03:00.0" "CPU"' in applications(env)
        refused = call("ApplyRemedy", "s", "ollama", env=env, user=NOBODY, check=False)
        assert refused.returncode != 0 and f"({ACTION_CONFIGURE})" in refused.stderr
        assert not (g.root / DROP_IN).exists()

        mock_polkit.control("SetAllowed", "as", "1", ACTION_CONFIGURE)
        applied = call("ApplyRemedy", "s", "ollama", env=env, user=NOBODY)
        assert applied.stdout.startswith(f's "wrote /{DROP_IN} (OLLAMA_IGPU_ENABLE=1);')
        assert "Environment=OLLAMA_IGPU_ENABLE=1\n" in (g.root / DROP_IN).read_text()
        # Read right after the reply: the check the call ran has published the new verdict.
        assert '"ollama 0.32.15" "ollama" "0000:03:00.0" "Vulkan"' in applications(env)

        cleared = call("ClearRemedy", "s", "ollama", env=env, user=NOBODY)
        assert cleared.stdout.startswith(f's "removed /{DROP_IN};') and not (g.root / DROP_IN).exists()
        assert '"CPU"' in applications(env)


def test_an_unknown_application_is_invalid_before_polkit_is_asked(mock_polkit: MockPolkit) -> None:  # noqa: F811
    with guardian(phoenix_with_ollama(), bus=mock_polkit.bus, prepare=machine()) as g:  # type: ignore[arg-type]
        env = g.env()
        for bad in ("llama.cpp", "ollama;reboot", "../ollama", ""):
            reply = call("ApplyRemedy", "s", bad, env=env, user=NOBODY, check=False)
            assert reply.returncode != 0 and "is not an application kfdguard sets up (known: ollama)" in reply.stderr
        wrong = call("ClearRemedy", env=env, check=False)  # no argument at all
        assert wrong.returncode != 0 and "ClearRemedy takes (s)" in wrong.stderr
        assert not (g.root / DROP_IN).parent.exists()


def test_a_refusal_is_failed_with_its_reason_and_writes_nothing(mock_polkit: MockPolkit) -> None:  # noqa: F811
    def administrator_said_no(root: Path) -> None:
        machine()(root)
        drop = root / "etc/systemd/system/ollama.service.d"
        drop.mkdir(parents=True)
        (drop / "override.conf").write_text('[Service]\nEnvironment="OLLAMA_IGPU_ENABLE=0"\n')

    with guardian(phoenix_with_ollama(), bus=mock_polkit.bus, prepare=administrator_said_no) as g:  # type: ignore[arg-type]
        reply = call("ApplyRemedy", "s", "ollama", env=g.env(), check=False)
        assert reply.returncode != 0
        assert "kfdguard does not override another file's value" in reply.stderr
        assert not (g.root / DROP_IN).exists()


def test_with_a_starter_the_oneshots_command_writes_it() -> None:
    """--starter child: the service writes nothing itself; kfdguard-remedy@apply-ollama.service's command does."""
    with guardian(phoenix_with_ollama(), args=("--starter", "child"), prepare=machine()) as g:  # type: ignore[arg-type]
        env = g.env()
        applied = call("ApplyRemedy", "s", "ollama", env=env)
        record = runstate.read(Root(g.root), "remedy-apply")
        assert record.ok and applied.stdout.strip().startswith(f's "wrote /{DROP_IN}')
        assert record.message.startswith(f"wrote /{DROP_IN}") and (g.root / DROP_IN).is_file()
        assert '"Vulkan"' in applications(env)
        call("ClearRemedy", "s", "ollama", env=env)
        assert runstate.read(Root(g.root), "remedy-clear").message.startswith("removed")
        _code, log = g.stop()
    assert "remedy apply ollama: wrote" in log
