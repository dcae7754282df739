"""The OpenAI-compatible HTTP backend against a loopback server, and the SQLite response cache."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from icml25.llm.cache import CachedChatModel, cache_key
from icml25.llm.chat import GenerationConfig, ScriptedChatModel
from icml25.llm.models import load_chat_model
from icml25.llm.openai_http import (
    ChatHTTPError,
    EndpointUnreachableError,
    MalformedResponseError,
    OpenAIChatModel,
)

SECRET = "sk-test-secret-123"
HELLO = [{"role": "user", "content": "hello"}]


class _Server:
    """A /v1/chat/completions server whose behaviour a test sets through ``mode``."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.failures_left = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                outer.requests.append(payload)
                outer.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    return self._send(404, b'{"error": "not found"}')
                mode = outer.mode
                if mode == "flaky" and outer.failures_left > 0:
                    outer.failures_left -= 1
                    return self._send(503, b'{"error": "busy"}')
                if mode == "error":
                    return self._send(500, b'{"error": {"message": "model exploded"}}')
                if mode == "slow":
                    time.sleep(1.0)
                if mode == "not_json":
                    return self._send(200, b"<html>oops</html>")
                if mode == "no_choices":
                    return self._send(200, b'{"id": "x", "choices": []}')
                if mode == "bad_choice":
                    return self._send(200, b'{"choices": [{"text": "legacy"}]}')
                last = payload["messages"][-1]["content"]
                n = 1 if mode == "single_choice" else payload.get("n", 1)
                choices = [
                    {
                        "index": i,
                        "message": {
                            "role": "assistant",
                            "content": f"echo {last} #{len(outer.requests)}.{i} END tail",
                        },
                    }
                    for i in range(n)
                ]
                self._send(200, json.dumps({"object": "chat.completion", "choices": choices}).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    srv = _Server()
    yield srv
    srv.close()


@pytest.fixture()
def srv(server: _Server) -> _Server:
    server.mode = "ok"
    server.requests.clear()
    server.headers.clear()
    return server


def _client(srv: _Server, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("max_retries", 0)
    return OpenAIChatModel("tiny-model", base_url=srv.base_url, api_key=SECRET, **kw)


def test_completion_schema_and_auth(srv: _Server) -> None:
    model = _client(srv)
    out = model.chat(HELLO, max_tokens=7, temperature=0.5, seed=3, stop=["END"])
    assert out == ["echo hello #1.0 "]
    req = srv.requests[0]
    assert req["model"] == "tiny-model" and req["messages"] == HELLO
    assert (
        req["max_tokens"] == 7 and req["temperature"] == 0.5 and req["seed"] == 3 and req["stop"] == ["END"]
    )
    assert srv.headers[0]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(model) and SECRET not in model.name


def test_batch_and_n(srv: _Server) -> None:
    out = _client(srv).generate(
        [HELLO, [{"role": "user", "content": "bye"}]], GenerationConfig(n=3, max_tokens=4)
    )
    assert [len(o) for o in out] == [3, 3]
    assert out[1][0].startswith("echo bye")


def test_server_ignoring_n_is_asked_again(srv: _Server) -> None:
    srv.mode = "single_choice"
    out = _client(srv).chat(HELLO, n=3, temperature=1.0, seed=10)
    assert len(out) == 3 and len(set(out)) == 3
    assert [r["seed"] for r in srv.requests] == [10, 11, 12]


def test_env_configuration(srv: _Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = OpenAIChatModel("env-model", max_retries=0)
    assert model.chat(HELLO)[0].startswith("echo hello")
    assert srv.headers[-1]["Authorization"] == f"Bearer {SECRET}"


def test_http_error_names_status_without_key(srv: _Server) -> None:
    srv.mode = "error"
    with pytest.raises(ChatHTTPError, match="HTTP 500") as info:
        _client(srv).chat(HELLO)
    assert info.value.status == 500
    assert SECRET not in str(info.value)


def test_retry_after_503(srv: _Server) -> None:
    srv.mode = "flaky"
    srv.failures_left = 2
    out = _client(srv, max_retries=2, backoff_s=0.01).chat(HELLO)
    assert out[0].startswith("echo hello") and len(srv.requests) == 3


def test_timeout(srv: _Server) -> None:
    srv.mode = "slow"
    with pytest.raises(EndpointUnreachableError, match="base_url"):
        _client(srv, timeout=0.2).chat(HELLO)


def test_unreachable_endpoint() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET, max_retries=0)
    with pytest.raises(EndpointUnreachableError) as info:
        model.chat(HELLO)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("mode", ["not_json", "no_choices", "bad_choice"])
def test_malformed_responses(srv: _Server, mode: str) -> None:
    srv.mode = mode
    with pytest.raises(MalformedResponseError):
        _client(srv).chat(HELLO)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatModel("m", base_url="ftp://x")
    with pytest.raises(ValueError, match="model"):
        OpenAIChatModel("", base_url="http://127.0.0.1:1")
    with pytest.raises(ValueError, match="timeout"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1", timeout=0)
    with pytest.raises(ValueError, match="role"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1").chat([{"role": "robot", "content": "x"}])


# -- cache ---------------------------------------------------------------------------------------


def _counting() -> ScriptedChatModel:
    return ScriptedChatModel(
        lambda msgs, cfg, i: f"{msgs[-1]['content']}-{cfg.temperature}-{i}", name="count"
    )


def test_cache_hits_and_persistence(tmp_path: Path) -> None:
    backend = _counting()
    cached = CachedChatModel(backend, tmp_path / "c.sqlite")
    first = cached.generate([HELLO, [{"role": "user", "content": "b"}]], GenerationConfig(n=2))
    again = cached.generate([[{"role": "user", "content": "b"}], HELLO], GenerationConfig(n=2))
    assert again == [first[1], first[0]]
    assert len(backend.calls) == 2 and cached.hits == 2 and cached.misses == 2
    reopened = CachedChatModel(_counting(), tmp_path / "c.sqlite")
    assert reopened.generate([HELLO], GenerationConfig(n=2)) == [first[0]]
    assert reopened.hits == 1 and len(reopened) == 2
    reopened.clear()
    assert len(reopened) == 0


def test_cache_key_depends_on_every_parameter() -> None:
    msgs = [{"role": "user", "content": "x"}]
    base = GenerationConfig()
    variants = [
        GenerationConfig(n=2),
        GenerationConfig(temperature=0.5),
        GenerationConfig(top_p=0.5),
        GenerationConfig(max_tokens=3),
        GenerationConfig(seed=1),
        GenerationConfig(stop=("a",)),
    ]
    keys = {cache_key("m", msgs, base)} | {cache_key("m", msgs, v) for v in variants}
    keys |= {cache_key("other", msgs, base), cache_key("m", [{"role": "user", "content": "y"}], base)}
    assert len(keys) == 2 + len(variants) + 1


def test_cache_only_batches_misses(tmp_path: Path) -> None:
    backend = _counting()
    cached = CachedChatModel(backend, tmp_path / "c.sqlite")
    cached.chat(HELLO)
    cached.generate([HELLO, [{"role": "user", "content": "new"}]], GenerationConfig())
    assert [c[-1]["content"] for c in backend.calls] == ["hello", "new"]


def test_cache_disabled_passes_through(tmp_path: Path) -> None:
    backend = _counting()
    cached = CachedChatModel(backend, tmp_path / "off.sqlite", enabled=False)
    cached.chat(HELLO)
    cached.chat(HELLO)
    assert len(backend.calls) == 2 and not (tmp_path / "off.sqlite").exists()


def test_load_chat_model_openai_spec(srv: _Server, tmp_path: Path) -> None:
    model = load_chat_model(
        "openai:tiny-model", base_url=srv.base_url, api_key=SECRET, cache_path=tmp_path / "r.db"
    )
    a = model.chat(HELLO)
    b = model.chat(HELLO)
    assert a == b and len(srv.requests) == 1
    uncached = load_chat_model("openai:tiny-model", base_url=srv.base_url, cache=False)
    assert isinstance(uncached, OpenAIChatModel)


def test_generation_config_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"GenerationConfig\.n must be a positive integer"):
        GenerationConfig(n=0)
    with pytest.raises(ValueError, match=r"GenerationConfig\.temperature must be a finite number >= 0"):
        GenerationConfig(temperature=-0.1)
    with pytest.raises(ValueError, match=r"GenerationConfig\.top_p must lie in \(0, 1\]"):
        GenerationConfig(top_p=0.0)
    with pytest.raises(ValueError, match=r"GenerationConfig\.max_tokens must be a positive integer"):
        GenerationConfig(max_tokens=0)
    GenerationConfig(top_p=1.0, temperature=0)  # both ends that are allowed
