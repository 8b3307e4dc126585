"""`runlist-harness serve-probe` and `pack inspect`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.app import exits
from harness.app.cli import SuggestingGroup
from harness.app.cli.options import Quantity, Seconds
from harness.app.cli.urls import recorded_url_option
from harness.formats.printable import escape_controls
from harness.probe.checks import Check
from harness.probe.fingerprint import probe
from harness.probe.npu import GENERATIONS
from harness.probe.readers import Sources
from harness.report.journal import ReportFile
from harness.report.output_file import check_output_path, check_report_name
from harness.serve.modelpack import inspect_pack
from harness.serve.reproduce import Probe, ServeOptions, request_failed

GENERATION_NAMES = {name.split()[0].lower(): name for name in GENERATIONS.values()}


@click.command("serve-probe")
@click.option("--url", required=True, help="Where flm serve listens, e.g. http://127.0.0.1:52625")
@click.option("--model", "tag", required=True, help="The model tag to ask for, e.g. minicpm5:2b")
@click.option("--prompt", default="Say hello.", show_default=True)
@click.option("--max-tokens", type=click.IntRange(1, None), default=1, show_default=True,
              help="Tokens to decode per request (upstream fails at 1).")
@click.option("--requests", type=click.IntRange(1, 1000), default=1, show_default=True)
@click.option("--timeout", "timeout_s", type=Seconds(0.1), default=120.0,
              show_default=True,
              help="Seconds before a request is given up on, whatever the server sends.")
@click.option("--total-timeout", "total_s", type=Seconds(0.1), default=None,
              help="Seconds the whole command may take, every request included (default: "
                   "no bound beyond each request's --timeout).")
@click.option("--no-made-up-tag", is_flag=True,
              help="Skip the request with a made-up tag (the substitution test).")
@click.option("--model-bytes", type=click.IntRange(1, 2**53), default=None,
              help="The model's size in bytes, for the plausibility check.")
@click.option("--model-list", type=click.Path(exists=True, dir_okay=False), default=None,
              help="FastFlowLM's model_list.json (default: beside the flm on PATH).")
@click.option("--model-dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="The model's folder (its model.q4nx gives the size).")
@click.option("--npu", type=click.Choice(sorted(GENERATION_NAMES)), default=None,
              help="NPU generation for the bandwidth ceiling (default: this machine's).")
@click.option("--bandwidth-ceiling", "ceiling", type=Quantity(1, 10_000, unit="GB/s"), default=None,
              help="GB/s the NPU can stream (default: ~65-88 by generation, see docs/hardware.md).")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--no-redact", is_flag=True,
              help="Write the report with this machine's host name, machine id, user, home "
                   "folders and the prompt as they are (default: replaced by placeholders, "
                   "as `report render` and `report bundle` do).")
def serve_probe(url, tag, prompt, max_tokens, requests, timeout_s, total_s, no_made_up_tag,
                model_bytes, model_list, model_dir, npu, ceiling, out, force, as_json,
                no_redact) -> exits.ExitCode:
    """Reproduce through a running `flm serve`: send chat completions with a tight
    max_tokens, classify each answer (FastFlowLM reports errors as {"error": ...} with
    HTTP 200), and check that the answers can be trusted: is the tag known and resident,
    does a made-up tag get answered, is the decode speed physically possible?

    Exits 0 when every request completed, 1 when any failed, 3 when the server
    cannot be reached.
    """
    url = recorded_url_option(url, "--url")
    options = ServeOptions(url, tag, prompt, max_tokens, requests, timeout_s,
                           not no_made_up_tag, model_bytes, model_list, model_dir,
                           GENERATION_NAMES.get(npu) if npu else None, ceiling, total_s)
    if out:
        check_report_name(Path(out))
        check_output_path(Path(out), force=force)
    environment = probe(Sources.live())
    report = Probe(options, environment).run()
    report.settings["redact"] = not no_redact
    handle = ReportFile.create(report, out=out, name="serve-probe", force=force,
                               redact=not no_redact)
    handle.close()
    if as_json:
        shown = handle.redaction.redactor.data if handle.redaction else (lambda data: data)
        click.echo(json.dumps(shown(report.to_dict()), indent=2))
    else:
        # the server's words (its version, its models, its errors) are another program's
        # text: shown with control characters escaped, as the rest of the harness does
        server = report.sections["server"]
        resident = ", ".join(server["resident_after"]) or "nothing reported"
        lines = [f"server: {server['url']} (version {server['version'] or '?'}); "
                 f"resident: {resident}", f"verdict: {(report.verdict or {}).get('text')}"]
        lines += [_request_line(request) for request in server["requests"]]
        if server["made_up_tag"]:
            lines.append(_request_line(server["made_up_tag"]))
        lines += ["checks:", *(f"  {Check(**check).line()}" for check in server["checks"])]
        # what the server said is pasted as the report holds it (redacted, as --no-redact
        # says); the report's path is the user's own, to open
        shown = handle.redaction.redactor.text if handle.redaction else str
        click.echo(escape_controls("\n".join([*map(shown, lines), f"report: {handle.path}"])))
    return exits.for_requests(request_failed(report))


def _request_line(request: dict) -> str:
    speeds = ""
    if request.get("decoding_speed_tps") is not None:
        speeds = (f", ttft {request.get('prefill_duration_ttft')}, decode "
                  f"{request['decoding_speed_tps']} tok/s")
    detail = f": {request['error'].splitlines()[0]}" if request.get("error") else ""
    return (f"  request {request['index']} ({request['model']}): {request['outcome']}"
            f"{' ' + request['state'] if request.get('state') else ''}, "
            f"{request['wall_ms']:.0f} ms{speeds}{detail}")


@click.group(cls=SuggestingGroup)
def pack() -> None:
    """FastFlowLM model folders (model.q4nx, config.json)."""


@pack.command("inspect")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
def pack_inspect(folder: str, as_json: bool) -> None:
    """Layer count, shape, q_norm/k_norm, size and FLM fields, without loading weights."""
    info = inspect_pack(folder)
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(info["folder"])
    q4nx = info.get("q4nx")
    if q4nx:
        click.echo(f"  model.q4nx   {q4nx['size']} bytes, {q4nx['tensors']} tensors, "
                   f"{q4nx['layers']} layers, q_norm/k_norm "
                   f"{'present' if q4nx['qk_norm'] else 'absent'}; dtypes "
                   + ", ".join(f"{k} {v}" for k, v in sorted(q4nx["dtypes"].items())))
    config = info.get("config")
    if config:
        shape = config["shape"]
        click.echo("  config.json  " + ", ".join(f"{k} {v}" for k, v in shape.items()))
        if config["flm"]:
            click.echo("  FLM fields   " + ", ".join(f"{k} {v}" for k, v in
                                                   config["flm"].items()))
    if info["xclbins"]:
        click.echo("  xclbins      " + ", ".join(info["xclbins"]))
    for note in info["notes"]:
        click.echo(f"  note: {note}")
