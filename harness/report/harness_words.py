"""The words the harness itself writes into a report: a user or host of one of these names
is replaced only where it stands as a name (`harness.report.redact_names`), never as the
word, so that `USER=max` leaves the plan `max:24` and `USER=sim` the option `--backend
sim` and the path `harness/sim/pyxrt.py` as they are.

A word is the harness's when it is one of: its commands, their options and the values
those options take (tests/test_vocabulary.py holds every one of the command line's in
`_COMMAND_LINE_WORDS`, which this layer cannot import); the plan syntax, the command states,
the driver flavours and the submission flows (read from the model); the profiles'
tokens; the words of its verdicts and tables; the shipped cases' and known packs' names;
and every package and module name of the harness, read from the installed package, since
its paths (the simulator's pyxrt, a fault log's frames) are recorded as they are. Each is
also held as the parts a name can be joined to (`serve-probe`: `serve` and `probe`;
`npu5`: `npu`), since a name is found at any join.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from harness.model.drivers import FLAVOURS
from harness.model.ert import CmdState
from harness.model.plan import PLAN_WORDS
from harness.model.results import FLOWS, TrialStatus

# the words of its verdicts, tables and profiles (the profiles' tokens are held here by
# tests/test_vocabulary.py), and of the tools and systems it names
_REPORT_WORDS = """
    amd amdxdna accel aie aie2 aie2p admin arch at bin bisect boot build bundle cap capture
    case cases chain chains check checks ci client command commands config context core cpu
    cuda debian default dev diagnose emulate export investigate probe reproduce render
    serve-probe sweep
    device devices docker driver drivers elf emulated emulator ert error event events
    fastflowlm fedora firmware flaky flm flow guest hang hardware harness host inflight
    jenkins job jobs kernel kernels layer layers legacy lib linux local mainline main master
    model models npu npu1 npu4 npu5 npu6 oot opt plan plans profile protocol pyxrt
    realtime release report reports rocm run runlist runlists runner runs seed server share
    simulated slow smi staging stable state status sudo system test tests testing timeout
    trace trial trials ubuntu us usr vagrant validate version worker xclbin xclbins xdna
    xilinx xrt none auto sim captured control cut halves monolithic decode depth nop
    minicpm qwen validate reject work slow hang flaky seed inflight-cap hang-at work-hang
    reject-at xrt-smi xrt-runner xrt-capture noop noops firmware-dead firmware-taken
    held-contexts serve-fault xrt-chain minicpm5-2b-decode nop-depth qwen3-1.7b-decode
    qwen3-4b-decode minicpm5-2b-npu2 qwen3-1.7b-npu2 qwen3-4b-npu2 xrt-validate
    depth-only
"""
# the command line's own words: its commands, options, their values and metavars
# (tests/test_vocabulary.py holds every one of them here)
_COMMAND_LINE_WORDS = """
    after allow args attach backend bad bandwidth budget bytes ceiling chunk chunks clock
    codes compare continue control deadline depths dest different dir end exec exit failure
    file files folder force format frame frames full git git-bisect good import inspect
    instr instr-bo full-elf isolate json keep list longer machine made markdown max minutes
    name only other out outside pack paths plot profiles prompt rate recipe record recovery
    redact ref replay requests require rerun resume root script seconds serve show skip
    source tag text tokens total url where with yaml yes lo hi kernel npu tag timeout
    xrt-smi-validate no-xrt-smi-validate runlist-harness reproduce_ert_timeout elf xclbins
    longer-timeout max-tokens max-trials model-bytes model-dir model-list serve-model
    total-timeout end-with exit-codes flaky-as chunks-at clock-rate plan-only no-check
    no-control no-isolate no-made-up-tag no-recovery-check no-redact no-capture require-npu
    recipe-profile allow-different-machine allow-other-pack allow-outside-paths
    continue-after-failure bandwidth-ceiling case_ref with-buffers buffers
"""
_PARTS = re.compile(r"[^\W_]+")
_LETTERS = re.compile(r"[^\W\d_]+")
MIN_NAME = 3          # names shorter than this are never learned (harness.report.redact)


def words_of(text: str) -> set[str]:
    """`text` folded, and each part a name could be joined to in it: the runs between
    non-alphanumerics, and the runs of letters (`npu5` holds `npu`)."""
    folded = text.casefold().strip("-_. ")         # `--backend` is the word `backend`
    found = {folded, *_PARTS.findall(folded), *_LETTERS.findall(folded)}
    return {word for word in found if len(word) >= MIN_NAME}


def _all_words(texts: Iterable[str]) -> frozenset[str]:
    return frozenset(word for text in texts for word in words_of(text))


def _model_words() -> list[str]:
    return [*PLAN_WORDS, *FLOWS, *FLAVOURS, *(status.value for status in TrialStatus),
            *(state.name for state in CmdState), "ERT_CMD_STATE"]


VOCABULARY = _all_words([*_REPORT_WORDS.split(), *_COMMAND_LINE_WORDS.split(),
                         *_model_words()])


@functools.cache
def package_words() -> frozenset[str]:
    """The names of the harness's own packages, modules and data files (its paths are
    recorded as they are), read once from the package as installed, and the names of the
    packs its table of known xclbins knows."""
    from harness.formats.known import known_packs
    root = Path(__file__).resolve().parents[1]
    names: list[str] = [root.name, *known_packs()]
    for _, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith((".", "__"))]
        names += folders + files + [Path(file).stem for file in files]
    return _all_words(names)


def is_harness_word(folded: str, vocabulary: frozenset[str] = VOCABULARY) -> bool:
    """Whether a folded name is a word the harness writes (`vocabulary` and the names of
    its own modules)."""
    return folded in vocabulary or folded in package_words()
