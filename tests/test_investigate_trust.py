"""A stopped investigation is a report anyone can edit: `investigate --resume` asks only a
server this command line names (--serve), never one the report names, and reads the
report's settings as untrusted input (refused unless of their kind and bounds)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.app.cli import main
from harness.formats.yamlio import dump_yaml, load_yaml_text
from harness.report.fileformat import load_report


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


class Counting:
    """A loopback HTTP server that counts every request it gets and answers none usefully."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                outer.hits.append(f"{self.command} {self.path}")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": "runlist failed execution (ERT_CMD_STATE_TIMEOUT)"}')

            do_GET = do_POST = _any

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Counting:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def edited(report: Path, **settings: object) -> Path:
    """`report` with investigate.settings changed, as a hand would change them."""
    head, journal = report.read_text().split("\njournal:\n")
    header = load_yaml_text(head)
    header["investigate"]["settings"].update(settings)
    report.write_text(head.split("\n", 1)[0] + "\n" + dump_yaml(header) + "journal:\n"
                      + journal)
    return report


@pytest.fixture
def stopped(tmp_path) -> Path:
    """An investigation its one-minute budget stopped (mainline's 60 s timer)."""
    out = tmp_path / "inv.yaml"
    done = invoke("investigate", "minicpm5-2b-decode", "--no-isolate", "--profile",
                  "inflight-cap:40", "--budget", "1", "--out", str(out))
    assert done.exit_code == 1, done.output
    assert load_report(out).sections["investigate"]["answer"]["stopped"]
    return out


def test_a_resumed_report_never_asks_the_server_it_names(stopped):
    """Editing investigate.settings.serve_url and resuming without --serve sent six
    requests to that server, whose answers then decided the diagnosis."""
    with Counting() as server:
        edited(stopped, serve_url=server.url, stand_in=False)
        done = invoke("investigate", "--resume", str(stopped), "--budget", "30")
        assert done.exit_code == 1, done.output
        assert server.hits == []
    assert f"names a server to ask ({server.url}): not asked" in done.stderr
    after = load_report(stopped)
    assert after.sections["investigate"]["settings"]["serve_url"] is None
    assert (after.sections.get("server") or {}).get("url") != server.url


def test_a_server_named_on_this_command_line_is_asked_on_resume(stopped):
    with Counting() as server:
        done = invoke("investigate", "--resume", str(stopped), "--budget", "30", "--serve",
                      server.url)
        assert done.exit_code == 1, done.output
        assert any(hit.startswith("POST /v1/chat/completions") for hit in server.hits)
    assert load_report(stopped).sections["server"]["url"] == server.url


@pytest.mark.parametrize("field, value", [("rate_trials", 10**9), ("budget_s", "a lot"),
                                          ("stand_in", "yes"), ("serve_url", ["x"])])
def test_settings_a_report_holds_are_read_as_untrusted_input(stopped, field, value):
    edited(stopped, **{field: value})
    done = invoke("investigate", "--resume", str(stopped), "--budget", "30")
    assert done.exit_code == 2, done.output
    # refused naming the field, by report check's schema or by the settings' own bounds
    assert f"investigate.settings.{field}" in done.output
    assert "Traceback" not in done.output and len(done.output.splitlines()) == 1
