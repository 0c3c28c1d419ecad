"""``kfdguard remedy``: an application's service environment as kfdguard's own drop-in (issue 37, item 4).

The machines are issue 37's gfx1103 (Phoenix, Radeon 780M) with ollama's install-script layout and Debian's
RADV: ollama 0.32 drops the integrated GPU until OLLAMA_IGPU_ENABLE=1, ollama 0.20 has Vulkan only with
OLLAMA_VULKAN=1. Each test runs the command line on a rendered copy, then ``check --json`` to see whether
the verdict followed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kfdguard.app import runstate
from kfdguard.cli import main
from kfdguard.host.root import Root
from kfdguard.userspace import dropin
from tests.unit.userspace.test_userspace_applications import apps, ollama, phoenix, unit
from tests.unit.userspace.test_userspace_vulkan import install

DROP_IN = "etc/systemd/system/ollama.service.d/50-kfdguard-remedy.conf"
UNIT = "[Unit]\nDescription=Ollama Service\n\n[Service]\nExecStart=/usr/local/bin/ollama serve\nUser=ollama\n"


def machine(version: str = "0.32.15", *, service: bool = True) -> Any:
    def setup(root: Path) -> None:
        ollama(root, version)
        install(root)
        if service:  # ollama's install.sh writes it here
            (root / "etc/systemd/system").mkdir(parents=True, exist_ok=True)
            (root / "etc/systemd/system/ollama.service").write_text(UNIT)

    return setup


def rendered(fresh_machine: Any, version: str = "0.32.15", *, service: bool = True) -> Path:
    system = fresh_machine(phoenix().build())
    root: Path = system.root.path
    machine(version, service=service)(root)
    return root


def remedy(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, Any, str]:
    """The command's --json document, held to the schema's $defs/remedy every time."""
    from tests.unit.publish.test_schema import errors

    code = main(["remedy", *argv, "--root", str(root), "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert errors("remedy", doc) == []
    return code, doc, captured.err


def ollama_via(capsys: pytest.CaptureFixture[str], root: Path) -> str:
    main(["check", "--root", str(root), "--json"])
    (verdict,) = apps(json.loads(capsys.readouterr().out), "ollama")
    return str(verdict["via"])


def test_apply_writes_the_value_the_verdict_asks_and_the_verdict_follows(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = rendered(fresh_machine)
    assert ollama_via(capsys, root) == "CPU"

    code, shown, _ = remedy(capsys, root, "show", "ollama")
    assert code == 0 and not (root / DROP_IN).exists()  # show writes nothing
    assert shown["drop_in"]["environment"] == {"OLLAMA_IGPU_ENABLE": "1"}
    assert shown["drop_in"]["path"] == "/" + DROP_IN

    code, applied, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 0 and applied["changed"], applied
    text = (root / DROP_IN).read_text()
    assert text == shown["drop_in"]["text"] and "[Service]\nEnvironment=OLLAMA_IGPU_ENABLE=1\n" in text
    assert os.stat(root / DROP_IN).st_mode & 0o777 == 0o644
    assert ollama_via(capsys, root) == "Vulkan"  # the verdict reads the drop-in like any other

    code, again, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 0 and not again["changed"]  # ollama now runs: nothing is asked any more
    assert "nothing to do" in again["message"] or "already sets" in again["message"]

    code, cleared, _ = remedy(capsys, root, "clear", "ollama")
    assert code == 0 and cleared["changed"] and not (root / DROP_IN).exists()
    assert ollama_via(capsys, root) == "CPU"
    code, cleared, _ = remedy(capsys, root, "clear", "ollama")
    assert code == 0 and not cleared["changed"] and "nothing to remove" in cleared["message"]


def test_ollama_0_20_gets_its_experimental_vulkan_switch(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = rendered(fresh_machine, "0.20.0")
    code, applied, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 0 and applied["drop_in"]["added"] == {"OLLAMA_VULKAN": "1"}
    assert "Environment=OLLAMA_VULKAN=1\n" in (root / DROP_IN).read_text()
    assert ollama_via(capsys, root) == "Vulkan"


def test_a_value_another_file_sets_is_never_overridden(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = rendered(fresh_machine)
    unit(root, "OLLAMA_IGPU_ENABLE=0")  # systemctl edit's override.conf: the administrator's own file
    before = (root / "etc/systemd/system/ollama.service.d/override.conf").read_text()
    code, refused, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 1 and refused["refused"] and not (root / DROP_IN).exists()
    assert (
        "OLLAMA_IGPU_ENABLE=0 is set by ollama.service (/etc/systemd/system/ollama.service.d/override.conf)"
        in (refused["message"])
    )
    assert "change it there to OLLAMA_IGPU_ENABLE=1" in refused["message"]
    assert (root / "etc/systemd/system/ollama.service.d/override.conf").read_text() == before


def test_without_the_service_unit_a_drop_in_would_reach_nothing(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = rendered(fresh_machine, service=False)
    code, refused, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 1 and not (root / DROP_IN).exists()
    assert refused["message"].startswith("ollama.service is not installed")
    assert "set OLLAMA_IGPU_ENABLE=1 in the environment that starts ollama" in refused["message"]


def test_a_file_kfdguard_did_not_write_is_left_alone(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = rendered(fresh_machine)
    (root / DROP_IN).parent.mkdir(parents=True)
    (root / DROP_IN).write_text("[Service]\nNice=5\n")
    for action in ("apply", "clear"):
        code, refused, _ = remedy(capsys, root, action, "ollama")
        assert code == 1 and "kfdguard did not write it" in refused["message"], refused
        assert (root / DROP_IN).read_text() == "[Service]\nNice=5\n"


def test_a_link_at_the_drop_in_is_not_followed(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = rendered(fresh_machine)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (root / DROP_IN).parent.mkdir(parents=True)
    (root / DROP_IN).symlink_to(victim)
    code, refused, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 1 and "symbolic link" in refused["message"] and victim.read_text() == "keep\n"


def test_a_hand_edited_line_in_kfdguards_file_is_not_rewritten(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = rendered(fresh_machine)
    assert remedy(capsys, root, "apply", "ollama")[0] == 0
    edited = (root / DROP_IN).read_text() + 'Environment="OLLAMA_HOST=0.0.0.0 OLLAMA_DEBUG=1"\n'
    (root / DROP_IN).write_text(edited)
    code, refused, _ = remedy(capsys, root, "clear", "ollama")
    assert code == 1 and "a line kfdguard did not write" in refused["message"]
    assert (root / DROP_IN).read_text() == edited


def test_nothing_to_do_where_ollama_already_runs(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = rendered(fresh_machine)
    unit(root, "OLLAMA_IGPU_ENABLE=1")
    code, done, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 0 and not done["changed"] and done["message"].startswith("nothing to do")
    assert "ollama takes 0000:03:00.0 via Vulkan" in done["message"] and not (root / DROP_IN).exists()


def test_a_remedy_that_is_no_service_value_is_refused(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = rendered(fresh_machine)
    (root / "usr/share/vulkan/icd.d/radeon_icd.json").unlink()  # no RADV: the remedy is a package
    code, refused, _ = remedy(capsys, root, "apply", "ollama")
    assert code == 1 and "ollama takes 0000:03:00.0 via CPU, and its remedy is not a value of" in refused["message"]
    assert "mesa-vulkan-drivers" in refused["message"] and not (root / DROP_IN).exists()


def test_no_ollama_is_a_refusal(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    system = fresh_machine(phoenix().build())
    code, refused, _ = remedy(capsys, system.root.path, "apply", "ollama")
    assert code == 1 and refused["message"].startswith("no ollama is installed here")


def test_the_units_record_is_left_for_the_service(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = rendered(fresh_machine)
    code = main(["remedy", "--record", "--instance", "apply-ollama", "--root", str(root)])
    assert code == 0 and (root / DROP_IN).is_file()
    record = runstate.read(Root(root), "remedy-apply")
    assert record.ok and record.kind == "remedy-apply" and "wrote /" + DROP_IN in record.message
    assert "not this machine's systemd" in record.message  # a --root is never the host's systemd
    assert main(["remedy", "--record", "--instance", "clear-ollama", "--root", str(root)]) == 0
    assert not (root / DROP_IN).exists() and runstate.read(Root(root), "remedy-clear").message.startswith("removed")


@pytest.mark.parametrize("instance", ["", "apply", "apply-", "apply-llama.cpp", "reboot-ollama", "apply-ollama-x"])
def test_only_the_known_instances_are_carried_out(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str], instance: str
) -> None:
    root = rendered(fresh_machine)
    assert main(["remedy", "--record", "--instance", instance, "--root", str(root)]) == 64
    assert "not a remedy this version carries out" in capsys.readouterr().err
    assert not (root / DROP_IN).exists() and not (root / "run/kfdguard/remedy.json").exists()


def test_instance_names_round_trip() -> None:
    assert [dropin.parse_instance(dropin.instance(a, k)) for a in dropin.ACTIONS for k in dropin.SERVICES] == [
        (a, k) for a in dropin.ACTIONS for k in dropin.SERVICES
    ]


def test_instance_without_record_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["remedy", "--instance", "apply-ollama", "--machine", "780m-ubuntu2204-ga"]) == 64
    assert "--instance goes with --record" in capsys.readouterr().err


def test_show_in_text_prints_the_file_and_a_refusal_goes_to_stderr(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = rendered(fresh_machine)
    assert main(["remedy", "--root", str(root)]) == 0  # show and ollama are the defaults
    out = capsys.readouterr().out
    assert (
        out.startswith(f"would write /{DROP_IN}\n# Generated by kfdguard") and "Environment=OLLAMA_IGPU_ENABLE=1" in out
    )
    unit(root, "OLLAMA_IGPU_ENABLE=0")
    assert main(["remedy", "apply", "--root", str(root)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("kfdguard: remedy apply ollama: OLLAMA_IGPU_ENABLE=0 is set")
