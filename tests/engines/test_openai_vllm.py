"""vLLM's own OpenAI-compatible server (CPU build, n-gram speculation) through ``openai:URL``.

Each test starts the server on loopback, on a free port, with a time limit to become ready,
and stops it when the test ends, failed or not (docs/audits/vllm-server.md).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("torch")

from verispec.cli import main
from verispec.conformance.runner import conform
from verispec.engines.model_pairs import checkpoint_dirs
from verispec.stats.constants import PER_TEST_ALPHA
from verispec.verdicts import RunVerdict, Status

pytestmark = [pytest.mark.vllm, pytest.mark.torch]

#: Seconds the server may take to answer /health (about 40 on 2 cores).
READY_S = 300
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextmanager
def vllm_server(tmp_path: Path) -> Iterator[str]:
    """vLLM's API server on the ``ci-wide`` target with n-gram speculation, as the in-process
    engine runs it (float32, eager, no tokenizer)."""
    target, _ = checkpoint_dirs("ci-wide")
    port = _free_port()
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(target),
        "--served-model-name", "ci-wide", "--skip-tokenizer-init", "--dtype", "float32",
        "--max-model-len", "1024", "--seed", "0", "--enforce-eager",
        "--kv-cache-memory-bytes", str(1 << 28), "--host", "127.0.0.1", "--port", str(port),
        "--speculative-config", json.dumps(NGRAM),
    ]  # fmt: skip
    log = (tmp_path / "vllm-server.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (tmp_path / "vllm-server.log").read_text()[-3000:]
                pytest.fail(f"vLLM's server did not become ready within {READY_S} s:\n{tail}")
            time.sleep(2)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()


def test_one_top_k_request_stops_vllms_server(tmp_path, capsys) -> None:
    """vLLM finding 3 through its server: a top-k request with speculation on crashes the
    engine core, and the whole server stops (every other user's requests with it). The
    start-up probe reports it, naming the workaround, with exit 4."""
    with vllm_server(tmp_path) as url:
        code = main(["conform", "--engine", f"openai:{url}", "--size", "ci-wide", "--check", "ids-in-vocab"])
        err = capsys.readouterr().err
        assert code == 4, err
        assert "top_k=5 failed the server" in err and "HTTP 500" in err and "--fix no-top-k" in err
        deadline = time.monotonic() + 60
        while _healthy(url) and time.monotonic() < deadline:
            time.sleep(1)
        assert not _healthy(url)  # the server is gone


@pytest.mark.statistical
def test_vllms_server_through_the_api(tmp_path) -> None:
    """With top-k left unsent, the checks the CPU bug of finding 1 does not reach pass through
    the server, and the server's refusal of min-p with speculation is declared, with its
    answer, so that the checks take their alternatives."""
    with vllm_server(tmp_path) as url:
        run = conform(
            f"openai:{url}",
            quick=True,
            alpha=PER_TEST_ALPHA,
            checks=["greedy-equivalence", "first-token-law", "eos-length", "ids-in-vocab"],
            options={"size": "ci-wide", "fixes": ["no-top-k"]},
            out=tmp_path / "report",
        )
    assert run.verdict == RunVerdict.PASS, [r.to_json() for r in run.results if r.status != Status.PASS]
    assert run.name == "openai[ci-wide]+fix[no-top-k]"
    report = (tmp_path / "report" / "report.json").read_text()
    assert "min_p is not sent: the server refuses it" in report
    assert "not yet supported with speculative decoding" in report
