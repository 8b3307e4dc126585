"""`runlist-harness probe`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.app import exits
from harness.formats.yamlio import dump_yaml
from harness.model.errors import BadInput
from harness.probe.fingerprint import probe as run_probe
from harness.probe.fingerprint import ready, render
from harness.probe.sources import Sources


@click.command()
@click.option("--root", type=click.Path(exists=True, file_okay=False), default="/",
              show_default=True,
              help="Read /proc, /sys, /dev, /etc and /lib/modules under this folder (a copied "
                   "or fabricated tree); ioctls and `flm` are then not queried.")
@click.option("--json", "as_json", is_flag=True, help="Everything, as JSON.")
@click.option("--yaml", "as_yaml", is_flag=True, help="Everything, as YAML.")
@click.option("--require-npu", is_flag=True,
              help="Exit 3 unless an NPU is present and no check FAILs.")
@click.option("--model-dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="A model folder: the memlock check then asks for room for its model.q4nx "
                   "(the weights live in pinned buffers), not just FastFlowLM's 100 MiB.")
@click.option("--xrt-smi", "with_xrt_smi", is_flag=True,
              help="Also run `xrt-smi examine` (30 s at most) and show its output.")
@click.option("--xrt-smi-validate", is_flag=True,
              help="Also run `xrt-smi validate`: it runs XRT's test workloads on the NPU "
                   "(5 minutes at most).")
def probe(root: str, as_json: bool, as_yaml: bool, require_npu: bool,
          model_dir: str | None, with_xrt_smi: bool, xrt_smi_validate: bool) -> None:
    """Fingerprint this machine's NPU stack and check it is ready, naming each fix.

    Reads the device nodes, PCI identity and generation, firmware, driver
    flavour and its parameters, the XRT libraries this process really maps,
    memlock, and FastFlowLM; then prints PASS/WARN/FAIL lines.
    """
    # A tree given with --root is another machine's: never open this one's device for it.
    src = Sources.live() if Path(root) == Path("/") else Sources(root=Path(root),
                                                                  open_device=False)
    need = None
    if model_dir:
        weights = Path(model_dir) / "model.q4nx"
        if not weights.is_file():
            raise BadInput(f"{model_dir} has no model.q4nx to size the memlock need from")
        need = weights.stat().st_size
    facts = run_probe(src, need_bytes=need, xrt_smi_runs=with_xrt_smi or xrt_smi_validate,
                      xrt_smi_validate=xrt_smi_validate)
    if as_json:
        click.echo(json.dumps(facts, indent=2))
    elif as_yaml:
        click.echo(dump_yaml(facts), nl=False)
    else:
        click.echo(render(facts))
    return exits.for_readiness(ready(facts) or not require_npu)
