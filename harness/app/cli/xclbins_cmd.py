"""`runlist-harness xclbins import|where`."""

from __future__ import annotations

import click

from harness.app.cli import SuggestingGroup
from harness.model.errors import EnvironmentNotReady, ExitCode
from harness.sources.load import load_case
from harness.sources.packs import resolve_pack


@click.group(cls=SuggestingGroup)
def xclbins() -> None:
    """Model packs: import them into xclbins/<pack>/, and see where a case's come from."""


@xclbins.command("import")
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.option("--pack", default=None,
              help="Pack name (default: the source folder's name); with a folder of packs, "
                   "which one to take.")
@click.option("--dest", default="xclbins", show_default=True, type=click.Path(file_okay=False),
              help="Where packs live.")
@click.option("--force", is_flag=True, help="Replace files that differ from the source.")
def import_pack_cmd(source: str, pack: str | None, dest: str, force: bool) -> None:
    """Copy a pack's xclbins from a FastFlowLM install or model folder, with a manifest.

    SOURCE is a folder of .xclbin files (e.g. FastFlowLM's xclbins/Qwen3-1.7B-NPU2)
    or a folder of packs together with --pack NAME. Writes
    DEST/<pack>/manifest.yaml with each file's sha256, uuid, kernels and the
    FastFlowLM files it is byte-identical to.
    """
    from harness.sources.packs import import_pack
    target, entries = import_pack(source, pack=pack, dest_root=dest, force=force)
    click.echo(f"imported {len(entries)} xclbins into {target}")
    for entry in entries:
        known = f"  known as {entry['known_as'][0]}" if entry["known_as"] else ""
        click.echo(f"  {entry['file']:<16} {entry['uuid']}{known}")


@xclbins.command()
@click.argument("case_ref", metavar="CASE")
@click.option("--xclbins", "xclbins_dir", type=click.Path(file_okay=False),
              help="Folder to look in first.")
def where(case_ref: str, xclbins_dir: str | None) -> ExitCode | None:
    """Show where CASE's xclbins would be taken from on hardware, and every place searched;
    and whether they are the files the case expects, by FastFlowLM's table of shipped
    xclbins (a run refuses another pack's folder without --allow-other-pack)."""
    case = load_case(case_ref)
    try:
        pack = resolve_pack(case, xclbins_dir=xclbins_dir, simulated=False)
    except EnvironmentNotReady as err:
        click.echo(f"not found: {err}")
        return err.exit_code
    click.echo(f"pack {pack.name}: {pack.source}")
    for role, path in pack.files.items():
        click.echo(f"  {role:<8} {path}")
    from harness.sources.pack_identity import ALLOW_OPTION, pack_identity
    identity = pack_identity(case, pack)
    if identity is not None and identity.differing:
        if identity.folder_of:
            click.echo(f"a run refuses these without {ALLOW_OPTION}: {identity.refusal()}")
        else:
            click.echo(f"a run warns: {identity.text(allowed=False)}")
    return None
