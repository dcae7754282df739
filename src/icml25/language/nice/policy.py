"""NICE's validation side: a policy-gradient estimate of the gradient of a non-differentiable
metric, from *NICE Data Selection for Instruction Tuning in LLMs with Non-differentiable Evaluation
Metric* (Wang et al., ICML 2025, https://openreview.net/forum?id=2wt8m5HUBs), Section 3.2.

The target objective is J(θ) = E_{x'} E_{ŷ∼π_θ(·|x')} r(x', ŷ). REINFORCE estimates its gradient
from m sampled responses. Like the official ``obtain_policy_gradients``, we return the gradient of
the reward-weighted *loss*

    g(x') = ∇_θ Σ_k w_k · NLL(ŷ_k | x'),   NLL = token-summed negative log-likelihood,

which is −∇J up to scale and so has the sign convention of a loss gradient: it is compared with
training-loss update directions exactly as LESS compares validation-loss gradients. The weights:

* ``"vanilla"`` (the official default): w_k = r_k, no baseline, no division by m;
* ``"baseline"``: w_k = r_k − mean(r), REINFORCE with the mean reward as baseline (variance
  reduction; a prompt whose samples all score alike contributes nothing);
* ``"rejection"``: w_k = r_k / K over the K samples with r_k > ``threshold`` (0 elsewhere);
* ``"topk"``: w_k = r_k for the ``top_n`` best samples, 0 elsewhere (no division, as in the
  official ``topk_sampling`` without rejection).

The reward function sees only the prompt and the sampled response, so when it needs no reference
(a verifier, a unit test, a reward model) the validation vectors are label-free.

Sampling is ours (KV cache, temperature, top-k, nucleus), drawing from a caller's ``torch.Generator``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from icml25.core.validate import check_positive

from .features import _flat_grad, sequence_nll, trainable_parameters

__all__ = [
    "PolicyGradient",
    "RewardFn",
    "generate",
    "policy_gradient_vector",
    "reward_weights",
    "weighted_nll_gradient",
]

RewardFn = Callable[[str, str], float]
Mode = Literal["vanilla", "baseline", "rejection", "topk"]


def _filter_logits(logits: Tensor, top_k: int, top_p: float) -> Tensor:
    """Mask all but the top-k logits, then all outside the smallest set of mass >= top_p."""
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        probs = torch.softmax(sorted_logits, dim=-1)
        mass_before = probs.cumsum(-1) - probs
        drop_sorted = mass_before >= top_p  # the first token is always kept
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, -math.inf)
    return logits


def _check_prompt(prompt_ids: Tensor) -> None:
    if not isinstance(prompt_ids, Tensor):
        raise TypeError(f"prompt_ids must be a torch.Tensor, got {type(prompt_ids).__name__}")
    if prompt_ids.dtype != torch.long:
        raise TypeError(f"prompt_ids must be a torch.long tensor of token ids, got {prompt_ids.dtype}")
    if prompt_ids.ndim != 1 or prompt_ids.numel() == 0:
        raise ValueError(f"prompt_ids must be a non-empty 1-D tensor, got shape {tuple(prompt_ids.shape)}")


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt_ids: Tensor,
    *,
    num_samples: int = 1,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    max_new_tokens: int = 32,
    eos_id: int | None = None,
    generator: torch.Generator | None = None,
) -> list[list[int]]:
    """Continue one prompt ``num_samples`` times (or a ``[B, T]`` batch of equal-length prompts once each).

    Args:
        model: a causal LM that accepts ``past_key_values``/``use_cache`` (any HF or peft model).
        prompt_ids: ``[T]`` (repeated ``num_samples`` times) or ``[B, T]`` long tensor.
        num_samples: copies of a 1-D prompt.
        temperature: 0 = greedy; otherwise logits are divided by it before sampling.
        top_k: keep the k most likely tokens (0 = all).
        top_p: nucleus mass (1 = all).
        max_new_tokens: most tokens per response.
        eos_id: end-of-sequence id; a response stops after it (and includes it).
        generator: the random source of sampling.

    Returns:
        One list of new token ids per row (including the final ``eos_id`` when one was emitted).
    """
    if isinstance(prompt_ids, Tensor) and prompt_ids.ndim == 2:
        if prompt_ids.dtype != torch.long or prompt_ids.numel() == 0:
            raise ValueError(f"prompt_ids must be a non-empty long tensor, got {prompt_ids.dtype}")
        batch = prompt_ids
    else:
        _check_prompt(prompt_ids)
        check_positive("num_samples", num_samples, integer=True)
        batch = prompt_ids.unsqueeze(0).expand(num_samples, -1)
    check_positive("max_new_tokens", max_new_tokens, integer=True)
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an int >= 0, got {top_k!r}")
    if not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    model.eval()
    n = batch.shape[0]
    out = model(input_ids=batch, use_cache=True)
    # transformers >= 5 names the KV cache ``cache``; older versions ``past_key_values``
    cache_name = "cache" if getattr(out, "cache", None) is not None else "past_key_values"
    past = getattr(out, cache_name)
    logits = out.logits[:, -1].float()
    tokens = torch.empty(n, max_new_tokens, dtype=torch.long)
    done = torch.zeros(n, dtype=torch.bool)
    lengths = torch.full((n,), max_new_tokens, dtype=torch.long)
    for t in range(max_new_tokens):
        if temperature == 0:
            nxt = logits.argmax(-1)
        else:
            probs = torch.softmax(_filter_logits(logits / temperature, top_k, top_p), dim=-1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        tokens[:, t] = nxt
        if eos_id is not None:
            new_end = (nxt == eos_id) & ~done
            lengths[new_end] = t + 1
            done |= new_end
            if bool(done.all()):
                break
        if t + 1 < max_new_tokens:
            out = model(input_ids=nxt.unsqueeze(-1), use_cache=True, **{cache_name: past})
            past = getattr(out, cache_name)
            logits = out.logits[:, -1].float()
    return [tokens[i, : int(lengths[i])].tolist() for i in range(n)]


def reward_weights(
    rewards: Tensor, mode: Mode = "vanilla", *, threshold: float | None = None, top_n: int = 10
) -> Tensor:
    """The weights w_k of the reward-weighted loss for one prompt's ``[m]`` rewards (see module docs)."""
    if not isinstance(rewards, Tensor) or rewards.ndim != 1 or rewards.numel() == 0:
        raise ValueError("rewards must be a non-empty 1-D tensor")
    if not rewards.is_floating_point():
        raise TypeError(f"rewards must be a floating tensor, got {rewards.dtype}")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards contains NaN or infinite values")
    if mode == "vanilla":
        return rewards.clone()
    if mode == "baseline":
        return rewards - rewards.mean()
    if mode == "rejection":
        if threshold is None or not math.isfinite(threshold):
            raise ValueError("mode='rejection' needs a finite threshold")
        keep = rewards > threshold
        return torch.where(keep, rewards / max(int(keep.sum()), 1), torch.zeros_like(rewards))
    if mode == "topk":
        check_positive("top_n", top_n, integer=True)
        k = min(top_n, rewards.numel())
        idx = torch.sort(rewards, descending=True, stable=True).indices[:k]
        w = torch.zeros_like(rewards)
        w[idx] = rewards[idx]
        return w
    raise ValueError(f"mode must be vanilla, baseline, rejection or topk, got {mode!r}")


def weighted_nll_gradient(
    model: nn.Module,
    prompt_ids: Tensor,
    responses: Sequence[Sequence[int]],
    weights: Tensor,
    *,
    params: Sequence[Tensor] | None = None,
    pad_id: int = 0,
) -> Tensor:
    """∇_θ Σ_k w_k NLL(ŷ_k | x) (token-summed NLL), flattened over ``params`` → ``[P]``.

    Responses with zero weight are skipped; if every weight is zero the result is the zero vector.
    """
    _check_prompt(prompt_ids)
    params = trainable_parameters(model) if params is None else list(params)
    if not isinstance(weights, Tensor) or weights.ndim != 1 or weights.shape[0] != len(responses):
        raise ValueError(f"weights must be a 1-D tensor with one entry per response ({len(responses)})")
    if not torch.isfinite(weights).all():
        raise ValueError("weights contains NaN or infinite values")
    keep = [k for k in range(len(responses)) if float(weights[k]) != 0.0 and len(responses[k]) > 0]
    if not keep:
        return torch.zeros(sum(p.numel() for p in params))
    t = prompt_ids.numel()
    width = t + max(len(responses[k]) for k in keep)
    ids = torch.full((len(keep), width), pad_id, dtype=torch.long)
    labels = torch.full((len(keep), width), -100, dtype=torch.long)
    for row, k in enumerate(keep):
        r = torch.tensor(list(responses[k]), dtype=torch.long)
        ids[row, :t] = prompt_ids
        ids[row, t : t + len(r)] = r
        labels[row, t : t + len(r)] = r
    model.eval()
    nll, _ = sequence_nll(model, ids, labels)  # right padding never reaches earlier positions
    loss = (weights[keep].to(nll.dtype) * nll).sum()
    return _flat_grad(loss, params).float()


@dataclass(frozen=True)
class PolicyGradient:
    """One prompt's policy-gradient vector and the samples behind it.

    Attributes:
        vector: ``[P]`` ∇_θ Σ_k w_k NLL(ŷ_k | x').
        responses: the m sampled responses (token ids).
        rewards: ``[m]`` their rewards.
        weights: ``[m]`` the weights w_k used.
    """

    vector: Tensor
    responses: tuple[tuple[int, ...], ...]
    rewards: Tensor
    weights: Tensor


def policy_gradient_vector(
    model: nn.Module,
    prompt_ids: Tensor,
    reward_fn: RewardFn,
    decode: Callable[[Sequence[int]], str],
    *,
    num_samples: int = 20,
    temperature: float = 1.0,
    top_k: int = 50,
    top_p: float = 0.95,
    max_new_tokens: int = 32,
    eos_id: int | None = None,
    mode: Mode = "vanilla",
    threshold: float | None = None,
    top_n: int = 10,
    params: Sequence[Tensor] | None = None,
    generator: torch.Generator | None = None,
) -> PolicyGradient:
    """NICE's validation vector for one prompt (Section 3.2): sample, score, weight, differentiate.

    Args:
        model: the causal LM at a warm-up checkpoint (a peft model for LoRA gradients).
        prompt_ids: ``[T]`` long tensor, the validation prompt.
        reward_fn: ``reward_fn(prompt_text, response_text) -> float``, the metric (any verifier,
            test runner or reward model; it never sees a reference answer).
        decode: token ids -> text (e.g. a tokenizer's ``decode``); the final ``eos_id`` is dropped first.
        num_samples: m (official run script: 20).
        temperature, top_k, top_p, max_new_tokens: sampling (official: top_k 50, top_p 0.95).
        eos_id: end-of-sequence id.
        mode, threshold, top_n: the weighting (see the module docstring).
        params: parameters to differentiate (default: the trainable ones).
        generator: random source of the samples.
    """
    if not callable(reward_fn) or not callable(decode):
        raise TypeError("reward_fn and decode must be callables")
    _check_prompt(prompt_ids)
    samples = generate(
        model,
        prompt_ids,
        num_samples=num_samples,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        eos_id=eos_id,
        generator=generator,
    )
    prompt_text = decode(prompt_ids.tolist())
    texts = [decode(s[:-1] if eos_id is not None and s and s[-1] == eos_id else s) for s in samples]
    rewards = torch.tensor([float(reward_fn(prompt_text, t)) for t in texts], dtype=torch.float32)
    if not torch.isfinite(rewards).all():
        raise ValueError("reward_fn returned NaN or infinite rewards")
    weights = reward_weights(rewards, mode, threshold=threshold, top_n=top_n)
    vec = weighted_nll_gradient(
        model, prompt_ids, samples, weights, params=params, pad_id=eos_id if eos_id is not None else 0
    )
    return PolicyGradient(
        vector=vec, responses=tuple(tuple(s) for s in samples), rewards=rewards, weights=weights
    )
