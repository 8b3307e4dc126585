"""Every rule the emulated driver's interface plays, with where it was read (beside the
driver and firmware model's own rules, `harness.sim.rules`, which it plays unchanged).

`runlist-harness sim profiles` prints this table after the simulator's; the tests of
tests/test_emulator.py pin each rule.
"""

from __future__ import annotations

from harness.model import heap
from harness.model.drivers import MAINLINE_DRM_SOURCE
from harness.sim.rules import Rule

SHIM = "amd/xdna-driver src/shim (856409ca, the commit the shim is built from)"
UAPI = ("amd/xdna-driver include/uapi/drm/amdxdna_accel.h and the shim's "
        "src/include/uapi/drm_local/amdxdna_accel.h")
DRIVER = "amd/xdna-driver drivers/accel/amdxdna"
XRT_PCI = "Xilinx/XRT src/runtime_src/core/pcie/linux/pcidrv.cpp, pcidev.cpp"

RULES = (
    Rule("discovery", "the device is an entry of /sys/bus/pci/drivers/amdxdna that is a link "
         "resolving under /sys/devices/, with device_type 0 (KMQ), an accel/accel0 folder "
         "naming /dev/accel/accel0 (a character device, major 261), vendor, device, "
         "revision, subsystem ids, vbnv and fw_version",
         f"{XRT_PCI} scan_devices; {SHIM} host/pcidrv_amdxdna.cpp, pcidrv.cpp, device.cpp"),
    Rule("discovery", "module parameters by flavour, each with its default and as its mode "
         "lets a normal user read it (0444/0644 readable, 0400/0600 not): staging "
         "tdr_timeout_ms 0400, force_cmdlist (Y) 0600, aie2_max_col 0600, force_iova 0600 and "
         "/sys/module/amdxdna/version; the legacy tree all 31 its PCI build defines "
         "(aie2_control_flags and time_quantum_ms 0400; timeout_in_sec, tdr_dump_ctx, "
         "autosuspend_ms, priv_load and six aie4 switches 0644; hwctx_limit and "
         "context_limit 0444 as it settled them, 16 and 32, 6 and 6 on npu1; the fw_log_*, "
         "fw_trace_*, carvedout_*, mailbox_polling and sys_eff_factor 0444; force_cmdlist, "
         "force_iova, aie2_max_col, aie4_max_col and four more 0600); mainline aie2_max_col "
         "and force_cmdlist (Y from c68a6af400ca: 7.0, 6.19.7; N before), both 0600",
         f"{DRIVER} module_param, MODULE_VERSION (856409ca); amd/xdna-driver 856409ca "
         "src/driver/amdxdna module_param in aie2_ctx.c, aie2_ctx_runqueue.c (aie2_rq_init), "
         "aie2_pci.c, aie2_pm.c, aie2_tdr.c, aie4_hwctx.c, aie4_pci.c, amdxdna_carvedout_buf.c, "
         "amdxdna_devel.c, amdxdna_dpt.c, amdxdna_iommu.c, amdxdna_mailbox.c (AMDXDNA_DEVEL, "
         "always defined by its Makefile), amdxdna_pm.c, and Kbuild (the PCI objects); Linux "
         "7.0 as xdna-driver 234824b1 imports it (aie2_ctx.c force_cmdlist = true)"),
    Rule("discovery", "DRM_IOCTL_VERSION names amdxdna_accel_driver, 'AMD XDNA DRM "
         "implementation', and the flavour's version for its kernel: staging 0.16, mainline "
         "0.0 before 6.18, 0.1 on 6.18, 0.6 on 6.19 and 7.0, 0.8 on 7.1 (kernel.org's; a "
         "distribution kernel may carry later bumps), the legacy tree 1.0 (FastFlowLM "
         "gates on it: driver >= 0.6)",
         f"{DRIVER} amdxdna_pci_drv.c AMDXDNA_DRIVER_MAJOR/MINOR at 856409ca and 234824b1; "
         f"Linux: {MAINLINE_DRM_SOURCE}; amd/xdna-driver src/include/uapi/drm_local/"
         "amdxdna_accel.h"),
    Rule("interface", "ioctl numbers and layouts: amdxdna's from DRM_COMMAND_BASE 0x40 "
         "(CREATE_HWCTX .. GET_ARRAY), WAIT_CMD answered as _IOW and as _IOWR (the driver's "
         "and the shim's copies differ), the DRM core's GEM_CLOSE, PRIME and SYNCOBJ ioctls",
         f"{UAPI}; Linux include/uapi/drm/drm.h"),
    Rule("interface", "an argument struct shorter than the one the ioctl is declared with "
         "is zero-extended before the handler reads it, and only the caller's own size is "
         "copied back: its missing fields read as 0, so it gets what a 0 there gets (EINVAL "
         "for no context or command, ENOENT for no buffer), never an error of the model's",
         "Linux drivers/gpu/drm/drm_ioctl.c drm_ioctl (ksize = max(in_size, out_size, "
         f"drv_size), memset past in_size, copy_to_user of out_size); {DRIVER} "
         "amdxdna_pci_drv.c amdxdna_drm_ioctls (DRM_IOCTL_DEF_DRV)"),
    Rule("interface", "a client's device heap is a 64 MiB DEV_HEAP object at device address "
         "0x4000000; device BOs come from it 32 KiB aligned and have no mmap offset of their "
         "own; as the flavour keeps it (harness.model.heap): staging grows it by further "
         "heap objects up to 512 MiB (64 MiB on npu1), answering a BO that does not fit "
         "EAGAIN so the shim adds one, and a heap object past the maximum ENOSPC; the "
         "in-tree and legacy drivers keep the one heap: a BO larger than it EINVAL, one that "
         "does not fit ENOSPC, a second heap object EBUSY; each with the lines the tree "
         "prints. A heap object of any size but 64 MiB is refused EINVAL (the legacy tree "
         "would take a multiple of it: the shim's Debug.num_heap_pages is not emulated)",
         f"{DRIVER} aie2_pci.h AIE2_DEVM_*, npu4_regs.c dev_mem_buf_shift; {SHIM} "
         "kmq/pcidev.cpp, buffer.cpp; " + heap.IN_TREE.source + "; " + heap.LEGACY.source),
    Rule("interface", "a hardware context needs the client's heap (ENOENT without), takes "
         "four 4 KiB command buffers from it, and returns its id and a timeline syncobj; "
         "over the device's hwctx_limit it fails with EINVAL",
         f"{DRIVER} amdxdna_ctx.c amdxdna_drm_create_hwctx_ioctl, aie2_ctx.c "
         "aie2_hwctx_init, aie2_ctx_syncobj_create"),
    Rule("interface", "EXEC_CMD takes one command BO; a job's sequence number counts from 0 "
         "per context; the submit blocks while 4 jobs are in flight (job_sem); each job's "
         "fence is that point of the context's syncobj, reached once every job up to it "
         "has ended (a fence chain); point 0 is the current fence",
         f"{DRIVER} amdxdna_ctx.c amdxdna_cmd_submit, aie2_ctx.c aie2_cmd_submit; Linux "
         "drivers/dma-buf/dma-fence-chain.c"),
    Rule("interface", "WAIT_CMD waits milliseconds (0: for ever), SYNCOBJ_TIMELINE_WAIT until "
         "an absolute CLOCK_MONOTONIC time; both fail with ETIME when it passes",
         f"{DRIVER} amdxdna_drm_wait_cmd_ioctl; Linux drivers/gpu/drm/drm_syncobj.c"),
    Rule("interface", "when a job ends the driver writes the state into the submitted packet "
         "only; a failed chain's error_index into its payload; over a failed command's "
         "payload (a chain's sub-command 0) 0xFF to the end of the object, then the error "
         "data; member packets are left as XRT wrote them",
         f"{DRIVER} amdxdna_ctx.c amdxdna_cmd_set_state, amdxdna_cmd_set_error"),
    Rule("interface", "health data words the model does not know (program counters, TXN op, "
         "fatal error details: 'not modelled' in the simulated binding) are written "
         "0xFFFFFFFF, as a device must write some number; a report of an emulated run reads "
         "them back as 'not modelled', and XRT's message keeps the number it printed",
         "harness.model.firmware NOT_MODELLED_WORD (a choice of the emulator, not a "
         "firmware's)"),
    Rule("discovery", "the device's fw_version and the firmware version GET_INFO answers are "
         "the profile's firmware release (firmware:VERSION, the device's own by default); a "
         "profile that names only a protocol cannot be emulated",
         f"{DRIVER} aie2_pci.c (fw_version), amdxdna_drm_get_info_ioctl"),
    Rule("interface", "a chain's slot sizes are the payload after the CU masks (ERT_START_CU), "
         "less the 16-byte instruction head (ERT_START_NPU) or the 40-byte preemption head",
         f"{DRIVER} aie2_message.c aie2_cmdlist_fill_npu_cf, _npu_dpu, _npu_preempt"),
    Rule("firmware", "an ERT_START_CU's instructions are named by its DPU register map "
         "(address at byte 8, length in words at byte 16, both zero for none); an NPU "
         "command's by its instruction head; an address that is no buffer of the client's is "
         "refused, as is a payload still holding what the driver wrote after a failure",
         "harness.sim.runs (the simulated binding's firmware checks), over device memory"),
    Rule("interface", "a job holds its command BO and its argument BOs until it ends: a "
         "GEM_CLOSE meanwhile succeeds and drops the handle only, and the job's state still "
         "lands in the object (the program's mapping shows it); a chain's sub-command 0 is "
         "looked up by its handle when the error is written, so one closed meanwhile is "
         "left as it is",
         f"{DRIVER} amdxdna_ctx.c amdxdna_cmd_submit (amdxdna_gem_get_obj, "
         "amdxdna_arg_bos_lookup), amdxdna_sched_job_cleanup, amdxdna_cmd_set_error; Linux "
         "drivers/gpu/drm/drm_gem.c drm_gem_handle_delete"),
    Rule("interface", "CREATE_BO: nonzero flags EINVAL; a DEV BO whose size PAGE_ALIGN wraps "
         "to 0 (within a page of 2^64) or past the flavour's heap EINVAL; a SHARE or CMD BO of "
         "0 pages ENOSPC (no mmap offset), of a size negative as a file size EINVAL, of more "
         "pages than the device's mmap offset space (about 1 TiB) ENOSPC; a failed create "
         "changes nothing. The emulator maps one buffer within 4 GiB and answers a larger "
         "one ENOMEM, counted as unanswered (the real driver's shmem would take it)",
         f"{DRIVER} amdxdna_gem.c amdxdna_drm_create_bo_ioctl, amdxdna_drm_create_dev_bo, "
         "amdxdna_gem_heap_alloc; Linux drm_gem_shmem_helper.c __drm_gem_shmem_create, "
         "drm_mm.c drm_mm_insert_node_in_range, mm/shmem.c shmem_file_setup, "
         "include/drm/drm_vma_manager.h DRM_FILE_PAGE_OFFSET_SIZE"),
    Rule("interface", "waits are interruptible: a signal whose handler lacks SA_RESTART ends "
         "a waiting ioctl with EINTR (the library cannot tell which signal came: one such "
         "handler is enough); a model that does not answer for HARNESS_EMULATOR_SILENCE_MS "
         "(10 s; asked every second while a request waits) fails the request ETIME, as a "
         "wait that timed out; a model that is gone fails it EIO at once, and `emulate` "
         "says so and exits 4",
         f"Linux drivers/gpu/drm/drm_syncobj.c drm_syncobj_array_wait_timeout "
         f"(TASK_INTERRUPTIBLE, -ERESTARTSYS); {DRIVER} aie2_ctx.c aie2_cmd_submit "
         "(down_interruptible); the silence bound is the emulator's"),
    Rule("discovery", "a process greets the model before its own code runs (the library's "
         "constructor) and keeps the answer, which a report records; a process whose "
         "library cannot reach the model ends (status 69) instead of running on whatever "
         "device is there, and `emulate` says NOT EMULATED (exit 3) for a program that never "
         "loaded the library",
         "harness.emulator preload.c (the emulator's own handshake, no driver's)"),
    Rule("runlist", "which run of its runlist a chain starts at (for hang-at): a chain buffer "
         "keeps the start it was first seen at; a new one continues the previous chain of "
         "its context when that one was full and this one already existed when it was "
         "submitted (XRT makes every chain of a runlist in add(), before execute())",
         "Xilinx/XRT src/runtime_src/core/common/api/xrt_kernel.cpp runlist_impl::add, "
         "get_cmd_chain_for_run_at_index, submit"),
    Rule("commands", "no kernel name crosses the driver's interface: CREATE_HWCTX carries "
         "the partition's tiles (num_tiles), max_opc and QoS; CONFIG_HWCTX one (cu_bo, "
         "cu_func) per CU, cu_bo a buffer into which the shim copied that CU's PDI image "
         "from the xclbin's AIE_PARTITION section; EXEC_CMD a command buffer whose header's "
         "cu_mask picks one of those CUs. So slow:KERNEL:US plays where `emulate --xclbins` "
         "names the xclbins the program loads: a command's CU's PDI bytes are compared with "
         "their PDIs, whose CDO groups name the DPU kernel ids and so the kernel and the "
         "xclbin's stem; without them, or for a name none has, every command takes the "
         "default 50 us and `emulate` warns. A case's latency_us is the harness's own and "
         "never reaches the model",
         f"{SHIM} hwctx.cpp xclbin_parser (get_pdi, cu_func), kmq/hwctx.cpp config_cu "
         f"(pdi_bo, cu_conf); {UAPI} amdxdna_drm_create_hwctx, amdxdna_cu_config; "
         "Xilinx/XRT xclbin.h aie_partition, aie_pdi, cdo_group"),
)
