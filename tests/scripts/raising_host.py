"""A host script that fails in its own code: `sim exec` must answer as `python` does."""

import pyxrt


def open_missing_kernel():
    device = pyxrt.device(0)
    return pyxrt.xclbin("/nonexistent/missing.xclbin"), device


open_missing_kernel()
