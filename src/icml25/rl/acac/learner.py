"""PPO for asynchronous macro-action teams with a choice of critic (ACAC, ICML 2025, Sec. 4.2-4.3).

Jung et al., *Agent-Centric Actor-Critic for Asynchronous Multi-Agent Reinforcement Learning*,
ICML 2025, https://openreview.net/forum?id=323GZNnGqe.

One update (the repo's ``algs/acac.py``): ``n_envs`` copies of the environment (32 in ``bp6.json``)
run in lockstep until ``episodes_per_update`` (``train_freq``, 16) episodes have ended; those
episodes form the batch, the unfinished ones are dropped, and the env-step counter adds the length
of every ended episode (the official ``EnvsRunner.run`` and its 16-episode buffer; ``n_envs =
episodes_per_update`` runs every episode to its end, our earlier choice); compute joint steps,
the target critic's values and the modified GAE once; then ``ppo_epochs`` full-batch steps of the critic loss
``mean_k (G_k - V(h_k))^2`` (PopArt-normalised) and of every agent's PPO-clip loss over its own
decision points, each with its own Adam optimiser, no entropy bonus, no gradient clipping; hard
copy of the target critic every ``target_update_episodes`` episodes. Exploration mixes the policy
with a uniform one, ``eps`` decaying linearly in the official episode count (``episodes_per_update``
per update). Evaluation is greedy (``eps = 0``); the official runner samples from the policy in its
evaluation episodes. ``official_init=True`` initialises the MLP layers as the official ``Linear``
helper does (Xavier-uniform with the leaky-ReLU gain, zero bias) and the critic's aggregator as
GPT-2's ``_init_weights`` does (std 0.02); the default keeps PyTorch's initialisation, chosen after
seeing exploratory runs (BoxPushing 6x6, 1.2e5 steps, seeds 0-2, the official runner): with
PyTorch's initialisation ACAC pushed the big box in 2 of 3 seeds, with the official Linear init in
none (the official code solves 5 of 5 with it). Single runs (seed 0) place the failure in the
critic's initialisation (official init on the actors only: solved; on the critic only: not); adding
GPT-2's initialisation of the aggregator did not rescue it, nor did the official block's always-on
dropout (0.1) on top (tried in a scratch script; not part of this package); the official init
everywhere except the critic's encoder MLPs solved (84.6k steps), which places it in the Xavier init
of the critic's encoder MLPs. Round 8 made three official learner details the defaults
(:class:`ACACConfig`: the critic target ``A_K`` at an episode's last joint step, the official PopArt
statistics, time indices from 1); with them the official init pushed the big box on seed 1 (about
91k steps) but not on seed 0 (39.6), and with the last-step target alone on seed 0 (about 77k):
single seeds flip with any change of the trajectory, so PyTorch's initialisation stays the default
(the rule declared before those runs).

Time-outs are not terminal: an episode cut off at the horizon bootstraps its last joint step from
the target critic's value of the agents' histories at the horizon, ``R_K + Gamma_K V(h_T)``, as the
official learner bootstraps truncated episodes (``_get_gae`` uses ``terminate``, which only a box
reaching the goal sets). ``bootstrap_truncation=False`` treats a time-out as terminal instead.

The critic is the only thing that differs between arms: ``"acac"`` (agent-centric, ours),
``"duplicate"`` (agent-centric encoders on stale observations, the paper's ablation) and
``"padded"`` (one GRU over concatenated latest observations at every joint step, MAPPO-style).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields

from .envs import MacroActionEnv
from .gae import JointSteps, compact, joint_step_gae, joint_steps
from .models import (
    AgentCentricCritic,
    AgentGRUActor,
    PaddedJointCritic,
    PopArt,
    _HistoryEncoder,
    exploration_log_probs,
)

__all__ = [
    "ACACConfig",
    "Batch",
    "CRITICS",
    "TrainResult",
    "advantages",
    "collect",
    "make_critic",
    "official_init",
    "train_acac",
]

CriticKind = Literal["acac", "duplicate", "padded"]
CRITICS: tuple[str, ...] = ("acac", "duplicate", "padded")
# The time-embedding tables have ``horizon + 5`` rows (the official ``max_timestep + 5``) and the
# learner looks up times ``0 .. horizon`` plus the offset.
MAX_TIME_OFFSET = 4


@dataclass(frozen=True)
class ACACConfig:
    """Learner settings; defaults are the paper's BoxPushing 6x6 values (Sec. 5, repo ``bp6.json``).

    The official learner's details, each with a flag for the alternative:

    * ``official_last_target``: the critic's regression target at each episode's last joint step
      is the advantage ``A_K`` alone (the official ``_get_gae`` adds the value ``V(h_k)`` for
      ``k < K`` only); ``False`` uses ``A_K + V(h_K)`` like every other step.
    * ``official_popart``: PopArt statistics as the official ``popart.py`` computes them (variance
      floored at 1e-2, so the scale is 0.1 before the first update), and the target critic's
      values denormalised with the *online* critic's statistics (``_get_bootstrap`` calls
      ``joint_critic_net.value.denormalize`` on ``joint_critic_tgt_net``'s output); ``False``: scale 1
      before the first update and each critic denormalised with its own statistics.
    * ``time_offset``: the time embedding is looked up at primitive time ``t + time_offset``; the
      official runner and learner number steps from 1 (``step_count + 1``, ``arange(1, T + 1)``).
    * ``official_init``: see :func:`official_init`.
    """

    gamma: float = 0.98
    lam: float = 0.95
    micro_gae: bool = False
    episodes_per_update: int = 16
    ppo_epochs: int = 2
    clip: float = 0.05
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    actor_mlp: int = 32
    actor_rnn: int = 32
    critic_mlp: int = 32
    critic_rnn: int = 32
    n_heads: int = 2
    time_dim: int = 2
    popart: bool = True
    target_update_episodes: int = 64
    eps_start: float = 1.0
    eps_end: float = 0.01
    eps_stable_at: int = 30_000
    total_steps: int = 500_000
    eval_every: int = 5
    eval_episodes: int = 10
    bootstrap_truncation: bool = True
    n_envs: int = 32
    official_init: bool = False
    official_last_target: bool = True
    official_popart: bool = True
    time_offset: int = 1

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "episodes_per_update",
                "n_envs",
                "ppo_epochs",
                "actor_mlp",
                "actor_rnn",
                "critic_mlp",
                "critic_rnn",
                "n_heads",
                "time_dim",
                "target_update_episodes",
                "eps_stable_at",
                "total_steps",
                "eval_every",
                "eval_episodes",
            ),
            positive=("clip", "actor_lr", "critic_lr"),
            unit_interval=("gamma", "lam", "eps_start", "eps_end"),
        )
        offset = self.time_offset
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_TIME_OFFSET:
            raise ValueError(
                f"ACACConfig.time_offset must be an integer in [0, {MAX_TIME_OFFSET}], got {offset!r}"
            )
        if self.gamma == 0.0:
            raise ValueError("ACACConfig.gamma must be > 0")
        if self.n_envs < self.episodes_per_update:
            raise ValueError(
                f"ACACConfig.n_envs ({self.n_envs}) must be >= episodes_per_update "
                f"({self.episodes_per_update})"
            )


@dataclass
class Batch:
    """Episodes in primitive-time layout (``b`` episodes, ``t`` = horizon, ``n`` agents).

    ``obs (b, t, n, d)`` latest macro-observations; ``starts (b, t, n)`` decision flags; ``actions``,
    ``logp (b, t, n)`` chosen macro-actions and their behaviour log-probabilities at decisions;
    ``rewards (b, t)`` team rewards; ``valid (b, t)`` the step happened; ``returns (b,)`` undiscounted.
    ``terminated (b,)`` the episode ended in a terminal state (not by the time limit);
    ``final_obs (b, n, d)`` and ``final_starts (b, n)`` the latest macro-observations and decision
    flags after the last step (where a truncated episode bootstraps). The last two default to zeros
    and the episode then counts as terminated.
    """

    obs: Tensor
    starts: Tensor
    actions: Tensor
    logp: Tensor
    rewards: Tensor
    valid: Tensor
    returns: np.ndarray
    terminated: Tensor | None = None
    final_obs: Tensor | None = None
    final_starts: Tensor | None = None
    env_steps: int | None = None

    @property
    def steps(self) -> int:
        """Environment steps this collection counts: every finished episode's length (``env_steps``,
        which includes finished episodes that were not kept), else the kept episodes' steps."""
        return int(self.valid.sum()) if self.env_steps is None else self.env_steps

    def select(self, rows: Tensor) -> Batch:
        """The episodes ``rows`` only (``env_steps`` unchanged)."""
        pick = lambda x: None if x is None else x[rows]  # noqa: E731
        return Batch(
            self.obs[rows],
            self.starts[rows],
            self.actions[rows],
            self.logp[rows],
            self.rewards[rows],
            self.valid[rows],
            self.returns[rows.numpy()],
            pick(self.terminated),
            pick(self.final_obs),
            pick(self.final_starts),
            self.env_steps,
        )


def make_critic(kind: str, env: MacroActionEnv, cfg: ACACConfig) -> nn.Module:
    """The critic of arm ``kind`` (one of :data:`CRITICS`) for ``env``."""
    common = dict(
        mlp=cfg.critic_mlp,
        rnn=cfg.critic_rnn,
        time_dim=cfg.time_dim,
        max_t=env.horizon + 5,
        popart=cfg.popart,
        popart_official=cfg.official_popart,
    )
    if kind == "acac":
        return AgentCentricCritic(env.n_agents, env.obs_dim, n_heads=cfg.n_heads, **common)  # type: ignore[arg-type]
    if kind == "duplicate":
        return AgentCentricCritic(env.n_agents, env.obs_dim, n_heads=cfg.n_heads, duplicate=True, **common)  # type: ignore[arg-type]
    if kind == "padded":
        return PaddedJointCritic(env.n_agents, env.obs_dim, **common)  # type: ignore[arg-type]
    raise ValueError(f"critic must be one of {CRITICS}, got {kind!r}")


GPT2_INIT_STD = 0.02  # HuggingFace GPT2Config.initializer_range


@torch.no_grad()
def official_init(module: nn.Module) -> None:
    """The official initialisation.

    * The official ``Linear`` helper: Xavier-uniform weights with the leaky-ReLU gain and zero
      biases for every MLP layer of the history encoders and the actor's head; the actor's output
      layer gets gain 1 ('linear').
    * The aggregator of :class:`AgentCentricCritic` as HuggingFace's ``GPT2Model._init_weights``
      initialises the official GPT-2 block: every linear weight normal with std 0.02 and zero bias,
      the two output projections (``c_proj`` of attention and of the MLP) with std
      ``0.02 / sqrt(2 n_layer)`` (``n_layer = 1``), LayerNorms at ones and zeros. Without this the
      block keeps PyTorch's default, whose weights are about 5x larger (std ~0.1 at width 32).
    * GRUs and the PopArt head keep PyTorch's defaults (the official ones keep theirs too).
    """
    leaky = nn.init.calculate_gain("leaky_relu")
    layers: list[tuple[nn.Linear, float]] = []
    encoders = [m for m in module.modules() if isinstance(m, _HistoryEncoder)]
    for enc in encoders:
        layers += [(m, leaky) for m in enc.mlp.modules() if isinstance(m, nn.Linear)]
    if isinstance(module, AgentGRUActor):
        head = [m for m in module.out.modules() if isinstance(m, nn.Linear)]
        layers += [(m, leaky) for m in head[:-1]] + [(head[-1], 1.0)]
    for layer, gain in layers:
        nn.init.xavier_uniform_(layer.weight, gain=gain)
        nn.init.zeros_(layer.bias)
    if isinstance(module, AgentCentricCritic) and module.attention:
        for name, sub in module.block.named_modules():
            if isinstance(sub, nn.Linear):
                proj = name.endswith(("proj", "fc2"))  # GPT-2's c_proj of attention and of the MLP
                nn.init.normal_(sub.weight, 0.0, GPT2_INIT_STD / math.sqrt(2) if proj else GPT2_INIT_STD)
                nn.init.zeros_(sub.bias)
            elif isinstance(sub, nn.LayerNorm):
                nn.init.ones_(sub.weight)
                nn.init.zeros_(sub.bias)


@torch.no_grad()
def collect(
    envs: list[MacroActionEnv],
    actors: list[AgentGRUActor],
    *,
    eps: float,
    greedy: bool,
    generator: torch.Generator,
    seeds: list[int],
    keep: int | None = None,
    time_offset: int = 1,
) -> Batch:
    """Run one episode in each of ``envs`` (reset with ``seeds``) with the decentralised actors.

    Each agent's GRU state advances only at its own decision points; busy agents send ``None``.

    ``keep`` (the official ``EnvsRunner.run(n_epis=keep)``): the envs step in lockstep until at least
    ``keep`` episodes have ended; the unfinished ones are dropped, the batch holds the last ``keep``
    episodes to end (in order of ending, ties by env index: the official buffer is a deque of
    ``keep`` episodes) and ``env_steps`` counts the steps of every ended episode. ``None`` runs every
    episode to its end.

    ``time_offset``: the actors' time embedding is looked up at primitive time ``t + time_offset``
    (1: the official numbering from 1).
    """
    if keep is not None and not 1 <= keep <= len(envs):
        raise ValueError(f"keep must lie in [1, {len(envs)}], got {keep}")
    if not 0 <= time_offset <= MAX_TIME_OFFSET:
        raise ValueError(f"time_offset must lie in [0, {MAX_TIME_OFFSET}], got {time_offset}")
    if not envs or len(envs) != len(seeds):
        raise ValueError("envs must be non-empty and match seeds")
    env0 = envs[0]
    E, T, n, d = len(envs), env0.horizon, env0.n_agents, env0.obs_dim
    names = env0.possible_agents
    obs = torch.zeros(E, T, n, d)
    starts = torch.zeros(E, T, n, dtype=torch.bool)
    actions = torch.zeros(E, T, n, dtype=torch.long)
    logp = torch.zeros(E, T, n)
    rewards_np = np.zeros((E, T), dtype=np.float32)
    valid = torch.zeros(E, T, dtype=torch.bool)
    # per-step state lives in numpy (one tensor conversion per step, not per env and agent)
    cur_np = np.zeros((E, n, d), dtype=np.float32)
    dec_np = np.zeros((E, n), dtype=bool)
    for e, (env, s) in enumerate(zip(envs, seeds, strict=True)):
        o, info = env.reset(seed=s)
        for i, a in enumerate(names):
            cur_np[e, i] = o[a]
            dec_np[e, i] = bool(info[a]["mac_done"])
    cur, dec = torch.from_numpy(cur_np.copy()), torch.from_numpy(dec_np.copy())
    alive = np.ones(E, dtype=bool)
    h = [torch.zeros(1, E, a.rnn) for a in actors]
    totals = np.zeros(E)
    terminated = torch.zeros(E, dtype=torch.bool)
    ended_at = np.full(E, -1)
    for t in range(T):
        if not alive.any() or (keep is not None and int((ended_at >= 0).sum()) >= keep):
            break
        alive_t = torch.as_tensor(alive)
        live_dec = dec & alive_t[:, None]
        for i, actor in enumerate(actors):
            if not live_dec[:, i].any():
                continue
            emb = actor.time.table[t + time_offset].expand(E, 1, -1)
            logits, h_new = actor.step(cur[:, i : i + 1], emb, h[i])
            h[i] = torch.where(live_dec[None, :, i, None], h_new, h[i])
            lp = exploration_log_probs(logits[:, 0], 0.0 if greedy else eps)
            a_i = lp.argmax(-1) if greedy else torch.multinomial(lp.exp(), 1, generator=generator)[:, 0]
            actions[:, t, i] = torch.where(live_dec[:, i], a_i, 0)
            logp[:, t, i] = torch.where(live_dec[:, i], lp.gather(-1, a_i[:, None])[:, 0], 0.0)
        obs[:, t] = cur
        starts[:, t] = live_dec
        valid[:, t] = alive_t
        acts_t = actions[:, t].tolist()
        for e in np.flatnonzero(alive).tolist():
            r, done, latest, term, trunc = envs[e].step_macros(acts_t[e])
            rewards_np[e, t] = r
            totals[e] += r
            for i in range(n):
                if done[i]:
                    cur_np[e, i] = latest[i]
                dec_np[e, i] = done[i]
            if term or trunc:
                alive[e] = False
                terminated[e] = term
                ended_at[e] = t + 1
        cur, dec = torch.from_numpy(cur_np.copy()), torch.from_numpy(dec_np.copy())
    rewards = torch.from_numpy(rewards_np)
    batch = Batch(obs, starts, actions, logp, rewards, valid, totals, terminated, cur, dec)
    if keep is None:
        return batch
    ended = np.flatnonzero(ended_at >= 0)
    order = sorted(ended.tolist(), key=lambda e: (ended_at[e], e))
    rows = torch.as_tensor(sorted(order[-keep:]), dtype=torch.long)
    batch.env_steps = int(ended_at[ended].sum())
    return batch.select(rows)


def _eps_at(cfg: ACACConfig, episodes: int) -> float:
    frac = min(episodes / cfg.eps_stable_at, 1.0)
    return cfg.eps_start + frac * (cfg.eps_end - cfg.eps_start)


@dataclass
class TrainResult:
    """Greedy evaluation curve of one training run: ``(env_steps, mean return)`` per evaluation."""

    steps: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    train_returns: list[float] = field(default_factory=list)
    critic_losses: list[float] = field(default_factory=list)

    def steps_to(self, threshold: float) -> float:
        """First evaluated env-step count with return >= ``threshold`` (``inf`` if never)."""
        for s, r in zip(self.steps, self.returns, strict=True):
            if r >= threshold:
                return float(s)
        return math.inf


def _values(critic: nn.Module, batch: Batch, js_joint: Tensor, t_index: Tensor) -> Tensor:
    out: Tensor = critic(batch.obs, batch.starts, js_joint, t_index)
    return out


def train_acac(
    env_fn: Callable[[], MacroActionEnv],
    critic: str = "acac",
    cfg: ACACConfig | None = None,
    seed: int = 0,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> TrainResult:
    """Train decentralised actors with PPO, the modified GAE and critic ``critic`` for ``cfg.total_steps``.

    Args:
        env_fn: builds one environment (called ``n_envs + eval_episodes`` times).
        critic: ``"acac"``, ``"duplicate"`` or ``"padded"``.
        cfg: learner settings (default :class:`ACACConfig`).
        seed: seeds the networks, the action sampling and the environment resets.
        progress: called with ``(env_steps, total_steps)`` after each update.

    Returns:
        :class:`TrainResult` with the greedy evaluation curve (evaluated before training and every
        ``eval_every`` updates, on ``eval_episodes`` episodes with their own reset seeds).
    """
    cfg = cfg or ACACConfig()
    if critic not in CRITICS:
        raise ValueError(f"critic must be one of {CRITICS}, got {critic!r}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    envs = [env_fn() for _ in range(cfg.n_envs)]
    eval_envs = [env_fn() for _ in range(cfg.eval_episodes)]
    env0 = envs[0]
    actors = [
        AgentGRUActor(
            env0.obs_dim,
            env0.n_macro_actions,
            mlp=cfg.actor_mlp,
            rnn=cfg.actor_rnn,
            time_dim=cfg.time_dim,
            max_t=env0.horizon + 5,
        )
        for _ in range(env0.n_agents)
    ]
    value_fn = make_critic(critic, env0, cfg)
    if cfg.official_init:
        for actor in actors:
            official_init(actor)
        official_init(value_fn)
    target = copy.deepcopy(value_fn)
    actor_opts = [torch.optim.Adam(a.parameters(), lr=cfg.actor_lr) for a in actors]
    critic_opt = torch.optim.Adam(value_fn.parameters(), lr=cfg.critic_lr)
    head = value_fn.head
    assert isinstance(head, PopArt)
    result = TrainResult()
    eval_seed_base = 1_000_003 * (seed + 1)

    def evaluate(env_steps: int) -> None:
        seeds = [eval_seed_base + j for j in range(cfg.eval_episodes)]
        b = collect(
            eval_envs, actors, eps=0.0, greedy=True, generator=gen, seeds=seeds, time_offset=cfg.time_offset
        )
        result.steps.append(env_steps)
        result.returns.append(float(b.returns.mean()))

    env_steps, episodes, updates, last_copy = 0, 0, 0, 0
    evaluate(0)
    while env_steps < cfg.total_steps:
        eps = _eps_at(cfg, episodes)
        seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(envs))]
        batch = collect(
            envs,
            actors,
            eps=eps,
            greedy=False,
            generator=gen,
            seeds=seeds,
            keep=cfg.episodes_per_update,
            time_offset=cfg.time_offset,
        )
        env_steps += batch.steps
        episodes += cfg.episodes_per_update
        updates += 1
        result.train_returns.append(float(batch.returns.mean()))
        loss = _update(cfg, batch, actors, actor_opts, value_fn, target, critic_opt, head, eps)
        result.critic_losses.append(loss)
        if episodes - last_copy >= cfg.target_update_episodes:
            target.load_state_dict(value_fn.state_dict())
            last_copy = episodes
        if updates % cfg.eval_every == 0 or env_steps >= cfg.total_steps:
            evaluate(env_steps)
        if progress is not None:
            progress(min(env_steps, cfg.total_steps), cfg.total_steps)
    return result


def _with_final_step(batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
    """Observations, decision flags and time indices with one more column: the state after each
    episode's last step, placed right after it (the bootstrap point of a time-out)."""
    b, t, n, d = batch.obs.shape
    lens = batch.valid.sum(1)
    rows = torch.arange(b)
    obs = torch.cat([batch.obs, batch.obs.new_zeros(b, 1, n, d)], 1)
    starts = torch.cat([batch.starts, torch.zeros(b, 1, n, dtype=torch.bool)], 1)
    if batch.final_obs is not None and batch.final_starts is not None:
        obs[rows, lens] = batch.final_obs
        starts[rows, lens] = batch.final_starts
    return obs, starts, torch.arange(t + 1).expand(b, t + 1)


@torch.no_grad()
def advantages(
    cfg: ACACConfig, batch: Batch, target: nn.Module, online: nn.Module | None = None
) -> tuple[JointSteps, Tensor, Tensor]:
    """The joint steps of ``batch`` and the modified GAE's advantages and returns ``(b, k)``.

    Values come from ``target``, denormalised by its own PopArt head, or with
    ``cfg.official_popart`` by the head of ``online`` (the critic being trained) where given, as the
    official ``_get_bootstrap`` does. With ``cfg.official_last_target`` the return at each
    episode's last joint step is its advantage alone (the official ``_get_gae``). The last joint
    step of an episode that ended by the time limit bootstraps from the value of the histories after
    its last step, unless ``cfg.bootstrap_truncation`` is False; a terminated episode does not
    bootstrap.
    """
    b, t = batch.valid.shape
    js = joint_steps(batch.starts, batch.rewards, batch.valid, cfg.gamma)
    lens = batch.valid.sum(1)
    rows = torch.arange(b)
    obs, starts, t_ext = _with_final_step(batch)
    joint = torch.cat([js.is_joint, torch.zeros(b, 1, dtype=torch.bool)], 1)
    joint[rows, lens] = True
    raw = target(obs, starts, joint, t_ext + cfg.time_offset)
    scaler = online if cfg.official_popart and online is not None else target
    v_all = scaler.head.denormalize(raw)  # type: ignore[union-attr,operator]
    v, _ = compact(v_all[:, :t], js.is_joint)
    terminated = batch.terminated if batch.terminated is not None else torch.ones(b, dtype=torch.bool)
    if not cfg.bootstrap_truncation:
        terminated = torch.ones_like(terminated)
    last = (js.mask.sum(1) - 1).clamp_min(0)
    v_next = torch.cat([v[:, 1:], torch.zeros(b, 1)], 1)
    v_next[rows, last] = torch.where(terminated, 0.0, v_all[rows, lens])
    done = js.done & terminated[:, None]
    adv, ret = joint_step_gae(
        js.reward,
        js.discount,
        v,
        v_next,
        done,
        cfg.lam,
        micro=cfg.micro_gae,
        durations=js.duration,
        mask=js.mask,
        official_last=cfg.official_last_target,
    )
    return js, adv, ret


def _update(
    cfg: ACACConfig,
    batch: Batch,
    actors: list[AgentGRUActor],
    actor_opts: Sequence[torch.optim.Optimizer],
    value_fn: nn.Module,
    target: nn.Module,
    critic_opt: torch.optim.Optimizer,
    head: PopArt,
    eps: float,
) -> float:
    b, t = batch.valid.shape
    t_index = torch.arange(t).expand(b, t) + cfg.time_offset
    js, adv, ret = advantages(cfg, batch, target, value_fn)
    with torch.no_grad():
        head.update(ret[js.mask])  # type: ignore[operator]
        ret_norm = head.normalize(ret)  # type: ignore[operator]
        # Advantage of each primitive time that starts a joint step, for the agents deciding there.
        adv_t = torch.zeros(b, t)
        b_idx, t_idx = js.is_joint.nonzero(as_tuple=True)
        pos = js.is_joint.long().cumsum(1) - 1
        adv_t[b_idx, t_idx] = adv[b_idx, pos[b_idx, t_idx]]
    loss_value = 0.0
    for _ in range(cfg.ppo_epochs):
        v_pred, _ = compact(_values(value_fn, batch, js.is_joint, t_index), js.is_joint)
        critic_loss = ((ret_norm - v_pred) ** 2)[js.mask].mean()  # mean_k (G_k - V(h_k))^2
        critic_opt.zero_grad()
        critic_loss.backward()  # type: ignore[no-untyped-call]
        critic_opt.step()
        loss_value = float(critic_loss.detach())
        for i, (actor, opt) in enumerate(zip(actors, actor_opts, strict=True)):
            own = batch.starts[..., i]
            seq, seq_mask = compact(batch.obs[:, :, i], own)
            t_own, _ = compact(t_index, own)
            logits, _ = actor(seq, t_own)
            lp_all = exploration_log_probs(logits, eps)
            a_own, _ = compact(batch.actions[..., i], own)
            lp = lp_all.gather(-1, a_own[..., None])[..., 0]
            old, _ = compact(batch.logp[..., i], own)
            a_hat, _ = compact(adv_t, own)
            ratio = torch.exp(lp - old)
            surr = torch.minimum(ratio * a_hat, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a_hat)
            actor_loss = -surr[seq_mask].mean()
            if not actor_loss.requires_grad:  # eps = 1: the behaviour policy is uniform, no gradient
                continue
            opt.zero_grad()
            actor_loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
    return loss_value
