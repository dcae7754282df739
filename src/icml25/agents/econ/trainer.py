"""ECON's multi-agent RL over a response pool, the independent-learner ablation, and evaluation.

Paper: Xie et al., ICML 2025 (arXiv 2506.08292), Sec. 3.3-3.4 and the public code's learner.
One question is one step, so every TD target is the immediate reward (``y = r``). Per update, on
a batch of questions:

* stage 1: each agent's belief ``b_i`` (:class:`BeliefNetwork`); stage 2: BNE refinement of the
  beliefs (:func:`bne_refine_beliefs`); group representation ``E`` (:class:`BeliefEncoder`);
* actions ``a_i ~ softmax(logits_i)`` over the decoding-strategy grid; responses and the rewards
  ``r_i = a . (AL, TS, CC)`` are read from the empirical game of the pool (commitment = plurality
  vote in training, our stand-in for an LLM call per episode);
* losses: per-agent TD ``(Q_i - r_i)^2``; global TD ``(Q_tot - r_tot)^2`` with ``r_tot`` the mean
  agent reward; ``L_SD = sum_i (1 - cos(P F_i, emb(C)))^2``; mixer loss
  ``L_TD^tot + lambda_SD L_SD + lambda_m sum_i (Q_i - Q_tot)^2``; encoder loss
  ``L_TD^tot + lambda_e sum_i L_TD^i``; belief loss ``sum_i L_TD^i``;
* the equilibrium step (our fix, the public code never optimises the strategy against Q): each
  agent's policy follows the policy gradient of its own critic, advantage
  ``Q_i(b_i, a_i) - sum_a pi_i(a) Q_i(b_i, a)``, plus an entropy bonus. Each critic estimates the
  agent's expected reward against the others' current strategies, so the policies move toward
  mutual best responses - a Bayesian Nash equilibrium of the question-typed game.

The ablation :class:`IndependentLearners` keeps the belief networks and the policy gradient but
trains each agent only on its own correctness, with no BNE step, encoder, mixer or ``L_SD``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields

from .agents import ResponsePool, majority_vote
from .game import bayesian_nash_conv
from .networks import BeliefEncoder, BeliefNetwork, ECONMixer, bne_refine_beliefs
from .problems import answers_match
from .rewards import DynamicRewardWeights, RewardModel

__all__ = [
    "ECONConfig",
    "EmpiricalGame",
    "ECONSystem",
    "ECONTrainer",
    "IndependentLearners",
    "TrainLog",
    "Decision",
]


@dataclass(frozen=True)
class ECONConfig:
    """Networks and training of ECON (defaults: the public code's values where they fit a CPU).

    Args:
        belief_dim, hidden, group_dim, mixer_hidden, mixing_dim: network widths (code: 128, 256,
            128, -, 32).
        heads: attention heads of the belief encoder.
        lr: Adam learning rate (1e-3 in the code) for beliefs, encoder and mixer.
        lambda_sd, lambda_m, lambda_e: loss weights (0.1 each).
        entropy: entropy bonus of the policy gradient (our choice).
        grad_clip: gradient-norm clip (10).
        batch_size: questions per update (16).
        steps: updates.
        bne_step, bne_iters, bne_tol: two-stage coordination (0.1, 5, 0.01).
        use_others: belief networks also read the others' previous responses.
        reward_weights: fixed (AL, TS, CC) weights (0.3, 0.5, 0.2).
        team_reward: every agent is trained on one team reward, the mean of the agents' shaped
            rewards (the public code's environment returns one reward per step: a common-payoff
            game); ``False`` trains agent ``i`` on its own shaped reward ``r_i`` (a general-sum
            game; our earlier default).
        dynamic_weights: learn the reward weights instead (initial 0.4, 0.4, 0.2).
        eval_every: NashConv/regret logging period (updates).
    """

    belief_dim: int = 64
    hidden: int = 128
    group_dim: int = 64
    mixer_hidden: int = 32
    mixing_dim: int = 32
    heads: int = 4
    lr: float = 1e-3
    lambda_sd: float = 0.1
    lambda_m: float = 0.1
    lambda_e: float = 0.1
    entropy: float = 0.01
    grad_clip: float = 10.0
    batch_size: int = 16
    steps: int = 200
    bne_step: float = 0.1
    bne_iters: int = 5
    bne_tol: float = 0.01
    use_others: bool = True
    reward_weights: tuple[float, float, float] = (0.3, 0.5, 0.2)
    dynamic_weights: bool = False
    team_reward: bool = True
    eval_every: int = 20

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "belief_dim",
                "hidden",
                "group_dim",
                "mixer_hidden",
                "mixing_dim",
                "heads",
                "batch_size",
                "steps",
                "bne_iters",
                "eval_every",
            ),
            positive=("lr", "grad_clip", "bne_step", "bne_tol"),
            non_negative=("lambda_sd", "lambda_m", "lambda_e", "entropy"),
        )


class EmpiricalGame:
    """The pool as a Bayesian game: per question, every joint strategy's reward components.

    ``components[q]`` is ``(A^N, N, 3)`` (AL, TS, CC), ``team[q]`` ``(A^N,)`` is the commitment's
    correctness, ``commit_emb[q]`` ``(A^N, d)``; the commitment is the plurality answer of the
    joint responses and its embedding the normalised mean of the responses that gave it.
    """

    def __init__(self, pool: ResponsePool, questions: Sequence[int] | None = None) -> None:
        self.pool = pool
        a_n, n = len(pool.grid), pool.n_agents
        self.n_actions, self.n_agents = a_n, n
        self.joints = list(itertools.product(range(a_n), repeat=n))
        self.questions = list(range(len(pool.problems))) if questions is None else list(questions)
        if not self.questions:
            raise ValueError("questions must be non-empty")
        rm = RewardModel()
        d = pool.embeddings.shape[-1]
        self.components: dict[int, np.ndarray] = {}
        self.team: dict[int, np.ndarray] = {}
        self.commit_emb: dict[int, np.ndarray] = {}
        agents = np.arange(n)
        for q in self.questions:
            comp = np.zeros((len(self.joints), n, 3))
            team = np.zeros(len(self.joints))
            ce = np.zeros((len(self.joints), d), dtype=np.float32)
            truth = float(pool.problems[q].answer)
            for j, joint in enumerate(self.joints):
                acts = np.array(joint)
                answers = [pool.answer(q, a, i) for i, a in enumerate(joint)]
                commit = majority_vote(answers)
                emb = pool.embeddings[q, acts, agents]
                agree = [i for i in range(n) if answers_match(answers[i], commit)]
                c_emb = emb[agree].mean(0) if agree else np.zeros(d, dtype=np.float32)
                norm = float(np.linalg.norm(c_emb))
                c_emb = c_emb / norm if norm > 0 else c_emb
                parts = rm.components(
                    answers,
                    emb,
                    pool.formats[q, acts, agents],
                    pool.reasoning[q, acts, agents],
                    commit,
                    c_emb,
                    truth,
                )
                comp[j], team[j], ce[j] = parts.stacked(), parts.ts, c_emb
            self.components[q], self.team[q], self.commit_emb[q] = comp, team, ce
        self.radix = a_n ** np.arange(n - 1, -1, -1)

    def joint_index(self, actions: np.ndarray) -> np.ndarray:
        """``(..., N)`` actions -> flat joint indices."""
        return (np.asarray(actions) * self.radix).sum(-1)

    def payoffs(self, q: int, weights: np.ndarray) -> np.ndarray:
        """``(A, ..., A, N)`` agent rewards of question ``q`` under reward ``weights``."""
        shape = (self.n_actions,) * self.n_agents + (self.n_agents,)
        return (self.components[q] @ weights).reshape(shape)

    def common_payoffs(self, q: int) -> np.ndarray:
        """``(A, ..., A, N)`` common payoff of question ``q``: the commitment's correctness, the
        same for every agent. The one yardstick on which every learner's NashConv is compared
        (neither ECON's shaped rewards nor the ablation's own-correctness reward)."""
        shape = (self.n_actions,) * self.n_agents
        return np.repeat(self.team[q].reshape(shape)[..., None], self.n_agents, axis=-1)

    def oracle(self, q: int) -> float:
        """Best achievable commitment correctness over joint strategies."""
        return float(self.team[q].max())

    def expected_team(self, q: int, profile: np.ndarray) -> float:
        """Expected commitment correctness when agents play ``profile`` ``(N, A)`` independently."""
        p = np.ones(len(self.joints))
        for i in range(self.n_agents):
            p = p * profile[i][np.array(self.joints)[:, i]]
        return float(p @ self.team[q])


class ECONSystem(nn.Module):
    """Belief networks, belief encoder and mixer of N executors over a strategy grid."""

    def __init__(
        self,
        n_agents: int,
        obs_dim: int,
        prompt_table: Tensor,
        config: ECONConfig = ECONConfig(),
        *,
        coordinated: bool = True,
    ) -> None:
        super().__init__()
        if prompt_table.ndim != 2 or prompt_table.shape[0] < 1:
            raise ValueError(f"prompt_table must be (A, prompt_dim), got {tuple(prompt_table.shape)}")
        self.n_agents, self.config, self.coordinated = n_agents, config, coordinated
        a_n = prompt_table.shape[0]
        self.beliefs = nn.ModuleList(
            BeliefNetwork(
                obs_dim, a_n, belief_dim=config.belief_dim, hidden=config.hidden, use_others=config.use_others
            )
            for _ in range(n_agents)
        )
        scale = prompt_table.abs().amax(0).clamp_min(1e-6)
        self.register_buffer("prompt_table", (prompt_table / scale).float())
        self.encoder = BeliefEncoder(config.belief_dim, config.group_dim, heads=config.heads)
        self.mixer = ECONMixer(
            n_agents,
            config.group_dim,
            prompt_table.shape[1],
            obs_dim,
            hidden=config.mixer_hidden,
            mixing_dim=config.mixing_dim,
        )

    def forward(self, obs: Tensor, others: Tensor) -> dict[str, Tensor]:
        """``obs (B, d)``, ``others (B, N, d)`` -> beliefs, values ``(B, N, A)`` and policy logits."""
        nets: list[BeliefNetwork] = list(self.beliefs)  # type: ignore[arg-type]
        b1 = torch.stack([net.belief(obs, others[:, i]) for i, net in enumerate(nets)], dim=1)
        if self.coordinated:
            c = self.config
            b2, _ = bne_refine_beliefs(b1, step=c.bne_step, iters=c.bne_iters, tol=c.bne_tol)
        else:
            b2 = b1
        heads = [net.heads(b2[:, i]) for i, net in enumerate(nets)]
        return {
            "b1": b1,
            "b2": b2,
            "q": torch.stack([h[0] for h in heads], dim=1),
            "logits": torch.stack([h[1] for h in heads], dim=1),
        }


def _others(memory: Tensor) -> Tensor:
    """Mean of the other agents' remembered response embeddings, ``(B, N, d)``."""
    n = memory.shape[1]
    total = memory.sum(1, keepdim=True)
    return (total - memory) / max(n - 1, 1)


@dataclass
class TrainLog:
    """Per-update losses and rewards, and periodic NashConv / regret evaluations."""

    loss: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    regret: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    nash_conv: list[float] = field(default_factory=list)
    team_accuracy: list[float] = field(default_factory=list)


@dataclass
class Decision:
    """Greedy decisions on a question stream: actions, critic weights, vote answers, tokens, profiles."""

    actions: np.ndarray
    weights: np.ndarray
    vote_answers: list[float | None]
    executor_tokens: np.ndarray
    profiles: np.ndarray


class ECONTrainer:
    """Trains an :class:`ECONSystem` on an :class:`EmpiricalGame` (see the module docstring)."""

    coordinated = True

    def __init__(self, game: EmpiricalGame, config: ECONConfig = ECONConfig(), *, seed: int = 0) -> None:
        self.game, self.pool, self.config = game, game.pool, config
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        table = torch.tensor([s.embedding() for s in self.pool.grid], dtype=torch.float32)
        self.system = ECONSystem(
            self.pool.n_agents, self.pool.obs.shape[1], table, config, coordinated=self.coordinated
        )
        self.opt = torch.optim.Adam(self.system.parameters(), lr=config.lr)
        self.dynamic = DynamicRewardWeights() if config.dynamic_weights else None
        self.log = TrainLog()

    @property
    def reward_weights(self) -> np.ndarray:
        if self.dynamic is not None:
            return self.dynamic.weights
        return RewardModel(self.config.reward_weights).weights

    def _rewards(self, qs: np.ndarray, actions: np.ndarray) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        joint = self.game.joint_index(actions)
        comp = np.stack([self.game.components[q][j] for q, j in zip(qs, joint, strict=True)])
        team = np.array([self.game.team[q][j] for q, j in zip(qs, joint, strict=True)])
        ce = np.stack([self.game.commit_emb[q][j] for q, j in zip(qs, joint, strict=True)])
        correct = np.stack(
            [
                [
                    answers_match(self.pool.answer(q, a, i), float(self.pool.problems[q].answer))
                    for i, a in enumerate(acts)
                ]
                for q, acts in zip(qs, actions, strict=True)
            ]
        ).astype(np.float32)
        return (
            torch.tensor(comp, dtype=torch.float32),
            torch.tensor(team, dtype=torch.float32),
            torch.tensor(ce),
            torch.tensor(correct),
        )

    def _loss(
        self, out: dict[str, Tensor], act: Tensor, comp: Tensor, ce: Tensor, correct: Tensor
    ) -> tuple[Tensor, Tensor]:
        c = self.config
        w = torch.tensor(self.reward_weights, dtype=torch.float32)
        r = comp @ w  # (B, N)
        if c.team_reward:  # one team reward (public code): a common-payoff game
            r = r.mean(1, keepdim=True).expand_as(r)
        q_all = out["q"]
        q_chosen = q_all.gather(-1, act[..., None]).squeeze(-1)
        td_i = ((q_chosen - r) ** 2).mean(0)  # (N,)
        r_tot = r.mean(1)
        e_group = self.system.encoder(out["b2"])
        table: Tensor = self.system.prompt_table  # type: ignore[assignment]
        prompts = table[act]
        q_tot, proj = self.system.mixer(q_chosen, e_group, prompts)
        td_tot = ((q_tot - r_tot) ** 2).mean()
        sd = ((1 - F.cosine_similarity(proj, ce[:, None, :].expand_as(proj), dim=-1)) ** 2).sum(1).mean()
        consistency = ((q_chosen - q_tot.detach()[:, None]) ** 2).sum(1).mean()  # Q_tot as target (code)
        mix = td_tot + c.lambda_sd * sd + c.lambda_m * consistency
        enc = td_tot + c.lambda_e * td_i.sum()
        if self.dynamic is not None:
            self.dynamic.update(comp, q_chosen)
        return mix + enc + td_i.sum() + self._policy_loss(out, act, q_all), r

    def _policy_loss(self, out: dict[str, Tensor], act: Tensor, q_all: Tensor) -> Tensor:
        logp = torch.log_softmax(out["logits"], -1)
        probs = logp.exp()
        adv = (q_all.gather(-1, act[..., None]).squeeze(-1) - (probs * q_all).sum(-1)).detach()
        chosen = logp.gather(-1, act[..., None]).squeeze(-1)
        return -(chosen * adv).sum(1).mean() - self.config.entropy * (-(probs * logp).sum(-1)).sum(1).mean()

    def fit(
        self, questions: Sequence[int], *, progress: Callable[[int, int], None] | None = None
    ) -> TrainLog:
        """Run ``config.steps`` updates on batches drawn from ``questions``."""
        qs_all = np.asarray(list(questions))
        q_list = [int(q) for q in qs_all]
        if qs_all.size == 0:
            raise ValueError("questions must be non-empty")
        c, n = self.config, self.pool.n_agents
        d = self.pool.obs.shape[1]
        memory = torch.zeros(c.batch_size, n, d)
        agents = np.arange(n)
        for step in range(c.steps):
            qs = self.rng.choice(qs_all, size=c.batch_size)
            obs = torch.tensor(self.pool.obs[qs])
            out = self.system(obs, _others(memory))
            probs = torch.softmax(out["logits"], -1).detach()
            act = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1).reshape(c.batch_size, n)
            comp, team, ce, correct = self._rewards(qs, act.numpy())
            loss, r = self._loss(out, act, comp, ce, correct)
            self.opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.system.parameters(), c.grad_clip)
            self.opt.step()
            memory = torch.tensor(self.pool.embeddings[qs[:, None], act.numpy(), agents[None, :]])
            p = probs.numpy()
            self.log.loss.append(float(loss.detach()))
            self.log.reward.append(float(r.mean()))
            self.log.regret.append(
                float(
                    np.mean(
                        [self.game.oracle(q) - self.game.expected_team(q, p[b]) for b, q in enumerate(qs)]
                    )
                )
            )
            if (step + 1) % c.eval_every == 0 or step + 1 == c.steps:
                self.log.eval_steps.append(step + 1)
                self.log.nash_conv.append(self.nash_conv(q_list))
                dec = self.decide(q_list)
                self.log.team_accuracy.append(
                    float(
                        np.mean(
                            [
                                answers_match(v, float(self.pool.problems[q].answer))
                                for v, q in zip(dec.vote_answers, qs_all, strict=True)
                            ]
                        )
                    )
                )
            if progress:
                progress(step + 1, c.steps)
        return self.log

    @torch.no_grad()
    def decide(self, questions: Sequence[int]) -> Decision:
        """Greedy strategies on ``questions`` taken as a stream (each agent remembers the others'
        responses to the previous question); Q-weighted plurality vote as the commitment."""
        n, d = self.pool.n_agents, self.pool.obs.shape[1]
        memory = torch.zeros(1, n, d)
        acts, weights, votes, toks, profiles = [], [], [], [], []
        agents = np.arange(n)
        for q in questions:
            out = self.system(torch.tensor(self.pool.obs[[q]]), _others(memory))
            prof = torch.softmax(out["logits"][0], -1)
            a = prof.argmax(-1).numpy()
            qv = out["q"][0].gather(-1, torch.tensor(a)[:, None]).squeeze(-1)
            w = torch.softmax(qv, 0).numpy()
            votes.append(majority_vote([self.pool.answer(q, ai, i) for i, ai in enumerate(a)], w.tolist()))
            acts.append(a)
            weights.append(w)
            toks.append(self.pool.tokens[q, a, agents])
            profiles.append(prof.numpy())
            memory = torch.tensor(self.pool.embeddings[q, a, agents])[None]
        return Decision(np.array(acts), np.array(weights), votes, np.array(toks), np.array(profiles))

    def nash_conv(self, questions: Sequence[int]) -> float:
        """Bayesian NashConv of the learned stochastic profile on ``questions``, on the common
        payoff (the commitment's correctness, :meth:`EmpiricalGame.common_payoffs`), the same
        yardstick for ECON and for the ablation."""
        dec = self.decide(questions)
        pay = np.stack([self.game.common_payoffs(q) for q in questions])
        prof = dec.profiles.astype(np.float64)
        prof = prof / prof.sum(-1, keepdims=True)
        return bayesian_nash_conv(pay, prof)


class IndependentLearners(ECONTrainer):
    """Non-equilibrium ablation: each agent's critic and policy see only its own correctness."""

    coordinated = False

    def _loss(
        self, out: dict[str, Tensor], act: Tensor, comp: Tensor, ce: Tensor, correct: Tensor
    ) -> tuple[Tensor, Tensor]:
        q_all = out["q"]
        q_chosen = q_all.gather(-1, act[..., None]).squeeze(-1)
        td = ((q_chosen - correct) ** 2).mean(0).sum()
        return td + self._policy_loss(out, act, q_all), correct
