"""An on-disk SQLite response cache in front of any :class:`~icml25.llm.chat.ChatModel`.

The key is the SHA-256 of the backend's ``name`` (backend and model), the validated messages and
every generation parameter (n, temperature, top_p, max_tokens, seed, stop), so a rerun with the
same inputs returns the same completions without calling the model. Misses of one ``generate``
call go to the backend as one batch. ``enabled=False`` passes everything through.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from icml25.llm.chat import ChatModel, Conversation, GenerationConfig, validate_conversation

__all__ = ["CachedChatModel", "cache_key"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, completions TEXT)"


def cache_key(model_name: str, messages: list[dict[str, str]], config: GenerationConfig) -> str:
    """The cache key of one request (hex SHA-256 of a canonical JSON record)."""
    params = dataclasses.asdict(config)
    params["stop"] = list(config.stop)
    record = {"model": model_name, "messages": messages, "config": params}
    return hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


class CachedChatModel(ChatModel):
    """Wraps ``backend``; answers repeated requests from the SQLite file at ``path``.

    Attributes:
        hits, misses: counts of conversations answered from the cache / by the backend.
    """

    def __init__(self, backend: ChatModel, path: str | os.PathLike[str], *, enabled: bool = True) -> None:
        if not isinstance(backend, ChatModel):
            raise ValueError(f"backend must be a ChatModel, got {type(backend).__name__}")
        self.backend = backend
        self.name = backend.name
        self.path = Path(path)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            with db:  # commits on success, rolls back on error
                yield db
        finally:
            db.close()

    def __len__(self) -> int:
        if not self.enabled:
            return 0
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        """Delete every stored response."""
        if self.enabled:
            with self._connect() as db:
                db.execute("DELETE FROM responses")

    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig) -> list[list[str]]:
        checked = [validate_conversation(c) for c in conversations]
        if not self.enabled:
            self.misses += len(checked)
            return self.backend.generate(checked, config)
        keys = [cache_key(self.name, m, config) for m in checked]
        results: list[list[str] | None] = [None] * len(checked)
        with self._connect() as db:
            for i, key in enumerate(keys):
                row = db.execute("SELECT completions FROM responses WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    results[i] = json.loads(row[0])
        missing = [i for i, r in enumerate(results) if r is None]
        self.hits += len(checked) - len(missing)
        self.misses += len(missing)
        if missing:
            fresh = self.backend.generate([checked[i] for i in missing], config)
            if len(fresh) != len(missing) or any(len(f) != config.n for f in fresh):
                raise RuntimeError(f"backend {self.name!r} returned the wrong number of completions")
            with self._connect() as db:
                for i, completions in zip(missing, fresh, strict=True):
                    results[i] = list(completions)
                    db.execute(
                        "INSERT OR REPLACE INTO responses (key, model, completions) VALUES (?, ?, ?)",
                        (keys[i], self.name, json.dumps(list(completions))),
                    )
        return [r for r in results if r is not None]
