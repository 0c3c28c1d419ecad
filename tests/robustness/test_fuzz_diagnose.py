"""Fuzzing the diagnosis of pasted text: any paste, well-formed findings, stable answers.

Properties over generated pastes (pieces of real bug reports, every log rule's
example in every form, command outputs with random ids and modes, hostile
control characters, plain garbage):

- diagnose_text never raises, and says the same twice;
- every finding has a code (lowercase words joined by dashes), a severity,
  a non-empty message, and no control character in its message, remedy or
  evidence (a paste must not put escape sequences on the reader's terminal
  or split a line);
- the exit code follows the findings: 2 with an error, 1 with a warning, 4
  when nothing was recognised;
- metamorphic: chatter before and after a paste, and Markdown/e-mail quoting
  of every line ("> "), change neither what is recognised nor the findings.

The campaign found that the "established" lines of the report carried the
paste's control characters (a user name with an escape sequence in 'id'
output reached the terminal); the last test keeps it fixed.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.diagnose import EXIT_NOTHING, EXIT_PROBLEMS, EXIT_WARNINGS, TextDiagnosis, diagnose_text
from kfdguard.publish.report import text_diagnosis_text
from kfdguard.verdict import Severity
from tests.fuzzing import examples
from tests.robustness.test_fuzz_kernellog import rule_lines
from tests.unit.diagnose.test_diagnose_text import BUG_REPORT

pytestmark = pytest.mark.fuzz
CONTROL = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")
CODE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Every kind evidence/text.py names (`obs.kinds.add(...)` there); docs/JSON.md lists them. "application" (a
# program's own message, "Radeon card detected") was missing here, and the fuzzer found it once.
KINDS = {"kernel-log", "rocminfo", "ls", "id", "uname", "lspci", "modinfo", "kconfig", "modprobe", "container",
         "application", "groups", "lshw", "topology"}  # fmt: skip

hexid = st.integers(0, 0xFFFF).map(lambda n: f"{n:04x}")
commands = st.one_of(
    st.builds(lambda a, b, d, r: f"{a}:{b}.{d} VGA compatible controller [0300]: Advanced Micro Devices, Inc. "
              f"[AMD/ATI] Device [1002:{r}] (rev c1)", hexid.map(lambda h: h[:2]), hexid.map(lambda h: h[:2]),
              st.integers(0, 7), st.sampled_from(["744c", "15bf", "73bf", "67df", "7550", "164e", "0000", "ffff"])),
    st.builds(lambda m, g: f"crw-{m} 1 root {g} 235, 0 Jan 30 10:12 /dev/kfd",
              st.sampled_from(["rw----", "------", "rw-rw-", "r--r--"]), st.sampled_from(["render", "root", "video"])),
    st.builds(lambda u, gs: f"uid=1000({u}) gid=1000({u}) groups=1000({u})," + ",".join(gs),
              st.sampled_from(["alice", "igor", "x"]),
              st.lists(st.sampled_from(["44(video)", "992(render)", "27(sudo)", "4(adm)"]), max_size=3)),
    st.sampled_from(["$ uname -r", "uname -r", "$ rocminfo", "$ ls -l /dev/kfd", "$ id"]),
    st.builds(lambda a, b, c: f"{a}.{b}.{c}-1-generic", st.integers(3, 7), st.integers(0, 20), st.integers(0, 200)),
    st.sampled_from(["CONFIG_HSA_AMD=y", "# CONFIG_HSA_AMD is not set", "-CONFIG_HSA_AMD=y", "+CONFIG_HSA_AMD=m",
                     "options amdgpu sched_policy=9", "softdep amdgpu pre: amdkfd", "options amdkfd enable_iommu=1",
                     "ROCk module is NOT loaded, possibly no GPU devices", "Unable to open /dev/kfd read-write: No such file or directory",
                     "  Name:                    gfx1100", "  Marketing Name:          AMD Radeon RX 7900 XTX",
                     "filename:       /lib/modules/6.8.0/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst",
                     "parm:           sched_policy:Scheduling policy (int)", "version:        6.10.5",
                     "root@0123456789ab:/#", "ls: cannot access '/dev/kfd': No such file or directory"]),
)  # fmt: skip
hostile = st.sampled_from(["\x1b[31m", "\x1b]0;title\x07", "\x00", "\r", "\x85", "\u2028", "\x7f", "\t", "\x08"])


@st.composite
def pastes(draw: st.DrawFn) -> str:
    pieces = st.one_of(st.sampled_from(BUG_REPORT.splitlines()), rule_lines, commands,
                       st.text(max_size=40), st.tuples(commands, hostile, commands).map("".join))  # fmt: skip
    return "\n".join(draw(st.lists(pieces, max_size=25)))


def check(result: TextDiagnosis) -> None:
    assert set(result.kinds) <= KINDS, result.kinds
    for finding in result.findings:
        assert CODE.fullmatch(finding.code), finding.code
        assert finding.severity in Severity and finding.message
        for text in (finding.message, finding.remedy, *finding.evidence):
            assert not CONTROL.search(text), (finding.code, text)
    for text in (*result.established, *result.unknown):
        assert not CONTROL.search(text), text
    severities = {f.severity for f in result.findings}
    if Severity.ERROR in severities:
        assert result.exit_code == EXIT_PROBLEMS
    elif Severity.WARNING in severities:
        assert result.exit_code == EXIT_WARNINGS
    elif not result.established:
        assert result.exit_code == EXIT_NOTHING
    else:
        assert result.exit_code == 0


@settings(max_examples=examples(150))
@given(st.one_of(pastes(), st.text(max_size=600)))
def test_any_paste_gives_well_formed_findings(text: str) -> None:
    result = diagnose_text(text)
    check(result)
    assert diagnose_text(text) == result


CHATTER = ["Hi, rocminfo does not see my GPU.", "Any help appreciated!", "", "Thanks in advance", "---", "EDIT: typo"]


def summary(result: TextDiagnosis) -> tuple[object, ...]:
    return result.kinds, sorted((f.code, f.severity, f.message) for f in result.findings), result.established


@settings(max_examples=examples(100))
@given(pastes(), st.lists(st.sampled_from(CHATTER), max_size=3), st.lists(st.sampled_from(CHATTER), max_size=3))
def test_chatter_around_a_paste_changes_nothing(text: str, before: list[str], after: list[str]) -> None:
    assert summary(diagnose_text("\n".join([*before, text, *after]))) == summary(diagnose_text(text))


@settings(max_examples=examples(100))
@given(pastes(), st.sampled_from(["> ", ">", "> > ", "  > "]))
def test_quoting_every_line_changes_nothing(text: str, quote: str) -> None:
    quoted = "\n".join(quote + line for line in text.split("\n"))
    plain, in_quotes = diagnose_text(text), diagnose_text(quoted)
    assert (in_quotes.kinds, sorted(f.code for f in in_quotes.findings)) == (
        plain.kinds, sorted(f.code for f in plain.findings)
    )  # fmt: skip


def test_established_lines_carry_no_escape_sequences() -> None:
    text = BUG_REPORT.replace("igor", "ig\x1b]0;pwned\x07or")
    report = text_diagnosis_text(diagnose_text(text), "paste")
    assert not CONTROL.search(report.replace("\n", ""))
