"""Record what real XRT answers to tests/scripts/conformance_host.py over the emulated
driver, for tests/test_xrt_conformance.py.

Run with an XRT that has pyxrt and the XDNA shim on the environment (`source
.../setup.sh`): ``python tests/record_xrt_conformance.py``. It runs each scenario under
`runlist-harness emulate` (the device's clock sped up, which changes when a timeout fires,
not what it does) and writes tests/fixtures/xrt-conformance/xrt-<commit>.json, named by
the XRT commit from the install's version.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
HOST = HERE / "scripts" / "conformance_host.py"
XCLBIN = "Conformance/layer"          # the synthesized FastFlowLM-shaped xclbin's name
SIMULATED_AS = "master"               # the simulated binding's release for a master XRT
SCENARIOS = [
    # name, profile, depths, clock rate
    ("staging-hang", "staging,hang-at:30", [42, 21], 10),
    ("staging-complete", "staging", [48, 24, 1], 1),
    ("mainline-hang", "mainline,hang-at:3", [30], 60),
    # 6.16 refuses the devices' protocol-7 firmware at probe: protocol-6 firmware
    ("mainline-6.16-hang", "mainline,kernel:6.16,firmware:1.0.0.63,hang-at:0", [2], 60),
    ("oot-hang", "oot,hang-at:30", [42], 10),
    ("staging-6.16-hang", "staging,kernel:6.16,hang-at:5", [8], 10),
]


def install() -> tuple[Path, dict]:
    import pyxrt
    folder = Path(pyxrt.__file__).resolve().parent.parent
    return folder, json.loads((folder / "version.json").read_text())


def main() -> None:
    from harness.formats.xclbin_writer import flm_spec, synthesize
    folder, version = install()
    record = {"xrt_commit": version["VERSION_HASH"], "xrt_version": version["BUILD_VERSION"],
              "how": "tests/scripts/conformance_host.py with the real pyxrt under "
                     "`runlist-harness emulate --profile P`", "xclbin": XCLBIN,
              "simulated_as": SIMULATED_AS, "scenarios": []}
    with tempfile.TemporaryDirectory() as work:
        xclbin = Path(work) / "layer.xclbin"
        xclbin.write_bytes(synthesize(flm_spec(XCLBIN)))
        for name, profile, depths, rate in SCENARIOS:
            done = subprocess.run(
                [sys.executable, "-m", "harness", "emulate", "--profile", profile,
                 "--clock-rate", str(rate), "--", sys.executable, str(HOST), str(xclbin),
                 *map(str, depths)], capture_output=True, text=True, check=True,
                env=dict(os.environ))
            record["scenarios"].append({"name": name, "profile": profile, "depths": depths,
                                        "clock_rate": rate,
                                        "answered": json.loads(done.stdout)})
            print(f"{name}: recorded", file=sys.stderr)
    target = HERE / "fixtures" / "xrt-conformance" / f"xrt-{record['xrt_commit'][:12]}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target} (XRT {record['xrt_version']}, {install()[0]})", file=sys.stderr)


if __name__ == "__main__":
    main()
