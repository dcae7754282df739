"""Claim check for *Geometric Generative Modeling with Noise-Conditioned Graph Networks* (Pao-Huang,
Black, Qiu; ICML 2025; https://arxiv.org/abs/2507.09391).

Claim: with the same network, parameters, edge budget and training, a message-passing graph that is
coarse and long-range at high noise and fine and local at low noise (Dynamic Message Passing, DMP)
generates spatial graphs closer to held-out data than noise-independent graphs.

Setup (the paper's synthetic spatio-temporal transcriptomics task, Sec. 5.2): a three-gene Turing
reaction-diffusion system simulated in code, read out on 10 time x 10 space nodes (positions fixed,
3 gene values generated). The gene values are scaled with training statistics in one of two ways
(``normalise``): ``"minmax"``, the official per-time-point min-max over all samples, nodes and genes
together (``full``), or ``"standard"``, every node and gene to mean 0 and standard deviation 1
(``small``, and ``medium`` since the budget study; see "Changed after seeing a run" below). Flow
matching (t = 0 noise, t = 1 data; :mod:`icml25.nn.flow_matching`), Euler sampling. One pool of simulations is
made per run (a pure function of ``data_seed``); each seed splits it afresh into train, validation
and test, and draws its own training noise, initial weights and sampling noise.

Arms (one network class, identical parameter count and initial weights; only the graph differs):
    dmp              exp schedule (c = 10): ~sqrt(kN) voxel clusters with ~sqrt(kN) neighbours at noise,
                     N nodes with k neighbours at data ("ours")
    knn              static kNN, k = base_k (the edge budget k N; the headline's baseline)
    fully_connected  static complete graph (N (N - 1) edges: a larger budget; the official ST baseline)
    random           static, k uniformly random neighbours (long range at the kNN budget; the official
                     ``long_short``)
    dmp_reversed     the exp schedule run backwards: fine at noise, coarse at data (ablation)
References (never baselines to beat; they make the W1 column readable):
    marginals        each node of each sample drawn from a different random training sample: the exact
                     per-node marginals with no correlation between nodes. A model that learned no
                     spatial or temporal structure scores about this.
    data_floor       real training samples (as many as the test set): what a perfect generator scores
                     with this many samples (a positive control).

Training follows the official ST script: Adam at the official learning rate 1e-3 with a 10-step
linear warm-up, then constant (``lr_schedule``; small decays it, see below), no gradient clipping
(``grad_clip``; small clips at 1); EMA of the
weights (BatchNorm statistics included) with decay 0.95 per step (``ema_decay``; 0 = off);
the EMA weights are evaluated and sampled. Equal effort: every arm trains the same steps and batch
for each learning rate in ``lrs`` and keeps the one with the lowest validation flow-matching loss
(fixed noise and times; :func:`icml25.core.tuning.best_on_validation`). All arms then sample from the
same noise with ``euler_steps`` Euler steps.

Metric: exact W1 between the generated and the test set (flattened samples, POT), divided by the
number of time points as in the paper. With as many generated as test samples the optimal plan is a
matching, so W1 is the mean of each generated sample's matched cost (:func:`.metrics.w1_matched_costs`).
These costs are the items: sample i of every arm starts from the same noise, so they pair across arms,
and the runner's two-stage bootstrap (seeds, then samples) gives the paired intervals, conditional on
each arm's optimal matching.

Gate ``learns_structure`` (this round's measure; see "Changed after seeing run
20261206T081000908383Z-6a3f9e" below): the kNN baseline closes at least ``gate_gap_min`` (25 %) of the
gap in covariance error between the marginals reference and the data floor,
``(E_marginals - E_knn) / (E_marginals - E_floor)`` with ``E`` the relative Frobenius error of the
generated samples' covariance against the test set's (:func:`.metrics.covariance_error`), mean over
seeds. If it does not, the trained models have learned the per-node marginals but not how nodes
co-vary, and no graph can matter. A collapsed generator has covariance 0, error exactly 1, about the
marginals' error, so it closes none of the gap (the ``mean_field`` reference shows it in every run).
Until that round the gate's measure was the flattened W1 itself, declared before any small-scale
number was seen, with the same 25 %.

Changed after seeing run 20261205T193342276876Z-df22e3 (the gate failed at 4 % with min-max data,
and an exploration showed why): the small preset standardises the data (``normalise="standard"``).
Min-max over a time point's range squeezes Sox9 into a sliver of [0, 1] (standard deviation about
0.06 at the late time points, where the pattern lives), so the part of the flow-matching target that
carries the structure between nodes is tiny next to the unit noise, and at a CPU budget the models
learn only the per-node marginals. The reason is the scale of the data relative to the noise, not an
outcome: the gate, its 25 % threshold and the metric definitions are unchanged; W1 is measured in the
units of the data the model is trained on, so the smallest effect is rescaled to the same 10 % of the
marginals-to-floor gap in the new units (see below). A test checks that the message passing of the
kNN arm reaches exactly its graph neighbours (the graph is used; no bug was found).

Criteria (declared before any small-scale number was seen; smallest effects are config fields):
    * headline ``dmp_below_knn``: paired W1(dmp) - W1(knn) < 0 (samples x seeds); smallest effect of
      interest ``smallest_effect`` = 0.01 W1 units, about 10 % of the marginals-to-floor gap (0.357 -
      0.249 = 0.108 at the small configuration): a gain smaller than a tenth of what learning the
      structure buys is not one we would call better. The paper reports a ranking on this task,
      not a gap we could verify, so the effect is declared, not taken from it. On standardised data
      (``small``) the same 10 % is 0.08 W1 units (``SMALLEST_EFFECT_STANDARD``: the references of an
      exploration run, marginals 2.225 and data floor 1.420, gap 0.805; rescaled with the units, not
      chosen from a model's score).
    * ``dmp_below_fully_connected``, ``dmp_below_reversed``, ``dmp_below_random``: the same paired test
      against each further arm that the configuration runs (the reversed schedule tests that the
      direction of the noise conditioning matters, not multi-scale mixing as such).
    * schedule direction (also at tiny): coarse nodes at tau = 0 / at tau = 1 < 1 (coarser when
      noisier) and mean coarse-edge length at tau = 0 / at tau = 1 > 1 (wider when noisier).
    * equal budget: DMP's mean coarse edges over tau / kNN's <= ``budget_ratio_max`` (1.0), and the
      parameter counts of DMP and kNN are equal.

Network (``norm``, ``share_norm``): the official ``STAdaptiveGNN`` structure, PyG MLP blocks of
Linear -> BatchNorm -> ReLU with one BatchNorm instance shared inside the input, per-layer and output
MLPs (the official code passes a ``BatchNorm`` instance as PyG's ``norm``) and an identity norm in the
last layer. Earlier rounds used LayerNorm and plain Linear-GELU MLPs (``norm="layer"``).

Comparison with the official code (fetched; scratch folder, nothing committed):
    * the official ``STAdaptiveGNN`` (its ``src/gnn.py`` unchanged, GCN, width 32, 3 layers) with its
      weights copied into ours gives outputs equal to ours to 0.0 (max absolute difference, float32) in
      training and eval mode, for the kNN and the DMP graph, on the same inputs and graphs;
    * trained side by side on identical inputs (seed 0's split, standardised, 600 steps of batch 32,
      Adam 1e-3, EMA 0.95, clipping 1, 50 Euler steps): official network kNN closes 23.1 % of the
      marginals-to-floor gap, DMP 7.1 %; our earlier LayerNorm network kNN 15.1 %, DMP 3.3 %. So the
      BatchNorm structure learns faster, and DMP learning less than kNN is what the official network
      does too on this data: not a missing piece of ours;
    * our simulator against the official shipped data (``st_test_x_same_domain.npy``, 1000 fields):
      standard deviation of the three genes at the last time point 1.10, 4.19, 2.68 (official 1.10,
      4.16, 2.65), correlation of Sox9 between adjacent space nodes -0.78 (official -0.80).

Changed after seeing run 20261206T015943071040Z-730daf (the gate failed at 21.5 %), because the
LayerNorm network was a deviation from the official code, not because of the outcome: the default
network is now the official BatchNorm one (``norm="batch"``, ``share_norm=True``), and the small
preset trains 2000 instead of 2400 steps so that it costs what it did (BatchNorm adds about 10 % per
step). The gate, its threshold, the metric and the smallest effect are unchanged.

Changed after seeing run 20261206T043256419581Z-088b0e (timed alone at two threads: the gate failed at
21.1 %; the one-thread development run of the same seeds passed it at 27.8 %), because the verdict
moved with the thread count alone, not because of its direction: a gate that float round-off can flip
measures the noise of one training trajectory, not the design. Two sources of that noise, both read
from the code, not tuned on the gate:

* the sampled model is one point of a constant-rate trajectory: EMA 0.95 averages only the last ~20
  steps of batch 32, so where training stops decides the sample quality. ``small`` now decays the
  learning rate to 0 with a cosine after the warm-up (``lr_schedule="cosine"``; official and the
  default: ``"constant"``), the usual way to end a fixed budget at a settled point;
* the official network shares one BatchNorm instance between the layers of each input, per-layer and
  output MLP, so its running statistics are a blend of two or three layers' statistics (about
  0.30/0.33/0.37 in steady state), and in eval mode, which samples, each of those layers is normalised
  with the blend, not its own statistics. Training uses batch statistics and never sees this. A flag
  can keep the shared weight and bias and give each layer its own running statistics
  (``split_norm_stats=True``; official and the default: ``False``): training is the same computation
  bit for bit (tested), only the eval-mode statistics differ. Measured (kNN, 2400 cosine steps, one
  thread, seeds 0 and 1): the validation loss of the sampled model falls from 1.57 and 1.77 (official
  blend) to 0.77 and 0.81 (its batch-statistics loss is 0.78 and 0.82), but the share of the W1 gap
  closed falls too, from 26.0 % and 32.2 % to 20.6 % and 24.7 %. A better flow model scores worse: the
  flattened W1 with 100 samples in 300 dimensions rewards under-dispersed samples (all-zero fields
  score about sqrt(300) / 10 = 1.73, which closes roughly 60 % of the gap between the marginals,
  2.21, and the data floor, 1.41). So ``small`` keeps the official statistics (the flag stays off);
  the gate needs a measure that collapse cannot pass (next round, not done here).

The trainer also runs fused Adam (``fused_adam``, the same update up to round-off) and the EMA update
as two ``torch._foreach`` calls (then a copy here; now the shared :class:`icml25.nn.diffusion.EMA` with
``module_keeps_tensors=True``, bit-identical to the per-tensor loop; tested); both
save only a few per cent per step (measured under load: kNN 58.5 against 57.7 ms of CPU per step at
one thread). ``small`` trains 2400 steps of batch 32 instead of 2000 (the budget of the LayerNorm
rounds; about 15 % more wall time, an estimated 5.3 minutes alone), for a margin above the gate
rather than a pass at it. The gate, its 25 % threshold, the metric, the headline and its smallest
effect, the seeds and the arms are unchanged. ``diagnose_bn_stats=True`` also samples each trained
model with the official blended statistics (:func:`.model.official_bn_stats`, same weights and
noise) and reports ``gap_closed_official_bn_stats``: what the eval-mode statistics alone change.

Changed after seeing run 20261206T081000908383Z-6a3f9e (timed alone at two threads, 431 s: the W1 gate
failed at 22.7 %; kNN-only development runs of that design at one thread had closed 26.0 % and
32.2 %): the gate's measure, because the
flattened W1 with 100 samples in 300 dimensions rewards under-dispersion (the ``mean_field`` reference,
one mean field for every sample, closes 58-61 % of the W1 gap on three splits of this data; a Gaussian
with the training covariance shrunk to 0.7 of its spread scores below the data floor), not because of
the gate's direction. The gate now reads the covariance error (above; declared with the same 25 %
before any trained model was scored on it). On the same three splits, without training: the fitted
Gaussian closes 84-100 % of its gap, the mean field 0-1 %, and an even mix of marginals and Gaussian
30-39 %. The energy distance (:func:`.metrics.energy_distance`) is reported beside it
(``energy_gap_closed``): it penalises under-dispersion (the mean field scores -19 to -21 times the gap)
but is noisier with 100 samples. The small budget falls from 2400 to 1500 steps of batch 32 to fit the
time limit (about 300 s alone at two threads, 550 s at one thread two checks at a time).

Development run of the new gate (kNN only, seed 0's split, 1500 cosine steps, one thread, a machine
loaded by other jobs; not stored): the sampled model closes 2.4 % of the covariance gap (W1 gap 21.5 %,
energy distance 3.41 against the marginals' 0.43: far more under-dispersed than independent nodes).
Its per-node variance is 0.47 of the data's, and adjacent space nodes correlate at -0.02 to +0.02 at
the late time points, where the data's correlate at -0.77 to -0.80. The same weights with per-layer
BatchNorm statistics (``split_norm_stats``) close 4.1 % (variance 0.74, adjacent correlation -0.11 to
-0.14). So at this budget the models learn the per-node marginals (shrunk), not the spatial structure,
and the gate fails by a wide margin rather than on its threshold. The same run at two threads was
stopped unfinished (no CPU time left before the deadline).

Budget study (this round; README, "What it would take"; development runs at one thread under load,
outside the check, with this module's functions): kNN's share of the covariance gap grows by a fraction
of a point per doubling of the small preset's steps, while a plain MLP velocity on the flattened field
(a diagnostic, no graph) closes about 70 % of it with the same data, trainer and sampler within 750
steps. So no budget that fits ``small`` passes the gate, and ``small`` is unchanged. ``medium`` (changed
before any run of it) runs the official budget on one GPU with the settings of ``small``: standardised
data with its smallest effect, the cosine decay and clipping at 1 (``full`` keeps the official recipe).

Deviations (each with its config field; ``full`` runs the official values): at small standardised
data (``normalise``; official: per-time min-max), a GCN coarse convolution (``conv``; the paper
reports both; the official ST script defaults to GAT with one head, ``gat_heads``, which ``medium``
and ``full`` use), 1500 steps of batch 32 (``steps``, ``batch_size``; official 1200 x 128) with a
cosine decay of the learning rate (``lr_schedule``; official: constant), 50 Euler steps (``euler_steps``;
official 200) and the gradient norm clipped at 1 (``grad_clip``; official: no clipping, the default);
everywhere a coarser simulation grid (``ds``, ``dt``: 0.4 and 0.02 instead of 0.2 and 0.005; ``full``
uses the official grid) and batches reshuffled every epoch (``batch_order="shuffle"``; the official
loader keeps one order, ``batch_order="fixed"``, which ``full`` uses).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields, check_in_range, check_positive
from icml25.nn.diffusion import EMA
from icml25.nn.flow_matching import euler_sample, flow_matching_loss
from icml25.nn.params import count_parameters
from icml25.nn.train import FitConfig, fit

from .data import minmax_per_time, standardise_per_node, turing_st_dataset
from .graph import build_adaptive_graph, coarse_edge_lengths
from .metrics import covariance_error, energy_distance, w1_matched_costs
from .model import NCGNConfig, NCGNVelocity, official_bn_stats
from .schedule import GraphSchedule

OURS = "dmp"
HEAD_BASELINE = "knn"
STATIC = ("knn", "fully_connected", "random")
REVERSED = "dmp_reversed"
ARMS = (OURS, *STATIC, REVERSED)
REFERENCES = ("marginals", "data_floor", "mean_field")
#: how the gene values are scaled: the official per-time min-max, or per-node standardisation
NORMALISATIONS = ("minmax", "standard")
#: the learning rate after the warm-up: the official constant rate, or a cosine decay to 0 (small)
LR_SCHEDULES = ("constant", "cosine")
BATCH_ORDERS = ("shuffle", "fixed")
#: share of the marginals-to-floor gap closed, per measure: the covariance error (the gate's measure),
#: the energy distance and the flattened W1 (reported), and (diagnostic) the W1 with the official
#: shared-BatchNorm statistics on the same weights. (gap key, metric, its marginals/floor metric)
GAP_KEYS = (
    ("cov_gap_closed", "cov_err", "cov_err"),
    ("energy_gap_closed", "energy", "energy"),
    ("gap_closed", "w1", "w1"),
    ("gap_closed_official_bn_stats", "w1_official_bn_stats", "w1"),
    ("cov_gap_closed_official_bn_stats", "cov_err_official_bn_stats", "cov_err"),
)
#: declared smallest effect of interest on W1 in min-max units (see the module docstring)
SMALLEST_EFFECT = 0.01
#: the same 10 % of the marginals-to-floor gap in standardised units (see the module docstring)
SMALLEST_EFFECT_STANDARD = 0.08
EFFECT_SOURCE = (
    "declared: 0.01 W1 units, about 10 % of the gap between the marginals reference and the data floor "
    "(0.357 - 0.249 in the previous small run); the paper gives a ranking, no verified gap"
)
EFFECT_SOURCE_STANDARD = (
    "declared: 0.08 standardised W1 units, about 10 % of the gap between the marginals reference and the "
    "data floor on standardised data (2.225 - 1.420 = 0.805 for the two references in an exploration "
    "run; the declared 0.01 min-max units rescaled to the new units); the paper gives a ranking, no "
    "verified gap"
)


@dataclass(frozen=True)
class DMPCheckConfig:
    """One configuration of the check (data, network, training, pre-declared thresholds)."""

    n_train: int = 300
    n_val: int = 50
    n_test: int = 100
    n_times: int = 10
    n_space: int = 10
    ds: float = 0.4
    dt: float = 0.02
    t_max: float = 100.0
    data_seed: int = 0
    normalise: str = "minmax"
    hidden: int = 32
    layers: int = 3
    conv: str = "gcn"
    gat_heads: int = 1
    norm: str = "batch"
    share_norm: bool = True
    split_norm_stats: bool = False
    diagnose_bn_stats: bool = False
    base_k: int = 5
    curvature: float = 10.0
    batch_size: int = 128
    steps: int = 1200
    warmup_steps: int = 10
    lrs: tuple[float, ...] = (1e-3,)
    lr_schedule: str = "constant"
    ema_decay: float = 0.95
    grad_clip: float = 0.0
    batch_order: str = "shuffle"
    fused_adam: bool = True
    val_repeats: int = 2
    euler_steps: int = 200
    arms: tuple[str, ...] = ARMS
    gate_gap_min: float = 0.25
    smallest_effect: float = SMALLEST_EFFECT
    budget_ratio_max: float = 1.0
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "n_train",
                "n_val",
                "n_test",
                "n_times",
                "n_space",
                "hidden",
                "layers",
                "gat_heads",
                "base_k",
                "batch_size",
                "steps",
                "val_repeats",
                "euler_steps",
            ),
            positive=("ds", "dt", "t_max", "curvature", "smallest_effect", "budget_ratio_max"),
            non_negative=("grad_clip",),
            non_negative_int=("warmup_steps", "data_seed"),
        )
        check_in_range("DMPCheckConfig.ema_decay", self.ema_decay, 0.0, 1.0, high_open=True)
        check_in_range("DMPCheckConfig.gate_gap_min", self.gate_gap_min, 0.0, 1.0)
        if not self.lrs or any(not (lr > 0 and math.isfinite(lr)) for lr in self.lrs):
            raise ValueError(f"DMPCheckConfig.lrs must hold positive learning rates, got {self.lrs}")
        if (
            not self.arms
            or any(a not in ARMS for a in self.arms)
            or len(set(self.arms)) != len(self.arms)
            or OURS not in self.arms
            or HEAD_BASELINE not in self.arms
        ):
            raise ValueError(
                f"DMPCheckConfig.arms must include {OURS!r} and {HEAD_BASELINE!r} and be distinct arms "
                f"drawn from {ARMS}, got {self.arms}"
            )
        if self.device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"DMPCheckConfig.device must be 'cpu' or 'cuda[:i]', got {self.device!r}")
        if self.normalise not in NORMALISATIONS:
            raise ValueError(
                f"DMPCheckConfig.normalise must be one of {NORMALISATIONS}, got {self.normalise!r}"
            )
        if self.conv not in ("gcn", "gat"):
            raise ValueError(f"DMPCheckConfig.conv must be 'gcn' or 'gat', got {self.conv!r}")
        if self.norm not in ("batch", "layer"):
            raise ValueError(f"DMPCheckConfig.norm must be 'batch' or 'layer', got {self.norm!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"DMPCheckConfig.lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}"
            )
        if self.batch_order not in BATCH_ORDERS:
            raise ValueError(
                f"DMPCheckConfig.batch_order must be one of {BATCH_ORDERS}, got {self.batch_order!r}"
            )
        if self.n_train < self.n_test:
            raise ValueError(
                f"DMPCheckConfig.n_train ({self.n_train}) must be >= n_test ({self.n_test}): the data-floor "
                "reference draws as many training samples as there are test samples"
            )


def schedule_of(arm: str, config: DMPCheckConfig) -> GraphSchedule:
    """The graph schedule of an arm."""
    k, c = config.base_k, config.curvature
    table = {
        OURS: GraphSchedule("exp", base_k=k, curvature=c),
        "knn": GraphSchedule("static_knn", base_k=k),
        "fully_connected": GraphSchedule("fully_connected", base_k=k),
        "random": GraphSchedule("random", base_k=k),
        REVERSED: GraphSchedule("exp", base_k=k, curvature=c, reverse=True),
    }
    return table[arm]


def _versus(other: str, config: DMPCheckConfig) -> Criterion:
    what = {
        "knn": "the static kNN graph at the same edge budget",
        "fully_connected": "the static complete graph",
        "random": "static random long-range edges at the kNN budget",
        REVERSED: "the reversed schedule (fine at noise, coarse at data)",
    }[other]
    return Criterion(
        f"dmp_below_{'reversed' if other == REVERSED else other}",
        arm=OURS,
        metric="w1",
        op="<",
        other_arm=other,
        smallest_effect=config.smallest_effect,
        effect_source=EFFECT_SOURCE if config.normalise == "minmax" else EFFECT_SOURCE_STANDARD,
        description=f"DMP's W1 to held-out data is below that of {what} (paired over samples and seeds)",
    )


def _criteria(config: DMPCheckConfig) -> tuple[Criterion, ...]:
    every = ("tiny", "small", "medium", "full")
    others = [a for a in ARMS if a in config.arms and a not in (OURS, HEAD_BASELINE)]
    return (
        _versus(HEAD_BASELINE, config),
        *(_versus(a, config) for a in others),
        Criterion(
            "coarser_when_noisier",
            arm=OURS,
            metric="sched/clusters_ratio",
            op="<",
            threshold=1.0,
            scales=every,
            description="coarse nodes at pure noise / at clean data < 1",
        ),
        Criterion(
            "wider_when_noisier",
            arm=OURS,
            metric="sched/range_ratio",
            op=">",
            threshold=1.0,
            scales=every,
            description="mean coarse-edge length at pure noise / at clean data > 1",
        ),
        Criterion(
            "edge_budget",
            arm=OURS,
            metric="edges_ratio_knn",
            op="<=",
            threshold=config.budget_ratio_max,
            scales=every,
            description="DMP's mean coarse edges over noise levels do not exceed the kNN budget",
        ),
        Criterion(
            "equal_parameters",
            arm=OURS,
            metric="params_rel_diff",
            op="<=",
            threshold=0.0,
            scales=every,
            description="DMP and kNN have exactly the same parameter count",
        ),
    )


def _gates(config: DMPCheckConfig) -> tuple[Criterion, ...]:
    return (
        Criterion(
            "learns_structure",
            arm=HEAD_BASELINE,
            metric="cov_gap_closed",
            op=">=",
            threshold=config.gate_gap_min,
            description=(
                f"the kNN baseline closes >= {config.gate_gap_min:.0%} of the gap in covariance error "
                "(relative Frobenius error of the sample covariance against the test set's) between the "
                "marginals reference (no correlation between nodes) and the data floor: the models learned "
                "how nodes co-vary, so the graph that carries the messages can matter. A collapsed generator "
                "(the mean_field reference) closes none of it"
            ),
        ),
    )


CLAIM = Claim(
    statement=(
        "With the same network, parameters, edge budget and training, a noise-conditioned graph that is "
        "coarse and long-range at high noise and fine and local at low noise (DMP) generates spatio-temporal "
        "Turing fields with lower W1 to held-out data than a static kNN graph, and than static complete or "
        "random long-range graphs and the reversed schedule."
    ),
    source="Abstract; Sec. 4 (DMP), Sec. 5.2 (spatio-temporal transcriptomics, unconditional W1 table)",
    ours=OURS,
    baselines=(*STATIC, REVERSED),
    references=REFERENCES,
    controls=("data_floor",),
    criteria=_criteria(DMPCheckConfig()),
    gates=_gates(DMPCheckConfig()),
    headline="dmp_below_knn",
    min_seeds=2,
    setup_notes=(
        "Synthetic Turing ST data only (no ModelNet, no images); the official BatchNorm network; "
        "coarser simulation grid; at small: standardised data (official: per-time min-max), GCN coarse "
        "conv, 1500 x 32 flow-matching steps (official 1200 x 128) with a cosine learning-rate decay "
        "(official: constant), gradient clipping at 1 (official: none), 50 Euler steps (official 200)."
    ),
    timed_metrics=("train_s",),
)


@functools.lru_cache(maxsize=2)
def _simulate(
    n_sim: int, n_times: int, n_space: int, ds: float, dt: float, t_max: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The simulation pool of a run (cached: every seed of a run splits the same pool)."""
    st = turing_st_dataset(n_sim, n_times=n_times, n_space=n_space, ds=ds, dt=dt, t_max=t_max, seed=seed)
    for a in (st.values, st.pos, st.time_index):
        a.setflags(write=False)
    return st.values, st.pos, st.time_index


def marginals_reference(train: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples whose every node is copied from an independently drawn training sample.

    Each node keeps its exact marginal (its genes jointly) and nodes are independent of each other:
    what a generator that learned no structure between nodes produces.
    """
    if train.ndim != 3 or len(train) == 0:
        raise ValueError(f"train must be a non-empty [n, N, F] array, got shape {train.shape}")
    pick = rng.integers(0, len(train), size=(n, train.shape[1]))
    return train[pick, np.arange(train.shape[1])[None, :]]


#: the small preset (sized for about 4 minutes alone on two cores; see the README): more steps of a
#: smaller batch, because the structure is learned per step, not per sample (exploration with the
#: earlier LayerNorm network: 600 steps of batch 64 closed 16 % of the gap, 600 of batch 128 14 %, 300
#: of batch 128 11 %). With the official BatchNorm network (10 % more time per step) 2000 steps take
#: about the time 2400 took before; kNN closed 23 % of the gap after 600 steps in the comparison run.
#: After run 20261206T043256419581Z-088b0e 2400 steps again, for a margin above the W1 gate. After run
#: 20261206T081000908383Z-6a3f9e (431 s alone at two threads, about 830 s estimated at one thread two
#: checks at a time) 1500 steps, to fit the time budget (about 300 s alone at two threads, 550 s at one).
SMALL_ARMS: tuple[str, ...] = (OURS, "knn")
SMALL_STEPS = 1500
SMALL_BATCH = 32
SMALL_EULER = 50
#: changed after seeing run 20261206T043256419581Z-088b0e (module docstring): a cosine decay of the
#: learning rate to 0; per-layer BatchNorm statistics stay off (they lowered the W1 gap closed)
SMALL_LR_SCHEDULE = "cosine"
SMALL_SPLIT_NORM_STATS = False
#: medium's steps of batch 128 (the official 1200): the budget study (README, "What it would take")
#: found too small a gain per doubling of steps to justify more on one GPU's 30 minutes
MEDIUM_STEPS = 1200

_TAU_GRID = np.linspace(0.0, 1.0, 101)


def _graph_stats(arm: str, config: DMPCheckConfig, pos: torch.Tensor, seed: int) -> dict[str, Any]:
    """Coarse nodes, edges and mean edge length over a grid of noise levels, on the data positions."""
    sched = schedule_of(arm, config)
    tau = torch.as_tensor(_TAU_GRID, dtype=torch.float32)
    g = build_adaptive_graph(
        pos.unsqueeze(0).expand(len(tau), -1, -1),
        tau,
        sched,
        generator=torch.Generator().manual_seed(seed),
    )
    return {
        "clusters": g.clusters_per_graph.double().numpy(),
        "k": g.k_per_graph.double().numpy(),
        "edges": g.edges_per_graph().double().numpy(),
        "range": coarse_edge_lengths(g).double().numpy(),
    }


def fixed_order_batches(n: int, batch_size: int) -> Iterator[slice]:
    """The official ST training loop's batches (a PyG ``DataLoader`` without ``shuffle=True``,
    ``drop_last=False``): slices ``[0, b), [b, 2b), ...`` of the ``n`` training samples in data
    order, the last one short when ``b`` does not divide ``n``, repeated every epoch without end."""
    check_positive("n", n, integer=True)
    check_positive("batch_size", batch_size, integer=True)

    def cycle() -> Iterator[slice]:
        while True:
            for start in range(0, n, batch_size):
                yield slice(start, min(start + batch_size, n))

    return cycle()


def train_flow_model(
    model: NCGNVelocity,
    loss_fn: Any,
    x_train: torch.Tensor,
    config: DMPCheckConfig,
    lr: float,
    seed: int,
) -> NCGNVelocity:
    """Train as the official ST script does and leave the EMA weights in ``model`` (eval mode).

    Adam at ``lr`` with a linear warm-up of ``config.warmup_steps``, then the official constant rate
    or a cosine decay to 0 (``config.lr_schedule``), the gradient norm clipped at ``config.grad_clip``
    (0, the official script: no clipping), and an EMA of the weights with decay ``config.ema_decay``
    per step (0: no EMA, the last weights are kept). ``config.fused_adam`` uses torch's fused Adam
    kernel: the same update up to float round-off, with fewer calls per step on the CPU.

    ``config.batch_order="shuffle"`` (the default) reshuffles the training samples every epoch;
    ``"fixed"`` is the official loop (a PyG ``DataLoader`` without ``shuffle=True``): every epoch
    visits the same consecutive batches in data order, the last one short when ``batch_size`` does
    not divide the number of samples (:func:`fixed_order_batches`). Each visit still draws fresh noise
    and a fresh time.
    """
    fit_cfg = FitConfig(
        steps=config.steps,
        batch_size=config.batch_size,
        lr=lr,
        schedule="cosine" if config.lr_schedule == "cosine" else "constant",
        optimizer="adam",
        warmup_steps=config.warmup_steps,
        grad_clip=config.grad_clip,
        sampling="shuffle",
        fused=config.fused_adam,
    )
    ema = EMA(model, config.ema_decay, module_keeps_tensors=True) if config.ema_decay > 0 else None
    data: Any = x_train
    step_loss = loss_fn
    if config.batch_order == "fixed":
        # the trainer's own sampler is not used: ``data`` is a size, and each step takes the next
        # consecutive batch (sampling="full" draws nothing from the generator)
        batches = fixed_order_batches(x_train.shape[0], config.batch_size)
        fit_cfg = dataclasses.replace(fit_cfg, sampling="full")
        data = x_train.shape[0]

        def step_loss(m: Any, _idx: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
            dev = next(m.parameters()).device
            return loss_fn(m, x_train[next(batches)].to(dev), gen)

    fit(
        model,
        step_loss,
        data,
        fit_cfg,
        seed=seed,
        post_step=(lambda m, _step: ema.update(m)) if ema is not None else None,
    )
    if ema is not None:
        ema.copy_to(model)
    return model.eval()


class DynamicMessagePassingCheck(ClaimCheck[DMPCheckConfig]):
    slug = "dynamic_message_passing"
    claim = CLAIM
    presets = {
        "tiny": DMPCheckConfig(
            n_train=16,
            n_val=8,
            n_test=16,
            n_times=5,
            n_space=6,
            t_max=10.0,
            hidden=16,
            layers=1,
            batch_size=8,
            steps=20,
            warmup_steps=2,
            lrs=(1e-3, 3e-3),
            val_repeats=1,
            euler_steps=10,
        ),
        "small": DMPCheckConfig(
            normalise="standard",
            smallest_effect=SMALLEST_EFFECT_STANDARD,
            batch_size=SMALL_BATCH,
            steps=SMALL_STEPS,
            euler_steps=SMALL_EULER,
            grad_clip=1.0,
            lr_schedule=SMALL_LR_SCHEDULE,
            split_norm_stats=SMALL_SPLIT_NORM_STATS,
            arms=SMALL_ARMS,
        ),
        # the official ST training budget (1200 x 128, 200 Euler steps, GAT) on the coarse grid, every
        # arm, for one GPU, with the settings of small that let the models learn more structure per step
        # (standardised data and its smallest effect, cosine decay, clipping at 1): the place where the
        # gate can be passed if anywhere (README, "What it would take"). Official recipe: ``full``.
        "medium": DMPCheckConfig(
            n_train=500,
            n_val=100,
            n_test=100,
            normalise="standard",
            smallest_effect=SMALLEST_EFFECT_STANDARD,
            batch_size=128,
            steps=MEDIUM_STEPS,
            euler_steps=200,
            grad_clip=1.0,
            lr_schedule="cosine",
            conv="gat",  # the official ST script's default coarse convolution (PyG GAT, one head)
            device="cuda",
        ),
        "full": DMPCheckConfig(
            n_train=500,
            n_val=100,
            n_test=100,
            ds=0.2,
            dt=0.005,
            batch_size=128,
            steps=1200,  # 300 epochs of 500 samples at batch 128
            euler_steps=200,
            conv="gat",
            batch_order="fixed",
            device="cuda",
        ),
    }
    default_seeds = {"tiny": 1, "small": 2, "medium": 3, "full": 3}

    def claim_for(self, config: DMPCheckConfig) -> Claim:
        return dataclasses.replace(CLAIM, criteria=_criteria(config), gates=_gates(config))

    def run_seed(self, config: DMPCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        if config.device.startswith("cuda") and not torch.cuda.is_available():
            raise NeedsResource("gpu", f"this preset trains on {config.device}")
        dev = torch.device(config.device)
        ctx.progress("simulate Turing data", 0, 1)
        n_all = config.n_train + config.n_val + config.n_test
        raw, pos_np, time_index = _simulate(
            n_all, config.n_times, config.n_space, config.ds, config.dt, config.t_max, config.data_seed
        )
        rng = np.random.default_rng([seed, 1])
        order = rng.permutation(n_all)  # each seed splits the pool afresh
        tr, va, te = np.split(raw[order], [config.n_train, config.n_train + config.n_val])
        if config.normalise == "minmax":
            train_np, (val_np, test_np) = minmax_per_time(tr, (va, te), time_index)
        else:
            train_np, (val_np, test_np) = standardise_per_node(tr, (va, te))
        x_train = torch.as_tensor(train_np, dtype=torch.float32, device=dev)
        x_val = torch.as_tensor(val_np, dtype=torch.float32, device=dev)
        pos_cpu = torch.tensor(pos_np, dtype=torch.float32)
        pos = pos_cpu.to(dev)
        n_nodes = pos.shape[0]
        net = NCGNConfig(
            in_dim=3,
            cond_dim=2,
            pos_dim=2,
            hidden=config.hidden,
            layers=config.layers,
            conv=config.conv,  # type: ignore[arg-type]
            heads=config.gat_heads,
            norm=config.norm,  # type: ignore[arg-type]
            share_norm=config.share_norm,
            split_stats=config.split_norm_stats,
        )
        # validation: fixed noise and times, shared by every arm and learning rate
        vgen = torch.Generator().manual_seed(10_000 + seed)
        v_x1 = x_val.repeat(config.val_repeats, 1, 1)
        v_x0 = torch.randn(v_x1.shape, generator=vgen).to(dev)
        v_t = torch.rand(v_x1.shape[0], generator=vgen).to(dev)
        sgen = torch.Generator().manual_seed(20_000 + seed)
        sample_noise = torch.randn((config.n_test, n_nodes, 3), generator=sgen).to(dev)

        def val_loss(model: torch.nn.Module) -> float:
            with torch.no_grad():
                return float(flow_matching_loss(model, v_x1, cond=pos, t=v_t, x0=v_x0))  # type: ignore[arg-type]

        def loss_fn(model: torch.nn.Module, batch: Any, gen: torch.Generator) -> torch.Tensor:
            # the draws of flow_matching_loss's defaults (t, then x0) on the CPU generator, then moved
            t = torch.rand(batch.shape[0], generator=gen).to(dev)
            x0 = torch.randn(batch.shape, generator=gen).to(dev)
            return flow_matching_loss(model, batch, cond=pos, t=t, x0=x0)  # type: ignore[arg-type]

        def score(samples: np.ndarray) -> np.ndarray:
            return w1_matched_costs(samples, test_np, divide_by=config.n_times)

        def set_scores(m: dict[str, float], samples: np.ndarray) -> None:
            # set-level measures against the test set (no items): the gate's and a diagnostic one
            m["cov_err"] = covariance_error(samples, test_np)
            m["energy"] = energy_distance(samples, test_np)

        metrics: dict[str, dict[str, float]] = {a: {} for a in (*config.arms, *REFERENCES)}
        items: dict[str, dict[str, np.ndarray]] = {}
        series: dict[str, Any] = {"tau": _TAU_GRID, "arms": {}}
        generated: dict[str, np.ndarray] = {}
        total = len(config.arms) * len(config.lrs)
        done = 0
        for arm in config.arms:
            runs: dict[float, tuple[NCGNVelocity, float, float]] = {}
            for lr in config.lrs:
                torch.manual_seed(seed)  # identical initial weights for every arm and learning rate
                model = NCGNVelocity(net, schedule_of(arm, config), graph_seed=seed).to(dev)
                start = time.perf_counter()
                train_flow_model(model, loss_fn, x_train, config, lr, seed)
                elapsed = time.perf_counter() - start
                runs[lr] = (model, val_loss(model), elapsed)
                done += 1
                ctx.progress("train flow matching (arms x learning rates)", done, total)
            lr_best = best_on_validation(runs, lambda r: r[1])
            model, vloss, _ = runs[lr_best]
            model.eval()
            with torch.no_grad():
                sample = euler_sample(model, sample_noise.clone(), steps=config.euler_steps, cond=pos)
            assert isinstance(sample, torch.Tensor)
            generated[arm] = sample.cpu().numpy()
            costs = score(generated[arm])
            items[arm] = {"w1": costs}
            stats = _graph_stats(arm, config, pos_cpu, seed)
            m = metrics[arm]
            m["w1"] = float(costs.mean())
            set_scores(m, generated[arm])
            m["val_loss"] = vloss
            if config.diagnose_bn_stats and config.split_norm_stats:
                # the same trained weights sampled with the official shared-BatchNorm statistics (the
                # steady-state blend; :func:`.model.official_bn_stats`); the same noise, no RNG drawn
                with official_bn_stats(model), torch.no_grad():
                    blended = euler_sample(model, sample_noise.clone(), steps=config.euler_steps, cond=pos)
                    m["val_loss_official_bn_stats"] = val_loss(model)
                assert isinstance(blended, torch.Tensor)
                m["w1_official_bn_stats"] = float(score(blended.cpu().numpy()).mean())
                m["cov_err_official_bn_stats"] = covariance_error(blended.cpu().numpy(), test_np)
            m["lr"] = lr_best
            m["params"] = float(count_parameters(model))
            m["train_s"] = float(sum(r[2] for r in runs.values()))
            m["edges_mean"] = float(stats["edges"].mean())
            m["edges_max"] = float(stats["edges"].max())
            m["messages_per_layer_mean"] = float(stats["edges"].mean() + 2 * n_nodes)
            m["sched/clusters_t0"] = float(stats["clusters"][0])
            m["sched/clusters_t1"] = float(stats["clusters"][-1])
            m["sched/clusters_ratio"] = float(stats["clusters"][0] / stats["clusters"][-1])
            m["sched/range_t0"] = float(stats["range"][0])
            m["sched/range_t1"] = float(stats["range"][-1])
            m["sched/range_ratio"] = float(stats["range"][0] / stats["range"][-1])
            series["arms"][arm] = {
                **stats,
                "w1": m["w1"],
                "lr": lr_best,
                "val_loss": {str(k): v[1] for k, v in runs.items()},
            }
        # references: per-node marginals (no structure between nodes), real training samples, and a
        # collapsed generator (the training mean field for every sample; no spread at all)
        ref_samples = {
            "marginals": marginals_reference(train_np, config.n_test, np.random.default_rng([seed, 2])),
            "data_floor": train_np[
                np.random.default_rng([seed, 3]).permutation(len(train_np))[: config.n_test]
            ],
            "mean_field": np.repeat(train_np.mean(axis=0, keepdims=True), config.n_test, axis=0),
        }
        for ref, samples in ref_samples.items():
            costs = score(samples)
            items[ref] = {"w1": costs}
            metrics[ref]["w1"] = float(costs.mean())
            set_scores(metrics[ref], samples)
        marg, floor = metrics["marginals"], metrics["data_floor"]
        for arm in (*config.arms, "mean_field"):
            for key, value_key, ref_key in GAP_KEYS:
                if value_key in metrics[arm]:
                    gap = max(marg[ref_key] - floor[ref_key], 1e-12)
                    metrics[arm][key] = (marg[ref_key] - metrics[arm][value_key]) / gap
        ours = metrics[OURS]
        ours["edges_ratio_knn"] = ours["edges_mean"] / metrics[HEAD_BASELINE]["edges_mean"]
        ours["params_rel_diff"] = (
            abs(ours["params"] - metrics[HEAD_BASELINE]["params"]) / metrics[HEAD_BASELINE]["params"]
        )
        series["floor"] = floor["w1"]
        series["marginals"] = marg["w1"]
        series["example"] = {
            "test": test_np[0, :, 0].reshape(config.n_times, config.n_space),
            **{a: g[0, :, 0].reshape(config.n_times, config.n_space) for a, g in generated.items()},
        }
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(self, config: DMPCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure

        fig, axes = new_figure(ncols=4, width=4.0, height=3.2)
        ax = axes[0]
        arms = [a for a in config.arms if a in outcomes[0].metrics]
        for i, arm in enumerate(arms):
            vals = [o.metrics[arm]["w1"] for o in outcomes]
            color = arm_color(arm, OURS, CLAIM.baselines)
            ax.bar(i, float(np.mean(vals)), color=color, alpha=0.7)
            ax.scatter([i] * len(vals), vals, color="k", s=10, zorder=3)
        floor = float(np.mean([o.metrics["data_floor"]["w1"] for o in outcomes]))
        marg = float(np.mean([o.metrics["marginals"]["w1"] for o in outcomes]))
        ax.axhline(floor, color="0.4", ls=":", label="data floor (real train vs test)")
        ax.axhline(marg, color="0.4", ls="--", label="marginals (no structure)")
        ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right")
        ax.set(ylabel="W1 / time points (normalised units)", title="generated vs held-out (bars: mean)")
        ax.legend(fontsize=7)
        ax = axes[1]
        ref = "knn" if "knn" in arms else arms[0]
        for i, arm in enumerate(arms):
            ratios = [o.metrics[arm]["w1"] / o.metrics[ref]["w1"] for o in outcomes]
            color = arm_color(arm, OURS, CLAIM.baselines)
            ax.scatter([i] * len(ratios), ratios, color=color, s=18, zorder=3)
            ax.plot([i - 0.25, i + 0.25], [float(np.mean(ratios))] * 2, color=color)
        ax.axhline(1.0, color="0.4", ls=":")
        ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right")
        ax.set(ylabel=f"W1 / {ref}'s W1 (same seed)", title="paired ratio per seed (line: mean)")
        tau = np.asarray(outcomes[0].series["tau"], dtype=float)
        ax = axes[2]
        ax2 = axes[3]
        for arm in arms:
            s = outcomes[0].series["arms"][arm]
            color = arm_color(arm, OURS, CLAIM.baselines)
            ax.plot(tau, np.asarray(s["clusters"], dtype=float), color=color, label=arm)
            ax2.plot(tau, np.asarray(s["range"], dtype=float), color=color, label=arm)
        ax.set(xlabel="clean fraction tau (0 = noise)", ylabel="coarse nodes", title="resolution vs noise")
        ax2.set(
            xlabel="clean fraction tau (0 = noise)", ylabel="mean coarse-edge length", title="range vs noise"
        )
        ax.legend(fontsize=7)
        ctx.save_figure(
            fig,
            "dmp_w1_schedule",
            "(1) W1 between generated and held-out Turing fields per arm (bars: mean over seeds, dots: "
            "seeds; dotted: real training samples vs test; dashed: per-node marginals with no structure). "
            "(2) Each arm's W1 divided by kNN's in the same "
            "seed. (3, 4) Coarse nodes and mean coarse-edge length of each arm's graph against the clean "
            "fraction tau, on the data positions.",
        )


CHECK = DynamicMessagePassingCheck()
