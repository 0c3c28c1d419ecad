"""Which firmware amdgpu requires: the generator's reading of its request call sites (issue 34, item 1).

The readers (tools/knowledge/csource.py firmware_requests, module_firmware, ucode_request_signature)
on small C snippets shaped like the driver's, the derivation of the optional files
(tools/knowledge/requests.py), and the generated data against what the sources read say.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kfdguard.knowledge import formats
from kfdguard.knowledge.fallbacks import FALLBACKS, fallback_of, generated, goes_without
from kfdguard.knowledge.generated import KERNELS
from tools.knowledge.csource import (
    KnowledgeError,
    firmware_requests,
    loader_missing_errno,
    module_firmware,
    ucode_request_missing_errno,
    ucode_request_signature,
)
from tools.knowledge.requests import format_regex, optional_files


def _requests(tmp_path: Path, body: str, signature: str | None = None) -> list[dict[str, Any]]:
    path = tmp_path / "gfx_v8_0.c"
    path.write_text(body)
    return firmware_requests(path, "amdgpu/gfx_v8_0.c", signature)


def _by_line(found: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["line"]: r for r in found}


# --- the readers, on snippets ------------------------------------------------------------------

# 6.1's gfx_v8_0.c: a name buffer, a first choice that falls back on -ENOENT, mec2 whose failure is cleared.
GFX_V8_6_1 = """\
static int gfx_v8_0_init_microcode(struct amdgpu_device *adev)
{
    char fw_name[30];
    int err;

    if (adev->asic_type >= CHIP_POLARIS10 && adev->asic_type <= CHIP_POLARIS12) {
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_pfp_2.bin", chip_name);
        err = request_firmware(&adev->gfx.pfp_fw, fw_name, adev->dev);
        if (err == -ENOENT) {
            snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_pfp.bin", chip_name);
            err = request_firmware(&adev->gfx.pfp_fw, fw_name, adev->dev);
        }
    } else {
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_pfp.bin", chip_name);
        err = request_firmware(&adev->gfx.pfp_fw, fw_name, adev->dev);
    }
    if (err)
        goto out;

    snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_mec2.bin", chip_name);
    err = request_firmware(&adev->gfx.mec2_fw, fw_name, adev->dev);
    if (!err) {
        err = amdgpu_ucode_validate(adev->gfx.mec2_fw);
    } else {
        err = 0;
        adev->gfx.mec2_fw = NULL;
    }
out:
    return err;
}
"""


def test_a_first_choice_and_its_fallback_are_linked(tmp_path: Path) -> None:
    found = _by_line(_requests(tmp_path, GFX_V8_6_1))
    first, second, other = found[8], found[11], found[15]
    assert first["names"] == ["amdgpu/%s_pfp_2.bin"] and first["fallback_line"] == 11
    assert second["names"] == ["amdgpu/%s_pfp.bin"] and second["first_choice_line"] == 8
    assert other["names"] == ["amdgpu/%s_pfp.bin"] and other["fallback_line"] is None and not other["tolerated"]
    assert first["function"] == "gfx_v8_0_init_microcode" and first["call"] == "request_firmware"


def test_a_cleared_error_is_a_tolerated_failure(tmp_path: Path) -> None:
    mec2 = _by_line(_requests(tmp_path, GFX_V8_6_1))[21]
    assert mec2["names"] == ["amdgpu/%s_mec2.bin"] and mec2["tolerated"] and mec2["fallback_line"] is None


# 7.2's amdgpu_ucode_request(): the flag and the format at the call; an optional first choice.
GFX_V8_7_2 = """\
static int gfx_v8_0_init_microcode(struct amdgpu_device *adev)
{
    int err;

    err = amdgpu_ucode_request(adev, &adev->gfx.pfp_fw,
                   AMDGPU_UCODE_OPTIONAL,
                   "amdgpu/%s_pfp_2.bin", chip_name);
    if (err == -ENODEV) {
        err = amdgpu_ucode_request(adev, &adev->gfx.pfp_fw,
                       AMDGPU_UCODE_REQUIRED,
                       "amdgpu/%s_pfp.bin", chip_name);
    }
    err = amdgpu_ucode_request(adev, &adev->firmware.gpu_info_fw, AMDGPU_UCODE_OPTIONAL,
                   "amdgpu/%s_gpu_info.bin", chip_name);
    if (err)
        goto out;
out:
    return err;
}
"""


def test_the_explicit_flag_is_read_with_its_format(tmp_path: Path) -> None:
    found = _by_line(_requests(tmp_path, GFX_V8_7_2, "flag+format"))
    assert found[5]["flag"] == "optional" and found[5]["names"] == ["amdgpu/%s_pfp_2.bin"]
    assert found[5]["fallback_line"] == 9
    assert found[9]["flag"] == "required" and found[9]["first_choice_line"] == 5
    # Optional by its flag, and no fallback: "if (err) goto out" asks for nothing else.
    assert found[13]["flag"] == "optional" and found[13]["fallback_line"] is None and not found[13]["tolerated"]


def test_a_flagged_wrapper_call_without_its_flag_stops_the_generator(tmp_path: Path) -> None:
    # A flag passed through a variable: which one the call means is not in its text.
    body = 'static int f(struct amdgpu_device *adev)\n{\n\treturn amdgpu_ucode_request(adev, &fw, req, "amdgpu/x.bin");\n}\n'
    with pytest.raises(KnowledgeError, match=r"gfx_v8_0\.c:3: .*AMDGPU_UCODE_\* flag \(req\)"):
        _requests(tmp_path, body, "flag+format")
    body = body.replace("req, ", "")
    with pytest.raises(KnowledgeError, match="without a firmware name argument"):
        _requests(tmp_path, body, "flag+format")


def test_the_wrapper_called_where_no_header_declares_it_stops_the_generator(tmp_path: Path) -> None:
    body = 'static int f(struct amdgpu_device *adev)\n{\n\treturn amdgpu_ucode_request(adev, &fw, "amdgpu/x.bin");\n}\n'
    with pytest.raises(KnowledgeError, match="declares none"):
        _requests(tmp_path, body, None)


def test_a_request_outside_any_function_read_stops_the_generator(tmp_path: Path) -> None:
    body = "#define LOAD(fw) (err = request_firmware(&fw, name, dev))\nint x = request_firmware(&fw, name, dev);\n"
    with pytest.raises(KnowledgeError, match="outside any function body"):
        _requests(tmp_path, body)


# Names a function builds: an if/else chain of one write each (gfx_v9_0.c), a ternary between two
# literals, and amdgpu_mes.c's shape, whose branches also set need_retry: not read, rather than guessed.
NAMES = """\
static int gfx_v9_0_init_cp_compute_microcode(struct amdgpu_device *adev, const char *chip_name)
{
    char fw_name[30];
    int err;

    if (amdgpu_sriov_vf(adev) && (adev->asic_type == CHIP_ALDEBARAN))
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_sjt_mec2.bin", chip_name);
    else
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_mec2.bin", chip_name);

    err = request_firmware(&adev->gfx.mec2_fw, fw_name, adev->dev);
    if (err)
        goto out;
    snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_sdma%s.bin", chip_name, i == 0 ? "" : "1");
    err = request_firmware(&adev->sdma.instance[i].fw, fw_name, adev->dev);
out:
    return err;
}

static int amdgpu_mes_init_microcode(struct amdgpu_device *adev, int pipe)
{
    char fw_name[40];
    bool need_retry = false;
    int r;

    if (adev->ip_versions[GC_HWIP][0] >= IP_VERSION(11, 0, 0)) {
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_mes%s.bin",
             ucode_prefix,
             pipe == AMDGPU_MES_SCHED_PIPE ? "_2" : "1");
        need_retry = true;
    } else {
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_mes%s.bin",
             ucode_prefix,
             pipe == AMDGPU_MES_SCHED_PIPE ? "" : "1");
    }

    r = amdgpu_ucode_request(adev, &adev->mes.fw[pipe], fw_name);
    if (r && need_retry && pipe == AMDGPU_MES_SCHED_PIPE) {
        snprintf(fw_name, sizeof(fw_name), "amdgpu/%s_mes.bin",
             ucode_prefix);
        DRM_INFO("try to fall back to %s\\n", fw_name);
        r = amdgpu_ucode_request(adev, &adev->mes.fw[pipe],
                     fw_name);
    }
    return r;
}
"""


def test_names_built_in_an_if_else_chain_or_a_ternary_are_each_read(tmp_path: Path) -> None:
    found = _by_line(_requests(tmp_path, NAMES, "name"))
    assert found[11]["names"] == ["amdgpu/%s_mec2.bin", "amdgpu/%s_sjt_mec2.bin"]
    assert found[15]["names"] == ["amdgpu/%s_sdma.bin", "amdgpu/%s_sdma1.bin"]


def test_a_name_built_any_other_way_is_not_read_but_its_fallback_is(tmp_path: Path) -> None:
    found = _by_line(_requests(tmp_path, NAMES, "name"))
    first, second = found[37], found[42]
    assert first["names"] == [] and first["fallback_line"] == 42 and first["spelled"] == "fw_name"
    assert second["names"] == ["amdgpu/%s_mes.bin"] and second["first_choice_line"] == 37


@pytest.mark.parametrize(
    ("params", "shape"),
    [
        ("struct amdgpu_device *adev, const struct firmware **fw,\n\t\t\t const char *fw_name", "name"),
        ("struct amdgpu_device *adev, const struct firmware **fw,\n\t\t\t const char *fmt, ...", "format"),
        (
            "struct amdgpu_device *adev, const struct firmware **fw,\n\t\t\t enum amdgpu_ucode_required required, "
            "const char *fmt, ...",
            "flag+format",
        ),
    ],
)
def test_the_wrapper_s_shape_is_read_from_its_prototype(tmp_path: Path, params: str, shape: str) -> None:
    header = tmp_path / "amdgpu_ucode.h"
    header.write_text(f"int amdgpu_ucode_request({params});\nvoid amdgpu_ucode_release(const struct firmware **fw);\n")
    assert ucode_request_signature(header) == shape


def test_a_wrapper_of_another_shape_stops_the_generator(tmp_path: Path) -> None:
    header = tmp_path / "amdgpu_ucode.h"
    header.write_text("int amdgpu_ucode_request(struct amdgpu_device *adev, u32 flags, const char *fmt, ...);\n")
    with pytest.raises(KnowledgeError, match="shape not read"):
        ucode_request_signature(header)
    assert ucode_request_signature(tmp_path / "absent.h") is None


def test_module_firmware_reads_literals_and_the_file_s_macros(tmp_path: Path) -> None:
    path = tmp_path / "amdgpu_uvd.c"
    path.write_text(
        '#define FIRMWARE_POLARIS10\t"amdgpu/polaris10_uvd.bin"\n'
        'MODULE_FIRMWARE("amdgpu/polaris10_" "pfp_2.bin");\nMODULE_FIRMWARE(FIRMWARE_POLARIS10);\n'
    )
    assert module_firmware(path, "amdgpu/amdgpu_uvd.c") == [
        ["amdgpu/polaris10_pfp_2.bin", "amdgpu/amdgpu_uvd.c", 2],
        ["amdgpu/polaris10_uvd.bin", "amdgpu/amdgpu_uvd.c", 3],
    ]
    path.write_text("MODULE_FIRMWARE(FIRMWARE_ELSEWHERE);\n")
    with pytest.raises(KnowledgeError, match=r"amdgpu_uvd\.c:1: MODULE_FIRMWARE\(FIRMWARE_ELSEWHERE\) not read"):
        module_firmware(path, "amdgpu/amdgpu_uvd.c")


# --- display/amdgpu_dm: names assigned from macros, a failure branch that returns 0 ---------------

# What a missing file gives each call, as the generator reads it (loader_missing_errno,
# ucode_request_missing_errno): the loader's -ENOENT, amdgpu_ucode_request()'s -ENODEV (6.1 on).
MISSING = {
    "request_firmware": "-ENOENT",
    "request_firmware_direct": "-ENOENT",
    "firmware_request_nowarn": "-ENOENT",
    "amdgpu_ucode_request": "-ENODEV",
}

# 5.10's and 6.1's amdgpu_dm.c: the name is a macro assigned in the switch's branches, the request is
# request_firmware_direct(); DMCUB's failure branch returns 0, DMCU's only on -ENOENT.
DM_6_1 = """\
#define FIRMWARE_RENOIR_DMUB "amdgpu/renoir_dmcub.bin"
MODULE_FIRMWARE(FIRMWARE_RENOIR_DMUB);
#define FIRMWARE_GREEN_SARDINE_DMUB "amdgpu/green_sardine_dmcub.bin"
MODULE_FIRMWARE(FIRMWARE_GREEN_SARDINE_DMUB);
#define FIRMWARE_RAVEN_DMCU\t\t"amdgpu/raven_dmcu.bin"
MODULE_FIRMWARE(FIRMWARE_RAVEN_DMCU);

static int load_dmcu_fw(struct amdgpu_device *adev)
{
\tconst char *fw_name_dmcu = NULL;
\tint r;

\tswitch (adev->asic_type) {
\tcase CHIP_RAVEN:
\t\tif (ASICREV_IS_PICASSO(adev->external_rev_id))
\t\t\tfw_name_dmcu = FIRMWARE_RAVEN_DMCU;
\t\telse
\t\t\treturn 0;
\t\tbreak;
\tdefault:
\t\treturn -EINVAL;
\t}

\tr = request_firmware_direct(&adev->dm.fw_dmcu, fw_name_dmcu, adev->dev);
\tif (r == -ENOENT) {
\t\t/* DMCU firmware is not necessary, so don't raise a fuss if it's missing */
\t\tDRM_DEBUG_KMS("dm: DMCU firmware not found\\n");
\t\tadev->dm.fw_dmcu = NULL;
\t\treturn 0;
\t}
\tif (r) {
\t\tdev_err(adev->dev, "amdgpu_dm: Can't load firmware \\"%s\\"\\n",
\t\t\tfw_name_dmcu);
\t\treturn r;
\t}
\treturn 0;
}

static int dm_dmub_sw_init(struct amdgpu_device *adev)
{
\tconst char *fw_name_dmub;
\tint r;

\tswitch (adev->ip_versions[DCE_HWIP][0]) {
\tcase IP_VERSION(2, 1, 0):
\t\tfw_name_dmub = FIRMWARE_RENOIR_DMUB;
\t\tif (ASICREV_IS_GREEN_SARDINE(adev->external_rev_id))
\t\t\tfw_name_dmub = FIRMWARE_GREEN_SARDINE_DMUB;
\t\tbreak;
\tdefault:
\t\t/* ASIC doesn't support DMUB. */
\t\treturn 0;
\t}

\tr = request_firmware_direct(&adev->dm.dmub_fw, fw_name_dmub, adev->dev);
\tif (r) {
\t\tDRM_ERROR("DMUB firmware loading failed: %d\\n", r);
\t\treturn 0;
\t}
\treturn 0;
}
"""


def _dm(tmp_path: Path, body: str, signature: str | None = None) -> dict[str, dict[str, Any]]:
    path = tmp_path / "amdgpu_dm.c"
    path.write_text(body)
    found = firmware_requests(path, "display/amdgpu_dm/amdgpu_dm.c", signature, MISSING)
    return {str(r["function"]): r for r in found}


def test_a_name_assigned_from_the_file_s_macros_in_switch_branches_is_read(tmp_path: Path) -> None:
    found = _dm(tmp_path, DM_6_1)
    assert found["dm_dmub_sw_init"]["names"] == ["amdgpu/green_sardine_dmcub.bin", "amdgpu/renoir_dmcub.bin"]
    # The NULL it starts from is no file name: every path to the call assigns one.
    assert found["load_dmcu_fw"]["names"] == ["amdgpu/raven_dmcu.bin"]
    assert found["dm_dmub_sw_init"]["call"] == "request_firmware_direct"


def test_a_failure_branch_that_returns_0_is_a_tolerated_failure(tmp_path: Path) -> None:
    dmub = _dm(tmp_path, DM_6_1)["dm_dmub_sw_init"]
    assert dmub["tolerated"] and dmub["fallback_line"] is None


def test_a_branch_returning_0_on_the_missing_file_s_errno_only_is_tolerated(tmp_path: Path) -> None:
    # request_firmware_direct() fails with -ENOENT on a missing file: "r == -ENOENT ... return 0" is it.
    assert _dm(tmp_path, DM_6_1)["load_dmcu_fw"]["tolerated"]
    # The same branch on -ENODEV is another failure than the missing file's: a missing file reaches
    # "if (r) ... return r;", the init fails.
    assert not _dm(tmp_path, DM_6_1.replace("-ENOENT", "-ENODEV"))["load_dmcu_fw"]["tolerated"]
    # Unknown errnos (no reading of the loader): an errno-specific branch decides nothing.
    path = tmp_path / "amdgpu_dm.c"
    path.write_text(DM_6_1)
    (dmcu,) = [r for r in firmware_requests(path, "amdgpu_dm.c", None) if r["function"] == "load_dmcu_fw"]
    assert not dmcu["tolerated"]


# 6.12's shape: amdgpu_ucode_request() with "%s" and the name variable; the DMCUB request's result is
# returned (dm_early_init fails with it), DMCU's -ENODEV (the wrapper's missing file) returns 0.
DM_6_12 = """\
#define FIRMWARE_RENOIR_DMUB "amdgpu/renoir_dmcub.bin"
#define FIRMWARE_NAVI12_DMCU            "amdgpu/navi12_dmcu.bin"

static int load_dmcu_fw(struct amdgpu_device *adev)
{
\tconst char *fw_name_dmcu = NULL;
\tint r;

\tswitch (adev->asic_type) {
\tcase CHIP_NAVI12:
\t\tfw_name_dmcu = FIRMWARE_NAVI12_DMCU;
\t\tbreak;
\tdefault:
\t\treturn -EINVAL;
\t}
\tr = amdgpu_ucode_request(adev, &adev->dm.fw_dmcu, AMDGPU_UCODE_REQUIRED,
\t\t\t\t "%s", fw_name_dmcu);
\tif (r == -ENODEV) {
\t\tadev->dm.fw_dmcu = NULL;
\t\treturn 0;
\t}
\tif (r) {
\t\tamdgpu_ucode_release(&adev->dm.fw_dmcu);
\t\treturn r;
\t}
\treturn 0;
}

static int dm_init_microcode(struct amdgpu_device *adev)
{
\tchar *fw_name_dmub;
\tint r;

\tswitch (amdgpu_ip_version(adev, DCE_HWIP, 0)) {
\tcase IP_VERSION(2, 1, 0):
\t\tfw_name_dmub = FIRMWARE_RENOIR_DMUB;
\t\tbreak;
\tdefault:
\t\t/* ASIC doesn't support DMUB. */
\t\treturn 0;
\t}
\tr = amdgpu_ucode_request(adev, &adev->dm.dmub_fw, AMDGPU_UCODE_REQUIRED,
\t\t\t\t "%s", fw_name_dmub);
\treturn r;
}
"""


@pytest.mark.parametrize("signature", ["format", "flag+format"])
def test_the_wrapper_s_format_filled_from_an_assigned_name(tmp_path: Path, signature: str) -> None:
    body = DM_6_12 if signature == "flag+format" else DM_6_12.replace("AMDGPU_UCODE_REQUIRED,\n\t\t\t\t ", "")
    found = _dm(tmp_path, body, signature)
    dmub, dmcu = found["dm_init_microcode"], found["load_dmcu_fw"]
    assert dmub["names"] == ["amdgpu/renoir_dmcub.bin"] and dmcu["names"] == ["amdgpu/navi12_dmcu.bin"]
    # "return r;": the caller fails with it.
    assert not dmub["tolerated"] and dmub["fallback_line"] is None
    # amdgpu_ucode_request() turns a missing file into -ENODEV, and that branch returns 0, whatever the flag.
    assert dmcu["tolerated"]
    assert dmcu["flag"] == ("required" if signature == "flag+format" else None)


def test_a_name_assigned_any_other_way_is_not_read(tmp_path: Path) -> None:
    # A value the text does not spell (a function's result) leaves the name unread, not partly read.
    body = DM_6_1.replace("\t\t\tfw_name_dmub = FIRMWARE_GREEN_SARDINE_DMUB;", "\t\t\tfw_name_dmub = dmub_name(adev);")
    assert _dm(tmp_path, body)["dm_dmub_sw_init"]["names"] == []
    # A macro the file does not define as a literal: not read either.
    body = DM_6_1.replace("FIRMWARE_GREEN_SARDINE_DMUB;", "FIRMWARE_ELSEWHERE;")
    assert _dm(tmp_path, body)["dm_dmub_sw_init"]["names"] == []
    # Not a local: a parameter (or a global) holds what the caller gave.
    body = DM_6_1.replace("\tconst char *fw_name_dmub;\n", "").replace(
        "dm_dmub_sw_init(struct amdgpu_device *adev)",
        "dm_dmub_sw_init(struct amdgpu_device *adev, const char *fw_name_dmub)",
    )
    assert _dm(tmp_path, body)["dm_dmub_sw_init"]["names"] == []


def test_macros_of_a_local_header_are_read_for_names_and_module_firmware(tmp_path: Path) -> None:
    # 7.3 moved the FIRMWARE_* macros to amdgpu_dm_dmub.h, included by amdgpu_dm.c and amdgpu_dm_dmub.c.
    defines = "\n".join(line for line in DM_6_1.splitlines() if line.startswith("#define"))
    (tmp_path / "amdgpu_dm_dmub.h").write_text(f"#ifndef X\n#define X\n{defines}\n#endif\n")
    source = '#include "amdgpu_dm_dmub.h"\n#include <linux/firmware.h>\n' + "\n".join(
        line for line in DM_6_1.splitlines() if not line.startswith("#define")
    )
    found = _dm(tmp_path, source)
    assert found["dm_dmub_sw_init"]["names"] == ["amdgpu/green_sardine_dmcub.bin", "amdgpu/renoir_dmcub.bin"]
    assert [row[0] for row in module_firmware(tmp_path / "amdgpu_dm.c", "amdgpu_dm.c")] == [
        "amdgpu/renoir_dmcub.bin",
        "amdgpu/green_sardine_dmcub.bin",
        "amdgpu/raven_dmcu.bin",
    ]


LOADER = """\
static int
_request_firmware(const struct firmware **firmware_p, const char *name,
\t\t  struct device *device, void *buf, size_t size,
\t\t  size_t offset, u32 opt_flags)
{
\tret = fw_get_filesystem_firmware(device, fw->priv, "", NULL);
#ifdef CONFIG_FW_LOADER_COMPRESS
\tif (ret == -ENOENT && nondirect)
\t\tret = fw_get_filesystem_firmware(device, fw->priv, ".xz",
\t\t\t\t\t\t fw_decompress_xz);
#endif
\tif (ret == -ENOENT && nondirect)
\t\tret = firmware_fallback_platform(fw->priv);
\treturn ret;
}
"""

UCODE_6_1 = """\
int amdgpu_ucode_request(struct amdgpu_device *adev, const struct firmware **fw,
\t\t\t const char *fw_name)
{
\tint err = request_firmware(fw, fw_name, adev->dev);

\tif (err)
\t\treturn -ENODEV;

\terr = amdgpu_ucode_validate(*fw);
\treturn err;
}
"""

UCODE_7_2 = """\
int amdgpu_ucode_request(struct amdgpu_device *adev, const struct firmware **fw,
\t\t\t enum amdgpu_ucode_required required, const char *fmt, ...)
{
\tchar fname[AMDGPU_UCODE_NAME_MAX];
\tint r;

\tif (r == sizeof(fname)) {
\t\tdev_warn(adev->dev, "amdgpu firmware name buffer overflow\\n");
\t\treturn -EOVERFLOW;
\t}

\tif (required == AMDGPU_UCODE_REQUIRED)
\t\tr = request_firmware(fw, fname, adev->dev);
\telse {
\t\tr = firmware_request_nowarn(fw, fname, adev->dev);
\t\tif (r)
\t\t\tdrm_info(&adev->ddev, "Optional firmware \\"%s\\" was not found\\n", fname);
\t}
\tif (r)
\t\treturn -ENODEV;

\tr = amdgpu_ucode_validate(*fw);
\treturn r;
}
"""


def test_what_a_missing_file_gives_each_call_is_read_from_its_source(tmp_path: Path) -> None:
    loader = tmp_path / "main.c"
    loader.write_text(LOADER)
    assert loader_missing_errno(loader) == "-ENOENT"
    loader.write_text(LOADER.replace("ret == -ENOENT && nondirect", "nondirect"))
    with pytest.raises(KnowledgeError, match="not found"):
        loader_missing_errno(loader)
    ucode = tmp_path / "amdgpu_ucode.c"
    for text in (UCODE_6_1, UCODE_7_2):
        ucode.write_text(text)
        assert ucode_request_missing_errno(ucode) == "-ENODEV"
    ucode.write_text(UCODE_6_1.replace("\tif (err)\n\t\treturn -ENODEV;\n", "\tif (err)\n\t\treturn err;\n"))
    with pytest.raises(KnowledgeError, match="amdgpu_ucode_request"):
        ucode_request_missing_errno(ucode)
    ucode.write_text("int amdgpu_ucode_validate(const struct firmware *fw)\n{\n\treturn 0;\n}\n")
    assert ucode_request_missing_errno(ucode) is None  # 5.10: no wrapper


# --- which declared files are optional (tools/knowledge/requests.py) ----------------------------


def _req(file: str, line: int, names: list[str], **kw: object) -> dict[str, Any]:
    return {"file": file, "line": line, "function": "f", "call": "request_firmware", "flag": None,
            "target": "&fw", "names": names, "spelled": "fw_name", "fallback_line": None,
            "first_choice_line": None, "tolerated": False, **kw}  # fmt: skip


def test_optional_files_follow_the_most_specific_request_of_the_declaring_file() -> None:
    facts = {
        "firmware": ["amdgpu/polaris10_pfp_2.bin", "amdgpu/polaris10_pfp.bin", "amdgpu/navi10_mec2.bin",
                     "amdgpu/navi10_mec.bin", "amdgpu/vega10_mec2.bin", "amdgpu/raven_cap.bin"],
        "firmware_declared": [["amdgpu/polaris10_pfp_2.bin", "gfx_v8_0.c", 1], ["amdgpu/polaris10_pfp.bin", "gfx_v8_0.c", 2],
                              ["amdgpu/navi10_mec2.bin", "gfx_v10_0.c", 1], ["amdgpu/navi10_mec.bin", "gfx_v10_0.c", 2],
                              ["amdgpu/vega10_mec2.bin", "gfx_v9_0.c", 1], ["amdgpu/raven_cap.bin", "psp_v10_0.c", 1]],
        "firmware_requests": [
            _req("gfx_v8_0.c", 10, ["amdgpu/%s_pfp_2.bin"], fallback_line=12),
            _req("gfx_v8_0.c", 12, ["amdgpu/%s_pfp.bin"], first_choice_line=10),
            # "%s_mec%s.bin" also matches navi10_mec2.bin with "2" for its suffix: the mec2 request is meant.
            _req("gfx_v10_0.c", 5, ["amdgpu/%s_mec%s.bin"]),
            _req("gfx_v10_0.c", 9, ["amdgpu/%s_mec2%s.bin"], tolerated=True),
            # gfx_v9_0.c asks for a name not read: nothing is claimed for its files.
            _req("gfx_v9_0.c", 3, []),
            _req("gfx_v8_0.c", 30, ["amdgpu/%s_mec2.bin"], tolerated=True),
            # raven_cap.bin: declared in psp_v10_0.c, asked for by amdgpu_psp.c; its catch-all "amdgpu/%s" loses.
            _req("amdgpu_psp.c", 7, ["amdgpu/%s_cap.bin"], flag="optional"),
            _req("amdgpu_psp.c", 9, ["amdgpu/%s"]),
        ],
    }  # fmt: skip
    got = {name: (v["kind"], v["fallback"]) for name, v in optional_files(facts).items()}
    assert got == {
        "amdgpu/polaris10_pfp_2.bin": ("fallback", "amdgpu/polaris10_pfp.bin"),
        "amdgpu/navi10_mec2.bin": ("tolerated", ""),
        "amdgpu/raven_cap.bin": ("optional", ""),
    }


def test_a_catch_all_format_never_makes_a_file_optional() -> None:
    facts = {
        "firmware": ["amdgpu/isp_4_1_0.bin"],
        "firmware_declared": [["amdgpu/isp_4_1_0.bin", "isp_v4_1_0.c", 1]],
        "firmware_requests": [_req("amdgpu_isp.c", 82, ["amdgpu/%s.bin"], flag="optional")],
    }
    assert optional_files(facts) == {}
    assert format_regex("amdgpu/%s_sdma%d.bin").fullmatch("amdgpu/vega10_sdma1.bin")


# --- the generated data against the sources read ---------------------------------------------------

SERIES = formats.series()


@pytest.mark.parametrize("series", SERIES)
def test_every_series_reads_requests_and_their_files(series: str) -> None:
    facts = formats.kernel(series)
    requests = facts["firmware_requests"]
    assert len(requests) > 50 and len(facts["firmware_declared"]) > 300
    # Polaris's _2 files are first choices with a fallback in every series read (gfx_v8_0.c).
    for part in ("pfp", "me", "ce", "mec", "mec2"):
        assert KERNELS[series]["firmware_optional"][f"amdgpu/polaris10_{part}_2.bin"] == (
            "fallback",
            f"amdgpu/polaris10_{part}.bin",
        )
    # The files a kernel cannot run a GPU without are not in the table.
    assert "amdgpu/polaris10_pfp.bin" not in KERNELS[series]["firmware_optional"]
    assert "amdgpu/polaris10_mec.bin" not in KERNELS[series]["firmware_optional"]


def test_the_explicit_flag_is_read_from_7_2() -> None:
    shapes = {s: formats.kernel(s)["ucode_request"] for s in SERIES}
    assert shapes["5.10"] is None and shapes["6.1"] == "name" and shapes["6.12"] == "format"
    for series, shape in shapes.items():
        flagged = [r for r in formats.kernel(series)["firmware_requests"] if r["flag"] is not None]
        assert bool(flagged) == (shape == "flag+format"), series
    gpu_info = [r for r in formats.kernel("7.2")["firmware_requests"] if "amdgpu/%s_gpu_info.bin" in r["names"]]
    assert [(r["flag"], r["file"]) for r in gpu_info] == [("optional", "drivers/gpu/drm/amd/amdgpu/amdgpu_device.c")]


@pytest.mark.parametrize("series", [s for s in SERIES if s != "5.10"])
def test_the_hand_written_mes_row_is_the_fallback_the_generator_cannot_name(series: str) -> None:
    # amdgpu_mes.c asks for <gc>_mes.bin when its first request fails; the first request's name is built
    # before the call in a way the generator does not read (knowledge/fallbacks.py says why).
    requests = formats.kernel(series)["firmware_requests"]
    mes = [r for r in requests if r["file"].endswith("amdgpu/amdgpu_mes.c")]
    by_line = {r["line"]: r for r in mes}
    (first,) = [r for r in mes if r["fallback_line"] is not None]
    assert first["names"] == [] and by_line[first["fallback_line"]]["names"] == ["amdgpu/%s_mes.bin"]
    ((suffix, fallback, _source),) = FALLBACKS
    assert by_line[first["fallback_line"]]["names"][0].endswith(fallback) and suffix == "_mes_2.bin"
    major, minor = (int(p) for p in series.split("."))
    assert fallback_of("amdgpu/gc_11_0_0_mes_2.bin", (major, minor)) == "amdgpu/gc_11_0_0_mes.bin"


def test_a_kernel_between_two_series_read_needs_both_to_agree() -> None:
    # 6.1's gfx_v9_0.c clears the error of <chip>_mec2.bin as 6.12's does: a 6.8 kernel goes without it too.
    assert generated("amdgpu/vega10_mec2.bin", (6, 8)) == ("tolerated", "", "the 6.1 and 6.12 sources")
    # 7.2 asks for <chip>_gpu_info.bin with AMDGPU_UCODE_OPTIONAL; 6.12 plainly: unknown between them.
    assert generated("amdgpu/vega10_gpu_info.bin", (7, 2)) == ("optional", "", "the 7.2 sources")
    assert generated("amdgpu/vega10_gpu_info.bin", (7, 0)) is None
    assert goes_without("amdgpu/vega10_gpu_info.bin", (6, 12)) is None
    # An unknown kernel: every series read must agree.
    assert generated("amdgpu/navi10_mec2.bin", None) is not None
    assert generated("amdgpu/vega10_gpu_info.bin", None) is None


# display/amdgpu_dm, read by hand from each series' amdgpu_dm.c (7.3: also amdgpu_dm_dmub.c). DMCUB:
# 5.10 and 6.1 ask in dm_dmub_sw_init() with request_firmware_direct() and on any failure print
# "DMUB firmware loading failed: %d" and return 0; from 6.12 dm_init_microcode() returns the request's
# error to dm_early_init(), and a failed early_init fails the GPU's init. DMCU (Raven/Picasso, Navi12):
# load_dmcu_fw() returns 0 on what a missing file gives: -ENOENT from request_firmware_direct() (5.10,
# 6.1), -ENODEV from amdgpu_ucode_request() (6.12 on, whatever its flag); any other error fails the init.
DMCUB_TOLERATED = {"5.10": True, "6.1": True, "6.12": False, "7.2": False, "7.3": False}


@pytest.mark.parametrize("series", SERIES)
def test_display_firmware_follows_each_series_amdgpu_dm(series: str) -> None:
    optional = KERNELS[series]["firmware_optional"]
    declared = set(formats.kernel(series)["firmware"])
    dcn = sorted(f for f in declared if f.startswith("amdgpu/dcn_") and f.endswith("_dmcub.bin"))
    dmcub = ["amdgpu/renoir_dmcub.bin", *dcn]
    assert "amdgpu/renoir_dmcub.bin" in declared and (dcn or series == "5.10")  # DCN names from 6.1
    expected = ("tolerated", "") if DMCUB_TOLERATED[series] else None
    assert {f: optional.get(f) for f in dmcub} == dict.fromkeys(dmcub, expected)
    for dmcu in ("amdgpu/raven_dmcu.bin", "amdgpu/navi12_dmcu.bin"):
        assert dmcu in declared and optional[dmcu] == ("tolerated", "")


@pytest.mark.parametrize("series", SERIES)
def test_display_requests_are_read_from_their_call_sites(series: str) -> None:
    requests = [r for r in formats.kernel(series)["firmware_requests"] if "/display/amdgpu_dm/" in r["file"]]
    by_function = {r["function"]: r for r in requests}
    assert set(by_function) == {"load_dmcu_fw", "dm_dmub_sw_init" if DMCUB_TOLERATED[series] else "dm_init_microcode"}
    dmcu = by_function["load_dmcu_fw"]
    assert dmcu["names"] == ["amdgpu/navi12_dmcu.bin", "amdgpu/raven_dmcu.bin"] and dmcu["tolerated"]
    assert dmcu["call"] == ("request_firmware_direct" if series in ("5.10", "6.1") else "amdgpu_ucode_request")
    (dmub,) = [r for r in requests if r is not dmcu]
    assert "amdgpu/renoir_dmcub.bin" in dmub["names"] and dmub["tolerated"] is DMCUB_TOLERATED[series]
    # The line a failed DMCUB request prints in amdgpu_dm is there only where the failure is tolerated.
    printed = [m for m in formats.kernel(series)["messages"] if m[3] == "DMUB firmware loading failed: %d"]
    assert bool(printed) is DMCUB_TOLERATED[series]


def test_a_kernel_not_read_goes_without_dmcu_but_not_dmcub() -> None:
    # Every series read tolerates a missing DMCU; DMCUB only up to 6.1: between 6.1 and 6.12 (Ubuntu's
    # 6.8) the two disagree, so nothing is claimed; an unknown kernel needs every series to agree.
    assert generated("amdgpu/raven_dmcu.bin", None) == (
        "tolerated",
        "",
        "every kernel series read (5.10, 6.1, 6.12, 7.2, 7.3)",
    )
    assert generated("amdgpu/renoir_dmcub.bin", (6, 1)) == ("tolerated", "", "the 6.1 sources")
    assert generated("amdgpu/renoir_dmcub.bin", (6, 8)) is None
    assert generated("amdgpu/renoir_dmcub.bin", None) is None


@pytest.mark.parametrize("key", ["navi31", "navi33", "phoenix"])
def test_debian_12_advice_ignores_a_first_choice_with_a_fallback(key: str) -> None:
    # Bookworm's firmware-amd-graphics lacks only <gc>_mes_2.bin for these: amdgpu falls back to
    # <gc>_mes.bin, so there is nothing to install from backports.
    from kfdguard import knowledge
    from kfdguard.knowledge import firmware

    asic = knowledge.asic(key)
    assert asic is not None
    anywhere = firmware.shipped("bookworm-backports") | firmware.shipped("trixie")
    lacking = [f for f in firmware.declared("6.1", asic) if f not in firmware.shipped("bookworm") and f in anywhere]
    assert lacking and all(fallback_of(f, (6, 1)) for f in lacking)
    assert firmware.missing("6.1", asic, "bookworm") == [] and firmware.advice("6.1", asic) is None
