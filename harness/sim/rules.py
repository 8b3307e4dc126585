"""Every rule the simulated stack plays, with where it was read.

`runlist-harness sim profiles` prints this table (`rules()`); the scenario tests name the
rule they pin. A rule that differs by XRT release or by driver build says which. Each
driver flavour's own rule is worded once, in its row (`harness.model.drivers`), and
listed here after the other driver rules. The "format" rules are XRT's files as the
harness reads and writes them for the same stack (captures, recipes, replay scripts).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.model import heap, wedge
from harness.model.drivers import FLAVOURS

XRT_KERNEL = "Xilinx/XRT src/runtime_src/core/common/api/xrt_kernel.cpp"
XRT_ELF = "Xilinx/XRT src/runtime_src/core/common/api/xrt_elf.cpp"
XRT_HWCTX = "Xilinx/XRT src/runtime_src/core/common/api/xrt_hw_context.cpp"
PYXRT = "Xilinx/XRT src/python/pybind11/src/pyxrt.cpp"
RUNNER = "Xilinx/XRT src/runtime_src/core/common/runner"
STAGING = "amd/xdna-driver drivers/accel/amdxdna"
LEGACY = "amd/xdna-driver src/driver/amdxdna"
# Linux's driver as amd/xdna-driver imports it (234824b1, "take drm-misc-fixes"; f13c7f41
# is 25854131c04a): where the mainline text is read
MAINLINE_TREE = "amd/xdna-driver f13c7f41 drivers/accel/amdxdna"


def _tree_label(flavour: str, tree: str) -> str:
    """``mainline (in-tree)``; a flavour named as its tree once: ``staging``."""
    return flavour if flavour == tree else f"{flavour} ({tree})"


@dataclass(frozen=True)
class Rule:
    layer: str          # XRT | pyxrt | driver | firmware | format
    text: str
    source: str


RULES = (
    Rule("XRT", "a runlist is submitted as chains of 24 runs (ERT_CMD_CHAIN), in order; "
         "wait() waits on the last chain",
         f"{XRT_KERNEL} runlist_impl::submit_size, wait_last_cmd (all tags)"),
    Rule("XRT", "run.state() on amdxdna reads the command's packet from its mapping, no "
         "driver call, while the device runs on: each read of an unfinished command lets "
         "simulated device time pass, 10 us at the first read and twice as much at each "
         "next (a polling program progresses; a read right after a call still sees the "
         "command RUNNING), and "
         "the emulated device's clock runs once the host has made no driver call for "
         "100 ms (XRT 2.26's chain submits of one runlist came 0.7-1.4 ms apart under "
         "emulate)",
         f"{XRT_KERNEL} kernel_command::get_state -> hw_queue::poll (49612fa3, 2.26); "
         "amd/xdna-driver 856409ca src/shim/hwq.cpp hwq::poll_command"),
    Rule("XRT", "execute() sets every member run's packet to NEW (prep_start); the driver "
         "writes state only into the chain packet, so after a successful runlist every "
         "member run still reads NEW",
         f"{XRT_KERNEL} run_impl::prep_start, runlist_impl::submit (all tags)"),
    Rule("XRT", "after a failed runlist XRT walks the chains to the first not COMPLETED, "
         "gives run error_index + 24 x chain the chain's state, marks every later run "
         "ABORT, and leaves earlier runs NEW",
         f"{XRT_KERNEL} runlist_impl::wait, abort_runs (all tags)"),
    Rule("XRT", "the failure message is 'runlist failed execution' (2.20, 202610.2.21.21) or "
         "'runlist failed execution (ERT_CMD_STATE_X)' (2.21.75 on)",
         f"{XRT_KERNEL} runlist_impl::throw_command_error; PR #9408 (fd6d182f)"),
    Rule("XRT", "on TIMEOUT the message is amended from the failing run's own packet, word 0 "
         "of its payload being the health data's version: 2.20 appends a newline, and the "
         "six 'name = 0x%08X' lines only for version 0; from 202610.2.21.21 version 1 gets "
         "its own layout (the six lines when npu_gen is AIE2), version 0 the old one, and "
         "anything else (0xFF) the bare message; from 2.25 the version-1 layout first names "
         "the kernel instance, ELF file and ELF uuid when the run's ELF has a 16-byte uuid "
         "(a blank line otherwise). An untouched payload starts with the CU mask, 1, which "
         "reads as version 1",
         f"{XRT_KERNEL} amend_aie_error_message, aie_error_message_v1, "
         "get_elf_identity_from_run at 202520.2.20.197, 202610.2.21.21, 2.25.0, 963c58ee; "
         "ert.h ert_ctx_health_data_version"),
    Rule("XRT", "XRT encodes a run's payload once and never re-encodes it: whatever the driver "
         "wrote over it after a failure is submitted again when the same run executes again; "
         "set_arg rewrites one argument's regmap words (ERT_START_CU), nothing rewrites an "
         "ERT_START_NPU payload's instruction address",
         f"{XRT_KERNEL} run_impl::prep_start (state only), kernel_impl::initialize_command, "
         "run_impl::set_arg_at_index"),
    Rule("XRT", "runlist.add() compares no hardware contexts (the header says it throws; the "
         "source does not); a run may be in one runlist at a time up to the 2.21 branch "
         "('Run object already associated with a runlist'), in several from 2.23; a member "
         "run cannot be started by itself",
         f"{XRT_KERNEL} runlist_impl::add, run_impl::set_runlist; PR #9750 (411b258d)"),
    Rule("XRT", "run.wait(), run.wait(ms) and wait2() throw 'qds_device::wait() unexpected "
         "command state' (std::runtime_error: a RuntimeError) when the driver signalled the "
         "command but its packet is still below COMPLETED (NEW, QUEUED): a single run the "
         "reset cancels on mainline before 6fb7f2988832, a single command run_job refuses "
         "before the firmware sees it; the run is never notified and reads NEW. A runlist "
         "waits on its chains' buffers without that check and reports a chain left NEW as "
         "'runlist failed execution (ERT_CMD_STATE_NEW)'",
         "Xilinx/XRT src/runtime_src/core/common/api/hw_queue.cpp qds_device::wait(const "
         "command*, size_t), hw_queue::wait(buffer_handle*) at 202520.2.20.197, 2.21.75, "
         f"202610.2.23.244, 963c58ee; {XRT_KERNEL} runlist_impl::wait_last_cmd"),
    Rule("XRT", "run.wait(ms) returns TIMEOUT when the host wait expires, whatever the device "
         "is doing",
         f"{XRT_KERNEL} run_impl::wait ('Return ERT_CMD_STATE_TIMEOUT on API timeout (bad!)')"),
    Rule("XRT", "a plain kernel (instruction buffer in the arguments) submits ERT_START_CU; a "
         "kernel made from a module (ext.kernel(hwctx, module, name)) or of a full ELF "
         "(hw_context(device, elf), ext.kernel(hwctx, name)) ERT_START_NPU_PREEMPT_ELF when "
         "the ELF carries a .pdi section anywhere (one answer for all its kernels, "
         "m_pdi_buf_map), ERT_START_NPU_PREEMPT when a group (the whole "
         "ELF, ungrouped) has .preempt_save and .preempt_restore sections, else ERT_START_NPU; "
         "a save section without its restore is refused ('Invalid elf because preempt save "
         "and restore is not paired' by the module up to 2.21, 'Invalid ELF: preempt save "
         "and restore sections are not paired' by the elf from 2.23)",
         f"{XRT_KERNEL} kernel_impl set_cmd_opcode; {XRT_ELF} elf_aie_gen2::get_ert_opcode, "
         "initialize_save_restore_buf_map (202610.2.23.244, 963c58ee); xrt_module.cpp "
         "module_elf_aie2p::get_ert_opcode, initialize_save_restore_buf (202520.2.20.197, "
         "2.21.75); elf_patcher.h section names"),
    Rule("XRT", "an ELF is full when it has a .note.xrt.configuration section (its first word "
         "the partition size); only a full ELF makes a hardware context ('ELF is missing xrt "
         "configuration info'); its kernels come from .group sections whose sub-kernel symbol "
         "points at a mangled kernel signature; ext.kernel(hwctx, 'main:sequence') opens "
         "one ('no module found' up to the 2.21 branch, 'no ELF found' from 2.23, 'with "
         "given kernel name in ctx'); from 2.21.75 ext.kernel(hwctx, name) on an xclbin "
         "context and kernel(hwctx, name) on an ELF context are refused ('Invalid API "
         "called for xrt::kernel creation ...'); add_config adds ELFs of the same partition",
         f"{XRT_ELF} is_full_elf, get_partition_size, parse_single_group_section, demangle; "
         f"{XRT_HWCTX} hw_context_impl, add_config, get_elf; {XRT_KERNEL} "
         "check_and_get_hw_context"),
    Rule("XRT", "an xclbin kernel name not in the xclbin is 'No such kernel'; an instance "
         "that matches no compute unit 'No compute units matching'",
         f"{XRT_KERNEL} get_kernel_or_error, kernel_impl"),
    Rule("pyxrt", "runlist.wait(timeout) and run.wait2(timeout) take std::chrono::milliseconds "
         "and the binding includes no chrono casters: a TypeError for any argument",
         f"{PYXRT} (no pybind11/chrono.h at any tag)"),
    Rule("pyxrt", "failures surface as RuntimeError with XRT's text; a bad argument index as "
         "IndexError (std::out_of_range); a call no overload accepts, a missing or extra "
         "argument included, as pybind11's TypeError listing the overloads (parameters named "
         "only where the binding has py::arg, from 2.23 and for some functions) and the "
         "arguments, self first; keyword arguments match only named parameters",
         f"{PYXRT} at each tag; pybind11 cpp_function::dispatcher"),
    Rule("pyxrt", "device.register_xclbin(x) returns the xclbin's uuid; ert_cmd_state has no "
         "RUNNING member and equals only its own values; objects are pyxrt.* objects",
         f"{PYXRT} (all tags)"),
    Rule("pyxrt", "elf(data, size) reads size bytes at the pointer a PyCapsule holds (pybind11's "
         "void* caster, as IRON's FullELFCallable passes one); a file that is missing or not "
         "an ELF is '<path> is not found or is not a valid ELF file', bad data 'not valid ELF "
         "data'; from 2.23 an OS/ABI no AIE platform uses is refused",
         f"{PYXRT} elf; {XRT_ELF} load_elfio, create_elf_impl"),
    Rule("pyxrt", "kernel(*args) sets each argument as a buffer, else as an int, swallows "
         "every failure (an index past the kernel's arguments too), then starts the run",
         f"{PYXRT} kernel.__call__"),
    Rule("pyxrt", "each release has its own surface: 2.20 and 202610.2.21.21 one binding; "
         "2.21.75 adds hw_context(device, elf); the 2.21 branch tip adds "
         "run.get_ctrl_scratchpad_bo, which 2.23.244 lacks; 2.23 rewrites the binding "
         "(access modes, xclbin and path contexts, context buffers, deprecation warnings); "
         "2.25 has the scratchpad again; master adds graph and aie.bo",
         f"{PYXRT} at 202520.2.20.197, 202610.2.21.21, 2.21.75, 8661761775 (XRT-2.21), "
         "202610.2.23.244, 2.25.0, 963c58ee"),
    Rule("pyxrt", "run.set_arg(int, bo) and run.set_arg(int, int): the value must fit a C int "
         "(numpy integer scalars convert); the index a C int",
         f"{PYXRT} run.set_arg"),
    Rule("driver", "kernel.org mainline before f1eac46fe5f7 (7.0; no stable backport found) "
         "takes one firmware protocol per device, major 6 from minor 12 on npu4/5/6 (5.7 on "
         "npu1), and refuses any other at probe: 'aie2_check_protocol: Incompatible firmware "
         "protocol major 7 minor 2' for 1.1.2.64/65, then aie2_hw_start, the SMU's power-off, "
         "aie2_init and amdxdna_probe fail -22; no /dev/accel node, so XRT finds no device "
         "(' No such device with index 0') and a run exits as on a machine without one (3), "
         "naming the fix; with protocol-6 firmware (1.0.0.63, firmware:protocol:6.x) the "
         "kernel's other rules play",
         f"{MAINLINE_TREE} aie2_pci.c (234824b1: the feature tables of 7.0); {LEGACY} "
         "aie2_pci.c aie2_check_protocol and npuN_regs.c at ae559d3e^ (the same check); "
         "public logs: dri-devel 2026-03 (Debian 6.19.6), a CachyOS 6.19.6 report; Xilinx/XRT "
         "src/runtime_src/core/pcie/linux/system_linux.cpp get_pcidev (all tags)"),
    Rule("driver", "4 jobs in flight per hardware context (the context's job semaphore); a "
         "5th submit blocks inside the submit ioctl until a job of that context ends, "
         "completed or failed by the driver's timeout, so runlist.execute() (its 5th chain) "
         "and run.start() return only then; a trial's deadline allows one driver timeout "
         "per group of 4 chains",
         f"{STAGING} aie2_ctx.c aie2_cmd_submit down_interruptible(&hwctx->priv->job_sem), "
         f"HWCTX_MAX_CMDS; {LEGACY} aie2_ctx.c aie2_cmd_submit down_killable, CTX_MAX_CMDS"),
    Rule("driver", "staging and mainline: a device holds hwctx_limit contexts (6 on npu1, 16 "
         "on npu4/5/6): the firmware refuses the next (status 0x2000003, MGMT_ERT_NOAVAIL), "
         "logged 'command opcode 0x2 failed' by aie_send_mgmt_msg_wait (staging) or "
         "aie2_send_mgmt_msg_wait (mainline), then through the resource solver 'create "
         "context failed' (aie2_xrs_load) and 'Allocate AIE resource failed' "
         "(aie2_alloc_resource), and 'Alloc hw resource failed' (aie2_hwctx_init), ret -22, "
         "and the ioctl's own 'Init hwctx failed, ret -22' "
         "(amdxdna_drm_create_hwctx_ioctl); "
         "mainline from 7818618a09a0 (7.0; 6.19.4 by stable backport) with "
         "AIE2_TEMPORAL_ONLY firmware (npu4/5/6) skips the solver and does not print its two "
         "lines (6.19.3 and earlier print them); the ioctl fails -EINVAL and "
         "XRT's shim raises "
         "'DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-22): Invalid argument'",
         f"{STAGING} npu1_regs.c, npu4_regs.c .hwctx_limit, aie.c aie_send_mgmt_msg_wait, "
         f"aie2_pci.c aie2_xrs_load, aie2_ctx.c aie2_alloc_resource, aie2_hwctx_init; "
         f"{MAINLINE_TREE} aie2_message.c aie2_send_mgmt_msg_wait, aie2_ctx.c "
         "aie2_alloc_resource (AIE2_TEMPORAL_ONLY; also at 234824b1); stable review mail "
         "6.19 299/781 'accel/amdxdna: Enable temporal sharing only mode' (6.19.4-rc1); "
         "amd/xdna-driver "
         "src/shim/host/platform_host.cpp ioctl, shim_debug.h shim_err; amdxdna_ctx.c "
         "amdxdna_drm_create_hwctx_ioctl at 234824b1, f13c7f41 and 856409ca"),
    Rule("driver", "out-of-tree: up to 32 virtual contexts (6 on npu1) multiplexed on the "
         "hardware contexts; the next is refused by aie2_rq_add, 'Not allow more than 32 "
         "context(s)', then 'Add ctx ctx.PID.ID failed, ret -2' (aie2_ctx_init) and 'Init "
         "ctx failed, ret -2' (amdxdna_drm_create_hwctx_ioctl), -ENOENT: "
         "'DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-2): No such file or directory'",
         f"{LEGACY} aie2_ctx_runqueue.c aie2_rq_add, aie2_ctx.c aie2_ctx_init, amdxdna_ctx.c "
         "amdxdna_drm_create_hwctx_ioctl (856409ca), npu4_family.h and npu1_regs.c "
         ".ctx_limit"),
    Rule("driver", "a chain's sub-commands share one 4 KiB buffer of cmd_chain_slot_npu "
         "slots (52-byte header plus the arguments) and one opcode: ERT_START_CU fills a "
         "NON_ELF slot with its whole payload, ERT_START_NPU a PARTIAL_ELF slot with at most "
         "26 words (104 bytes) of arguments, ERT_START_NPU_PREEMPT a PREEMPT slot with the "
         "same cap (and AIE2_PREEMPT), ERT_START_NPU_PREEMPT_ELF an ELF slot of one "
         "argument word (and needs AIE2_PREEMPT: -EOPNOTSUPP on npu1); the out-of-tree driver "
         "caps a chain at 64; a chain breaking this fails in run_job after the submit, "
         "header NEW. A single command goes out as a one-slot list under the same rules "
         "where force_cmdlist is true (staging, legacy, mainline from c68a6af400ca: 7.0, "
         "6.19.7); mainline before sends it through aie2_execbuf, whose refusals are not "
         "modelled",
         f"{STAGING} aie2_message.c aie2_cmdlist_fill_slot, aie2_cmdlist_fill_npu_cf, "
         "aie2_cmdlist_fill_npu_dpu, aie2_cmdlist_fill_npu_elf, MAX_CHAIN_CMDBUF_SIZE, "
         "aie2_cmdlist_single_execbuf; aie2_ctx.c aie2_sched_job_run force_cmdlist (856409ca, "
         "and 234824b1 for Linux 7.0)"),
    Rule("firmware", "on a timeout the firmware leaves the run list read index at 0, on "
         "every device, so its run_list_id (and the index taken from it) is 0",
         "amd/xdna-driver test/shim_test/io_test.cpp ('For a timeout firmware leaves the "
         "runlist read index at 0'; the is_npu4 test there picks the packet that holds the "
         "health data)"),
    Rule("firmware", "the app health report (the capture block, version-1 health data) exists "
         "only when the firmware has AIE2_APP_HEALTH: mailbox protocol 6.18 or later on "
         "npu4/5/6 (every feature with protocol 7), never on npu1; firmware 1.1.2.64 and "
         "1.1.2.65 speak protocol 7.2; without it the driver gets -EOPNOTSUPP, prints no "
         "capture block and writes no health data, and a report says 'this firmware does "
         "not report health'",
         f"{STAGING} npu4_regs.c npu4_fw_feature_table, npu1_regs.c, aie2_message.c "
         f"aie2_query_app_health; {LEGACY} npu4_regs.c (GET_APP_HEALTH from 6.18), "
         "aie2_message.c aie2_get_app_health; firmware protocols: "
         "harness/model/firmware.py RELEASES"),
    Rule("firmware", "a report reads 'Version: 2.0' and 'Report size: 0x230' "
         "(sizeof(struct app_health_report)); the context and the timed-out entry are the "
         "model's; DPU PC, TXN OP ID, Context PC and the fatal error's type, exception, PC, "
         "module and task are written 'not modelled' in the kernel log and in XRT's lines, "
         "never as numbers the model would invent (assumed the same for every firmware "
         "with the feature)",
         "amd/xdna-driver#906 (captures seen upstream); aie2_msg_priv.h struct "
         "app_health_report at 856409ca"),
    Rule("driver", "after a hang the context is reset and later submissions run (unless the "
         "firmware stopped taking contexts: wedge:N, firmware-dead:N)", STAGING),
    Rule("driver", "a firmware that stops taking contexts: the in-tree and staging trees' "
         "restart in aie2_sched_job_timedout fails ('Create hwctx failed, ret -22' after the "
         "mailbox's refusal; staging adds 'NPU context restart rejected ... not "
         "power-cycling') and leaves the context without a firmware channel, so its later "
         "jobs end at once, never sent, their commands NEW, and a new context is refused "
         "-EINVAL ('Init hwctx failed'); the legacy tree reconnects a stopped context with "
         "its next job, which fails ('create context failed', 'Alloc hw resource failed', "
         "'connect failed'), marks it CTX_STATE_DEAD ('fatal error') and fails that submit "
         "and every later one -EIO; a firmware that answers nothing gives -ETIME once ('Wait "
         "for completion timeout': the health query's 'Get app health failed', or on 7.0 "
         "the stop's 'Destroy context failed, ret -62') and -ENODEV after (the restart's "
         "'Create hwctx failed, ret -19'), and staging, whose health query went unanswered, "
         "then power-cycles the NPU (aie2_hw_reset) and resumes its contexts; a module "
         "reload on a wedged NPU goes through, loading the firmware again, and the device stays "
         "wedged (1bit-MONSTER/1bit-MONSTER#1920: 'only reloads firmware and does not reset "
         "the stuck AIE cores')", wedge.WEDGE_SOURCES),
    Rule("driver", "each tree's xdna_job trace events, kept with a failed trial as tracefs "
         "prints them and marked SIMULATED: in-tree 'sent to device', 'signaled fence', "
         "'job free' and 'job timedout' (the one record 7.0 keeps of a timeout); staging "
         "'job run' and 'job free' (', op=0'; no timeout event); legacy (amdxdna_trace) "
         "'job run', 'signaling fence', 'job free'",
         "; ".join(dict.fromkeys(row.trace.source for row in FLAVOURS.values()))),
    Rule("driver", "a cacheable buffer is a device buffer in the client's heap, 32 KiB "
         "aligned, each hardware context taking four 4 KiB command buffers from it; "
         + "; ".join(f"{_tree_label(row.name, row.heap(True).tree)}: "
                     f"{row.heap(True).rule_text(row.heap(False))}"
                     for row in FLAVOURS.values())
         + "; XRT's shim grows the heap on EAGAIN and raises any other errno as "
         "'DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-N)'; a host-only buffer (the "
         "driver's shmem) has no such bound",
         "; ".join([*dict.fromkeys(row.heap(True).source for row in FLAVOURS.values()),
                    heap.SHIM_SOURCE])),
    Rule("driver", "the kernel log: staging and mainline print XDNA_ERR as 'amdxdna BDF: [drm] "
         "*ERROR* func: text' and XDNA_WARN as '[drm] func: text'; the legacy tree prints "
         "'amdxdna BDF: func: text', errors rate-limited per call site (10 in 5 s, then 'N "
         "callbacks suppressed')",
         f"{STAGING} amdxdna_pci_drv.h; {LEGACY} amdxdna_drm.h; Linux "
         "include/linux/ratelimit_types.h"),
    Rule("driver", "on a timeout each tree logs its own lines: staging >= 6.17 'TDR timeout "
         "detected' (aie2_tdr_detect) and the capture block (aie2_set_cmd_timeout); staging "
         "< 6.17 'TDR timeout detected' (aie2_legacy_tdr_detect) then 'Device isn't making "
         "progress' (aie2_tdr_work_func); mainline 7.0 nothing, 7.1 the capture block (with "
         "a firmware that reports health); legacy "
         "'Device isn't making progress... Count N timeout T dump_only 0' (aie2_tdr_work), "
         "then per connected context 'Dumping ctx', the capture block and 'JOB[seq % 4]:' "
         "with seq/op/msg/fence lines (aie2_dump_ctx). The records are /dev/kmsg's, escaped "
         "as printk escapes them; under HARNESS_ROOT they are also appended to its dev/kmsg. The "
         "simulated NPU's address (0000:00:00.9) and clock (9e9 s of uptime) are ones no "
         "machine has: a PCI function number is three bits, printed %d",
         f"{STAGING} aie2_ctx.c, aie2_tdr.c; {LEGACY} aie2_tdr.c, aie2_ctx.c; Linux "
         "kernel/printk/printk.c msg_add_ext_text; Documentation/ABI/testing/dev-kmsg; "
         "Linux drivers/pci/probe.c pci_setup_device (dev_set_name), include/uapi/linux/"
         "pci.h PCI_FUNC"),
    Rule("firmware", "sub-commands run in order, each taking its kernel's latency (the case's "
         "latency_us or 50 us); the device reads the synced copy of the instruction buffer "
         "and rejects a malformed TXN, a partition mismatch or a short ninstr (ERROR at that "
         "sub-command); a run with no instruction buffer (arguments 1 and 2 both 0) completes, "
         "as XRT's aie-reconfig-overhead NOP recipe relies on; an ELF-flow run's control code "
         "is its module's .ctrltext, checked the same way",
         "STACK.md 7, 8; aie-rt xaie_txn.h; Xilinx/XRT src/runtime_src/core/tools/common/"
         "tests/TestAIEReconfigOverhead.cpp"),
    Rule("XRT", "kernel.group_id(i) is the argument's memory bank (0xFFFF for none) in the "
         "low 16 bits and the context's slot, the driver's context handle, above them; "
         "set_arg of a buffer in a bank the argument is not connected to (its group's low 16 "
         "bits; a sub-buffer's parent's) prints two warnings and fails, 'No host side buffer "
         "in destination buffer: Invalid argument': XRT copies it into the connected bank, "
         "which the NPU cannot (no device copy, no host side). Checked with XRT 2.26 over "
         "the emulated driver",
         f"{XRT_KERNEL} kernel_impl::group_id, validate_bo_at_index; xrt_bo.cpp "
         "alloc_clone, copy_through_host; amd/xdna-driver src/shim hwctx.cpp get_slotidx"),
    Rule("XRT", "the XDNA shim makes host-only and cacheable buffers only: no flag is "
         "'unsupported buffer type: none flag (err=95)', device_only, p2p and svm 'Bad BO "
         "type. (err=22)'. Checked with XRT 2.26 over the emulated driver",
         "amd/xdna-driver 856409ca src/shim device.cpp alloc_bo, buffer.cpp "
         "bo_flags_to_type"),
    Rule("firmware", "a sub-command whose payload still holds what the driver wrote after an "
         "earlier failure carries a garbage instruction address: nothing public says what "
         "the firmware does with one; the simulator ends it ERROR (an assumption)",
         "simulator assumption; the payload rule above"),
    Rule("firmware", "contexts whose column ranges overlap time-share the array",
         "STACK.md 5 (FastFlowLM's four 8-column contexts)"),
    Rule("format", "a capture's replay.json is serialised by nlohmann::json, every object's "
         "keys sorted: execution (frames, threads), ini, resources (buffers, hwctxs, kernels, "
         "runs), version; it is read a frame and a run at a time in that order (or the old "
         "one), what the frames name checked once the resources are in",
         f"{RUNNER}/capture.cpp save_replay_script (at 963c58ee), "
         "core/common/json/nlohmann/json.hpp (std::map objects)"),
    Rule("format", "XRT's capture records a buffer when it is first synced or set, a "
         "sub-buffer after its parent (its sync goes through the parent's), with its "
         "parent's flags and group; it keys every record by address, so a process that "
         "frees XRT objects while it records can have a new one taken for a freed one (a "
         "segfault, or no replay.json: 'could not save replay script: map::at'), which the "
         "simulated writer, keying by object, does not play: the harness keeps its objects "
         "while XRT records",
         f"{RUNNER}/capture.cpp create_bo_if_new, capture_sync, frames (at 49612fa3); "
         "xrt_bo.cpp buffer_sub::sync"),
    Rule("format", "each captured context keeps its cfg (string values), which replay.cpp "
         "makes the context with (passed through pyxrt's hw_context cfg_param where the "
         "value is a number, from the 2.23 binding); ini holds the XRT settings the "
         "application ran with, which replay.cpp sets first (XRT also reads each from an "
         "environment variable of its name)",
         f"{RUNNER}/capture.cpp replay_resource_hwctx, replay_ini; {RUNNER}/replay.cpp "
         "create_hwctx, init_ini; core/common/config_reader.cpp get_string_value"),
    Rule("format", "a recipe run names its kernel with 'kernel' ('name' is the deprecated "
         "spelling, read only without it); a constant is read with value.get<int>(), a "
         "static_cast in nlohmann::json 3.11.3: xrt-runner silently runs a value past a C int "
         "as its low 32 bits, so the harness refuses one (naming what the runner would run "
         "with) on reading a recipe and "
         "on exporting one, naming the run and the argument",
         f"{RUNNER}/runner.cpp create_kernel_run, create_constant_args; "
         "core/common/json/nlohmann/json.hpp get_arithmetic_value (3.11.3, at 963c58ee)"),
    Rule("format", "xrt-runner creates every recipe buffer host-only (xrt::ext::bo; the "
         "schema has name, type, size); XRT's capture writer records memgrp and flags for "
         "a buffer with a memory group that is not host-only and replay allocates it so: "
         "an instruction-buffer export is also a replay script keeping the instruction "
         "buffer cacheable in argument 1's group",
         f"{RUNNER}/runner.cpp create_bo, schema/recipe.schema.json; capture.cpp "
         "replay_resource_buffer; replay.cpp create_buffer"),
)


def rules() -> list[Rule]:
    """RULES with each driver flavour's own rule, from its row, before the firmware's."""
    flavours = [Rule("driver", row.played, row.source) for row in FLAVOURS.values()]
    at = next(i for i, rule in enumerate(RULES) if rule.layer == "firmware")
    return [*RULES[:at], *flavours, *RULES[at:]]
