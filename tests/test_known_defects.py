"""The known-defects table (harness/data/known_defects.yaml) keeps its schema: every entry
names a component, an affected range of comma-joined clauses over dotted numeric versions
that leaves out the release that fixes it, symptom regexes that compile, and a public
source. Each symptom is searched for in lines built from the format string the entry cites
(with the prefix its printing function adds) and must name its own defect only, and not
lines of neighbouring failures."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

TABLE = Path(__file__).resolve().parents[1] / "harness" / "data" / "known_defects.yaml"
COMPONENTS = {"xrt", "amdxdna-mainline", "amdxdna-staging", "amdxdna-legacy", "firmware",
              "fastflowlm"}
FIELDS = {"id", "component", "summary", "affects", "fixed_in", "symptoms", "source"}
CLAUSE = re.compile(r"(<=|>=|==|<|>)(\d+(?:\.\d+)*)")


def _clauses(affects: str) -> list[tuple[str, tuple[int, ...]]]:
    """'>=6.17,<7.0' -> [('>=', (6, 17)), ('<', (7, 0))]; a clause that is not one raises."""
    parsed = []
    for clause in affects.split(","):
        match = CLAUSE.fullmatch(clause.strip())
        if match is None:
            raise ValueError(f"not a version clause: {clause!r}")
        parsed.append((match[1], tuple(int(part) for part in match[2].split("."))))
    return parsed


def _defects() -> list[dict]:
    data = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    assert data["schema"] == "xdna-runlist-harness/known-defects/v1"
    assert isinstance(data["defects"], list) and data["defects"]
    return data["defects"]


def test_every_entry_has_the_schema_fields() -> None:
    ids = [entry["id"] for entry in _defects()]
    assert len(ids) == len(set(ids)), "ids must be unique"
    for entry in _defects():
        assert set(entry) >= FIELDS, f"{entry.get('id')}: missing {FIELDS - set(entry)}"
        assert entry["component"] in COMPONENTS, entry["id"]
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", entry["id"]), entry["id"]
        assert entry["summary"].strip() and isinstance(entry["fixed_in"], str)
        assert re.fullmatch(r"\d+(\.\d+)*|commit [0-9a-f]{7,40}", entry["fixed_in"]), entry["id"]
        assert entry["source"].startswith("https://"), entry["id"]


def test_every_affected_range_parses() -> None:
    for entry in _defects():
        assert _clauses(entry["affects"]), entry["id"]


def test_every_symptom_compiles() -> None:
    for entry in _defects():
        assert isinstance(entry["symptoms"], list), entry["id"]
        for symptom in entry["symptoms"]:
            re.compile(symptom)


def test_the_range_parser_refuses_what_is_not_a_clause() -> None:
    assert _clauses(">=6.17,<7.0") == [(">=", (6, 17)), ("<", (7, 0))]
    assert _clauses("==1.4.2.323") == [("==", (1, 4, 2, 323))]
    for bad in ("6.17", ">=6.x", ">=6.17;<7.0", "", "~=1.0"):
        try:
            _clauses(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _satisfies(version: tuple[int, ...], affects: str) -> bool:
    """Whether a dotted version lies in the range; shorter versions compare as if padded
    with zeros (2.21 == 2.21.0), as the driver-bug matcher compares them."""
    comparisons = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
                   ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
                   "==": lambda a, b: a == b}
    for operator, bound in _clauses(affects):
        width = max(len(version), len(bound))
        padded = version + (0,) * (width - len(version))
        limit = bound + (0,) * (width - len(bound))
        if not comparisons[operator](padded, limit):
            return False
    return True


def test_the_fixing_release_is_outside_the_affected_range() -> None:
    for entry in _defects():
        if entry["fixed_in"].startswith("commit "):
            continue
        assert not _satisfies(_version(entry["fixed_in"]), entry["affects"]), entry["id"]


def test_the_range_check_reads_clauses_as_released_versions() -> None:
    assert _satisfies((6, 19, 3), ">=6.14,<7.0")
    assert not _satisfies((7, 0), ">=6.14,<7.0")
    assert _satisfies((2, 21, 21), "<2.21.68") and not _satisfies((2, 21, 68), "<2.21.68")
    assert _satisfies((2, 21), ">=2.20,<2.21.1") and not _satisfies((2, 19, 194), ">=2.20")


# Lines built from the format strings each entry cites, with the prefix the printing
# function adds: staging and mainline XDNA_ERR/XDNA_WARN go through drm_err/drm_warn
# ("amdxdna <bdf>: [drm] *ERROR* <func>: ..."), the legacy tree through dev_err/dev_warn
# ("amdxdna <bdf>: <func>: ..."), the xdna shim through shim_err ("%s IOCTL failed" plus
# " (err=%d)" with -errno, then XRT's system_error appends strerror).
DMESG = "[  812.301422] "
BDF = "amdxdna 0000:c5:00.1: "


def _staging(func: str, fmt: str, *args: object) -> str:
    return f"{DMESG}{BDF}[drm] *ERROR* {func}: " + (fmt % args)


def _legacy(func: str, fmt: str, *args: object) -> str:
    return f"{DMESG}{BDF}{func}: " + (fmt % args)


# the shim's format string and the suffix shim_err() appends (src/shim/shim_debug.h)
SHIM_IOCTL_FAILED = "%s IOCTL failed"
SHIM_ERR_SUFFIX = " (err=%d)"


def _shim(ioctl: str, errno: int, strerror: str) -> str:
    return (SHIM_IOCTL_FAILED % ioctl) + (SHIM_ERR_SUFFIX % -errno) + f": {strerror}"


def _call_trace(symbol: str, offset: int, size: int, module: str) -> str:
    """A call-trace line as the kernel prints %pS (lib/vsprintf.c)."""
    return f"{DMESG} {symbol}+0x{offset:x}/0x{size:x} [{module}]"


SYMPTOM_LINES = {
    "mainline-protocol-7-2-refused": [
        _staging("aie2_check_protocol", "Incompatible firmware protocol major %d minor %d",
                 7, 2),
        # as posted from 6.19.y in amd/xdna-driver#1074
        "amdxdna 0000:c7:00.1: [drm] *ERROR* aie2_check_protocol: Incompatible firmware "
        "protocol major 7 minor 3",
    ],
    "xrt-failed-start-leaves-run-unlaunchable": [
        "  what():  bad command state, can't launch",
        "RuntimeError: bad command state, can't launch",
    ],
    "xrt-validate-needs-root": [
        "[xrt-smi] ERROR: " + _shim("DRM_IOCTL_AMDXDNA_SET_STATE", 13, "Permission denied"),
        # the older shim's positive errno, as posted in amd/xdna-driver#307
        "[xrt-smi] ERROR: DRM_IOCTL_AMDXDNA_SET_STATE IOCTL failed (err=13): Permission "
        "denied",
    ],
    "staging-wedged-firmware-not-power-cycled": [
        _staging("aie2_hwctx_restart", "Create hwctx failed, ret %d", -22),
    ],
    "staging-submit-etime-on-busy-page-fault": [
        "RuntimeError: " + _shim("DRM_IOCTL_AMDXDNA_EXEC_CMD", 62, "Timer expired"),
    ],
    "staging-mailbox-flush-null-deref": [
        _call_trace("xdna_msg_cb", 0x4b, 0x90, "amdxdna"),
    ],
    "legacy-smu-off-before-firmware-idle": [
        _legacy("aie2_smu_stop", "Power off failed, ret %d", -22),
    ],
    "legacy-turbo-blocks-firmware-suspend": [
        _legacy("aie2_mgmt_fw_fini", "suspend_fw failed"),
    ],
}

# Lines from a neighbouring failure (or from the release with the fix) that share words
# with a symptom and must not be taken for it.
NOT_SYMPTOM_LINES = [
    # a context refused at creation, not re-created after a timeout
    _staging("aie2_hwctx_init", "Alloc hw resource failed, ret %d", -22),
    _staging("amdxdna_drm_create_hwctx_ioctl", "Init hwctx failed, ret %d", -22),
    # what the staging driver prints once it power-cycles instead
    "amdxdna 0000:c5:00.1: [drm] aie2_sched_job_timedout: NPU firmware unhealthy (ctx "
    "restart ret -22, health unresponsive) - power-cycling NPU",
    # the in-tree driver's SMU power-off failure (a wrong firmware, amd/xdna-driver#389)
    _staging("aie2_smu_fini", "Power off failed, ret %d", -22),
    _staging("aie2_smu_exec", "smu cmd %d failed, 0x%x", 4, 0xFF),
    # other ioctls and other errnos
    "[xrt-smi] ERROR: " + _shim("DRM_IOCTL_AMDXDNA_GET_INFO", 13, "Permission denied"),
    "RuntimeError: " + _shim("DRM_IOCTL_AMDXDNA_EXEC_CMD", 5, "Input/output error"),
    _legacy("aie2_xdna_reset", "Suspend firmware failed"),
    _call_trace("xdna_mailbox_stop_channel", 0x6a, 0x120, "amdxdna"),
    "runlist failed execution (ERT_CMD_STATE_TIMEOUT)",
    _staging("aie2_check_protocol", "Firmware minor version smaller than supported"),
]


def _matches(entry: dict, line: str) -> bool:
    return any(re.search(symptom, line) for symptom in entry["symptoms"])


def test_every_symptom_is_tried_against_lines_built_from_its_format_string() -> None:
    with_symptoms = {entry["id"] for entry in _defects() if entry["symptoms"]}
    assert set(SYMPTOM_LINES) == with_symptoms


def test_each_built_line_names_its_own_defect_and_no_other() -> None:
    for entry in _defects():
        for defect_id, lines in SYMPTOM_LINES.items():
            for line in lines:
                assert _matches(entry, line) == (entry["id"] == defect_id), (entry["id"], line)


def test_neighbouring_lines_are_not_taken_for_a_symptom() -> None:
    for entry in _defects():
        for line in NOT_SYMPTOM_LINES:
            assert not _matches(entry, line), (entry["id"], line)
