"""`runlist-harness probe`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from harness.app import exits
from harness.formats.printable import escape_controls
from harness.formats.yamlio import dump_yaml
from harness.model.errors import BadInput
from harness.probe.fingerprint import probe as run_probe
from harness.probe.fingerprint import ready, render
from harness.probe.readers import Sources


@click.command()
@click.option("--root", type=click.Path(exists=True, file_okay=False), default="/",
              show_default=True,
              help="Read /proc, /sys, /dev, /etc and /lib/modules under this folder (a copied "
                   "or fabricated tree); ioctls and `flm` are then not queried.")
@click.option("--json", "as_json", is_flag=True, help="Everything, as JSON.")
@click.option("--yaml", "as_yaml", is_flag=True, help="Everything, as YAML.")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="The same lines as Markdown, to paste into an issue (redacted).")
@click.option("--redact/--no-redact", "do_redact", default=None,
              help="Replace host name, user, home folders, machine id, serials, disk UUIDs, "
                   "MAC and IP addresses with placeholders. Default: on for the lines and "
                   "--markdown (what gets pasted), off for --json and --yaml.")
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
def probe(root: str, as_json: bool, as_yaml: bool, as_markdown: bool, do_redact: bool | None,
          require_npu: bool, model_dir: str | None, with_xrt_smi: bool,
          xrt_smi_validate: bool) -> exits.ExitCode:
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
    if do_redact is None:
        do_redact = not (as_json or as_yaml)
    shown = facts
    redactor = None
    if do_redact:
        from harness.report.redact import Redactor
        redactor = Redactor()
        redactor.learn(facts)
        shown = redactor.data(facts)
    if as_json:
        click.echo(json.dumps(shown, indent=2))
    elif as_yaml:
        click.echo(dump_yaml(shown), nl=False)
    else:
        # the lines are made from the facts as they are, then redacted as text: a name
        # the facts split apart ("user zelda9", "/home/zelda9") is found in either form
        text = render(facts)
        if redactor is not None:
            redactor.learn_text(text)
            text = "\n".join(redactor.text(line) for line in text.splitlines())
        click.echo(escape_controls(markdown(text) if as_markdown else text))
    return exits.for_readiness(ready(facts) or not require_npu)


def markdown(text: str) -> str:
    """The probe's lines for an issue: in a fenced block, as a terminal showed them."""
    fence = "`" * max(3, max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"### runlist-harness probe\n\n{fence}text\n{text}\n{fence}\n"
