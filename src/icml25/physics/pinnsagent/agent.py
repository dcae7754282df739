"""Memory Tree Reasoning and the search loops of *PINNsAgent: Automated PDE Surrogation with
Large Language Models* (Wuwu et al., ICML 2025, arXiv 2501.12053).

The memory tree (paper Sec. 3.4) is searched with a PUCT rule: a node is a configuration, an
edge an edit of one or two hyperparameters, the reward of a node is R = -log10(relative L2 test
error) of its training, and Q is the mean reward of a subtree. From the root (the PGKR warm start,
Sec. 3.3) the selection descends by a* = argmax Q(s,a) + c pi(a|s) sqrt(ln N(s) / N(s,a)), where
pi is a prior from knowledge-base statistics (parameter importance x value success rate), and
widens a node while it has fewer than ceil(sqrt(N(s))) children. The expansion at the selected
node is proposed by the planner LLM, prompted with the PDE, the replayed knowledge, the
parameter scores and the history (the paper's planner prompt, Sec. 3.4 and App.); a proposal that
does not parse, leaves the space or repeats a tried configuration falls back to the scripted
proposer, and the fallbacks are counted. A purely scripted proposer (parameter by importance,
value by success rate) is provided as a labelled control arm that isolates the tree search.

Baselines at the same number of trainings: uniform random search and optuna's TPE.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.core.validate import check_positive

from .knowledge import KnowledgeBase, ParamStats, Retrieved
from .pdes import PDESpec
from .pinn import DERIVATIVES, SearchSpace, TrainResult, config_key, train_pinn

Config = dict[str, Any]
Conversation = list[dict[str, str]]


class Evaluator:
    """Trains (pde, config) once and memoises the result; counts real trainings.

    The training seed is fixed, so the search objective is a deterministic function of the
    configuration (as in the paper's fixed seed), and every method sees the same objective.
    ``derivatives`` goes to :func:`train_pinn` (``"jet"`` or ``"autograd"``).
    """

    def __init__(
        self,
        specs: Mapping[str, PDESpec],
        space: SearchSpace,
        *,
        steps: int,
        seed: int = 0,
        derivatives: str = "jet",
    ) -> None:
        check_positive("steps", steps, integer=True)
        if derivatives not in DERIVATIVES:
            raise ValueError(f"derivatives must be one of {DERIVATIVES}, got {derivatives!r}")
        self.derivatives = derivatives
        self.specs = dict(specs)
        self.space = space
        self.steps = steps
        self.seed = seed
        self.cache: dict[tuple[str, tuple[tuple[str, Any], ...]], TrainResult] = {}
        self.trainings = 0
        self.seconds = 0.0

    def __call__(self, pde: str, config: Mapping[str, Any]) -> TrainResult:
        key = (pde, config_key(config))
        if key not in self.cache:
            res = train_pinn(
                self.specs[pde],
                config,
                steps=self.steps,
                seed=self.seed,
                space=self.space,
                derivatives=self.derivatives,
            )
            self.cache[key] = res
            self.trainings += 1
            self.seconds += res.seconds
        return self.cache[key]


EvalFn = Callable[[str, Mapping[str, Any]], TrainResult]


@dataclass
class Node:
    """A memory-tree node: a configuration, the edit that produced it, and its statistics."""

    config: Config
    parent: Node | None = None
    edit: dict[str, Any] = field(default_factory=dict)
    reward: float = 0.0
    visits: int = 0
    total: float = 0.0
    prior: float = 1.0
    children: list[Node] = field(default_factory=list)

    @property
    def q(self) -> float:
        """Mean reward of the subtree (0 before any visit)."""
        return self.total / self.visits if self.visits else 0.0

    def path_params(self) -> set[str]:
        """Parameters edited on the path from the root."""
        out: set[str] = set()
        node: Node | None = self
        while node is not None:
            out |= set(node.edit)
            node = node.parent
        return out


def edit_prior(stats: ParamStats, edit: Mapping[str, Any]) -> float:
    """pi(a|s) before normalisation: mean over edited parameters of importance x value success."""
    if not edit:
        return 1.0
    vals = [(0.1 + stats.scores.get(p, 0.5)) * stats.success.get(p, {}).get(v, 0.5) for p, v in edit.items()]
    return float(np.mean(vals))


class MemoryTree:
    """The PUCT memory tree over configuration edits (see the module docstring).

    Args:
        root_config: the starting configuration (PGKR warm start or the default).
        stats: knowledge-base statistics for the prior.
        c: the exploration constant.
        max_children: cap on children per node.
    """

    def __init__(
        self, root_config: Config, stats: ParamStats, *, c: float = 1.0, max_children: int = 4
    ) -> None:
        check_positive("max_children", max_children, integer=True)
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"c must be finite and >= 0, got {c}")
        self.root = Node(dict(root_config))
        self.stats = stats
        self.c = c
        self.max_children = max_children

    def backup(self, node: Node, reward: float) -> None:
        """Set the node's own reward and add it to every ancestor's statistics."""
        node.reward = reward
        n: Node | None = node
        while n is not None:
            n.visits += 1
            n.total += reward
            n = n.parent

    def score(self, parent: Node, child: Node) -> float:
        """The PUCT score of ``child`` under ``parent``."""
        z = sum(ch.prior for ch in parent.children) or 1.0
        return child.q + self.c * (child.prior / z) * math.sqrt(
            math.log(max(parent.visits, 1) + 1) / child.visits
        )

    def select(self) -> Node:
        """Descend by PUCT until a node that may still be widened."""
        node = self.root
        while True:
            if len(node.children) < min(self.max_children, math.ceil(math.sqrt(max(node.visits, 1)))):
                return node
            node = max(node.children, key=lambda ch: self.score(node, ch))

    def expand(self, parent: Node, edit: Mapping[str, Any]) -> Node:
        """Add the child of ``parent`` reached by ``edit`` (not yet backed up)."""
        cfg = dict(parent.config)
        cfg.update(edit)
        child = Node(cfg, parent=parent, edit=dict(edit), prior=edit_prior(self.stats, edit))
        parent.children.append(child)
        return child

    def nodes(self) -> list[Node]:
        """All nodes, depth first."""
        out, stack = [], [self.root]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(n.children)
        return out


def scripted_edit(
    config: Mapping[str, Any],
    stats: ParamStats,
    space: SearchSpace,
    rng: np.random.Generator,
    tried: set[tuple[tuple[str, Any], ...]],
    avoid: set[str] | None = None,
    temperature: float = 0.3,
) -> dict[str, Any]:
    """The scripted planner: one parameter drawn by softmax(importance / T) (preferring ones not yet
    edited on the path), its new value drawn proportional to the value's success rate; retries until
    the configuration is new (falls back to any untried single edit)."""
    avoid = avoid or set()
    params = [p for p in space.params if len(space.values[p]) > 1]
    for _ in range(50):
        pool = [p for p in params if p not in avoid] or params
        s = np.array([stats.scores.get(p, 0.5) for p in pool]) / temperature
        w = np.exp(s - s.max())
        p = pool[int(rng.choice(len(pool), p=w / w.sum()))]
        vals = [v for v in space.values[p] if v != config[p]]
        sr = np.array([stats.success.get(p, {}).get(v, 0.5) for v in vals])
        v = vals[int(rng.choice(len(vals), p=sr / sr.sum()))]
        new = dict(config)
        new[p] = v
        if config_key(new) not in tried:
            return {p: v}
    for p in params:
        for v in space.values[p]:
            new = dict(config)
            new[p] = v
            if config_key(new) not in tried:
                return {p: v}
    return {}


SYSTEM_PROMPT = (
    "You are an expert in physics-informed neural networks (PINNs). You tune a PINN's hyperparameters "
    "to minimise its test error. Answer with one JSON object only."
)


def config_text(config: Mapping[str, Any]) -> str:
    """A configuration as ``name=value`` pairs (not JSON: a small model copies JSON it is shown)."""
    return ", ".join(f"{k}={v}" if isinstance(v, str) else f"{k}={v:g}" for k, v in config.items())


def planner_prompt(
    pde: PDESpec,
    space: SearchSpace,
    node_config: Mapping[str, Any],
    retrieved: Sequence[Retrieved],
    stats: ParamStats,
    history: Sequence[tuple[Config, TrainResult]],
    max_history: int = 5,
) -> Conversation:
    """The planner's conversation (our wording of the paper's planner prompt, Sec. 3.4).

    The configurations are shown as ``name=value`` pairs and the reply is one small JSON object
    holding only the changed parameters; two in-context examples show that format with values the
    starting configuration does not hold. (Our earlier prompt showed every configuration as JSON;
    SmolLM2-135M then copied the starting configuration back unchanged in about a third of replies.)
    """
    ranked = sorted(stats.scores, key=lambda p: -stats.scores[p])
    lines = [f"PDE to solve: {pde.description}"]
    if retrieved:
        lines.append("Similar solved PDEs and their best configurations:")
        lines += [
            f"- {r.pde} (similarity {r.similarity:.2f}, L2 error {r.best.l2rel:.3g})" for r in retrieved
        ]
    lines.append("Parameters that mattered most on past PDEs: " + ", ".join(ranked[:3]) + ".")
    lines.append("Allowed values:")
    for p in ranked[:5]:
        lines.append(f"  {p}: " + ", ".join(str(v) for v in space.values[p]))
    if history:
        hist = sorted(history, key=lambda h: h[1].log_l2)[:max_history]
        lines.append("Tried so far (best first):")
        lines += [f"- L2 error {r.l2rel:.3g}: {config_text(c)}" for c, r in hist]
    lines.append(f"Current configuration: {config_text(node_config)}")
    lines.append(
        "Change one of the important parameters to a value it does not have yet, to lower the error. "
        "Reply with only the changed parameter as JSON."
    )
    example_user = (
        "PDE to solve: Poisson equation on the unit square.\n"
        "Current configuration: activation=relu, lr=0.0001, width=16\n"
        "Change one of the important parameters to a value it does not have yet. "
        "Reply with only the changed parameter as JSON."
    )
    example_user2 = (
        "PDE to solve: Heat equation on a rod.\n"
        "Current configuration: optimizer=sgd, depth=2, sampling=uniform\n"
        "Change one of the important parameters to a value it does not have yet. "
        "Reply with only the changed parameter as JSON."
    )
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": example_user},
        {"role": "assistant", "content": '{"lr": 0.001}'},
        {"role": "user", "content": example_user2},
        {"role": "assistant", "content": '{"optimizer": "adam"}'},
        {"role": "user", "content": "\n".join(lines)},
    ]


def close_json(reply: str) -> str:
    """Restore the closing brace of a reply cut at the stop string ``}`` (generation halts at the
    first ``}`` so that the reply is one object and no tokens are spent after it)."""
    if not isinstance(reply, str):
        raise TypeError(f"reply must be a string, got {type(reply).__name__}")
    return reply + "}" if reply.count("{") > reply.count("}") else reply


#: Names a reply may use for a parameter.
ALIASES = {
    "learning_rate": "lr",
    "activation_function": "activation",
    "hidden_size": "width",
    "num_layers": "depth",
    "layers": "depth",
    "init": "initializer",
    "optim": "optimizer",
}

_PAIR = re.compile(
    r"[\"']?([a-z_]+)[\"']?\s*[:=]\s*[\"']?([A-Za-z_]+|[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
)


def parse_proposal(text: str, space: SearchSpace, config: Mapping[str, Any]) -> dict[str, Any]:
    """The valid edits in an LLM reply: the first {...} block as JSON, else ``key: value`` pairs;
    values snapped into the space; unchanged or unknown parameters dropped (at most two kept)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    raw: dict[str, Any] = {}
    m = re.search(r"\{.*?\}", text, flags=re.S)
    if m:
        try:
            obj = json.loads(m.group(0))
            if isinstance(obj, dict):
                raw = {str(k).strip().lower(): v for k, v in obj.items()}
        except json.JSONDecodeError:
            raw = {}
    if not raw:
        raw = {k.lower(): v for k, v in _PAIR.findall(text)}
    out: dict[str, Any] = {}
    for k, v in raw.items():
        k = ALIASES.get(k, k)
        if k not in space.values:
            continue
        snapped = space.snap(k, v)
        if snapped is not None and snapped != config[k]:
            out[k] = snapped
        if len(out) == 2:
            break
    return out


@dataclass
class SearchTrace:
    """What one search did: the configurations in order, their results, and LLM bookkeeping."""

    configs: list[Config] = field(default_factory=list)
    results: list[TrainResult] = field(default_factory=list)
    llm_calls: int = 0
    llm_valid: int = 0
    fallbacks: int = 0

    def best_l2(self) -> float:
        """Lowest relative L2 error found (inf if none)."""
        vals = [r.l2rel for r in self.results if math.isfinite(r.l2rel)]
        return min(vals) if vals else math.inf

    def best_log_l2(self) -> float:
        """log10 of :meth:`best_l2`, capped at 2."""
        return min(r.log_l2 for r in self.results) if self.results else 2.0

    def history(self) -> list[tuple[Config, TrainResult]]:
        """(config, result) pairs."""
        return list(zip(self.configs, self.results, strict=True))


class AgentSearch:
    """PINNsAgent on one target PDE: PGKR warm start, then memory-tree expansions.

    Args:
        pde: the target.
        kb: the leave-one-out knowledge base (must not hold the target's rows).
        space: the search space.
        stats: parameter statistics of ``kb``.
        retrieved: PGKR hits for the target (empty: start from the default configuration).
        budget: number of trainings.
        proposer: ``"llm"`` (prompts are produced by :meth:`prepare`) or ``"scripted"``.
        rng: randomness of the scripted proposer and fallbacks.
        c: PUCT exploration constant.
    """

    def __init__(
        self,
        pde: PDESpec,
        kb: KnowledgeBase,
        space: SearchSpace,
        stats: ParamStats,
        retrieved: Sequence[Retrieved],
        *,
        budget: int,
        proposer: str,
        rng: np.random.Generator,
        c: float = 1.0,
    ) -> None:
        check_positive("budget", budget, integer=True)
        if proposer not in ("llm", "scripted"):
            raise ValueError(f"proposer must be 'llm' or 'scripted', got {proposer!r}")
        if kb.of(pde.name):
            raise ValueError(
                f"the knowledge base holds rows of the target {pde.name!r} (leave-one-out violated)"
            )
        self.pde, self.space, self.stats, self.retrieved = pde, space, stats, list(retrieved)
        self.budget, self.proposer, self.rng = budget, proposer, rng
        root = space.snap_config(retrieved[0].best.config) if retrieved else space.default()
        self.tree = MemoryTree(root, stats, c=c)
        self.trace = SearchTrace()
        self._pending: Node | None = None

    @property
    def done(self) -> bool:
        """Whether the budget is spent."""
        return len(self.trace.results) >= self.budget

    def _tried(self) -> set[tuple[tuple[str, Any], ...]]:
        return {config_key(c) for c in self.trace.configs}

    def _record(self, node: Node, evaluate: EvalFn) -> None:
        res = evaluate(self.pde.name, node.config)
        self.trace.configs.append(dict(node.config))
        self.trace.results.append(res)
        self.tree.backup(node, -res.log_l2)

    def start(self, evaluate: EvalFn) -> None:
        """Train the root configuration (the warm start)."""
        if not self.trace.results:
            self._record(self.tree.root, evaluate)

    def prepare(self) -> Conversation | None:
        """Select the node to expand; the planner's conversation for it (None when scripted)."""
        self._pending = self.tree.select()
        if self.proposer == "scripted":
            return None
        return planner_prompt(
            self.pde, self.space, self._pending.config, self.retrieved, self.stats, self.trace.history()
        )

    def step(self, reply: str | None, evaluate: EvalFn) -> None:
        """Turn the planner's reply (or the scripted proposer) into an edit, train it, back it up."""
        node = self._pending if self._pending is not None else self.tree.select()
        self._pending = None
        tried = self._tried()
        edit: dict[str, Any] = {}
        if reply is not None:
            self.trace.llm_calls += 1
            edit = parse_proposal(reply, self.space, node.config)
            new = dict(node.config)
            new.update(edit)
            if edit and config_key(new) not in tried:
                self.trace.llm_valid += 1
            else:
                edit = {}
                self.trace.fallbacks += 1
        if not edit:
            edit = scripted_edit(node.config, self.stats, self.space, self.rng, tried, node.path_params())
        if not edit:  # the neighbourhood is exhausted: restart from a random configuration
            child = self.tree.expand(self.tree.root, {})
            child.config = self.space.sample(self.rng)
        else:
            child = self.tree.expand(node, edit)
        self._record(child, evaluate)


def run_agents(
    agents: Sequence[AgentSearch],
    evaluate: EvalFn,
    generate: Callable[[list[Conversation]], list[str]] | None = None,
) -> None:
    """Run several agent searches in lock-step so that each round's prompts go to the LLM as one batch.

    ``generate`` maps conversations to one reply each (required if any agent uses the LLM).
    """
    for a in agents:
        a.start(evaluate)
    while True:
        active = [a for a in agents if not a.done]
        if not active:
            return
        requests = [a.prepare() for a in active]
        convs = [r for r in requests if r is not None]
        if convs and generate is None:
            raise ValueError("generate is required for LLM proposers")
        replies = iter(generate(convs) if convs and generate is not None else [])
        for a, r in zip(active, requests, strict=True):
            a.step(next(replies) if r is not None else None, evaluate)


def random_search(
    pde: str, space: SearchSpace, evaluate: EvalFn, *, budget: int, rng: np.random.Generator
) -> SearchTrace:
    """``budget`` distinct uniformly random configurations."""
    check_positive("budget", budget, integer=True)
    trace = SearchTrace()
    seen: set[tuple[tuple[str, Any], ...]] = set()
    while len(trace.results) < budget:
        cfg = space.sample(rng)
        if config_key(cfg) in seen:
            continue
        seen.add(config_key(cfg))
        trace.configs.append(cfg)
        trace.results.append(evaluate(pde, cfg))
    return trace


def tpe_search(
    pde: str, space: SearchSpace, evaluate: EvalFn, *, budget: int, seed: int, n_startup: int = 2
) -> SearchTrace:
    """optuna's TPE sampler over the same categorical space, minimising log10 relative L2."""
    check_positive("budget", budget, integer=True)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trace = SearchTrace()
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup)
    study = optuna.create_study(direction="minimize", sampler=sampler)

    def objective(trial: Any) -> float:
        cfg = {p: trial.suggest_categorical(p, list(v)) for p, v in space.values.items()}
        res = evaluate(pde, cfg)
        trace.configs.append(cfg)
        trace.results.append(res)
        return res.log_l2

    study.optimize(objective, n_trials=budget)
    return trace


def build_knowledge_base(
    pdes: Sequence[str], space: SearchSpace, evaluate: EvalFn, *, per_pde: int, seed: int
) -> KnowledgeBase:
    """Cheap random trials on every PDE of ``pdes`` (the leave-one-out bases are cut from this)."""
    check_positive("per_pde", per_pde, integer=True)
    from .knowledge import KBRow

    kb = KnowledgeBase()
    rng = np.random.default_rng(seed)
    for name in pdes:
        configs = [space.default()] + [space.sample(rng) for _ in range(per_pde - 1)]
        for cfg in configs:
            res = evaluate(name, cfg)
            kb.add(KBRow(name, cfg, res.l2rel, res.seconds))
    return kb
