"""Every rule the simulated stack plays, with where it was read.

`runlist-harness sim profiles` prints this table; the scenario tests name the
rule they pin. A rule that differs by XRT release says which releases.
"""

from __future__ import annotations

from dataclasses import dataclass

XRT_KERNEL = "Xilinx/XRT src/runtime_src/core/common/api/xrt_kernel.cpp"
PYXRT = "Xilinx/XRT src/python/pybind11/src/pyxrt.cpp"
DRIVER = "amd/xdna-driver drivers/accel/amdxdna"


@dataclass(frozen=True)
class Rule:
    layer: str          # XRT | pyxrt | driver | firmware
    text: str
    source: str


RULES = (
    Rule("XRT", "a runlist is submitted as chains of 24 runs (ERT_CMD_CHAIN), in order; "
         "wait() waits on the last chain",
         f"{XRT_KERNEL} runlist_impl::submit_size, wait_last_cmd (all tags)"),
    Rule("XRT", "execute() sets every member run's packet to NEW (prep_start); the driver "
         "writes state only into the chain packet, so after a successful runlist every "
         "member run still reads NEW",
         f"{XRT_KERNEL} run_impl::prep_start, runlist_impl::submit (all tags)"),
    Rule("XRT", "after a failed runlist XRT walks the chains to the first not COMPLETED, "
         "gives run error_index + 24 x chain the chain's state, marks every later run "
         "ABORT, and leaves earlier runs NEW",
         f"{XRT_KERNEL} runlist_impl::wait, abort_runs (all tags)"),
    Rule("XRT", "the failure message is 'runlist failed execution' (2.20, 202610.2.21.21) or "
         "'runlist failed execution (ERT_CMD_STATE_X)' (2.21.75, 2.23, 2.25, master)",
         f"{XRT_KERNEL} runlist_impl::throw_command_error; PR #9408 (fd6d182f)"),
    Rule("XRT", "on TIMEOUT XRT appends the six context-health lines (name = 0x%08X) when the "
         "failing run's own packet holds version-0 health data, else a bare newline",
         f"{XRT_KERNEL} amend_aie_error_message (all tags)"),
    Rule("XRT", "runlist.add() compares no hardware contexts (the header says it throws; the "
         "source does not); a run may be in one runlist at a time up to 2.21.75 ('Run object "
         "already associated with a runlist'), in several from 2.23; a member run cannot be "
         "started by itself",
         f"{XRT_KERNEL} runlist_impl::add, run_impl::set_runlist; PR #9750 (411b258d)"),
    Rule("XRT", "run.wait(ms) returns TIMEOUT when the host wait expires, whatever the device "
         "is doing",
         f"{XRT_KERNEL} run_impl::wait ('Return ERT_CMD_STATE_TIMEOUT on API timeout (bad!)')"),
    Rule("pyxrt", "runlist.wait(timeout) and run.wait2(timeout) take std::chrono::milliseconds "
         "and the binding includes no chrono casters: a TypeError for any argument",
         f"{PYXRT} (no pybind11/chrono.h at any tag)"),
    Rule("pyxrt", "failures surface as RuntimeError with XRT's text; a bad argument index as "
         "IndexError (std::out_of_range); a call no overload accepts as TypeError",
         f"{PYXRT}; {XRT_KERNEL} kernel_impl::get_arg (args.at)"),
    Rule("pyxrt", "device.register_xclbin(x) returns the xclbin's uuid; ert_cmd_state has no "
         "RUNNING member and equals only its own values",
         f"{PYXRT} (all tags)"),
    Rule("pyxrt", "kernel(*args) sets each argument as a buffer, else as an int, swallows "
         "every failure (an index past the kernel's arguments too), then starts the run",
         f"{PYXRT} kernel.__call__"),
    Rule("pyxrt", "each release has its own surface: 2.20 and 202610.2.21.21 one binding; "
         "2.21.75 adds hw_context(device, elf); 2.23 rewrites it (access modes, xclbin and path "
         "contexts, context buffers, deprecation warnings); 2.25 adds "
         "run.get_ctrl_scratchpad_bo; master adds graph and aie.bo",
         f"{PYXRT} at 202520.2.20.197, 202610.2.21.21, 2.21.75, 202610.2.23.244, 2.25.0, "
         "963c58ee"),
    Rule("pyxrt", "run.set_arg(int, bo) and run.set_arg(int, int): the value must fit a C int "
         "(numpy integer scalars convert); the index a C int",
         f"{PYXRT} run.set_arg"),
    Rule("XRT", "a dpu kernel made from a module (ext.kernel(hwctx, module, name), the ELF "
         "flow) submits ERT_START_NPU when its AIE2P control-code ELF has no PDIs and no "
         "preemption save/restore; a plain kernel (instruction buffer in the arguments) "
         "submits ERT_START_CU",
         f"{XRT_KERNEL} kernel_impl set_cmd_opcode (kernel_type::dpu); xrt_module.cpp "
         "(2.20) / xrt_elf.cpp (master) module_elf_aie2p::get_ert_opcode"),
    Rule("driver", "4 jobs in flight per hardware context; further submissions wait in user "
         "space", f"{DRIVER} CTX_MAX_CMDS"),
    Rule("driver", "a chain's sub-commands share one 4 KiB buffer of cmd_chain_slot_npu "
         "slots (52-byte header plus the arguments) and one opcode: ERT_START_CU fills a "
         "NON_ELF slot with its whole payload, ERT_START_NPU (the ELF flow) a PARTIAL_ELF slot "
         "with the instruction address and at most 26 words (104 bytes) of arguments; the "
         "out-of-tree driver caps a chain at 64; a chain breaking this fails in run_job after "
         "the submit, header NEW",
         f"{DRIVER} aie2_message.c aie2_cmdlist_fill_slot, aie2_cmdlist_fill_npu_cf, "
         "aie2_cmdlist_fill_npu_dpu, MAX_NPU_ARGS_SIZE, MAX_CHAIN_CMDBUF_SIZE"),
    Rule("driver", "staging: no progress for tdr_timeout_ms=2000 -> faulting job TIMEOUT with "
         "version-0 health data in its failing sub-command, the rest of the context ABORT",
         f"{DRIVER} aie2_tdr.c, aie2_ctx.c aie2_set_cmd_timeout"),
    Rule("driver", "mainline: drm_sched 60 s job timeout; hung job and the rest ABORT",
         "Linux drivers/accel/amdxdna"),
    Rule("driver", "out-of-tree: device-wide watchdog every 2 s, fires on the second silent "
         "check; first pending job TIMEOUT, the rest ABORT",
         "amd/xdna-driver src/driver/amdxdna"),
    Rule("driver", "on PCI 17f0 (NPU4-class) the firmware leaves error_index at 0 on a timeout",
         "amd/xdna-driver test/shim_test/io_test.cpp"),
    Rule("driver", "after a hang the context is reset and later submissions run", DRIVER),
    Rule("firmware", "sub-commands run in order, each taking its kernel's latency (the case's "
         "latency_us or 50 us); the device reads the synced copy of the instruction buffer "
         "and rejects a malformed TXN, a partition mismatch or a short ninstr (ERROR at that "
         "sub-command); an ELF-flow run's control code is its module's .ctrltext, checked "
         "the same way", "STACK.md 7, 8; aie-rt xaie_txn.h"),
    Rule("firmware", "contexts whose column ranges overlap time-share the array",
         "STACK.md 5 (FastFlowLM's four 8-column contexts)"),
)
