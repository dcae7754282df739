"""The ECG classifier of H-Tuning (``NN_default`` in the official code) and its LoRA wrapping.

Zhou, Zhang, Dong, *H-Tuning: Toward Low-Cost and Efficient ECG-based Cardiovascular Disease
Detection with Pre-Trained Models*, ICML 2025 (Sec. 3 and App. on the backbone).

Backbone: three residual conv blocks over time (two kernel-9 convs, the first strided by 4, BatchNorm,
LeakyReLU; avg-pool + 1×1-conv shortcut) shrink the time axis 64-fold, then sinusoidal positions,
``n_transformer`` pre-LN Transformer blocks (:class:`icml25.nn.TransformerBlock`), max-pooling over
time and a two-layer classifier ``Linear(d, d) → Linear(d, n_classes)``.

``official=True`` (the default) is the official ``NN_default`` layout: each residual block applies
LeakyReLU after both BatchNorms and adds the shortcut after (``h = act(bn2(conv2(act(bn1(conv1
x))))) + skip(pool(x))``), the Transformer feed-forward uses LeakyReLU, the pooled features go to the
classifier un-normalised, and the classifier's two linear layers have no activation between them.
``official=False`` is the variant earlier versions of this package used (activation after the
residual add, GELU feed-forward, a final LayerNorm before pooling, LeakyReLU inside the classifier).
Both use the official 2-D convs with kernel ``(1, 9)`` on ``(b, c, 1, l)`` (and ``BatchNorm2d``),
held in channels-last memory order, where oneDNN's convolutions run about twice as fast here as 1-D
convs on ``(b, c, l)`` (the same operation up to round-off; the input stays ``(b, c, l)``), and kept
from ours: a ceil-mode shortcut pool, so that lengths not divisible by 64 work (the official input,
6144 samples, is).

LoRA (Sec. 3.1): rank-r updates on every conv, the attention QKV projection, both FFN layers and
the first classifier layer; biases and the last classifier layer are trained in full. The wrapping
is done with ``peft`` (:func:`add_lora`), so LoRA-BP, MeZO and H-Tuning adapt exactly the same
parameters; ``merge_lora`` folds the updates into the weights after training.

Notation: b batch, c leads (12), l samples, d width, n tokens (l / 64).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive
from icml25.nn import TransformerBlock, sinusoidal_embedding

__all__ = [
    "ECGNet",
    "add_lora",
    "merge_lora",
    "merged_lora",
    "unwrap_model",
    "lora_target_modules",
    "trainable_parameters",
]


def _avg_pool_cl(x: Tensor, stride: int) -> Tensor:
    """The shortcut's ceil-mode average pool (window and step ``stride``) along the last axis of a
    channels-last ``(b, c, 1, l)`` tensor, returned channels-last, as reshaped means: full windows,
    then the ragged last window's mean over the samples it covers (the pooling kernel's divisor
    without padding). The same numbers up to round-off as ``AvgPool1d(stride, stride,
    ceil_mode=True)``, faster: the means run over the middle axis of the ``(b, 1, l, c)`` memory
    order with the channels innermost."""
    t = x.permute(0, 2, 3, 1)  # (b, 1, l, c): a view, contiguous for a channels-last x
    n, rest = divmod(t.shape[2], stride)
    out = t[:, :, : n * stride].unflatten(2, (n, stride)).mean(3)
    if rest:
        out = torch.cat([out, t[:, :, n * stride :].mean(2, keepdim=True)], dim=2)
    return out.permute(0, 3, 1, 2)  # (b, c, 1, n), channels-last


class _ResidualBlock(nn.Module):
    """conv(9, stride s) → BN → LeakyReLU → conv(9) → BN, plus avg-pool/1×1-conv shortcut.

    ``official``: LeakyReLU after the second BN, then the shortcut is added (official
    ``MyResidualBlock``); otherwise LeakyReLU after the addition. The convolutions are the official
    2-D ones with kernel ``(1, 9)`` on ``(b, c, 1, l)`` inputs, which :meth:`ECGNet.features` keeps in
    channels-last memory order (oneDNN's convolutions run about twice as fast on it here as on
    ``(b, c, l)``; the same operation up to float round-off)."""

    def __init__(self, c_in: int, c_out: int, stride: int, official: bool = True) -> None:
        super().__init__()
        self.official = official
        self.stride = stride
        self.conv1 = nn.Conv2d(c_in, c_out, (1, 9), stride=(1, stride), padding=(0, 4))
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, (1, 9), padding=(0, 4))
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip = nn.Conv2d(c_in, c_out, 1)

    def forward(self, x: Tensor) -> Tensor:
        """``x (b, c_in, 1, l)`` (channels-last for speed) → ``(b, c_out, 1, ceil(l / stride))``."""
        h = F.leaky_relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        s = self.skip(_avg_pool_cl(x, self.stride))[..., : h.shape[-1]]
        if self.official:
            return F.leaky_relu(h) + s
        return F.leaky_relu(h + s)


def _positions(n: int, width: int, official: bool) -> Tensor:
    """Fixed sinusoidal positions ``(n, width)``: the official ``PositionalEncoding`` (sin on even,
    cos on odd channels) or ``icml25.nn.sinusoidal_embedding`` (``[cos | sin]`` halves); the same
    frequencies ``10000^(-i / (width/2))`` in another channel order."""
    t = torch.arange(n)
    if not official:
        return sinusoidal_embedding(t, width)
    freqs = torch.exp(torch.arange(0, width, 2).float() * (-math.log(10000.0) / width))
    pe = torch.zeros(n, width)
    pe[:, 0::2] = torch.sin(t[:, None].float() * freqs)
    pe[:, 1::2] = torch.cos(t[:, None].float() * freqs[: width // 2])
    return pe


class ECGNet(nn.Module):
    """Conv front-end + Transformer multi-label ECG classifier.

    Args:
        n_classes: number of labels.
        width: model width d.
        n_transformer: Transformer blocks.
        heads: attention heads (``width`` must be divisible by it).
        n_leads: input leads.
        official: the official ``NN_default`` layout (module docstring); False: this package's
            earlier variant.

    Input ``x (b, c, l)`` float32, output logits ``(b, n_classes)``.
    """

    def __init__(
        self,
        n_classes: int,
        width: int = 128,
        n_transformer: int = 4,
        heads: int = 8,
        n_leads: int = 12,
        official: bool = True,
    ):
        super().__init__()
        for name, v in (("n_classes", n_classes), ("width", width), ("heads", heads), ("n_leads", n_leads)):
            check_positive(name, v, integer=True)
        if n_transformer < 0:
            raise ValueError(f"n_transformer must be >= 0, got {n_transformer}")
        if width % heads:
            raise ValueError(f"width ({width}) must be divisible by heads ({heads})")
        self.n_leads = n_leads
        self.width = width
        self.official = bool(official)
        self.blocks = nn.Sequential(
            _ResidualBlock(n_leads, width, 4, self.official),
            _ResidualBlock(width, width, 4, self.official),
            _ResidualBlock(width, width, 4, self.official),
        )
        layers = [TransformerBlock(width, heads, activation="gelu") for _ in range(n_transformer)]
        if self.official:
            for blk in layers:  # official feed-forward: fc2(leaky_relu(fc1(x)))
                blk.mlp.add_module("act", nn.LeakyReLU())
        self.transformer = nn.ModuleList(layers)
        self.norm: nn.Module = nn.Identity() if self.official else nn.LayerNorm(width)
        self.head = nn.Sequential()
        self.head.add_module("hidden", nn.Linear(width, width))
        self.head.add_module("act", nn.Identity() if self.official else nn.LeakyReLU())
        self.head.add_module("out", nn.Linear(width, n_classes))

    def check_input(self, x: Any) -> None:
        check_finite_tensor("x", x, ndim=3, floating=True)
        if x.shape[1] != self.n_leads:
            raise ValueError(f"x must have shape (batch, {self.n_leads}, length), got {tuple(x.shape)}")
        if x.shape[-1] < 64:
            raise ValueError(
                f"x must have at least 64 samples (the backbone downsamples 64-fold), got {x.shape[-1]}"
            )
        dtype = next(self.parameters()).dtype
        if x.dtype != dtype:
            raise TypeError(f"x must have dtype {dtype} (the model's), got {x.dtype}")

    def features(self, x: Tensor) -> Tensor:
        """Pooled features ``(b, d)``: conv blocks, positions, Transformer, max-pool over time."""
        h = x.unsqueeze(2).contiguous(memory_format=torch.channels_last)  # (b, c, 1, l)
        h = self.blocks(h).squeeze(2).transpose(1, 2)  # (b, n, d): contiguous after channels-last
        h = h + _positions(h.shape[1], self.width, self.official).to(h)
        for blk in self.transformer:
            h = blk(h)
        return self.norm(h).amax(dim=1)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


def lora_target_modules(model: nn.Module) -> list[str]:
    """Full names of the modules LoRA adapts: every conv, attention QKV, FFN fc1/fc2, ``head.hidden``."""
    names = []
    for name, mod in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        adapted_linear = isinstance(mod, nn.Linear) and (
            leaf in ("qkv", "fc1", "fc2") or name == "head.hidden"
        )
        if isinstance(mod, nn.Conv2d) or adapted_linear:
            names.append(name)
    return names


def add_lora(model: ECGNet, rank: int = 8, alpha: float | None = None) -> nn.Module:
    """Wrap ``model`` with ``peft`` LoRA (rank ``rank``, scale ``alpha / rank``; default scale 1 as in
    the official ``lora_alpha = 1`` convention) on :func:`lora_target_modules`; biases and ``head.out``
    stay trainable in full, everything else is frozen. Returns the ``PeftModel``."""
    from peft import LoraConfig, get_peft_model

    if not isinstance(model, ECGNet):
        raise TypeError(f"model must be an ECGNet, got {type(model).__name__}")
    check_positive("rank", rank, integer=True)
    alpha = float(rank) if alpha is None else alpha
    check_positive("alpha", alpha)
    cfg = LoraConfig(
        r=rank,
        lora_alpha=alpha,  # type: ignore[arg-type]  # peft accepts a float scale
        target_modules=lora_target_modules(model),
        lora_dropout=0.0,
        bias="all",
        modules_to_save=["head.out"],
    )
    return get_peft_model(model, cfg)


def unwrap_model(model: nn.Module) -> ECGNet:
    """The :class:`ECGNet` inside a ``PeftModel`` (LoRA layers are injected in place), or ``model``."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model  # type: ignore[operator]
    if not isinstance(inner, ECGNet):
        raise TypeError(f"model must be an ECGNet or a PeftModel around one, got {type(inner).__name__}")
    return inner


def merge_lora(model: nn.Module) -> ECGNet:
    """Fold LoRA updates into the weights (``peft`` ``merge_and_unload``) and return the plain ECGNet."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()  # type: ignore[operator]
    return unwrap_model(model)


@contextmanager
def merged_lora(model: nn.Module) -> Iterator[nn.Module]:
    """Fold every LoRA update into its base weight, W + s B A (Sec. 3.1), for the duration of the
    block, then put the base weights back bit for bit.

    For forward passes without gradients (H-Tuning's and MeZO's zeroth-order passes, validation):
    a merged conv layer is one convolution instead of three (base, ``lora_A``, ``lora_B``), the same
    function up to floating-point round-off. Gradients do not reach the LoRA tensors inside the block.
    A model without (unmerged) ``peft`` LoRA layers passes through unchanged.

    Each base weight's storage is swapped for a new tensor ``W + delta`` (``peft``'s own
    ``get_delta_weight``, added as ``peft``'s ``merge`` adds it: the same merged numbers) and swapped
    back afterwards, so nothing is cloned, copied back or unmerged; layers ``peft`` merges in another
    way (variants such as DoRA, LoRA biases, several adapters) take ``peft``'s ``merge`` and a copy.

    Raises:
        TypeError: ``model`` is not an ``nn.Module``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    try:
        from peft.tuners.lora import LoraLayer
    except ImportError:  # no peft: no LoRA layers to merge
        yield model
        return
    layers: list[Any] = [m for m in model.modules() if isinstance(m, LoraLayer) and not m.merged]
    swapped: list[tuple[Any, Tensor]] = []  # (layer, its base weight's own data)
    copied: list[tuple[Any, Tensor]] = []  # (layer, a copy of its base weight) for peft's merge
    try:
        # normal tensors even inside inference mode (they become a parameter's data)
        with torch.inference_mode(False), torch.no_grad():
            for layer in layers:
                weight = layer.get_base_layer().weight
                adapters = [a for a in layer.active_adapters if a in layer.lora_A]
                if len(adapters) == 1 and _plain_lora(layer, adapters[0]):
                    data = weight.data
                    weight.data = data + layer.get_delta_weight(adapters[0]).to(data.dtype)
                    swapped.append((layer, data))
                    layer.merged_adapters.append(adapters[0])
                else:
                    copied.append((layer, weight.detach().clone()))
                    layer.merge()
        yield model
    finally:
        with torch.no_grad():
            for layer, data in swapped:
                layer.get_base_layer().weight.data = data
                layer.merged_adapters.clear()
            for layer, original in copied:
                if layer.merged:
                    layer.unmerge()  # resets peft's merged flag; the weight is then copied back exactly
                layer.get_base_layer().weight.copy_(original)


def _plain_lora(layer: Any, adapter: str) -> bool:
    """Vanilla LoRA (no variant, no LoRA bias, a conv with one group): ``peft`` merges it as
    ``W += get_delta_weight(adapter)``."""
    return (
        adapter not in getattr(layer, "lora_variant", {})
        and not getattr(layer, "lora_bias", {}).get(adapter, False)
        and getattr(layer.get_base_layer(), "groups", 1) == 1
    )


def trainable_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """``(name, parameter)`` for every parameter with ``requires_grad``, in a fixed order."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]
