"""Engines behind an OpenAI-compatible API: ``--engine openai:URL`` against ``serve-engine``.

The server runs the reference engine (with or without a planted bug) on loopback, on a free
port, and is stopped when the test ends, failed or not.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.cli import main
from verispec.conformance.api_server import EngineServer, parse_completion_request
from verispec.conformance.engine_worker import build_engine
from verispec.conformance.runner import conform
from verispec.controls.mutants import Mutant, api_controls
from verispec.engines.model_pairs import checkpoint_dirs
from verispec.stats.constants import PER_TEST_ALPHA
from verispec.verdicts import RunVerdict, Status

pytestmark = pytest.mark.torch

#: The checks a black box allows, without ragged-batch: which requests a server batches
#: together depends on when they arrive, so a batch-composition bug is not always in reach.
BLACK_BOX = ["greedy-equivalence", "determinism", "first-token-law", "eos-length", "ids-in-vocab"]


#: Every (planted bug, check) that must be caught through the API.
API_CAUGHT = [pytest.param(m, c, id=f"{m.name}-{c}") for m, seen, _ in api_controls() for c in seen]


def _serve(options: dict[str, Any] | None = None, engine: str = "reference") -> EngineServer:
    server = EngineServer(build_engine(engine, "cpu", options or {}), model="reference", port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def served() -> Iterator[EngineServer]:
    server = _serve()
    yield server
    server.close()


def _ci_checkpoints() -> dict[str, str]:
    """The ``ci`` pair's checkpoint folders, the reference engine's own models: the target as
    the baseline, the draft as the local copy of the server's draft model."""
    target, draft = checkpoint_dirs("ci")
    return {"target": str(target), "draft": str(draft)}


def _post(url: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{url}/v1/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TestServer:
    def test_a_completion_carries_token_ids_and_repeats_with_its_seed(self, served) -> None:
        body = {"model": "reference", "prompt": [3, 4, 5], "max_tokens": 6, "seed": 7, "temperature": 1.0}
        status, answer = _post(served.url, body)
        assert status == 200
        choice = answer["choices"][0]
        assert len(choice["token_ids"]) == 6 and choice["finish_reason"] == "length"
        assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}
        assert _post(served.url, body)[1]["choices"][0]["token_ids"] == choice["token_ids"]

    @pytest.mark.parametrize(
        ("change", "status", "words"),
        [
            ({"model": "gpt"}, 404, "The model `gpt` does not exist"),
            ({"prompt": "hello"}, 400, "token-id prompts only"),
            ({"prompt": [3, 99]}, 400, "id 99 outside the vocabulary"),
            ({"temperature": -1}, 400, "temperature=-1.0 must be >= 0"),
            ({"top_p": "high"}, 400, "top_p='high' must be a number"),
            ({"n": 2}, 400, "only n = 1"),
            ({"logprobs": 5}, 400, "logprobs are not served"),
            ({"stream": True}, 400, "streaming is not served"),
        ],
    )
    def test_a_bad_request_is_refused_naming_the_field(self, served, change, status, words) -> None:
        code, answer = _post(served.url, {"model": "reference", "prompt": [3, 4], **change})
        assert code == status and words in answer["error"]["message"]

    def test_the_request_maps_to_the_engines_settings(self) -> None:
        body = {"model": "m", "prompt": [[1, 2]], "top_k": -1, "top_p": 1.0, "min_p": 0, "seed": 3}
        request = parse_completion_request(body, model="m", vocab_size=10, penalties=False)
        assert request.prompt == (1, 2) and request.seed == 3 and request.max_new_tokens == 16
        assert (request.sampling.top_k, request.sampling.top_p, request.sampling.min_p) == (None, None, None)

    def test_the_command_serves_until_terminated_and_a_port_in_use_is_named(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        command = [sys.executable, "-m", "verispec", "serve-engine", "--port", "0"]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            line = process.stdout.readline() if process.stdout else ""
            assert line.startswith("serving 'reference' at http://127.0.0.1:"), line
            url = line.split(" at ", 1)[1].strip().removesuffix("/v1")
            assert _post(url, {"model": "reference", "prompt": [3], "max_tokens": 2})[0] == 200
            port = int(url.rsplit(":", 1)[1])
            busy = subprocess.run(
                [*command[:-1], str(port)], capture_output=True, text=True, timeout=120, env=env
            )
            assert busy.returncode == 2 and f"--port={port}" in busy.stderr
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=60)
        assert process.returncode == 0 and "serve-engine: stopped" in err


class TestConformThroughTheAPI:
    @pytest.mark.statistical
    def test_the_reference_engine_passes_through_http(self, served, tmp_path) -> None:
        run = conform(
            f"openai:{served.url}",
            quick=True,
            alpha=PER_TEST_ALPHA,
            checks=[*BLACK_BOX, "sampling-law"],
            out=tmp_path,
            options=_ci_checkpoints(),
        )
        assert run.verdict == RunVerdict.PASS, [r.to_json() for r in run.results if r.status != Status.PASS]
        assert run.name == "openai[reference]"
        report = (tmp_path / "report.json").read_text()
        assert "scored by transformers token by token" in report  # the report names the baseline

    @pytest.mark.statistical
    @pytest.mark.parametrize(("mutant", "check"), API_CAUGHT)
    def test_a_planted_bug_is_caught_through_http(self, mutant: Mutant, check: str) -> None:
        """Every reference-engine control that a black box can see (docs/reference/controls.md,
        'Through an OpenAI-compatible API') is caught through HTTP by the same evidence as in
        process: at the quick sizes, or at the full ones where its record says so."""
        server = _serve(mutant.options, str(mutant.engine))
        try:
            common: dict[str, Any] = dict(
                alpha=PER_TEST_ALPHA, checks=[check], design="sequential", options=_ci_checkpoints()
            )
            result = conform(f"openai:{server.url}", quick=mutant.quick_miss is None, **common).results[0]
        finally:
            server.close()
        assert (result.status, result.evidence) == (Status.FAIL, mutant.evidence_for(check)), result.to_json()


class TestBadServers:
    def test_an_unreachable_server_is_exit_4_with_its_url(self, capsys) -> None:
        url = f"http://127.0.0.1:{_free_port()}"
        assert main(["conform", "--engine", f"openai:{url}", "--check", "ids-in-vocab"]) == 4
        err = capsys.readouterr().err
        assert url in err and "cannot connect" in err

    def test_a_model_it_does_not_serve_is_exit_4_listing_what_it_serves(self, served, capsys) -> None:
        code = main(
            ["conform", "--engine", f"openai:{served.url}", "--model", "gpt-9", "--check", "ids-in-vocab"]
        )
        assert code == 4
        assert "does not list model='gpt-9'; it serves reference" in capsys.readouterr().err

    def test_a_server_that_is_not_openai_compatible_is_exit_4(self, capsys) -> None:
        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"<html>hello</html>")

            def log_message(self, *args: Any) -> None:
                return

        page = http.server.HTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=page.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{page.server_address[1]}"
            assert main(["conform", "--engine", f"openai:{url}", "--check", "ids-in-vocab"]) == 4
        finally:
            page.shutdown()
            page.server_close()
        assert "not an OpenAI-compatible server" in capsys.readouterr().err

    def test_a_url_that_is_not_http_is_a_usage_error(self, capsys) -> None:
        assert main(["conform", "--engine", "openai:ftp://host", "--check", "ids-in-vocab"]) == 2
        assert "must start with http://" in capsys.readouterr().err

    def test_the_api_key_is_never_written(self, served, tmp_path, monkeypatch) -> None:
        monkeypatch.setenv("VERISPEC_API_KEY", "sk-verispec-test-secret")
        conform(f"openai:{served.url}", quick=True, checks=["ids-in-vocab"], out=tmp_path)
        for path in Path(tmp_path).rglob("*"):
            if path.is_file():
                assert "sk-verispec-test-secret" not in path.read_text(errors="replace"), path
