"""The tabular chains of the paper's experiments, generated in code (repo ``multireward_ope/tabular/envs``).

Part of our implementation of *Adaptive Exploration for Multi-Reward Multi-Policy Evaluation* (Russo
& Pacchiano, ICML 2025, https://arxiv.org/abs/2502.02516). Implements the environments of
Sec. 5: Riverswim, ForkedRiverswim, DoubleChain and NArms.

Every builder returns a :class:`icml25.rl.mdp.TabularMDP`; ``.to_env()`` gives a gymnasium env.
Transition numbers follow the official repository: Riverswim's RIGHT succeeds with probability
``p = 0.3`` (stay 0.6, slip back 0.1 in the interior). Descriptions that quote ``p = 0.7`` count the
other way round (0.7 is the probability of *not* moving right); ``p`` here is the probability of
moving right.
"""

from __future__ import annotations

import numpy as np

from icml25.rl.mdp import TabularMDP

__all__ = ["riverswim", "forked_riverswim", "double_chain", "n_arms", "make_env", "ENVIRONMENTS"]


def _check_prob(p: float, name: str = "p") -> float:
    if not 0.0 < p < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {p}")
    return float(p)


def riverswim(n: int = 10, p: float = 0.3) -> TabularMDP:
    """RiverSwim with ``n`` states; actions LEFT = 0 (deterministic), RIGHT = 1.

    RIGHT in the interior: right with ``p``, stay with ``(1-p) 6/7``, left with ``(1-p)/7``; at 0:
    right ``p``, stay ``1-p``; at ``n-1``: stay ``p``, left ``1-p``.
    """
    if n < 3:
        raise ValueError(f"n must be at least 3, got {n}")
    p = _check_prob(p)
    P = np.zeros((n, 2, n))
    for s in range(1, n - 1):
        P[s, 0, s - 1] = 1.0
        P[s, 1, s + 1] = p
        P[s, 1, s] = (1 - p) * 6 / 7
        P[s, 1, s - 1] = (1 - p) / 7
    P[0, 0, 0] = 1.0
    P[0, 1, 1], P[0, 1, 0] = p, 1 - p
    P[n - 1, 0, n - 2] = 1.0
    P[n - 1, 1, n - 1], P[n - 1, 1, n - 2] = p, 1 - p
    return TabularMDP(P, name=f"riverswim{n}")


def forked_riverswim(length: int = 5, p: float = 0.3) -> TabularMDP:
    """Two RiverSwim branches sharing state 0; ``1 + 2(length-1)`` states, actions LEFT, RIGHT, SWITCH.

    Branch 1 is states ``1..L-1``, branch 2 ``L..2L-2``; SWITCH jumps to the parallel cell of the
    other branch in the interior and stays put at 0 and at both ends (as in the repo).
    """
    L = int(length)
    if L < 3:
        raise ValueError(f"length must be at least 3, got {length}")
    p = _check_prob(p)
    S = 1 + 2 * (L - 1)
    LEFT, RIGHT, SWITCH = 0, 1, 2
    P = np.zeros((S, 3, S))
    end1, end2 = L - 1, S - 1
    for start, end in ((1, end1), (end1 + 1, end2)):
        for s in range(start, end):
            P[s, RIGHT, s + 1] = p
            P[s, RIGHT, s] = (1 - p) * 6 / 7
            prev = 0 if s == end1 + 1 else s - 1
            P[s, RIGHT, prev] += (1 - p) / 7
            P[s, LEFT, prev] = 1.0
            other = s + L - 1 if s < end1 else s - L + 1
            P[s, SWITCH, other] = 1.0
    P[0, LEFT, 0] = 1.0
    P[0, RIGHT, 1], P[0, RIGHT, 0] = p, 1 - p
    P[0, SWITCH, 0] = 1.0
    for end in (end1, end2):
        prev = 0 if end == end1 + 1 else end - 1
        P[end, RIGHT, end] = p
        P[end, RIGHT, prev] += 1 - p
        P[end, LEFT, prev] = 1.0
        P[end, SWITCH, end] = 1.0
    return TabularMDP(P, name=f"forked_riverswim{S}")


def double_chain(length: int = 4, p: float = 0.7) -> TabularMDP:
    """Two chains joined at hub 0; ``2L+1`` states, actions RIGHT = 0, LEFT = 1 (repo order).

    From the hub LEFT enters chain 1 (state 1) and RIGHT chain 2 (state L+1). In a chain RIGHT
    advances with ``p`` (stays at the chain's end) and steps back with ``1-p``; LEFT steps back.
    """
    L = int(length)
    if L < 2:
        raise ValueError(f"length must be at least 2, got {length}")
    p = _check_prob(p)
    S = 2 * L + 1
    RIGHT, LEFT = 0, 1
    P = np.zeros((S, 2, S))
    for start, end in ((1, L), (L + 1, S - 1)):
        for s in range(start, end + 1):
            nxt = s + 1 if s != end else end
            prev = s - 1 if s != L + 1 else 0
            P[s, RIGHT, nxt] += p
            P[s, RIGHT, prev] += 1 - p
            P[s, LEFT, prev] = 1.0
    P[0, RIGHT, L + 1] = 1.0
    P[0, LEFT, 1] = 1.0
    return TabularMDP(P, name=f"double_chain{S}")


def n_arms(n: int = 6, p0: float = 0.7) -> TabularMDP:
    """Hub 0 and ``n`` arm states; action a from the hub reaches arm a+1 w.p. 1 (a = 0) or ``p0/(a+1)``.

    In an arm state every action stays with ``p0`` or returns to the hub.
    """
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    p0 = _check_prob(p0, "p0")
    S = n + 1
    P = np.zeros((S, n, S))
    for a in range(n):
        q = 1.0 if a == 0 else p0 / (a + 1)
        P[0, a, a + 1] = q
        P[0, a, 0] += 1 - q
    for s in range(1, S):
        P[s, :, s] = p0
        P[s, :, 0] = 1 - p0
    return TabularMDP(P, name=f"n_arms{S}")


ENVIRONMENTS = {
    "riverswim": riverswim,
    "forked_riverswim": forked_riverswim,
    "double_chain": double_chain,
    "n_arms": n_arms,
}


def make_env(name: str, **kwargs: float) -> TabularMDP:
    """Build one of :data:`ENVIRONMENTS` by name with its keyword arguments."""
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r}; choose one of {sorted(ENVIRONMENTS)}")
    return ENVIRONMENTS[name](**kwargs)  # type: ignore[operator]
