"""Text corpora that ship with every Python: English documentation and Python source.

- ``english``: the topic texts of ``pydoc_data.topics`` (the interpreter's help pages, about
  465k characters), one document per topic.
- ``python``: the standard library's own ``.py`` files (``sysconfig.get_paths()["stdlib"]``,
  without ``site-packages``, ``test``/``tests`` folders and ``idlelib``), sorted by relative path,
  one document per file, up to ``max_chars`` characters in all.

Each document goes to the train, calibration or held-out split by a hash of its name, so the
splits are deterministic and a document never straddles two splits. Both corpora depend on the
Python version: :attr:`Corpus.content_hash` (SHA-256 of the names and texts) identifies the exact
text and belongs in every result that uses it.
"""

from __future__ import annotations

import hashlib
import platform
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CORPORA", "Corpus", "english_corpus", "python_corpus", "load_corpus", "split_of"]

CORPORA = ("english", "python")
SPLITS = ("train", "calibration", "heldout")
_EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idlelib", "__pycache__"})


@dataclass(frozen=True)
class Corpus:
    """A corpus split into train / calibration / held-out text.

    Attributes:
        name: ``"english"`` or ``"python"``.
        train, calibration, heldout: the split texts (documents joined by a blank line).
        content_hash: SHA-256 over every (name, text) pair, in order; record it with results.
        n_documents: documents per split, as ``{split: count}``.
        python_version: the interpreter whose files were read.
    """

    name: str
    train: str
    calibration: str
    heldout: str
    content_hash: str
    n_documents: dict[str, int]
    python_version: str

    def split(self, which: str) -> str:
        if which not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {which!r}")
        return str(getattr(self, which))

    def record(self) -> dict[str, object]:
        """What a result should store about this corpus."""
        return {
            "corpus": self.name,
            "content_hash": self.content_hash,
            "python_version": self.python_version,
            "chars": {s: len(self.split(s)) for s in SPLITS},
            "documents": dict(self.n_documents),
        }


def split_of(name: str, fractions: tuple[float, float]) -> str:
    """The split of document ``name``: calibration below ``fractions[0]``, held-out the next
    ``fractions[1]``, train the rest, by the first 8 bytes of SHA-256(name) as a number in [0, 1)."""
    u = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big") / 2**64
    if u < fractions[0]:
        return "calibration"
    if u < fractions[0] + fractions[1]:
        return "heldout"
    return "train"


def _check_fractions(calibration: float, heldout: float) -> tuple[float, float]:
    if not (0 < calibration < 1 and 0 < heldout < 1 and calibration + heldout < 1):
        raise ValueError(
            f"calibration and heldout fractions must be in (0, 1) with sum < 1, got {calibration}, {heldout}"
        )
    return calibration, heldout


def _build(name: str, documents: list[tuple[str, str]], fractions: tuple[float, float]) -> Corpus:
    digest = hashlib.sha256()
    parts: dict[str, list[str]] = {s: [] for s in SPLITS}
    for doc_name, text in documents:
        digest.update(doc_name.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
        parts[split_of(f"{name}/{doc_name}", fractions)].append(text)
    empty = [s for s, p in parts.items() if not p]
    if empty:
        raise ValueError(
            f"{name} corpus: no document fell into the {', '.join(empty)} split(s) "
            f"({len(documents)} documents); use more text (max_chars) or larger fractions"
        )
    texts = {s: "\n\n".join(p) for s, p in parts.items()}
    return Corpus(
        name=name,
        train=texts["train"],
        calibration=texts["calibration"],
        heldout=texts["heldout"],
        content_hash=digest.hexdigest(),
        n_documents={s: len(p) for s, p in parts.items()},
        python_version=platform.python_version(),
    )


def english_corpus(*, calibration: float = 0.1, heldout: float = 0.1) -> Corpus:
    """The ``pydoc_data.topics`` help texts, split by topic name."""
    from pydoc_data.topics import topics

    documents = [(key, topics[key].strip()) for key in sorted(topics) if topics[key].strip()]
    return _build("english", documents, _check_fractions(calibration, heldout))


def _stdlib_files() -> list[tuple[str, Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if _EXCLUDED_DIRS.isdisjoint(rel.parts[:-1]):
            files.append((rel.as_posix(), path))
    return sorted(files)


def python_corpus(*, max_chars: int = 8_000_000, calibration: float = 0.05, heldout: float = 0.05) -> Corpus:
    """Standard-library Python source, files in sorted order until ``max_chars``, split by file path."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    documents: list[tuple[str, str]] = []
    total = 0
    for rel, path in _stdlib_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not text.strip():
            continue
        documents.append((rel, text))
        total += len(text)
        if total >= max_chars:
            break
    return _build("python", documents, _check_fractions(calibration, heldout))


def load_corpus(name: str) -> Corpus:
    """``"english"`` or ``"python"`` with default splits."""
    if name == "english":
        return english_corpus()
    if name == "python":
        return python_corpus()
    raise ValueError(f"corpus name must be one of {CORPORA}, got {name!r}")
