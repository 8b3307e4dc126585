"""A full-ELF host program, written for the real pyxrt the way IRON's FullELFCallable and
mlir-aie's full-ELF tests call it: the ELF's bytes handed over as a PyCapsule, a hardware
context made from the ELF alone, the kernel opened by name, buffers from argument 0.

Usage: full_elf_host.py ELF DEPTH. Prints one line per step; exits 1 if the runlist fails.
"""

import ctypes
import sys

import numpy as np
import pyxrt
from helpers_for_host import banner  # a module beside the script: sys.path[0] is its folder

elf_path, depth = sys.argv[1], int(sys.argv[2])
banner("full ELF")

elf_data = np.fromfile(elf_path, dtype=np.uint8)
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule = ctypes.pythonapi.PyCapsule_New(elf_data.ctypes.data, None, None)
elf = pyxrt.elf(capsule, elf_data.nbytes)
print(f"partition of {pyxrt.program(elf).get_partition_size()} columns")

device = pyxrt.device(0)
context = pyxrt.hw_context(device, elf)
kernel = pyxrt.ext.kernel(context, "main:sequence")
bos = [pyxrt.bo(device, 4096, pyxrt.bo.host_only, 0) for _ in range(3)]
for b in bos:
    b.write(np.zeros(4096, dtype=np.uint8), 0)
    b.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)

run = pyxrt.run(kernel)
for i, b in enumerate(bos):
    run.set_arg(i, b)
run.start()
run.wait2()
print("single run completed")

runlist = pyxrt.runlist(context)
for _ in range(depth):
    r = pyxrt.run(kernel)
    for i, b in enumerate(bos):
        r.set_arg(i, b)
    runlist.add(r)
runlist.execute()
try:
    runlist.wait()
except RuntimeError as err:
    print(f"runlist of {depth} failed: {str(err).splitlines()[0]}")
    sys.exit(1)
print(f"runlist of {depth} completed")
