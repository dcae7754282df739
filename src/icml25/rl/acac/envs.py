"""Macro-action multi-agent environments with the PettingZoo ``ParallelEnv`` API.

Jung et al., *Agent-Centric Actor-Critic for Asynchronous Multi-Agent Reinforcement Learning*,
ICML 2025 (https://openreview.net/forum?id=323GZNnGqe). The setting is a MacDec-POMDP (Sec. 2 of
the paper): each agent runs a temporally extended macro-action for a variable number of primitive
steps, receives a new macro-observation only when that macro-action ends and then chooses its
next one. Agents therefore decide at different times.

:class:`MacroActionEnv` is the wrapper that turns primitive-step dynamics plus per-agent
macro-action controllers into that interface. One call of :meth:`MacroActionEnv.step` advances one
*primitive* step; ``actions[agent]`` must be a macro-action index for agents at a decision point
(``infos[agent]["mac_done"]`` was True) and ``None`` (or anything, ignored) for agents still busy.
The reward is shared by the team. Subclasses supply ``_reset_state``, ``_advance`` and
``_observe``; any environment written this way runs unchanged with the learners of this package.

Two tasks are included:

* :class:`MacroBoxPushing` -- the paper's BoxPushing domain (Sec. 5; rules as in the official
  ``box_pushing_MA`` environment): two agents must push a big box together (+300) rather than a
  small one alone (+20); -0.1 per step; -10 for a bad push.
* :class:`MacroMeeting` -- a second asynchronous cooperative task of ours: agents on a line
  walk to landmarks (a walk lasts as many steps as the distance) and are rewarded only when
  all of them stand on the far landmark and signal together; a near landmark gives each agent a
  small solitary reward. Macro-action durations differ by agent and by choice.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from icml25.core.validate import check_positive

__all__ = ["MacroActionEnv", "MacroBoxPushing", "MacroMeeting"]


class MacroActionEnv(ParallelEnv):  # type: ignore[misc]
    """Base wrapper: primitive dynamics + macro-action bookkeeping in the ``ParallelEnv`` API.

    Attributes:
        possible_agents / agents: agent names (``agents`` is empty once the episode is over).
        horizon: primitive steps after which the episode is truncated.
        n_macro_actions, obs_dim: sizes of every agent's action and observation spaces.

    ``step`` returns ``(obs, rewards, terminations, truncations, infos)``. ``obs[agent]`` is the
    agent's *macro-observation*: it changes only when the agent's macro-action ends.
    ``infos[agent]`` holds ``mac_done`` (the agent decides next step), ``t`` (the primitive time
    of the next decision step, i.e. steps taken so far) and ``team_reward``.
    """

    metadata: dict[str, Any] = {"name": "macro_action_env", "render_modes": []}
    n_macro_actions: int
    obs_dim: int

    def __init__(self, n_agents: int, horizon: int) -> None:
        check_positive("n_agents", n_agents, integer=True)
        check_positive("horizon", horizon, integer=True)
        self.n_agents = n_agents
        self.horizon = horizon
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents: list[str] = []
        self._rng = np.random.default_rng()
        self.t = 0
        self._macro = [-1] * n_agents
        self._mac_done = [True] * n_agents
        self._obs = [np.zeros(self.obs_dim, dtype=np.float32) for _ in range(n_agents)]

    # -- spaces ---------------------------------------------------------------------------------

    @functools.cache  # noqa: B019 - spaces are immutable per env
    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.MultiBinary(self.obs_dim)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(self.n_macro_actions)

    # -- hooks for subclasses -------------------------------------------------------------------

    def _reset_state(self, rng: np.random.Generator) -> None:
        raise NotImplementedError

    def _advance(self, macros: list[int], starting: list[bool]) -> tuple[float, list[bool], bool]:
        """One primitive step. Returns (team reward, which macro-actions ended, terminated)."""
        raise NotImplementedError

    def _observe(self, i: int) -> np.ndarray:
        raise NotImplementedError

    def _initial_obs(self, i: int) -> np.ndarray:
        return self._observe(i)

    # -- ParallelEnv API ------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._reset_state(self._rng)
        self.agents = list(self.possible_agents)
        self.t = 0
        self._macro = [-1] * self.n_agents
        self._mac_done = [True] * self.n_agents
        self._obs = [self._initial_obs(i).astype(np.float32) for i in range(self.n_agents)]
        obs = {a: self._obs[i].copy() for i, a in enumerate(self.possible_agents)}
        infos = {a: {"mac_done": True, "t": 0, "team_reward": 0.0} for a in self.possible_agents}
        return obs, infos

    def step(
        self, actions: dict[str, int | None]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        if not self.agents:
            raise ValueError("step called on a finished episode; call reset first")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict agent -> int | None, got {type(actions).__name__}")
        starting = list(self._mac_done)
        for i, agent in enumerate(self.possible_agents):
            if not starting[i]:
                continue
            a = actions.get(agent)
            if a is None or isinstance(a, bool) or not isinstance(a, int | np.integer):
                raise ValueError(
                    f"actions[{agent!r}] must be a macro-action index (agent is at a decision point)"
                )
            if not 0 <= int(a) < self.n_macro_actions:
                raise ValueError(f"actions[{agent!r}] must lie in [0, {self.n_macro_actions}), got {a}")
            self._macro[i] = int(a)
        reward, terminated, truncated = self._step_core(starting)
        obs = {a: self._obs[i].copy() for i, a in enumerate(self.possible_agents)}
        rewards = {a: float(reward) for a in self.possible_agents}
        terms = {a: bool(terminated) for a in self.possible_agents}
        truncs = {a: bool(truncated) for a in self.possible_agents}
        infos = {
            a: {"mac_done": self._mac_done[i], "t": self.t, "team_reward": float(reward)}
            for i, a in enumerate(self.possible_agents)
        }
        return obs, rewards, terms, truncs, infos

    def _step_core(self, starting: list[bool]) -> tuple[float, bool, bool]:
        """Advance one primitive step with ``self._macro`` set: (team reward, terminated, truncated)."""
        reward, ended, terminated = self._advance(list(self._macro), starting)
        self.t += 1
        truncated = not terminated and self.t >= self.horizon
        self._mac_done = [bool(e) for e in ended]
        for i in range(self.n_agents):
            if self._mac_done[i]:
                self._obs[i] = self._observe(i).astype(np.float32)
        if terminated or truncated:
            self.agents = []
        return float(reward), bool(terminated), bool(truncated)

    def step_macros(self, macros: list[int]) -> tuple[float, list[bool], list[np.ndarray], bool, bool]:
        """:meth:`step` without the dict API (the learners' rollout hot path; same dynamics).

        Args:
            macros: ``n_agents`` macro-action indices; entry ``i`` is used only where agent ``i``
                is at a decision point (``mac_done``), as ``None`` actions are in :meth:`step`.

        Returns:
            ``(team reward, mac_done per agent, latest macro-observations (not copies), terminated,
            truncated)``.
        """
        if not self.agents:
            raise ValueError("step_macros called on a finished episode; call reset first")
        if len(macros) != self.n_agents:
            raise ValueError(f"macros must hold {self.n_agents} entries, got {len(macros)}")
        starting = list(self._mac_done)
        for i in range(self.n_agents):
            if starting[i]:
                a = macros[i]
                if not 0 <= a < self.n_macro_actions:
                    raise ValueError(f"macros[{i}] must lie in [0, {self.n_macro_actions}), got {a}")
                self._macro[i] = a
        reward, terminated, truncated = self._step_core(starting)
        return reward, self._mac_done, self._obs, terminated, truncated


# ------------------------------------------------------------------------------------------------
# BoxPushing
# ------------------------------------------------------------------------------------------------

_DIRS = ((0, 1), (1, 0), (0, -1), (-1, 0))  # orientation 0 = N (+y), 1 = E, 2 = S, 3 = W
_SMALL, _BIG, _EMPTY, _WALL, _MATE = range(5)
_TURN_COST = np.array(  # _TURN_COST[orientation][direction]: 0 ahead, 0.1 sideways, 0.2 behind
    [[0.0, 0.1, 0.2, 0.1], [0.1, 0.0, 0.1, 0.2], [0.2, 0.1, 0.0, 0.1], [0.1, 0.2, 0.1, 0.0]]
)
_TURN_COST_ROWS: tuple[tuple[float, ...], ...] = tuple(tuple(float(c) for c in row) for row in _TURN_COST)


class MacroBoxPushing(MacroActionEnv):
    """BoxPushing with macro-actions (the paper's Sec. 5 domain), two agents on a ``grid`` x ``grid`` map.

    The rules are those of the official environment (``box_pushing_MA.py`` and
    ``box_pushing_MA_core.py`` of github.com/LGAI-Research/acac, class ``BoxPushing_harder``);
    a parity test replays seeded macro-action episodes against traces recorded from that code and
    requires every step to agree. Cells are integer (column, row); row 0 is the bottom, the goal is
    the top row. The layout is the official one: on 6x6 the agents start at (0, 1) facing east and
    (5, 1) facing west, small boxes sit at (0, 3) and (5, 3), the big box covers (2, 3) and (3, 3),
    and the four waypoints are the cells below them, (0, 2), (5, 2), (2, 2), (3, 2); 4x4 and
    ``grid >= 8`` maps follow the official formulas (``grid`` must be even). Macro-actions:

    0-3  go to a waypoint (below SB0, SB1, the big box's left or right cell). Each primitive step
         moves one cell ahead or turns, greedy on Manhattan distance to the waypoint plus a turn cost
         of 0 / 0.1 / 0.2 for ahead / sideways / behind (ties: N, E, S, W). Only the cells of the
         row that small box 0 is on that hold a box's column are blocked; agents never block each
         other. Reaching the waypoint ends the macro-action facing north; issued at the waypoint it
         turns north at once and ends in one step. The agent remembers the last waypoint it reached.
    4    push: move forward each step. Facing north into a small box pushes it up (the macro-action
         ends when it reaches the goal row). Walking into the big box, or into a small box when not
         facing north, steps back and ends with ``penalty``; starting a push while facing the
         border gives ``penalty``; walking up to the border ends the push without penalty. The big
         box moves when both agents, at decision points and facing north, choose push on the same
         step while the last waypoints they reached are its two cells (one each); then both agents
         and the box move up one row per step until the box reaches the goal row.
    5/6  turn left / right; 7 stay (one step each).

    Rewards are shared: ``step_cost`` per step, ``big_reward`` / ``small_reward`` for every box in
    the top row, which ends the episode, ``penalty`` per bad push. Observation: five flags for the
    cell in front (small box, big box, empty, wall, teammate; several may be set when agents share a
    cell), refreshed when the agent's macro-action ends; at ``t = 0`` both agents see "empty".
    The official environment has no time limit (its runner stops after ``terminate_step`` steps);
    here ``horizon`` truncates the episode.
    """

    metadata = {"name": "macro_box_pushing", "render_modes": []}
    n_macro_actions = 8
    obs_dim = 5

    def __init__(
        self,
        grid: int = 6,
        horizon: int = 100,
        *,
        big_reward: float = 300.0,
        small_reward: float = 20.0,
        penalty: float = -10.0,
        step_cost: float = -0.1,
    ) -> None:
        if isinstance(grid, bool) or not isinstance(grid, int) or grid < 4 or grid % 2:
            raise ValueError(f"grid must be an even integer >= 4, got {grid!r}")
        for name, value in (
            ("big_reward", big_reward),
            ("small_reward", small_reward),
            ("penalty", penalty),
            ("step_cost", step_cost),
        ):
            if not isinstance(value, int | float) or not np.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        self.grid = grid
        self.big_reward, self.small_reward = float(big_reward), float(small_reward)
        self.penalty, self.step_cost = float(penalty), float(step_cost)
        g, half = grid, grid // 2
        if g >= 8:
            side, row0 = (1, g - 2), 1
        elif g == 6:
            side, row0 = (0, g - 1), 1
        else:
            side, row0 = (0, g - 1), 0
        self._side, self._row0 = side, row0
        self.box_row = half
        self.waypoints = ((side[0], half - 1), (side[1], half - 1), (half - 1, half - 1), (half, half - 1))
        super().__init__(2, horizon)

    def _reset_state(self, rng: np.random.Generator) -> None:
        self.pos = [[self._side[0], self._row0], [self._side[1], self._row0]]
        self.ori = [1, 3]
        self.small = [[self._side[0], self.box_row], [self._side[1], self.box_row]]
        self.big = [self.grid // 2 - 1, self.box_row]  # left cell of the big box
        self.last_waypoint: list[int | None] = [None, None]
        self._pushing_big = False

    def _initial_obs(self, i: int) -> np.ndarray:
        out = np.zeros(5, dtype=np.float32)
        out[_EMPTY] = 1.0
        return out

    def _in_big(self, x: int, y: int) -> bool:
        return y == self.big[1] and x in (self.big[0], self.big[0] + 1)

    def _observe(self, i: int) -> np.ndarray:
        dx, dy = _DIRS[self.ori[i]]
        x, y = self.pos[i][0] + dx, self.pos[i][1] + dy
        out = np.zeros(5, dtype=np.float32)
        out[_EMPTY] = 1.0
        flags = (
            any(b == [x, y] for b in self.small),
            self._in_big(x, y),
            not (0 <= x < self.grid and 0 <= y < self.grid),
            self.pos[1 - i] == [x, y],
        )
        for k, hit in zip((_SMALL, _BIG, _WALL, _MATE), flags, strict=True):
            if hit:
                out[k], out[_EMPTY] = 1.0, 0.0
        return out

    def _navigate(self, i: int, w: int) -> bool:
        """One primitive step of the go-to-waypoint ``w`` controller; True when it has ended."""
        x, y = self.pos[i]
        tx, ty = self.waypoints[w]
        if (x, y) == (tx, ty):
            self.ori[i] = 0
            self.last_waypoint[i] = w
            return True
        blocked_row = self.small[0][1]
        blocked_cols = (self.small[0][0], self.small[1][0], self.big[0], self.big[0] + 1)
        cost = _TURN_COST_ROWS[self.ori[i]]
        d, best = 0, math.inf  # the first direction of least cost (numpy's argmin; plain floats: fast)
        for k, (dx, dy) in enumerate(_DIRS):
            nx, ny = x + dx, y + dy
            if ny == blocked_row and nx in blocked_cols:
                continue
            c = float(abs(tx - nx) + abs(ty - ny)) + cost[k]
            if c < best:
                d, best = k, c
        if cost[d] == 0.0:
            self.pos[i] = [x + _DIRS[d][0], y + _DIRS[d][1]]
        elif cost[d] == 0.2:
            self.ori[i] = (self.ori[i] + 1) % 4
        else:
            self.ori[i] = d
        if self.pos[i] == [tx, ty] and self.ori[i] == 0:
            self.last_waypoint[i] = w
            return True
        return False

    def _at_border(self, i: int) -> bool:
        x, y = self.pos[i]
        top = self.grid - 1
        return (self.ori[i], x if self.ori[i] % 2 else y) in ((0, top), (1, top), (2, 0), (3, 0))

    def _push(self, i: int) -> tuple[float, bool]:
        """One primitive step of the push controller: (reward, ended)."""
        if self._at_border(i):
            return self.penalty, True
        reward, ended, pushing = 0.0, False, False
        dx, dy = _DIRS[self.ori[i]]
        self.pos[i] = [self.pos[i][0] + dx, self.pos[i][1] + dy]
        for k in range(3):
            x, y = self.pos[i]
            if k < 2:
                if self.small[k] != [x, y]:
                    continue
            elif not self._in_big(x, y):
                continue
            if self.ori[i] == 0 and k < 2:
                pushing = True
                self.small[k][1] += 1
                if self.small[k][1] == self.grid - 1:
                    ended = True
            else:
                self.pos[i] = [x - dx, y - dy]
                ended = True
                reward += self.penalty
        if not pushing and self._at_border(i):
            ended = True
        return reward, ended

    def _advance(self, macros: list[int], starting: list[bool]) -> tuple[float, list[bool], bool]:
        reward = self.step_cost
        ended = [False, False]
        if (
            macros == [4, 4]
            and all(starting)
            and self.ori == [0, 0]
            and sorted(w for w in self.last_waypoint if w is not None) == [2, 3]
        ):
            self._pushing_big = True
        for i in range(2):
            m = macros[i]
            if self._pushing_big:
                self._macro[i] = 4
                self.pos[i][1] += 1
            elif m < 4:
                ended[i] = self._navigate(i, m)
            elif m == 4:
                r, ended[i] = self._push(i)
                reward += r
            elif m in (5, 6):
                self.ori[i] = (self.ori[i] + (-1 if m == 5 else 1)) % 4
                ended[i] = True
            else:
                ended[i] = True
        if self._pushing_big:
            self.big[1] += 1
            if self.big[1] == self.grid - 1:
                ended = [True, True]
        top = self.grid - 1
        n_small = sum(b[1] == top for b in self.small)
        reward += self.small_reward * n_small + (self.big_reward if self.big[1] == top else 0.0)
        terminated = n_small > 0 or self.big[1] == top
        return reward, ended, terminated

    def official_state(self) -> tuple[tuple[tuple[float, float, int], ...], tuple[tuple[float, float], ...]]:
        """Agents' (x, y, orientation) and boxes' (x, y) in the official environment's coordinates.

        The official code uses cell centres (``x + 0.5``) and the big box's centre; this is what the
        parity test compares step by step.
        """
        agents = tuple((p[0] + 0.5, p[1] + 0.5, o) for p, o in zip(self.pos, self.ori, strict=True))
        boxes = tuple((b[0] + 0.5, b[1] + 0.5) for b in self.small) + (
            (self.big[0] + 1.0, self.big[1] + 0.5),
        )
        return agents, boxes


# ------------------------------------------------------------------------------------------------
# Meeting on a line
# ------------------------------------------------------------------------------------------------


class MacroMeeting(MacroActionEnv):
    """A second asynchronous cooperative task: meet at the far landmark and signal together.

    ``n_agents`` agents start at random cells of a line of ``length`` cells. Landmarks sit at
    the cells in ``landmarks`` (the first is the near one, the last the far one). Macro-actions:
    ``j < K`` walks to landmark ``j`` (one cell per step, so it lasts as many steps as the distance,
    at least one); ``K`` is "signal" (``signal_steps`` steps); ``K + 1`` is "wait" (one step). When
    every agent is signalling on the far landmark at the same primitive step the team gets
    ``goal_reward`` and the episode ends. A completed signal on the near landmark pays
    ``decoy_reward`` (once per agent per episode), a local optimum. Every step costs ``step_cost``.

    Observation (``K + 2`` bits): one-hot of the landmark the agent stands on (or "none"), and
    whether another agent shares its cell -- refreshed only when its macro-action ends.
    """

    metadata = {"name": "macro_meeting", "render_modes": []}

    def __init__(
        self,
        n_agents: int = 2,
        length: int = 10,
        horizon: int = 50,
        *,
        landmarks: tuple[int, ...] = (1, 9),
        goal_reward: float = 100.0,
        decoy_reward: float = 5.0,
        step_cost: float = -0.1,
        signal_steps: int = 3,
    ) -> None:
        check_positive("length", length, integer=True)
        check_positive("signal_steps", signal_steps, integer=True)
        self.signal_steps = signal_steps
        if not landmarks or any(not isinstance(c, int) or not 0 <= c < length for c in landmarks):
            raise ValueError(
                f"landmarks must be a non-empty tuple of cells in [0, {length}), got {landmarks!r}"
            )
        self.length = length
        self.landmarks = tuple(landmarks)
        self.goal_reward, self.decoy_reward, self.step_cost = (
            float(goal_reward),
            float(decoy_reward),
            float(step_cost),
        )
        self.n_macro_actions = len(landmarks) + 2
        self.obs_dim = len(landmarks) + 2
        super().__init__(n_agents, horizon)

    def _reset_state(self, rng: np.random.Generator) -> None:
        self.pos = [int(c) for c in rng.integers(0, self.length, size=self.n_agents)]
        self.timer = [0] * self.n_agents
        self.decoy_paid = [False] * self.n_agents

    def _observe(self, i: int) -> np.ndarray:
        out = np.zeros(self.obs_dim, dtype=np.float32)
        k = self.landmarks.index(self.pos[i]) if self.pos[i] in self.landmarks else len(self.landmarks)
        out[k] = 1.0
        out[-1] = float(any(self.pos[j] == self.pos[i] for j in range(self.n_agents) if j != i))
        return out

    def _advance(self, macros: list[int], starting: list[bool]) -> tuple[float, list[bool], bool]:
        K = len(self.landmarks)
        reward = self.step_cost
        ended = [False] * self.n_agents
        signals = [False] * self.n_agents
        for i, m in enumerate(macros):
            if m < K:
                target = self.landmarks[m]
                if self.pos[i] != target:
                    self.pos[i] += 1 if target > self.pos[i] else -1
                ended[i] = self.pos[i] == target
            elif m == K:
                if starting[i]:
                    self.timer[i] = self.signal_steps
                self.timer[i] -= 1
                signals[i] = True
                ended[i] = self.timer[i] <= 0
            else:
                ended[i] = True
        far, near = self.landmarks[-1], self.landmarks[0]
        if all(signals) and all(p == far for p in self.pos):
            return reward + self.goal_reward, [True] * self.n_agents, True
        for i in range(self.n_agents):
            if signals[i] and ended[i] and self.pos[i] == near and not self.decoy_paid[i]:
                self.decoy_paid[i] = True
                reward += self.decoy_reward
        return reward, ended, False
