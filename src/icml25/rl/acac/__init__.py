"""Agent-Centric Actor-Critic for Asynchronous Multi-Agent Reinforcement Learning (ACAC).

Whiyoung Jung, Sunghoon Hong, Deunsol Yoon, Kanghoon Lee, Woohyung Lim. ICML 2025 (PMLR 267).
https://openreview.net/forum?id=323GZNnGqe · official code https://github.com/LGAI-Research/acac

Cooperative multi-agent RL with macro-actions (a MacDec-POMDP): agents' macro-actions last
different numbers of primitive steps, so agents decide at different times. Padding-based
centralised critics feed the critic every agent's latest observation at every joint decision step,
repeating the stale observations of busy agents. ACAC gives each agent a recurrent encoder over
its *own* macro-observations only, aligns the latest encodings at each joint step and aggregates
them with self-attention into one centralised value; PPO is trained with a GAE over the
variable-duration joint steps.

Implements: the macro-action ``ParallelEnv`` wrapper and BoxPushing (Sec. 5), a second
asynchronous task of ours (:class:`MacroMeeting`), the agent-centric critic with attention
aggregation and PopArt head (Sec. 4.1), the modified GAE over joint steps and its micro-level
ablation (Sec. 4.2), PPO with decentralised recurrent actors and epsilon-uniform exploration
(Sec. 4.3), and the padded / duplicated-observation critics used as baselines.
Not implemented: Overcooked, the Mac-IAICC / Mac-NIACC critics (per-agent padded critics with
n-step returns), the non-PPO ACAC-Vanilla variant.

Usage::

    result = train_acac(lambda: MacroBoxPushing(grid=6, horizon=100), critic="acac",
                        cfg=ACACConfig(total_steps=150_000), seed=0)
    result.steps_to(250.0)
"""

from .envs import MacroActionEnv, MacroBoxPushing, MacroMeeting
from .gae import JointSteps, compact, joint_step_gae, joint_steps, latest_index
from .learner import CRITICS, ACACConfig, Batch, TrainResult, advantages, collect, make_critic, train_acac
from .models import (
    AgentCentricCritic,
    AgentGRUActor,
    PaddedJointCritic,
    PopArt,
    TimeEmbedding,
    exploration_log_probs,
)

__all__ = [
    "ACACConfig",
    "AgentCentricCritic",
    "AgentGRUActor",
    "Batch",
    "advantages",
    "CRITICS",
    "JointSteps",
    "MacroActionEnv",
    "MacroBoxPushing",
    "MacroMeeting",
    "PaddedJointCritic",
    "PopArt",
    "TimeEmbedding",
    "TrainResult",
    "collect",
    "compact",
    "exploration_log_probs",
    "joint_step_gae",
    "joint_steps",
    "latest_index",
    "make_critic",
    "train_acac",
]
