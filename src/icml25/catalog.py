"""The table of all 38 papers: plain data, one entry per paper, nothing heavy imported.

Each :class:`Paper` names its library module and its claim check as lazy ``"module:object"``
strings; :func:`resolve` imports them only when asked (a check run, a test). ``icml25 list``
reads this table and the results store, never a paper's code.

Status says what is true on this branch:
    planned      nothing of the paper exists yet
    implemented  the library and its tests exist; the claim check may not have run at small scale
    checked      the library, tests and claim check exist, and the small-scale check has been run
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

__all__ = [
    "RecordedRun",
    "parse_recorded_run",
    "DOMAINS",
    "STATUSES",
    "PAPERS",
    "Paper",
    "Registry",
    "UnknownSlugError",
    "REGISTRY",
    "get_paper",
    "resolve",
]

DOMAINS = ("generative", "physics", "language", "agents", "theory", "rl", "graphs", "life", "robustness")
STATUSES = ("planned", "implemented", "checked")
Status = Literal["planned", "implemented", "checked"]
Tag = Literal["stochastic", "llm", "gpu", "slow", "simulated", "speed"]
TAGS: tuple[str, ...] = ("stochastic", "llm", "gpu", "slow", "simulated", "speed")

T = TypeVar("T")


class UnknownSlugError(LookupError):
    """A slug that is not in the catalog; the message suggests the closest ones."""

    def __init__(self, slug: str, known: Iterable[str]) -> None:
        close = difflib.get_close_matches(slug, list(known), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `icml25 list` shows every slug"
        super().__init__(f"unknown paper {slug!r}{hint}")
        self.slug = slug
        self.suggestions = tuple(close)

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0])


class Registry(Generic[T]):
    """Name -> item, with duplicate rejection and close-match suggestions (lm-eval style)."""

    def __init__(self, items: Iterable[tuple[str, T]] = ()) -> None:
        self._items: dict[str, T] = {}
        for key, item in items:
            self.register(key, item)

    def register(self, key: str, item: T) -> None:
        if key in self._items:
            raise ValueError(f"duplicate registry key {key!r}")
        self._items[key] = item

    def get(self, key: str) -> T:
        try:
            return self._items[key]
        except KeyError:
            raise UnknownSlugError(key, self._items) from None

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[str]:
        return list(self._items)


def resolve(path: str) -> Any:
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"lazy path must look like 'package.module:object', got {path!r}")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"{module_name} has no attribute {attr!r} (from {path!r})") from None


@dataclass(frozen=True)
class RecordedRun:
    """A small run as recorded in a paper's README: its verdict, wall time and run id."""

    verdict: str
    wall_time_s: float
    run_id: str


def parse_recorded_run(readme: str) -> RecordedRun | None:
    """The verdict line that ``icml25 report --sync-readmes`` writes into a README, parsed:
    ``**Verdict at scale small: V** (...). Seeds [...]; wall time T s; run R, started ...``."""
    head = "**Verdict at scale small: "
    start = readme.find(head)
    if start < 0:
        return None
    rest = readme[start + len(head) :]
    verdict, _, rest = rest.partition("**")
    _, found, rest = rest.partition("; wall time ")
    wall, _, rest = rest.partition(" s; run ")
    run_id = rest.split(",", 1)[0].strip()
    try:
        return RecordedRun(verdict.strip(), float(wall), run_id) if found and run_id else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Paper:
    """One paper of the catalog.

    Args:
        slug: snake_case key; module name, registry key and CLI argument.
        title: the paper's title.
        domain: one of :data:`DOMAINS`; the package folder the paper lives in.
        seed: ``"000/8"``: seed file prefix and 1-based abstract position.
        seed_file: file name in ``shared/seeds``.
        seed_position: 1-based position of the abstract in that file.
        url: the paper (arXiv abs page where there is one).
        code_url: the official repository, if any.
        claim: the headline claim in one sentence.
        baseline: what the claim check compares against.
        tags: capability tags from :data:`TAGS`.
        status: see the module docstring.
        extra: the ``pip install icml25[extra]`` the paper needs beyond the core ("" for none).
    """

    slug: str
    title: str
    domain: str
    seed: str
    seed_file: str
    seed_position: int
    url: str
    code_url: str
    claim: str
    baseline: str
    tags: tuple[str, ...] = ()
    status: Status = "planned"
    extra: str = ""

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"{self.slug}: domain {self.domain!r} not in {DOMAINS}")
        if self.status not in STATUSES:
            raise ValueError(f"{self.slug}: status {self.status!r} not in {STATUSES}")
        bad = set(self.tags) - set(TAGS)
        if bad:
            raise ValueError(f"{self.slug}: unknown tags {sorted(bad)}")
        if not self.slug.isidentifier() or self.slug.lower() != self.slug:
            raise ValueError(f"slug must be snake_case, got {self.slug!r}")

    @property
    def module(self) -> str:
        """The library package, e.g. ``icml25.theory.rfm_grokking``."""
        return f"icml25.{self.domain}.{self.slug}"

    @property
    def check_path(self) -> str:
        """Lazy path of the claim check object."""
        return f"{self.module}.check:CHECK"

    @property
    def brief(self) -> str:
        """The implementer's brief, relative to the repository root."""
        return f"../shared/papers/{self.slug}.md"

    @property
    def implemented(self) -> bool:
        return self.status != "planned"

    def readme_text(self) -> str | None:
        """The paper's README.md (shipped with the package), or None where there is none."""
        from importlib.resources import files  # the top-level package only: no paper code is imported

        try:
            return (files("icml25") / self.domain / self.slug / "README.md").read_text(encoding="utf-8")
        except OSError:
            return None

    def recorded_small_run(self) -> RecordedRun | None:
        """The small run recorded in the paper's README table (refreshed by ``icml25 report
        --sync-readmes``): what a clone without ``results/`` knows of the check's verdict and time."""
        text = self.readme_text()
        return None if text is None else parse_recorded_run(text)

    def load_check(self) -> Any:
        """Import and return the paper's ClaimCheck instance (raises if not implemented)."""
        if not self.implemented:
            raise NotImplementedError(f"{self.slug} is planned: no implementation exists yet")
        return resolve(self.check_path)


# fmt: off
PAPERS: tuple[Paper, ...] = (
    Paper(
        slug="pde_transformer",
        title="PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations",
        domain="physics",
        seed="000/1",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=1,
        url="https://arxiv.org/abs/2505.24717",
        code_url="https://github.com/tum-pbs/pde-transformer",
        claim=(
            "At matched size, PDE-Transformer (windowed multi-scale DiT-style backbone) gets lower one-step"
            " and rollout nRMSE than DiT, U-DiT, UNet, scOT and FactFormer on a 16-family 2D PDE dataset, "
            "with cheaper training."
        ),
        baseline="plain DiT-style global-attention transformer at matched parameters",
        tags=("stochastic", "gpu", "slow", "simulated", "speed"),
        status="checked",
    ),
    Paper(
        slug="dycodeeval",
        title=(
            "DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language Models Under"
            " Data Contamination"
        ),
        domain="agents",
        seed="000/2",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=2,
        url="https://arxiv.org/abs/2503.04149",
        code_url="https://github.com/SeekingDream/DyCodeEval",
        claim=(
            "Under simulated contamination, a code model's Pass@1 on leaked static HumanEval/MBPP problems "
            "climbs with the leaked fraction, while its Pass@1 on DyCodeEval's semantically equivalent "
            "rewritten variants stays roughly flat."
        ),
        baseline="static seed benchmark (original HumanEval/MBPP prompts)",
        tags=("stochastic", "llm", "gpu", "slow", "simulated"),
        status="checked",
        extra="agents",
    ),
    Paper(
        slug="selekt",
        title="Robust Learning of Diverse Code Edits",
        domain="language",
        seed="000/3",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=3,
        url="https://arxiv.org/abs/2503.03656",
        code_url="https://github.com/microsoft/NextCoder",
        claim=(
            "Fine-tuning Qwen2.5-Coder-7B on code-edit data with SeleKT sparse projection scores higher on "
            "HumanEvalFix, CanItEdit and Aider than SFT or LoRA while keeping MMLU, GSM8K and HumanEval+ "
            "close to the base model."
        ),
        baseline=(
            "full supervised fine-tuning and LoRA (peft) with the same data, steps and learning-rate "
            "grid; the base model as reference"
        ),
        tags=("stochastic", "llm", "slow", "simulated"),
        status="checked",
        extra="language",
    ),
    Paper(
        slug="lvlingam_cumulants",
        title="Causal Effect Identification in lvLiNGAM from Higher-Order Cumulants",
        domain="theory",
        seed="000/4",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=4,
        url="https://arxiv.org/abs/2506.05202",
        code_url="https://github.com/danieletramontano/CEId-from-Moments",
        claim=(
            "Higher-order-cumulant estimators recover causal effects in lvLiNGAM from a single proxy or one"
            " instrument for several treatments, with relative error shrinking as n grows, while "
            "cross-moment and min-norm IV baselines plateau."
        ),
        baseline="cross-moment estimator (Kivva et al. 2023) and min-norm IV",
        tags=("stochastic", "slow"),
        status="checked",
    ),
    Paper(
        slug="fedncn",
        title="Federated Node-Level Clustering Network with Cross-Subgraph Link Mending",
        domain="graphs",
        seed="000/5",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=5,
        url="https://openreview.net/forum?id=38Nh0TebXZ",
        code_url="",
        claim=(
            "For label-free node clustering over subgraphs held by separate clients, FedNCN with "
            "server-side cross-subgraph link mending and shared consensus prototypes gets higher "
            "ACC/NMI/ARI/F1 than FedAvg, FedProx and local-only training of the same local model."
        ),
        baseline="FedAvg / FedProx / local-only training of the same GCN + K-means local model",
        tags=("stochastic", "slow", "simulated"),
        status="checked",
        extra="graphs",
    ),
    Paper(
        slug="dcg_statistics",
        title="On the Statistical Mechanisms of Distributional Compositional Generalization",
        domain="theory",
        seed="000/6",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=6,
        url="https://openreview.net/forum?id=37NsgZkyWH",
        code_url="",
        claim=(
            "Averaged over NFL-symmetric rule families, every learner's unseen-combination accuracy equals "
            "1/|Y| (an invariant only more data raises), and at large n only learners both compatible with "
            "and sensitive to the rule compose."
        ),
        baseline="rule-incompatible or insensitive learners (plain MLP, kNN, majority vote)",
        tags=("stochastic", "simulated"),
        status="checked",
        extra="",
    ),
    Paper(
        slug="local_glivenko_cantelli",
        title="The Empirical Mean is Minimax Optimal for Local Glivenko-Cantelli",
        domain="theory",
        seed="000/7",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=7,
        url="https://arxiv.org/abs/2410.02835",
        code_url="",
        claim=(
            "In the local Glivenko-Cantelli setting no non-pathological estimator has a faster worst-case "
            "risk decay than the empirical mean over symmetric families, so the empirical mean is minimax "
            "optimal; only pathological estimators learn larger classes."
        ),
        baseline="empirical mean estimator versus competing estimators (isotonic, thresholding, hybrid)",
        tags=("stochastic",),
        status="checked",
        extra="",
    ),
    Paper(
        slug="rfm_grokking",
        title=(
            "Emergence in non-neural models: grokking modular arithmetic via average gradient outer product"
        ),
        domain="theory",
        seed="000/8",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=8,
        url="https://arxiv.org/abs/2407.20199",
        code_url="https://github.com/nmallinar/rfm-grokking",
        claim=(
            "Recursive Feature Machines on modular arithmetic (p = 61) keep test accuracy at chance for "
            "several AGOP iterations with zero training loss, then jump to 100%, while a fixed-feature "
            "kernel (M = I) stays near 0%."
        ),
        baseline="fixed-feature kernel (M = I)",
        tags=("stochastic",),
        status="checked",
    ),
    Paper(
        slug="autoformulation",
        title="Autoformulation of Mathematical Optimization Models Using LLMs",
        domain="agents",
        seed="000/9",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=9,
        url="https://arxiv.org/abs/2411.01679",
        code_url="https://github.com/jumpynitro/AutoFormulator",
        claim=(
            "LLM-guided Monte-Carlo tree search over formulation components, with LLM value estimates and "
            "symbolic equivalence pruning, formulates optimization problems more accurately (up to 92% on "
            "NL4OPT) than prior autoformulators and flat sampling."
        ),
        baseline=(
            "flat best-of-N sampling at an equal budget of LLM completions; MCTS without symbolic pruning; "
            "MCTS with uniform priors"
        ),
        tags=("stochastic", "llm", "simulated"),
        status="checked",
        extra="agents",
    ),
    Paper(
        slug="multi_reward_policy_eval",
        title="Adaptive Exploration for Multi-Reward Multi-Policy Evaluation",
        domain="rl",
        seed="000/10",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=10,
        url="https://arxiv.org/abs/2502.02516",
        code_url="https://github.com/rssalessio/multi-reward-multi-policy-eval",
        claim=(
            "MR-NaS-PE exploration, tracking the allocation that minimises a convex sample-complexity "
            "bound, reaches lower max value-estimation error over all policies and rewards in tabular MDPs "
            "than noisy-policy, GVFExplorer and SF-NR exploration."
        ),
        baseline="noisy target-policy exploration (uniform and visitation-based) and GVFExplorer",
        tags=("stochastic", "slow"),
        status="checked",
    ),
    Paper(
        slug="acac",
        title="Agent-Centric Actor-Critic for Asynchronous Multi-Agent Reinforcement Learning",
        domain="rl",
        seed="000/11",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=11,
        url="https://openreview.net/forum?id=323GZNnGqe",
        code_url="https://github.com/LGAI-Research/acac",
        claim=(
            "ACAC's agent-centric critic over each agent's own macro-action observation history, without "
            "padding, solves BoxPushing 6x6 in about 62k steps versus about 221k for Mac-IAICC, and beats "
            "MAPPO and Mac-IAICC on Overcooked."
        ),
        baseline=(
            "padded joint-history critic (MAPPO / naive Mac-IACC style) and ACAC-Duplicate (stale "
            "observations), same actors, PPO and GAE"
        ),
        tags=("stochastic", "slow"),
        status="checked",
        extra="rl",
    ),
    Paper(
        slug="dynamic_message_passing",
        title="Geometric Generative Modeling with Noise-Conditioned Graph Networks",
        domain="generative",
        seed="000/12",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=12,
        url="https://arxiv.org/abs/2507.09391",
        code_url="https://github.com/peterpaohuang/ncgn",
        claim=(
            "Noise-conditioned graph networks whose message-passing graph goes from coarse long-range at "
            "high noise to fine local at low noise generate spatial graphs with lower W1/EMD than static "
            "kNN or fully connected GNNs at equal edge budget."
        ),
        baseline=(
            "the same network with a noise-independent graph: static kNN and fully connected (random "
            "long-range edges at the kNN budget too, outside the small preset)"
        ),
        tags=("stochastic", "gpu", "simulated"),
        status="checked",
        extra="graphs",
    ),
    Paper(
        slug="moe_sgd",
        title=(
            "Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in Gradient-Based "
            "Learning"
        ),
        domain="theory",
        seed="000/13",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=13,
        url="https://arxiv.org/abs/2506.01656",
        code_url="",
        claim=(
            "On clustered single-index regression, an SGD-trained mixture of experts routes clusters to "
            "specialised experts and recovers the global signal with polynomially many samples, while a "
            "vanilla network trained by SGD fails to recover it."
        ),
        baseline="vanilla two-layer network trained by SGD",
        tags=("stochastic",),
        status="checked",
        extra="",
    ),
    Paper(
        slug="slimllm",
        title="SlimLLM: Accurate Structured Pruning for Large Language Models",
        domain="language",
        seed="000/14",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=14,
        url="https://arxiv.org/abs/2505.22689",
        code_url="https://github.com/guojialong1/Slimllm",
        claim=(
            "SlimLLM's head and channel importance scores with greedy head search, linear-regression output"
            " recovery and per-layer ratios keep about 98.7% of LLaMA-7B's zero-shot accuracy at 20% "
            "pruning, above LLM-Pruner and LoRAP."
        ),
        baseline="LLM-Pruner (Taylor) and magnitude/Wanda-style structured criteria",
        tags=("stochastic", "llm", "gpu", "slow"),
        status="checked",
        extra="language",
    ),
    Paper(
        slug="nice",
        title="NICE Data Selection for Instruction Tuning in LLMs with Non-differentiable Evaluation Metric",
        domain="language",
        seed="000/15",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=15,
        url="https://openreview.net/forum?id=2wt8m5HUBs",
        code_url="https://github.com/JTWang2000/NICE",
        claim=(
            "Choosing 5% of instruction-tuning data by NICE's policy-gradient influence on a "
            "non-differentiable validation metric gives better fine-tuned LLMs than LESS's next-token-loss "
            "influence or random subsets, often beating the full pool."
        ),
        baseline=(
            "LESS (next-token-loss gradient influence of the reference answers), random subsets and the "
            "full pool"
        ),
        tags=("stochastic", "llm", "slow", "simulated"),
        status="checked",
        extra="language",
    ),
    Paper(
        slug="wgformer",
        title=(
            "WGFormer: An SE(3)-Transformer Driven by Wasserstein Gradient Flows for Molecular Ground-State"
            " Conformation Prediction"
        ),
        domain="life",
        seed="000/16",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=16,
        url="https://arxiv.org/abs/2410.09795",
        code_url="https://github.com/FanmengWang/WGFormer",
        claim=(
            "WGFormer refines low-quality molecular conformers into ground-state conformations with lower "
            "D-MAE, D-RMSE and C-RMSD than ConfOpt, GTMGC, EGNN and SE(3)-Transformer on Molecule3D and "
            "QM9."
        ),
        baseline="ConfOpt-ThreeAtom, EGNN and a softmax-attention pair transformer",
        tags=("stochastic", "gpu", "slow", "simulated"),
        status="checked",
        extra="life",
    ),
    Paper(
        slug="l_diffusion",
        title="L-Diffusion: Laplace Diffusion for Efficient Pathology Image Segmentation",
        domain="generative",
        seed="000/17",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=17,
        url="https://openreview.net/forum?id=2veJwf07RN",
        code_url="https://github.com/Lweihan/LDiffusion",
        claim=(
            "Laplace-noise diffusion pixel features refined by contrastive learning segment pathology "
            "images better than prior methods, by up to 7.16% Dice on tissue and 20.09% Dice on cell "
            "segmentation datasets."
        ),
        baseline=(
            "U-Net trained directly on the labels; the same pipeline with Gaussian noise; the pipeline "
            "without the contrastive stage"
        ),
        tags=("stochastic", "slow", "simulated"),
        status="checked",
        extra="generative",
    ),
    Paper(
        slug="thinkdiff",
        title="I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models",
        domain="generative",
        seed="000/18",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=18,
        url="https://arxiv.org/abs/2502.10458",
        code_url="https://github.com/MiZhenxing/ThinkDiff",
        claim=(
            "Aligning a VLM's generated-token features to an LLM decoder, trained only on captions, lets a "
            "diffusion decoder reach 46.3% 4-shot accuracy on CoBSAT in-context reasoning versus 19.2% for "
            "SEED-LLaMA."
        ),
        baseline=(
            "reconstruction-style (diffusion-loss) alignment; input-token alignment; query-only "
            "text-to-image; the paper also compares SEED-LLaMA (not run here)"
        ),
        tags=("stochastic", "gpu", "slow", "simulated"),
        status="checked",
        extra="generative",
    ),
    Paper(
        slug="tarflow",
        title="Normalizing Flows are Capable Generative Models",
        domain="generative",
        seed="000/19",
        seed_file="000_2ec7030ee121d351.txt",
        seed_position=19,
        url="https://arxiv.org/abs/2412.06329",
        code_url="https://github.com/apple/ml-tarflow",
        claim=(
            "TarFlow, stacked causal-transformer autoregressive flow blocks with alternating directions, "
            "reaches 2.99 bits/dim on unconditional ImageNet 64x64, better likelihood than prior models "
            "including coupling flows, with diffusion-comparable samples."
        ),
        baseline="coupling normalizing flow (RealNVP/Glow-style) at matched size",
        tags=("stochastic", "gpu", "slow"),
        status="checked",
        extra="generative",
    ),
    Paper(
        slug="slogan",
        title=(
            "Sparse Causal Discovery with Generative Intervention for Unsupervised Graph Domain Adaptation"
        ),
        domain="graphs",
        seed="002/1",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=1,
        url="https://arxiv.org/abs/2507.07621",
        code_url="",
        claim=(
            "SLOGAN, which separates causal from spurious graph features with a generative intervention "
            "and category-adaptive pseudo-labels, reaches higher target-domain accuracy in unsupervised "
            "graph domain adaptation than source-only training, adversarial alignment and self-training."
        ),
        baseline=(
            "source-only ERM, DANN-style adversarial alignment and fixed-threshold self-training "
            "(same GNN)"
        ),
        tags=("stochastic", "slow", "simulated"),
        status="checked",
        extra="graphs",
    ),
    Paper(
        slug="puzzle",
        title="Puzzle: Distillation-Based NAS for Inference-Optimized LLMs",
        domain="language",
        seed="002/2",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=2,
        url="https://arxiv.org/abs/2411.19146",
        code_url="https://github.com/NVlabs/puzzle",
        claim=(
            "Blockwise local distillation plus MIP architecture search turns Llama-3.1-70B into "
            "Nemotron-51B with 2.17x H100 throughput and 98.4% of its accuracy, beating greedy and "
            "max-parameter searches at equal throughput."
        ),
        baseline=(
            "greedy per-layer choice, uniform shrinking and depth pruning at the same measured latency "
            "budget; the parent as reference"
        ),
        tags=("stochastic", "llm", "slow", "speed"),
        status="checked",
        extra="language",
    ),
    Paper(
        slug="continual_robust_training",
        title="Adapting to Evolving Adversaries with Regularized Continual Robust Training",
        domain="robustness",
        seed="002/3",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=3,
        url="https://arxiv.org/abs/2502.04248",
        code_url="https://github.com/inspire-group/continual_robust_training",
        claim=(
            "Regularising the logit distance between clean and attacked inputs during initial adversarial "
            "training and fine-tuning gives higher robust accuracy on seen and unforeseen attacks than "
            "unregularised continual robust training, at little extra cost."
        ),
        baseline=(
            "continual robust training without regularization (Croce fine-tuning), uniform-noise "
            "regularization (UR), no adaptation, and training from scratch on all attacks (MAX)"
        ),
        tags=("stochastic", "slow"),
        status="checked",
        extra="robustness",
    ),
    Paper(
        slug="lexicographic_morl",
        title="Multi-objective Linear Reinforcement Learning with Lexicographic Rewards",
        domain="rl",
        seed="002/4",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=4,
        url="https://openreview.net/forum?id=RTHTyTsRT3",
        code_url="",
        claim=(
            "A lexicographic LSVI-style algorithm with linear function approximation attains sublinear "
            "regret on every objective, Õ(Λ(λ)√(d²H⁴K)), where objective-1-only or scalarised LSVI-UCB "
            "incurs linear regret on some objective."
        ),
        baseline="objective-1-only and scalarised LSVI-UCB",
        tags=("stochastic", "slow"),
        status="checked",
        extra="rl",
    ),
    Paper(
        slug="residual_matrix_transformer",
        title="Residual Matrix Transformers: Scaling the Size of the Residual Stream",
        domain="language",
        seed="002/5",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=5,
        url="https://arxiv.org/abs/2506.22696",
        code_url="https://github.com/bmac3/residual-matrix-transformer",
        claim=(
            "Replacing the residual stream with an outer-product memory matrix lets the Residual Matrix "
            "Transformer match a transformer's OpenWebText loss with 58% fewer FLOPs, 25% fewer parameters "
            "and 41% fewer tokens."
        ),
        baseline="standard GPT-2-style transformer",
        tags=("stochastic", "gpu", "slow"),
        status="checked",
        extra="",
    ),
    Paper(
        slug="econ",
        title=(
            "From Debate to Equilibrium: Belief-Driven Multi-Agent LLM Reasoning via Bayesian Nash "
            "Equilibrium"
        ),
        domain="agents",
        seed="002/6",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=6,
        url="https://arxiv.org/abs/2506.08292",
        code_url="https://github.com/tmlr-group/ECON",
        claim=(
            "ECON, coordinating LLM executors through belief networks at a Bayesian Nash equilibrium "
            "without inter-agent messages, improves average accuracy by 11.2% over multi-LLM methods such "
            "as multi-agent debate on six reasoning and planning benchmarks."
        ),
        baseline=(
            "single-agent chain of thought, self-consistency and multi-agent debate at an equal "
            "generated-token budget; independent learners (non-equilibrium ablation)"
        ),
        tags=("stochastic", "llm", "slow"),
        status="checked",
        extra="agents",
    ),
    Paper(
        slug="competitive_classification",
        title="A Market for Accuracy: Classification under Competition",
        domain="theory",
        seed="002/7",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=7,
        url="https://arxiv.org/abs/2502.18052",
        code_url="",
        claim=(
            "When users pick among competing classifiers by correctness, a provider that trains as a best "
            "response to competitors wins more market share than accuracy-maximising training, raises user "
            "welfare, and best-response dynamics converge quickly."
        ),
        baseline=(
            "market-oblivious accuracy-maximising (ERM) training; also reported: best response with "
            "surrogate competitors and the smooth-share proxy"
        ),
        tags=("stochastic",),
        status="checked",
        extra="",
    ),
    Paper(
        slug="pnba",
        title=(
            "Neural Representational Consistency Emerges from Probabilistic Neural-Behavioral "
            "Representation Alignment"
        ),
        domain="life",
        seed="002/8",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=8,
        url="https://arxiv.org/abs/2505.04331",
        code_url="https://github.com/zhuyu-cs/PNBA",
        claim=(
            "Probabilistic neural-behavioural alignment yields latent representations preserved across "
            "subjects (monkey M1/PMd, mouse V1) that decode behaviour zero-shot in held-out animals, unlike"
            " deterministic alignment, which needs manual CCA."
        ),
        baseline="deterministic contrastive alignment (CEBRA-like); manual CCA alignment",
        tags=("stochastic", "gpu", "slow", "simulated"),
        status="checked",
        extra="",
    ),
    Paper(
        slug="pinnsagent",
        title="PINNsAgent: Automated PDE Surrogation with Large Language Models",
        domain="physics",
        seed="002/9",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=9,
        url="https://arxiv.org/abs/2501.12053",
        code_url="https://github.com/qingpowuwu/PINNsAgent_Codes",
        claim=(
            "With five trainings per new PDE, PINNsAgent's physics-guided knowledge replay and memory-tree "
            "search finds PINN configurations with lower test MSE than random search and Bayesian "
            "optimisation on 12 of 14 PINNacle PDEs."
        ),
        baseline=(
            "random search and optuna TPE at the same number of trainings; an LLM-free scripted planner "
            "as a labelled control"
        ),
        tags=("stochastic", "llm", "simulated"),
        status="checked",
        extra="physics",
    ),
    Paper(
        slug="turing_programs",
        title="Universal Length Generalization with Turing Programs",
        domain="language",
        seed="002/10",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=10,
        url="https://arxiv.org/abs/2407.03310",
        code_url="",
        claim=(
            "Transformers trained on up to 50-digit addition with Turing-program scratchpads and Hard-ALiBi"
            " reach 98% exact match on 100-digit addition, while no-scratchpad training or RoPE, NoPE and "
            "ALiBi encodings fail to length-generalise."
        ),
        baseline="direct-answer training and TP with RoPE/NoPE/ALiBi positions",
        tags=("stochastic", "gpu", "slow"),
        status="checked",
        extra="",
    ),
    Paper(
        slug="h_tuning",
        title=(
            "H-Tuning: Toward Low-Cost and Efficient ECG-based Cardiovascular Disease Detection with "
            "Pre-Trained Models"
        ),
        domain="life",
        seed="002/11",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=11,
        url="https://openreview.net/forum?id=RLu1QIPiVr",
        code_url="https://github.com/KAZABANA/H-Tuning",
        claim=(
            "Mixing zeroth-order and small-batch back-propagated gradients to fine-tune pre-trained ECG "
            "models cuts fine-tuning GPU memory 6.34x with accuracy comparable to standard fine-tuning; "
            "distillation cuts inference latency 4.52x and memory 19.83x."
        ),
        baseline=(
            "full fine-tuning, LoRA with back-propagation (peft) and MeZO (zeroth-order only); "
            "KD student vs student alone"
        ),
        tags=("stochastic", "simulated", "speed"),
        status="checked",
        extra="life",
    ),
    Paper(
        slug="condensed_sparse_solver",
        title="Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear Solvers",
        domain="physics",
        seed="002/12",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=12,
        url="https://openreview.net/forum?id=RKbanvzycr",
        code_url="https://github.com/wangyu9/Schwarz_Schur_Involution",
        claim=(
            "Condensing grid Laplacians into batched dense Dirichlet-to-Neumann merges yields an exact, "
            "differentiable direct sparse solver up to three orders of magnitude faster than SciPy and "
            "cuDSS direct solvers."
        ),
        baseline=(
            "CHOLMOD (scikit-sparse), MKL PARDISO (pypardiso), MUMPS (python-mumps) and SciPy SuperLU on "
            "the CPU; the paper: SciPy SuperLU and cuDSS"
        ),
        tags=("gpu", "slow", "simulated", "speed"),
        status="checked",
        extra="physics",
    ),
    Paper(
        slug="aaar",
        title="AAAR-1.0: Assessing AI's Potential to Assist Research",
        domain="agents",
        seed="002/13",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=13,
        url="https://arxiv.org/abs/2410.22394",
        code_url="https://github.com/RenzeLou/AAAR-1.0",
        claim=(
            "On equation inference, experiment design and paper-weakness writing, even the best LLMs score "
            "modestly (at most 61% 4-way equation accuracy) and write generic weaknesses with ITF-IDF far "
            "below human reviewers' 7.69."
        ),
        baseline=(
            "random, majority, all-positive, copy-the-input and generic-list baselines; another paper's "
            "gold, paraphrased gold and simulated human reviews as metric references"
        ),
        tags=("stochastic", "llm", "slow", "simulated"),
        status="checked",
        extra="agents",
    ),
    Paper(
        slug="pisa",
        title=(
            "PISA Experiments: Exploring Physics Post-Training for Video Diffusion Models by Watching Stuff"
            " Drop"
        ),
        domain="generative",
        seed="002/14",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=14,
        url="https://arxiv.org/abs/2503.09595",
        code_url="https://github.com/vision-x-nyu/pisa-experiments",
        claim=(
            "Fine-tuning Open-Sora on simulated drop videos more than halves PisaBench L2 and Chamfer "
            "errors on real videos, beating Sora, Kling and Runway Gen3, and object-reward optimisation "
            "further improves each targeted metric."
        ),
        baseline=(
            "base generator pretrained on generic motion, PSFT alone, PSFT continued for the ORO budget, "
            "and a static copy of the first frame"
        ),
        tags=("stochastic", "slow", "simulated"),
        status="checked",
    ),
    Paper(
        slug="caption_hallucination",
        title=(
            "Toward Robust Hyper-Detailed Image Captioning: A Multiagent Approach and Dual Evaluation "
            "Metrics for Factuality and Coverage"
        ),
        domain="agents",
        seed="002/15",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=15,
        url="https://arxiv.org/abs/2412.15484",
        code_url="https://github.com/adobe-research/CapMAS",
        claim=(
            "Isolated per-proposition MLLM verification detects caption hallucinations better than "
            "confidence or consistency (AUROC 81.4 vs 57.5/73.5), and decompose-verify-revise raises "
            "detailed-caption factuality above VCD/OPERA-style fixes at modest coverage cost."
        ),
        baseline=(
            "no correction; confidence filtering; resampling-consistency filtering; non-isolated "
            "verification (the whole caption in context)"
        ),
        tags=("stochastic", "llm", "slow", "simulated"),
        status="checked",
        extra="agents",
    ),
    Paper(
        slug="csbm",
        title="Categorical Schrödinger Bridge Matching",
        domain="generative",
        seed="002/16",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=16,
        url="https://arxiv.org/abs/2502.01416",
        code_url="https://github.com/gregkseno/csbm",
        claim=(
            "Discrete-time iterative Markovian fitting converges to the Schrödinger bridge on finite "
            "discrete spaces, and learned CSBM beats continuous-space SB methods (ASBM) on CelebA latent "
            "translation in FID, CMMD and LPIPS."
        ),
        baseline=(
            "one bridge-matching pass from the independent coupling (D-IMF round 1); a continuous-space "
            "entropic-OT Schrodinger bridge (POT Sinkhorn, plan-conditional sampling)"
        ),
        tags=("stochastic",),
        status="checked",
        extra="generative",
    ),
    Paper(
        slug="isotropic_merging",
        title="No Task Left Behind: Isotropic Model Merging with Common and Task-Specific Subspaces",
        domain="language",
        seed="002/17",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=17,
        url="https://arxiv.org/abs/2502.04959",
        code_url="https://github.com/danielm1405/iso-merging",
        claim=(
            "Flattening the singular spectrum of the merged task matrix (Iso-C) and adding task-specific "
            "subspaces (Iso-CTS) gives higher normalised accuracy than Task Arithmetic and TIES when "
            "merging 8-20 fine-tuned ViTs (95.6% vs 80.7%)."
        ),
        baseline=(
            "task arithmetic and TIES (both tested against mergekit), TSV-M and weight averaging, the "
            "same merge-coefficient grid chosen on validation for every merge"
        ),
        tags=("stochastic", "llm", "simulated"),
        status="checked",
        extra="language",
    ),
    Paper(
        slug="epicoder",
        title="EpiCoder: Encompassing Diversity and Complexity in Code Generation",
        domain="agents",
        seed="002/18",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=18,
        url="https://arxiv.org/abs/2501.04694",
        code_url="https://github.com/microsoft/EpiCoder",
        claim=(
            "Synthesising code tasks from sampled feature-tree subtrees gives more diverse and complex data"
            " than snippet-seeded synthesis, and models fine-tuned on it lead similar-size open models on "
            "HumanEval, MBPP and BigCodeBench."
        ),
        baseline=(
            "snippet-seeded code task synthesis (OSS-Instruct-style prompt; same model, calls and token "
            "budget)"
        ),
        tags=("stochastic", "llm", "simulated"),
        status="checked",
        extra="agents",
    ),
    Paper(
        slug="monotonic_mlp",
        title=(
            "Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond "
            "Bounded Activations"
        ),
        domain="theory",
        seed="002/19",
        seed_file="002_c00c1a7f2635ef0d.txt",
        seed_position=19,
        url="https://arxiv.org/abs/2505.02537",
        code_url="",
        claim=(
            "Sign-constrained monotonic MLPs with unbounded (ReLU-type) or sign-adaptive activations are "
            "universal monotone approximators and fit monotone targets more accurately and stably across "
            "initialisations than non-negative-weight MLPs with bounded activations."
        ),
        baseline="non-negative-weight MLPs with bounded activations",
        tags=("stochastic", "simulated"),
        status="checked",
        extra="theory",
    ),
)
# fmt: on

REGISTRY: Registry[Paper] = Registry((p.slug, p) for p in PAPERS)


def get_paper(slug: str) -> Paper:
    """The catalog entry for ``slug``; raises UnknownSlugError with suggestions."""
    return REGISTRY.get(slug)


README_BEGIN = "<!-- papers:begin (python -m icml25.catalog --write-readme; a test keeps it in sync) -->"
README_END = "<!-- papers:end -->"


def markdown_table() -> str:
    """The README's table of papers with their status, generated from :data:`PAPERS`."""
    lines = [README_BEGIN, "", "| slug | domain | seed | status | paper |", "|---|---|---|---|---|"]
    for p in PAPERS:
        title = f"[{p.title}]({p.url})" if p.url else p.title
        lines.append(f"| `{p.slug}` | {p.domain} | {p.seed} | {p.status} | {title} |")
    counts = {s: sum(p.status == s for p in PAPERS) for s in STATUSES}
    lines += ["", ", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(PAPERS)}.", "", README_END]
    return "\n".join(lines)


def sync_readme(path: str = "README.md") -> bool:
    """Replace the table between the README markers; returns True if the file changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, end = text.index(README_BEGIN.split(" (")[0]), text.index(README_END) + len(README_END)
    new = text[:start] + markdown_table() + text[end:]
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


if __name__ == "__main__":  # pragma: no cover
    import sys

    if sys.argv[1:] == ["--write-readme"]:
        print("README.md updated" if sync_readme() else "README.md already in sync")
    else:
        print(markdown_table())
