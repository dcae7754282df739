"""Joint steps of asynchronous episodes and the modified GAE over them (ACAC, ICML 2025, Sec. 4.2).

Jung et al., *Agent-Centric Actor-Critic for Asynchronous Multi-Agent Reinforcement Learning*,
ICML 2025, https://openreview.net/forum?id=323GZNnGqe.

Notation (the paper's): a *joint step* ``k`` starts at primitive time ``t_k`` at which at least one
agent's macro-action has just ended (``t_0 = 0``). It lasts ``d_k = t_{k+1} - t_k`` steps, earns
``R_k = sum_{u < d_k} gamma^u r_{t_k + u}`` and discounts the next value by ``Gamma_k = gamma^{d_k}``.
With ``V`` the critic's value of the aligned agent histories at a joint step:

    delta_k = R_k + Gamma_k V(h_{k+1}) (1 - done_k) - V(h_k)
    A_k     = delta_k + Gamma_k lambda (1 - done_k) A_{k+1}        (lambda once per joint step)
    G_k     = A_k + V(h_k)                                           (the critic's target)

``done_k`` says the episode ends with joint step ``k``. The "micro-level" ablation uses
``lambda^{d_k}`` in place of ``lambda``. With every ``d_k = 1`` both reduce to standard GAE.

Shapes: ``b`` episodes, ``t`` primitive steps, ``k`` joint steps (padded at the end with ``mask``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from icml25.core.validate import check_finite_tensor, check_in_range

__all__ = ["JointSteps", "joint_step_gae", "joint_steps", "compact", "latest_index"]


def _bool_mask(name: str, x: Tensor, shape: tuple[int, ...] | None = None) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor, got {x.dtype}")
    if shape is not None and tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")


def compact(x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Gather the entries of ``x`` where ``mask`` holds, left-aligned per row.

    Args:
        x: ``(b, t, ...)``.
        mask: ``(b, t)`` bool.

    Returns:
        ``(out, out_mask)``: ``(b, k, ...)`` with ``k = max_b mask[b].sum()`` (zeros after each
        row's entries) and the ``(b, k)`` validity mask. Differentiable in ``x``.
    """
    _bool_mask("mask", mask)
    if x.shape[:2] != mask.shape:
        raise ValueError(f"x must start with the mask's shape {tuple(mask.shape)}, got {tuple(x.shape)}")
    counts = mask.sum(1)
    k = max(int(counts.max()), 1)
    pos = mask.long().cumsum(1) - 1
    b_idx, t_idx = mask.nonzero(as_tuple=True)
    out = x.new_zeros((x.shape[0], k, *x.shape[2:]))
    out = out.index_put((b_idx, pos[b_idx, t_idx]), x[b_idx, t_idx])
    out_mask = torch.arange(k, device=mask.device)[None, :] < counts[:, None]
    return out, out_mask


def latest_index(mask: Tensor) -> Tensor:
    """``(b, t)``: index into :func:`compact`'s output of the latest masked entry at or before ``t``.

    This is the alignment of Sec. 4.1: at every time, each agent contributes the encoding after its
    most recent own observation. Times before the first masked entry map to 0.
    """
    _bool_mask("mask", mask)
    return (mask.long().cumsum(1) - 1).clamp_min(0)


class JointSteps:
    """The joint steps of a batch of asynchronous episodes (Sec. 4.2).

    Attributes (``k`` = most joint steps in any episode):
        time: ``(b, k)`` long, primitive start time ``t_k`` (0 where padded).
        reward: ``(b, k)`` the discounted reward ``R_k`` of each joint step.
        duration: ``(b, k)`` long ``d_k``.
        discount: ``(b, k)`` ``Gamma_k = gamma^{d_k}``.
        done: ``(b, k)`` bool, the episode ends with this joint step.
        mask: ``(b, k)`` bool, a real joint step.
        is_joint: ``(b, t)`` bool, whether primitive step ``t`` starts a joint step.
    """

    def __init__(
        self,
        time: Tensor,
        reward: Tensor,
        duration: Tensor,
        discount: Tensor,
        done: Tensor,
        mask: Tensor,
        is_joint: Tensor,
    ) -> None:
        self.time, self.reward, self.duration, self.discount = time, reward, duration, discount
        self.done, self.mask, self.is_joint = done, mask, is_joint


def joint_steps(starts: Tensor, rewards: Tensor, valid: Tensor, gamma: float) -> JointSteps:
    """Build the joint steps from per-agent decision flags and primitive rewards.

    Args:
        starts: ``(b, t, n)`` bool, agent ``i`` starts a macro-action at primitive step ``t``.
        rewards: ``(b, t)`` team reward of primitive step ``t``.
        valid: ``(b, t)`` bool, step ``t`` happened (a prefix of each row; the episode ends after
            its last valid step).
        gamma: discount per primitive step, in (0, 1].

    Returns:
        :class:`JointSteps`; ``R_k`` is accumulated backwards within each joint step
        (``R = r_t + gamma R`` until the next joint step begins).
    """
    _bool_mask("starts", starts)
    if starts.ndim != 3:
        raise ValueError(f"starts must have shape (b, t, n), got {tuple(starts.shape)}")
    b, t = starts.shape[:2]
    _bool_mask("valid", valid, (b, t))
    check_finite_tensor("rewards", rewards, ndim=2, floating=True)
    if tuple(rewards.shape) != (b, t):
        raise ValueError(f"rewards must have shape {(b, t)}, got {tuple(rewards.shape)}")
    check_in_range("gamma", gamma, 0.0, 1.0, low_open=True)
    is_joint = starts.any(-1) & valid
    is_joint[:, 0] = valid[:, 0]  # every episode starts with a joint step
    acc = torch.zeros(b, dtype=rewards.dtype)
    dur = torch.zeros(b, dtype=torch.long)
    R = torch.zeros_like(rewards)
    D = torch.zeros(b, t, dtype=torch.long)
    r = torch.where(valid, rewards, torch.zeros_like(rewards))
    for s in range(t - 1, -1, -1):
        nxt = is_joint[:, s + 1] if s + 1 < t else torch.zeros(b, dtype=torch.bool)
        acc = r[:, s] + gamma * torch.where(nxt, torch.zeros_like(acc), acc)
        dur = valid[:, s].long() + torch.where(nxt, torch.zeros_like(dur), dur)
        R[:, s], D[:, s] = acc, dur
    reward, mask = compact(R, is_joint)
    duration, _ = compact(D, is_joint)
    time, _ = compact(torch.arange(t).expand(b, t), is_joint)
    counts = mask.sum(1)
    done = torch.zeros_like(mask)
    done[torch.arange(b), (counts - 1).clamp_min(0)] = counts > 0
    discount = torch.where(mask, gamma ** duration.to(rewards.dtype), torch.zeros_like(reward))
    return JointSteps(time, reward, duration, discount, done, mask, is_joint)


def joint_step_gae(
    R: Tensor,
    Gamma: Tensor,
    v: Tensor,
    v_next: Tensor,
    done: Tensor,
    lam: float,
    *,
    micro: bool = False,
    durations: Tensor | None = None,
    mask: Tensor | None = None,
    official_last: bool = False,
) -> tuple[Tensor, Tensor]:
    """The modified GAE over joint steps (Sec. 4.2): advantages ``A_k`` and targets ``G_k = A_k + V_k``.

    Args:
        R: ``(b, k)`` joint rewards ``R_k``.
        Gamma: ``(b, k)`` joint discounts ``gamma^{d_k}``.
        v: ``(b, k)`` values ``V(h_k)`` (from the target critic, denormalised).
        v_next: ``(b, k)`` values ``V(h_{k+1})``; ignored where ``done``.
        done: ``(b, k)`` bool, the episode ends with joint step ``k`` (no bootstrap, no carry).
        lam: GAE lambda in [0, 1], applied once per joint step.
        micro: use ``lambda^{d_k}`` (the micro-level GAE ablation); needs ``durations``.
        durations: ``(b, k)`` ``d_k``; only used with ``micro``.
        mask: ``(b, k)`` bool real joint steps (default all); padded steps get 0 and do not carry.
        official_last: the target at each row's last real joint step ``K`` is ``A_K`` alone, as the
            official learner's ``_get_gae`` computes it (it adds ``V(h_k)`` for ``k < K`` only and
            leaves the last step's value at 0); the advantages are unchanged.

    Returns:
        ``(advantages, returns)``, both ``(b, k)``.
    """
    check_finite_tensor("R", R, ndim=2, floating=True)
    shape = tuple(R.shape)
    for name, x in (("Gamma", Gamma), ("v", v), ("v_next", v_next)):
        check_finite_tensor(name, x, ndim=2, floating=True)
        if tuple(x.shape) != shape:
            raise ValueError(f"{name} must have shape {shape} like R, got {tuple(x.shape)}")
    _bool_mask("done", done, shape)
    if mask is None:
        mask = torch.ones(shape, dtype=torch.bool)
    _bool_mask("mask", mask, shape)
    check_in_range("lam", lam, 0.0, 1.0)
    if micro:
        if durations is None:
            raise ValueError("durations is required when micro=True")
        if tuple(durations.shape) != shape:
            raise ValueError(f"durations must have shape {shape} like R, got {tuple(durations.shape)}")
        lam_k = torch.as_tensor(lam, dtype=R.dtype) ** durations.to(R.dtype)
    else:
        lam_k = torch.full(shape, float(lam), dtype=R.dtype)
    live = (~done).to(R.dtype)
    delta = R + Gamma * v_next * live - v  # delta_k
    adv = torch.zeros_like(R)
    carry = torch.zeros(shape[0], dtype=R.dtype)
    for k in range(shape[1] - 1, -1, -1):
        carry = delta[:, k] + Gamma[:, k] * lam_k[:, k] * live[:, k] * carry  # A_k
        carry = torch.where(mask[:, k], carry, torch.zeros_like(carry))
        adv[:, k] = carry
    returns = torch.where(mask, adv + v, torch.zeros_like(adv))
    if official_last:
        last = torch.where(mask, torch.arange(shape[1]), -1).max(1).values  # (b,), -1: no real step
        rows = torch.nonzero(last >= 0)[:, 0]
        returns[rows, last[rows]] = adv[rows, last[rows]]
    return adv, returns
