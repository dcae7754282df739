"""English and Python corpora shipped with the interpreter: deterministic splits and content hashes."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.data.corpora import CORPORA, english_corpus, load_corpus, python_corpus, split_of


@pytest.fixture(scope="module")
def english():  # type: ignore[no-untyped-def]
    return english_corpus()


@pytest.fixture(scope="module")
def code():  # type: ignore[no-untyped-def]
    return python_corpus(max_chars=1_000_000)


def test_english_splits(english) -> None:  # type: ignore[no-untyped-def]
    total = sum(english.n_documents.values())
    assert total > 50 and all(english.n_documents[s] > 0 for s in english.n_documents)
    assert len(english.train) > len(english.heldout) > 1000 and len(english.calibration) > 1000
    assert "the" in english.heldout


def test_python_corpus(code) -> None:  # type: ignore[no-untyped-def]
    assert "def " in code.train and "import" in code.heldout
    sizes = sum(len(code.split(s)) for s in ("train", "calibration", "heldout"))
    assert 1_000_000 <= sizes < 1_000_000 + 400_000  # stops after the file that crosses max_chars


def test_deterministic_and_hashed(english, code) -> None:  # type: ignore[no-untyped-def]
    again = english_corpus()
    assert again == english and len(english.content_hash) == 64
    assert python_corpus(max_chars=1_000_000).content_hash == code.content_hash
    assert python_corpus(max_chars=1_500_000).content_hash != code.content_hash
    record = english.record()
    assert record["content_hash"] == english.content_hash and record["corpus"] == "english"


def test_documents_do_not_straddle_splits(english) -> None:  # type: ignore[no-untyped-def]
    from pydoc_data.topics import topics

    for key in ("if", "for", "while", "with"):
        text = topics[key].strip()
        where = [s for s in ("train", "calibration", "heldout") if text in english.split(s)]
        assert where == [split_of(f"english/{key}", (0.1, 0.1))]


@settings(max_examples=30, deadline=None)
@given(name=st.text(min_size=1, max_size=30))
def test_split_of_is_a_pure_function(name: str) -> None:
    assert split_of(name, (0.2, 0.3)) == split_of(name, (0.2, 0.3))
    u = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") / 2**64
    expected = "calibration" if u < 0.2 else "heldout" if u < 0.5 else "train"
    assert split_of(name, (0.2, 0.3)) == expected


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="fractions"):
        english_corpus(calibration=0.6, heldout=0.5)
    with pytest.raises(ValueError, match="max_chars"):
        python_corpus(max_chars=0)
    with pytest.raises(ValueError, match="no document fell into"):
        python_corpus(max_chars=50_000)
    with pytest.raises(ValueError, match="corpus name"):
        load_corpus("klingon")
    with pytest.raises(ValueError, match="split"):
        english_corpus().split("test")
    assert CORPORA == ("english", "python")
