"""The amdxdna lines that speak of the stack under the runlist: the firmware it loads,
the IOMMU binding a process's memory, power (SMU, suspend and resume), host memory and
buffers, hardware contexts, the device's columns and where the driver runs.

Each entry is (event, pattern on the message after ``<func>: ``, where it is printed),
as `harness.logs.driver_lines` reads its own; the message is the driver's format string
(amd/xdna-driver at 856409ca: ``drivers/accel/amdxdna`` is the staging tree, with the
Linux driver as imported at 234824b1 (7.0) beside it, and ``src/driver/amdxdna`` the
legacy tree), with each conversion read as the text it prints. Some staging lines go
through ``drm_err`` with no function name (`aie_smu.c`, `aie_psp.c`): the pattern reads the
message either way.
"""

from __future__ import annotations

_N = r"-?\d{1,20}"

STACK_EVENTS: tuple[tuple[str, str, str], ...] = (
    # the firmware
    ("firmware_minor_refused", r"^Firmware minor version smaller than supported$",
     "Linux aie2_pci.c aie2_check_protocol (before f1eac46fe5f7)"),
    ("firmware_protocol_check_failed", rf"^Failed check protocol (?P<major>{_N})\."
                                       rf"(?P<minor>{_N})$",
     "legacy aie2_pci.c aie2_check_protocol"),
    ("firmware_not_alive", r"^firmware is not alive$", "aie2_pci.c aie2_hw_start (all trees)"),
    ("firmware_boot_failed", r"^(?:failed to (?:validate|start) fw, ret (?P<ret>-?\w{1,20})|"
                             r"PSP is not ready, ret (?P<psp>0x[0-9a-f]{1,16})|"
                             r"Invalid mbox magic (?P<magic>0x[0-9a-f]{1,16})|"
                             r"failed to start psp, ret (?P<start>-?\d{1,20})|"
                             r"initial mgmt firmware failed, ret (?P<mgmt>-?\d{1,20})|"
                             r"query firmware version failed)$",
     "aie2_psp.c / aie_psp.c aie2_psp_start, aie2_pci.c aie2_hw_start, "
     "aie2_mgmt_fw_query"),
    # the IOMMU and the process's address space
    ("sva_failed", rf"^(?:SVA bind device failed, ret (?P<ret>{_N})|SVA get pasid failed|"
                   r"Can not assign PASID|PASID unavailable and carveout not configured|"
                   rf"PASID not available for pid (?P<pid>\d{{1,10}})|"
                   rf"Enable PASID failed, ret (?P<enable>{_N})|Failed getting iommu group|"
                   r"force_iova requested but no IOMMU group found|"
                   r"Failed to alloc iommu domain)$",
     "amdxdna_pci_drv.c amdxdna_drm_open (staging, Linux 7.0), aie2_pci.c "
     "aie2_mgmt_fw_init, amdxdna_iommu.c; legacy amdxdna_drm.c"),
    # power: the SMU, suspend and resume
    ("smu_failed", rf"^(?:smu cmd (?P<cmd>\d{{1,10}}) (?:timed out|failed, "
                   rf"(?P<resp>0x[0-9a-f]{{1,16}}))|"
                   rf"(?:Power on|Power off|Access power) failed, ret (?P<ret>{_N})|"
                   rf"failed to init smu, ret (?P<init>{_N})|failed to create smu|"
                   rf"wait for smu intr idle timed out: (?P<intr>{_N})|"
                   rf"Set (?:hard|soft) dpm level (?P<level>{_N}) failed, ret (?P<dpm>{_N})|"
                   rf"Set (?:mpnpu|npu|h ?)clock to (?P<clock>{_N}) failed, ret "
                   rf"(?P<cret>{_N})|NPU power \S+ failed)\s*$",
     "aie2_smu.c / aie_smu.c aie2_smu_exec, aie2_smu_start/stop, set_dpm; legacy aie2_smu.c"),
    ("suspend_resume_failed", rf"^(?:Suspend firmware failed|Resume firmware failed|"
                              r"(?:suspend|resume) (?:NPU|IPU) firmware failed|"
                              rf"Suspend_fw failed|suspend_fw failed(?:, ret {_N})?|"
                              rf"Failed to suspend fw, ret {_N}|Resume failed(?::|, ret) "
                              rf"(?P<ret>{_N})|resume failed after NPU reset: {_N}|"
                              rf"hwctx_resume failed {_N}|NPU power-cycle start failed: {_N}|"
                              rf"DPT (?:drain/pause on suspend|re-arm on resume) failed: "
                              rf"{_N})$",
     "aie2_pci.c aie2_suspend_fw/aie2_resume_fw, amdxdna_pm.c amdxdna_pm_resume_get, "
     "aie2_pci.c aie2_hw_reset; legacy aie2_pci.c (\"resume NPU firmware failed\"), and its "
     "first amdxdna_drv.c amdxdna_do_suspend/do_resume (\"IPU\" until adfbafd4, 2024-02)"),
    # host memory and buffers
    ("host_memory_failed", rf"^(?:Map host buf failed, ret (?P<ret>{_N})|"
                           rf"Failed to pin pages ret (?P<pin>{_N})|"
                           rf"Partially pinned pages {_N}/{_N}|"
                           rf"Dev heap pin failed, ret (?P<heap>{_N})|Failed shmem mmap {_N}|"
                           rf"Add heap (?:{_N} )?failed.*|"
                           rf"Failed to mmap dma buf {_N}|Vmap bo failed, ret {_N}|"
                           rf"Allocate sgt failed|"
                           rf"Pin BO {_N} failed, ret {_N})$",
     "aie2_ctx.c aie2_hwctx_restart, amdxdna_gem.c, amdxdna_ubuf.c; legacy amdxdna_gem.c"),
    # the device heap cacheable buffers are carved from (harness.model.heap): its bound is
    # the heap object's size (64 MiB in-tree, up to dev_heap_max_size in staging), which
    # no memlock limit or free host memory moves
    ("device_heap_failed", rf"^(?:Failed to alloc dev bo memory, ret {_N}|"
                           r"Invalid dev bo size .*|Heap size .* exceeds max .*)$",
     "Linux 234824b1 amdxdna_gem.c amdxdna_gem_heap_alloc, amdxdna_drm_alloc_dev_bo; "
     "staging b9d18f04 amdxdna_gem.c; legacy amdxdna_gem.c amdxdna_drm_create_dev_bo"),
    # a path the driver's build takes on this platform: on its CMA path (CONFIG_CMA, meant
    # for ARM platforms with a CMA region) it refuses the device heap, -EINVAL
    ("unsupported_path", r"^Heap BO is not supported on CMA platform$",
     "amdxdna_gem.c amdxdna_gem_create_cma_object (legacy from 52f63182, 2025-10; staging "
     "from fc639f65, its npu3a build)"),
    # hardware contexts
    ("context_refused", rf"^(?:Alloc hw resource failed, ret (?P<ret>{_N})|"
                        rf"Allocate AIE resource failed, ret (?P<aie>{_N})|"
                        rf"create context failed, ret (?P<create>{_N})|"
                        rf"Create hwctx failed, ret (?P<hwctx>{_N})|"
                        r"Not allow more than (?P<limit>\d{1,6}) context\(s\)|"
                        rf"Allocate XRS (?:col )?resource failed, ret (?P<xrs>{_N})|"
                        r"AIE partition not available for hwctx_id=\d{1,10} .*|"
                        rf"(?:Add|Init) ctx .*failed, ret (?P<ctx>{_N}))$",
     "Linux aie2_ctx.c aie2_hwctx_init, staging aie2_pci.c aie2_create_context, "
     "aie2_ctx.c; legacy aie2_ctx_runqueue.c aie2_rq_add, aie2_hwctx.c"),
    # the device's columns
    ("partition_refused", r"^(?:Invalid num_col (?P<cols>-?\d{1,6})|Column \d{1,6} is outside "
                          r"partition range .*)$",
     "aie2_ctx.c aie2_hwctx_init (staging), aie.c"),
    # where the driver runs
    ("hypervisor_refused", r"^Running under hypervisor not supported$",
     "aie2_pci.c aie2_init (staging, Linux 7.0)"),
    ("hardware_init_failed", rf"^(?:Hardware init failed, ret (?P<ret>{_N})|"
                             rf"start npu failed, ret (?P<start>{_N})|"
                             rf"pcim enable device failed, ret {_N}|"
                             rf"failed to enable device, ret {_N})$",
     "amdxdna_pci_drv.c amdxdna_probe, aie2_pci.c aie2_init"),
    # what the firmware reports after a hang
    ("timing_out_job", r"^timing out \S+ job \d{1,20}$", "staging aie2_ctx.c "
     "aie2_sched_job_timedout"),
)
