"""Which kernel a command on the emulated device runs, from what crosses the driver's
interface: no kernel name does, but CONFIG_HWCTX hands the driver, per CU, a buffer into
which the shim copied that CU's PDI image from the xclbin's AIE_PARTITION section
(xdna-driver 856409ca src/shim hwctx.cpp `xclbin_parser::get_pdi`, kmq/hwctx.cpp
`config_cu`), and a command's header picks a CU (cu_mask). Given the xclbins the program
loads (`emulate --xclbins`), the PDI images name them: a PDI's CDO groups list the DPU
kernel ids it serves, and the xclbin's metadata names the kernel of each id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.formats.xclbin import read_xclbin
from harness.model.errors import XclbinError

XCLBINS_FILE = "xclbins"          # in the run folder: the paths given, one a line


@dataclass(frozen=True)
class KernelOfPdi:
    stem: str                     # the xclbin's file name without .xclbin (slow:STEM:US)
    kernel: str


@dataclass
class PdiIndex:
    """PDI image digests of the xclbins given, with the kernels each serves: several where
    xclbins share a PDI image, which the driver then cannot tell apart."""

    by_digest: dict[str, tuple[KernelOfPdi, ...]] = field(default_factory=dict)
    sizes: set[int] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    def kernels_of(self, image: bytes) -> tuple[KernelOfPdi, ...]:
        """The kernels whose PDI `image` starts with (a buffer may be larger than its
        PDI); none when it is no PDI of the xclbins given."""
        for size in sorted(self.sizes):
            if size <= len(image):
                found = self.by_digest.get(hashlib.sha256(image[:size]).hexdigest())
                if found:
                    return found
        return ()

    def sharing(self, kernel: KernelOfPdi) -> tuple[KernelOfPdi, ...]:
        """The kernels whose PDI image is the same as `kernel`'s (itself included)."""
        return next((found for found in self.by_digest.values() if kernel in found), ())


def index_xclbins(paths: Iterable[Path]) -> PdiIndex:
    """Each .xclbin given (or in a folder given), its PDIs by digest."""
    index = PdiIndex()
    files: list[Path] = []
    for path in paths:
        files += sorted(path.glob("*.xclbin")) if path.is_dir() else [path]
    for path in files:
        try:
            meta = read_xclbin(str(path))
        except XclbinError as err:
            index.problems.append(str(err))
            continue
        stem = path.name.removesuffix(".xclbin")
        names = {k.dpu_kernel_id: k.name for k in meta.kernels if k.dpu_kernel_id is not None}
        only = meta.kernels[0].name if len(meta.kernels) == 1 else None
        for pdi in meta.partition.pdis if meta.partition else ():
            ids = [kid for group in pdi.cdo_groups for kid in group.dpu_kernel_ids]
            kernel = next((names[kid] for kid in ids if kid in names), only)
            if kernel is not None and pdi.image_sha256:
                known = index.by_digest.get(pdi.image_sha256, ())
                if KernelOfPdi(stem, kernel) not in known:
                    index.by_digest[pdi.image_sha256] = (*known, KernelOfPdi(stem, kernel))
                index.sizes.add(pdi.image_size)
    return index


def read_index(folder: Path) -> PdiIndex:
    """The index of the xclbins `emulate` wrote into the run folder (none: empty)."""
    listed = folder / XCLBINS_FILE
    if not listed.is_file():
        return PdiIndex()
    return index_xclbins(Path(line) for line in listed.read_text().splitlines() if line)
