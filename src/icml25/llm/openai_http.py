"""An OpenAI-compatible HTTP chat backend (``POST {base_url}/chat/completions``), standard library only.

Speaks the schema served by OpenAI, vLLM, llama.cpp's server and Ollama. The base URL and the API
key come from the arguments or ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; the key is sent only in
the ``Authorization`` header and never appears in errors, ``repr`` or logs. Servers that ignore
``n`` > 1 (llama.cpp) are asked again until ``n`` completions are collected.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from icml25.llm.chat import ChatModel, Conversation, GenerationConfig, apply_stop, validate_conversation

__all__ = ["OpenAIChatModel", "ChatHTTPError", "EndpointUnreachableError", "MalformedResponseError"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class ChatHTTPError(RuntimeError):
    """The server answered with an HTTP error status."""

    def __init__(self, status: int, url: str, detail: str) -> None:
        super().__init__(f"chat endpoint {url} returned HTTP {status}: {detail}")
        self.status = status


class EndpointUnreachableError(ConnectionError):
    """The server could not be reached (refused, DNS failure, timeout)."""


class MalformedResponseError(ValueError):
    """The server's answer does not follow the chat-completions schema."""


class OpenAIChatModel(ChatModel):
    """Chat completions from an OpenAI-compatible server.

    Args:
        model: the model name the server knows.
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (default: ``$OPENAI_BASE_URL``, else OpenAI's).
        api_key: bearer token (default: ``$OPENAI_API_KEY``; may be absent for local servers).
        timeout: seconds per request.
        max_retries: extra attempts after a 429/5xx answer or a connection failure.
        backoff_s: wait before the first retry (doubles each retry).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        base = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if not base.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be non-negative, got {max_retries}")
        self.model = model
        self.base_url = base.rstrip("/")
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.name = f"openai:{self.base_url}:{model}"

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        data = json.dumps(payload).encode("utf-8")
        delay = self.backoff_s
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                    body = response.read()
            except urllib.error.HTTPError as err:
                detail = err.read()[:500].decode("utf-8", "replace")
                if err.code in _RETRY_STATUS and not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise ChatHTTPError(err.code, self.url, detail) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                if not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                reason = getattr(err, "reason", err)
                raise EndpointUnreachableError(
                    f"base_url {self.base_url!r} unreachable after {self.max_retries + 1} "
                    f"attempt(s): {reason}"
                ) from None
            try:
                parsed = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise MalformedResponseError(f"{self.url} did not return JSON: {body[:200]!r}") from err
            if not isinstance(parsed, dict):
                raise MalformedResponseError(
                    f"{self.url} returned {type(parsed).__name__}, expected an object"
                )
            return parsed
        raise AssertionError("unreachable")  # pragma: no cover

    def _choices(self, response: dict[str, Any]) -> list[str]:
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedResponseError(f"{self.url} returned no 'choices' list: {str(response)[:200]}")
        texts = []
        for choice in choices:
            message = choice.get("message") if isinstance(choice, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if content is None and isinstance(message, dict) and "content" in message:
                content = ""  # e.g. a tool-call answer without text
            if not isinstance(content, str):
                raise MalformedResponseError(
                    f"{self.url}: a choice lacks message.content: {str(choice)[:200]}"
                )
            texts.append(content)
        return texts

    def _complete(self, messages: list[dict[str, str]], config: GenerationConfig) -> list[str]:
        texts: list[str] = []
        for attempt in range(config.n):
            payload: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "n": config.n - len(texts),
                "temperature": config.temperature,
                "top_p": config.top_p,
                "max_tokens": config.max_tokens,
            }
            if config.seed is not None:
                payload["seed"] = config.seed + attempt
            if config.stop:
                payload["stop"] = list(config.stop)
            texts.extend(self._choices(self._post(payload)))
            if len(texts) >= config.n:
                break
        return [apply_stop(t, config.stop) for t in texts[: config.n]]

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig) -> list[list[str]]:
        checked = [validate_conversation(c) for c in conversations]
        return [self._complete(messages, config) for messages in checked]
