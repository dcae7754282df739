"""A transcription of the official macro-action BoxPushing rules, for the parity test of ``MacroBoxPushing``.

Source: github.com/LGAI-Research/acac at commit 26b94d9 ("code release for acac, icml 2025"),
``acac/env/box_pushing_env/box_pushing_MA.py`` (class ``BoxPushing_harder``: ``__init__``,
``createAgents``, ``createBoxes``, ``reset``, ``step``, ``_getobs``) and ``box_pushing_MA_core.py``
(``astar_Agent_.step`` and ``.move``). The control flow, the float cell-centre coordinates and the
order of every test are kept line by line; what is left out is rendering, gym's spaces, the
statistics counters, ``random_init`` (off in the paper) and the third agent (the paper's BoxPushing
has two). The official file needs ``gym`` and ``IPython``; this one needs numpy only. It was run
beside the official module (with stub ``gym``/``IPython`` modules) on 2000 seeded random
macro-action episodes on each of the 4x4, 6x6 and 8x8 maps and agreed on every step (positions,
orientations, boxes, observations, rewards, ``mac_done``, ``cur_mac`` and ``terminate``).

The episode horizon is not part of the official environment: its runner stops after
``terminate_step`` primitive steps.
"""

from __future__ import annotations

import numpy as np

DIRECTION = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0]])
COST = np.array([[0.0, 0.1, 0.2, 0.1], [0.1, 0.0, 0.1, 0.2], [0.2, 0.1, 0.0, 0.1], [0.1, 0.2, 0.1, 0.0]])


class Box:
    def __init__(self, idx, x, y):
        self.idx, self.xcoord, self.ycoord = idx, x, y


class WayPoint:
    def __init__(self, idx, x, y):
        self.idx, self.xcoord, self.ycoord = idx, x, y


class Agent:
    """``astar_Agent_``: the low-level controllers of the eight macro-actions."""

    def __init__(self, idx, x, y, ori, bwps, grid, penalty):
        self.idx, self.xcoord, self.ycoord, self.ori = idx, x, y, ori
        self.BWPs = bwps
        self.cur_BWP = None
        self.cur_action = None
        self.cur_action_done = True
        self.pushing_big_box = False
        self.xlen, self.ylen = grid
        self.penalty = penalty

    def step(self, action, boxes):
        reward = 0.0
        self.cur_action = action
        self.cur_action_done = False
        if action < 4:
            self.move(self.BWPs[action], boxes)
        elif action == 4:
            if (
                (self.ori == 0 and self.ycoord == self.ylen - 0.5)
                or (self.ori == 1 and self.xcoord == self.xlen - 0.5)
                or (self.ori == 2 and self.ycoord == 0.5)
                or (self.ori == 3 and self.xcoord == 0.5)
            ):
                reward += self.penalty
                self.cur_action_done = True
            else:
                pushing_box = False
                direction = DIRECTION[self.ori]
                self.xcoord += direction[0]
                self.ycoord += direction[1]
                for box in boxes:
                    if (box.xcoord == self.xcoord and box.ycoord == self.ycoord) or (
                        (box.xcoord == self.xcoord - 0.5 or box.xcoord == self.xcoord + 0.5)
                        and box.ycoord == self.ycoord
                    ):
                        if self.ori == 0 and box.idx != 2:
                            pushing_box = True
                            box.xcoord += direction[0]
                            box.ycoord += direction[1]
                            if box.ycoord == self.ylen - 0.5:
                                self.cur_action_done = True
                        else:
                            self.xcoord -= direction[0]
                            self.ycoord -= direction[1]
                            self.cur_action_done = True
                            reward += self.penalty
                # the official compares x with ylen - 0.5 when facing east (the maps are square)
                if not pushing_box:  # noqa: SIM102 - kept as the official nests it
                    if (
                        (self.ori == 0 and self.ycoord == self.ylen - 0.5)
                        or (self.ori == 1 and self.xcoord == self.ylen - 0.5)
                        or (self.ori == 2 and self.ycoord == 0.5)
                        or (self.ori == 3 and self.xcoord == 0.5)
                    ):
                        self.cur_action_done = True
        elif action == 5:
            self.ori = 3 if self.ori == 0 else self.ori - 1
            self.cur_action_done = True
        elif action == 6:
            self.ori = 0 if self.ori == 3 else self.ori + 1
            self.cur_action_done = True
        elif action == 7:
            self.cur_action_done = True
        return reward

    def move(self, bwp, boxes):
        agent_p = np.array([self.xcoord, self.ycoord])
        g_p = np.array([bwp.xcoord, bwp.ycoord])
        if np.linalg.norm(g_p - agent_p) < 0.1:
            self.ori = 0
            self.cur_BWP = self.BWPs[bwp.idx]
            self.cur_action_done = True
        else:
            moves = DIRECTION + agent_p
            obstacles = [boxes[0].xcoord, boxes[1].xcoord, boxes[2].xcoord + 0.5, boxes[2].xcoord - 0.5]
            h = np.sum(np.abs(g_p - moves), axis=1)
            for idx, move in enumerate(moves):
                if move[1] == boxes[0].ycoord and move[0] in obstacles:
                    h[idx] = float("inf")
            f = h + COST[self.ori]
            dest_idx = f.argmin()
            if COST[self.ori][dest_idx] == 0.0:
                self.xcoord = moves[dest_idx][0]
                self.ycoord = moves[dest_idx][1]
            elif COST[self.ori][dest_idx] == 0.2:
                self.ori += 1
                if self.ori > 3:
                    self.ori = 0
            else:
                self.ori = dest_idx
            if self.xcoord == bwp.xcoord and self.ycoord == bwp.ycoord and self.ori == 0:
                self.cur_BWP = self.BWPs[bwp.idx]
                self.cur_action_done = True


class OfficialBoxPushing:
    """``BoxPushing_harder``, two agents; ``step`` gives ``(obs, reward, terminate, mac_done, cur_mac)``."""

    def __init__(self, grid=6, big_box_reward=300.0, small_box_reward=20.0, penalty=-10.0):
        self.xlen = self.ylen = grid
        self.big_box_reward, self.small_box_reward, self.penalty = big_box_reward, small_box_reward, penalty
        yl = self.ylen
        if yl >= 8.0:
            spots = [
                (1.5, yl / 2 - 0.5),
                (yl - 1.5, yl / 2 - 0.5),
                (yl / 2.0 - 0.5, yl / 2 - 0.5),
                (yl / 2.0 + 0.5, yl / 2 - 0.5),
            ]
        elif yl == 6.0:
            spots = [(0.5, yl / 2 - 0.5), (5.5, yl / 2 - 0.5), (2.5, yl / 2 - 0.5), (3.5, yl / 2 - 0.5)]
        else:
            spots = [(0.5, yl / 2 - 0.5), (3.5, yl / 2 - 0.5), (1.5, yl / 2 - 0.5), (2.5, yl / 2 - 0.5)]
        self.BWPs = [WayPoint(i, x, y) for i, (x, y) in enumerate(spots)]

    def create(self):
        yl, g, p = self.ylen, (self.xlen, self.ylen), self.penalty
        if yl >= 8.0:
            self.agents = [
                Agent(0, 1.5, 1.5, 1, self.BWPs, g, p),
                Agent(1, yl - 1.5, 1.5, 3, self.BWPs, g, p),
            ]
            self.boxes = [
                Box(0, 1.5, yl / 2 + 0.5),
                Box(1, yl - 1.5, yl / 2 + 0.5),
                Box(2, yl / 2.0, yl / 2 + 0.5),
            ]
        elif yl == 6.0:
            self.agents = [Agent(0, 0.5, 1.5, 1, self.BWPs, g, p), Agent(1, 5.5, 1.5, 3, self.BWPs, g, p)]
            self.boxes = [Box(0, 0.5, yl / 2 + 0.5), Box(1, 5.5, yl / 2 + 0.5), Box(2, 3.0, yl / 2 + 0.5)]
        else:
            self.agents = [Agent(0, 0.5, 0.5, 1, self.BWPs, g, p), Agent(1, 3.5, 0.5, 3, self.BWPs, g, p)]
            self.boxes = [Box(0, 0.5, yl / 2 + 0.5), Box(1, 3.5, yl / 2 + 0.5), Box(2, 2.0, yl / 2 + 0.5)]

    def reset(self):
        self.create()
        self.t = 0
        self.pushing_big_box = False
        return self._getobs()

    def step(self, actions):
        rewards = -0.1
        terminate = 0
        a0, a1 = self.agents
        if (
            actions[0] == 4
            and actions[1] == 4
            and a0.cur_action_done
            and a1.cur_action_done
            and a0.ori == 0
            and a1.ori == 0
            and (
                (
                    a0.cur_BWP is not None
                    and a0.cur_BWP.idx == 2
                    and a1.cur_BWP is not None
                    and a1.cur_BWP.idx == 3
                )
                or (
                    a0.cur_BWP is not None
                    and a0.cur_BWP.idx == 3
                    and a1.cur_BWP is not None
                    and a1.cur_BWP.idx == 2
                )
            )
        ):
            a0.pushing_big_box = a1.pushing_big_box = self.pushing_big_box = True
        cur_actions = []
        for idx, agent in enumerate(self.agents):
            if agent.pushing_big_box:
                agent.cur_action = 4
                agent.cur_action_done = False
                agent.ycoord += 1.0
            else:
                if not agent.cur_action_done:
                    rewards += agent.step(agent.cur_action, self.boxes)
                else:
                    rewards += agent.step(actions[idx], self.boxes)
            cur_actions.append(agent.cur_action)
        if self.pushing_big_box:
            self.boxes[2].ycoord += 1.0
            if self.boxes[2].ycoord == self.ylen - 0.5:
                for agent in self.agents:
                    if agent.pushing_big_box:
                        agent.cur_action_done = True
        mac_done = [1 if agent.cur_action_done else 0 for agent in self.agents]
        reward = 0.0
        for idx, box in enumerate(self.boxes):
            if box.ycoord == self.ylen - 0.5:
                terminate = 1
                reward = reward + self.small_box_reward if idx < 2 else reward + self.big_box_reward
        rewards += reward
        return self._getobs(), rewards, terminate, mac_done, cur_actions

    def _getobs(self):
        observations = []
        if self.t == 0:
            for _ in range(2):
                obs = np.zeros(5)
                obs[2] = 1.0
                observations.append(obs)
            self.old_observations = observations
            self.t = 1
            return observations
        for idx, agent in enumerate(self.agents):
            if not agent.cur_action_done:
                observations.append(self.old_observations[idx])
                continue
            obs = np.zeros(5)
            obs[2] = 1.0
            fx = agent.xcoord + DIRECTION[agent.ori][0]
            fy = agent.ycoord + DIRECTION[agent.ori][1]
            for box in self.boxes[0:2]:
                if box.xcoord == fx and box.ycoord == fy:
                    obs[0] = 1.0
                    obs[2] = 0.0
            if (self.boxes[2].xcoord + 0.5 == fx or self.boxes[2].xcoord - 0.5 == fx) and self.boxes[
                2
            ].ycoord == fy:
                obs[1] = 1.0
                obs[2] = 0.0
            if fx > self.xlen or fx < 0.0 or fy > self.ylen or fy < 0.0:
                obs[3] = 1.0
                obs[2] = 0.0
            mate = self.agents[1 - idx]
            if fx == mate.xcoord and fy == mate.ycoord:
                obs[4] = 1.0
                obs[2] = 0.0
            observations.append(obs)
        self.old_observations = observations
        return observations

    def state(self):
        """Agents' (x, y, ori), boxes' (x, y) in the official float coordinates."""
        return (
            tuple((a.xcoord, a.ycoord, a.ori) for a in self.agents),
            tuple((b.xcoord, b.ycoord) for b in self.boxes),
        )
