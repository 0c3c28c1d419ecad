"""The node_exporter textfile: its content, promtool's verdict on it, and a real node_exporter scraping it."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kfdguard.assess import assess
from kfdguard.facts import Facts
from kfdguard.fleet.metrics import escape_help, escape_label, render
from kfdguard.record import replace
from kfdguard.verdict import GpuStatus, State, Verdict
from tests.conftest import MACHINES
from tests.paths import TOP

NOW = 1_796_000_000.5
# A sample line of the text format: name, optional {labels}, value (no timestamp: the textfile
# collector refuses them). Label values: any characters but an unescaped quote, backslash or newline.
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SAMPLE.fullmatch(line)
        assert m, f"not a sample line: {line!r}"
        labels = dict(LABEL.findall(m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(4))))
    return out


def one(machine_facts: dict[str, Facts], name: str) -> tuple[Facts, Verdict, str]:
    facts = machine_facts[name]
    verdict = assess(facts)
    return facts, verdict, render(verdict, facts, NOW)


@pytest.mark.parametrize("name", MACHINES)
def test_the_values_say_what_the_verdict_says(machine_facts: dict[str, Facts], name: str) -> None:
    facts, verdict, text = one(machine_facts, name)
    got = samples(text)
    assert got["kfdguard_compute_ready"] == [({}, 1.0 if verdict.ready else 0.0)]
    per_gpu = {labels["slot"]: value for labels, value in got.get("kfdguard_gpu_compute_ready", [])}
    assert per_gpu == {g.slot: float(g.compute_ready) for g in verdict.gpus}
    states = {labels["state"]: value for labels, value in got["kfdguard_state"]}
    assert states == {str(s): float(s is verdict.state) for s in State}
    findings = {(labels["code"], labels["severity"]): value for labels, value in got.get("kfdguard_findings", [])}
    assert sum(findings.values()) == len(verdict.findings)
    for f in verdict.findings:
        assert findings[(f.code, str(f.severity))] >= 1
    assert got["kfdguard_last_check_timestamp_seconds"] == [({}, NOW)]
    ((info, value),) = got["kfdguard_info"]
    assert value == 1 and info["kernel"] == facts.kernel.release


def test_every_family_has_one_help_and_one_type_before_its_samples(machine_facts: dict[str, Facts]) -> None:
    _, _, text = one(machine_facts, "dgpu-plus-igpu-atomics")
    families: list[str] = []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            families.append(line.split()[2])
        elif line.startswith("# TYPE "):
            assert line.split()[2] == families[-1] and line.split()[3] == "gauge"
        else:
            assert SAMPLE.fullmatch(line) and line.split("{")[0].split()[0] == families[-1]
    assert len(families) == len(set(families))
    assert all(f.startswith("kfdguard_") for f in families)


def test_gpu_labels_carry_known_names_only(machine_facts: dict[str, Facts]) -> None:
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    verdict = assess(facts)
    gpu = verdict.gpus[0]
    text = render(verdict, facts, NOW)
    assert 'name="AMD Radeon RX 7900 XTX"' in text and 'gfx_target="gfx1100"' in text
    unknown = replace(gpu, device=0x0001, name="AMD GPU 1002:0001")
    hostile = replace(gpu, slot='0000:03:00.0"} 1\nevil{x="', gfx="gfx1100\n", name='Evil "GPU"\n')
    text = render(replace(verdict, gpus=(unknown, hostile)), facts, NOW)
    got = samples(text)  # every line still parses: nothing injected a line or a label
    labels = [labels for labels, _ in got["kfdguard_gpu_compute_ready"]]
    assert labels[0] == {"slot": "0000:03:00.0", "device_id": "0001", "gfx_target": "gfx1100", "name": ""}
    assert labels[1]["slot"] == labels[1]["gfx_target"] == labels[1]["name"] == ""
    assert "evil" not in text and "Evil" not in text


def test_a_hostile_kernel_release_is_dropped_not_copied(machine_facts: dict[str, Facts]) -> None:
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    facts = replace(facts, kernel=replace(facts.kernel, release='6.8"\n} 0\nkfdguard_compute_ready 1'))
    text = render(assess(facts), facts, NOW)
    ((info, _),) = samples(text)["kfdguard_info"]
    assert info["kernel"] == ""


def test_label_and_help_escaping_follow_the_text_format() -> None:
    assert escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert escape_help('a\\b"c\nd') == 'a\\\\b"c\\nd'


@given(st.text(max_size=80))
def test_any_text_in_any_label_source_keeps_the_file_parseable(text: str) -> None:
    from kfdguard.verdict import Finding, Severity

    gpu = GpuStatus(text, 0x1002, 0x744C, 0xC8, text, None, text, None, None, None, None, True, text)
    finding = Finding(text or "x", Severity.ERROR, text, text)
    verdict = Verdict(State.DEGRADED, True, text, (finding,), (gpu,))
    out = render(verdict, _facts_with_release(text), NOW)
    got = samples(out)
    for family in got.values():
        for labels, _ in family:
            assert all(re.fullmatch(r"[A-Za-z0-9 ()._:+~/-]*", v) for v in labels.values()), labels


def _facts_with_release(release: str) -> Facts:
    from kfdguard.simulate import bundled
    from kfdguard.simulate.system import SimulatedSystem

    global _BASE  # noqa: PLW0603 - one probe for all examples
    if _BASE is None:
        import tempfile

        tmp = tempfile.mkdtemp(prefix="kfdguard-metrics-")
        from kfdguard.probe import probe

        _BASE = probe(SimulatedSystem(bundled.render_bundled("rx7900xtx-ubuntu2404", Path(tmp) / "m")))
        shutil.rmtree(tmp)
    return replace(_BASE, kernel=replace(_BASE.kernel, release=release))


_BASE: Facts | None = None


def test_kfdguard_metrics_prints_it_and_exits_as_check() -> None:
    for name, code in (("kfd-perms-0600", 2), ("rx7900xtx-ubuntu2404", 0)):
        result = subprocess.run(
            [sys.executable, "-m", "kfdguard", "metrics", "--machine", name],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == code, result.stderr
        assert samples(result.stdout)["kfdguard_compute_ready"] == [({}, float(code == 0))]


# --- the real tools ------------------------------------------------------------------------------

PROMTOOL = shutil.which("promtool")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus package) is not installed")
@pytest.mark.parametrize("name", MACHINES)
def test_promtool_check_metrics_passes(machine_facts: dict[str, Facts], name: str) -> None:
    assert PROMTOOL is not None
    _, _, text = one(machine_facts, name)
    result = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    # promtool prints lint problems (naming, HELP, units) and exits 1 on any of them.
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == result.stderr == ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(NODE_EXPORTER is None, reason="prometheus-node-exporter (Debian's package) is not installed")
def test_node_exporter_serves_the_textfile(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    assert NODE_EXPORTER is not None
    from kfdguard.config import FleetConfig
    from kfdguard.fleet.publish import write
    from kfdguard.host.root import Root

    facts = machine_facts["dgpu-plus-igpu-atomics"]
    verdict = assess(facts)
    textfiles = tmp_path / "var/lib/prometheus/node-exporter"
    textfiles.mkdir(parents=True)
    written = write(Root(tmp_path), FleetConfig(nfd=None), verdict, facts, NOW)
    assert [w.status for w in written] == ["written"]
    port = _free_port()
    proc = subprocess.Popen(
        [
            NODE_EXPORTER,
            "--collector.disable-defaults",  # every collector off but the one named next
            "--collector.textfile",
            f"--collector.textfile.directory={textfiles}",
            f"--web.listen-address=127.0.0.1:{port}",  # loopback only
            "--web.disable-exporter-metrics",  # no go_* and process_* series: only what the textfile holds
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                    body = reply.read().decode()
                break
            except OSError:
                assert proc.poll() is None, f"node_exporter exited: {proc.stderr.read() if proc.stderr else ''}"
                assert time.monotonic() < deadline, "node_exporter did not answer within 15 s"
                time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    lines = body.splitlines()
    # node_exporter parsed the file without complaint, and serves our series with our values.
    assert "node_textfile_scrape_error 0" in lines
    # Its own mtime series is the liveness signal the example KfdguardSilent alert reads.
    assert any(ln.startswith(f'node_textfile_mtime_seconds{{file="{textfiles}/kfdguard.prom"}}') for ln in lines)
    assert "kfdguard_compute_ready 1" in lines
    assert 'kfdguard_state{state="degraded"} 1' in lines
    assert 'kfdguard_state{state="ready"} 0' in lines
    ready = {g.slot: g.compute_ready for g in verdict.gpus}
    served = {
        labels["slot"]: value
        for labels, value in samples("\n".join(ln for ln in lines if ln.startswith("kfdguard_gpu_compute_ready")))[
            "kfdguard_gpu_compute_ready"
        ]
    }
    assert served == {slot: float(ok) for slot, ok in ready.items()}
    assert 'kfdguard_findings{code="pcie-atomics",severity="error"} 1' in lines
    stamp = next(ln for ln in lines if ln.startswith("kfdguard_last_check_timestamp_seconds "))
    assert float(stamp.split()[1]) == NOW


RULES = TOP / "docs" / "examples" / "prometheus-kfdguard-rules.yml"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus package) is not installed")
def test_the_example_alerts_fire_on_the_machines_that_need_them(
    machine_facts: dict[str, Facts], tmp_path: Path
) -> None:
    """promtool test rules: the example rules over the series of real renderings, one node per machine."""
    assert PROMTOOL is not None
    nodes = {"broken": "kfd-perms-0600", "good": "rx7900xtx-ubuntu2404", "mixed": "dgpu-plus-igpu-atomics",
             "nogpu": "nvidia-only", "dead": "rx7900xtx-ubuntu2404"}  # fmt: skip
    series: list[dict[str, str]] = []
    for instance, name in nodes.items():
        facts = machine_facts[name]
        for metric, values in samples(render(assess(facts), facts, NOW)).items():
            for labels, value in values:
                inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in {**labels, "instance": instance}.items())
                series.append({"series": f"{metric}{{{inner}}}", "values": f"{value:g}x40"})
        # node_exporter's mtime of the file: rewritten every minute, except on the dead node (never since 0).
        mtime = "0x40" if instance == "dead" else "0+60x40"
        series.append({"series": f'node_textfile_mtime_seconds{{file="/x/kfdguard.prom",instance="{instance}"}}',
                       "values": mtime})  # fmt: skip
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "11m", "alertname": "GpuComputeNotReady", "exp_alerts": [
                        {"exp_labels": {"instance": "broken", "severity": "critical"},
                         "exp_annotations": {"summary": "broken: no AMD GPU can compute (kfdguard check says why)"}}]},
                    {"eval_time": "9m", "alertname": "GpuComputeNotReady", "exp_alerts": []},  # for: 10m
                    {"eval_time": "31m", "alertname": "GpuComputeDegraded", "exp_alerts": [
                        {"exp_labels": {"instance": "mixed", "severity": "warning", "state": "degraded"}}]},
                    {"eval_time": "16m", "alertname": "KfdguardSilent", "exp_alerts": [
                        {"exp_labels": {"instance": "dead", "severity": "warning", "file": "/x/kfdguard.prom"}}]},
                ],
            }
        ],
    }  # fmt: skip
    import json

    test_file = tmp_path / "kfdguard-rules-test.yml"
    test_file.write_text(json.dumps(tests))  # JSON is YAML
    check = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60,
                           check=False)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    result = subprocess.run([PROMTOOL, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120,
                            check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# --- issue 37: Vulkan readiness and the application backends ------------------------------------------


def test_vulkan_and_the_applications_backend_are_series(fresh_machine: Any, tmp_path: Path) -> None:
    from kfdguard.probe import probe
    from kfdguard.userspace.probe import probe_software
    from tests.unit.userspace.test_userspace_applications import ollama, phoenix
    from tests.unit.userspace.test_userspace_vulkan import install

    system = fresh_machine(phoenix().build())
    ollama(system.root.path, "0.32.15")
    install(system.root.path)
    (system.root.path / "usr/local/lib/libggml-vulkan.so").write_bytes(b"")
    facts = replace(probe(system, log="never"), software=probe_software(system.root, None))
    text = render(assess(facts), facts, NOW)
    got = samples(text)
    assert got["kfdguard_gpu_vulkan_ready"] == [({"slot": "0000:03:00.0"}, 1.0)]
    backend = {(labels["application"], labels["via"]): value for labels, value in got["kfdguard_application_backend"]}
    # ollama 0.32 keeps the 780M (an iGPU) out without OLLAMA_IGPU_ENABLE=1; llama.cpp's Vulkan build runs it.
    assert backend == {
        ("ollama", "ROCm"): 0, ("ollama", "Vulkan"): 0, ("ollama", "CPU"): 1,
        ("llama.cpp", "ROCm"): 0, ("llama.cpp", "Vulkan"): 1, ("llama.cpp", "CPU"): 0,
    }  # fmt: skip
    if PROMTOOL is not None:
        argv = [PROMTOOL, "check", "metrics"]
        result = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0 and result.stdout == result.stderr == "", result.stdout + result.stderr
    boot_pass = render(assess(replace(facts, software=None)), replace(facts, software=None), NOW)
    assert "kfdguard_application_backend" not in boot_pass and "kfdguard_gpu_vulkan_ready" not in boot_pass
