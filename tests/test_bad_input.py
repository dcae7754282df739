"""The shared bad-input battery: every implemented paper's public entry points refuse bad input clearly.

Each case is one call with one bad argument; it must raise ``ValueError`` or ``TypeError`` whose
message names the argument (``match``), never a deep numpy/torch error or a silent NaN. ``kind`` is one
of :data:`KINDS` (wrong shape, NaN/inf, empty, wrong dtype, non-positive size).

A new paper joins with a few entries in :data:`CASES` (``Case(slug, kind, "what", lambda: call(...),
"argument name")``); :func:`test_every_implemented_paper_joins_the_battery` fails until it has one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch

from icml25.catalog import PAPERS

KINDS = ("shape", "nonfinite", "empty", "dtype", "size")

# Implemented papers that have not joined yet (none: every paper has entries).
PENDING: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    slug: str
    kind: str
    what: str
    call: Callable[[], object]
    match: str  # a fragment of the message: the argument's name

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind


NAN = float("nan")


def _rfm() -> list[Case]:
    from icml25.theory.rfm_grokking import RFM, psd_matrix_power

    X, Y = np.random.default_rng(0).normal(size=(6, 4)), np.eye(6)[:, :2]
    return [
        Case(
            "rfm_grokking",
            "shape",
            "psd_matrix_power non-square",
            lambda: psd_matrix_power(np.ones((2, 3)), 0.5),
            "G",
        ),
        Case(
            "rfm_grokking",
            "nonfinite",
            "psd_matrix_power NaN",
            lambda: psd_matrix_power(np.full((2, 2), NAN), 0.5),
            "G",
        ),
        Case(
            "rfm_grokking", "size", "psd_matrix_power s <= 0", lambda: psd_matrix_power(np.eye(2), 0.0), "s"
        ),
        Case(
            "rfm_grokking", "dtype", "RFM.fit strings", lambda: RFM(iters=1).fit(np.full((6, 4), "a"), Y), "X"
        ),
        Case(
            "rfm_grokking",
            "dtype",
            "RFM.fit objects",
            lambda: RFM(iters=1).fit(np.full((6, 4), None), Y),
            "X",
        ),
        Case(
            "rfm_grokking", "nonfinite", "RFM.fit NaN", lambda: RFM(iters=1).fit(np.full((6, 4), NAN), Y), "X"
        ),
        Case("rfm_grokking", "size", "RFM iters 0", lambda: RFM(iters=0).fit(X, Y), "iters"),
    ]


def _lvlingam() -> list[Case]:
    from icml25.theory.lvlingam_cumulants import ProxyCumulantEstimator, ols_effect

    data = np.random.default_rng(0).exponential(size=(200, 3))
    return [
        Case(
            "lvlingam_cumulants",
            "shape",
            "ols_effect treatment out of range",
            lambda: ols_effect(data, [5], 2),
            "treatments",
        ),
        Case(
            "lvlingam_cumulants",
            "shape",
            "ols_effect outcome out of range",
            lambda: ols_effect(data, [0], 7),
            "outcome",
        ),
        Case(
            "lvlingam_cumulants",
            "empty",
            "ols_effect no treatment",
            lambda: ols_effect(data, [], 2),
            "treatments",
        ),
        Case(
            "lvlingam_cumulants",
            "dtype",
            "Proxy.fit strings",
            lambda: ProxyCumulantEstimator().fit(data.astype(str)),
            "data",
        ),
        Case(
            "lvlingam_cumulants",
            "dtype",
            "Proxy.fit objects",
            lambda: ProxyCumulantEstimator().fit(data.astype(object)),
            "data",
        ),
        Case(
            "lvlingam_cumulants",
            "nonfinite",
            "Proxy.fit NaN",
            lambda: ProxyCumulantEstimator().fit(np.full((200, 3), NAN)),
            "data",
        ),
    ]


def _monotonic() -> list[Case]:
    from torch import nn

    from icml25.theory.monotonic_mlp import fit_regression

    X, y = np.random.default_rng(0).normal(size=(8, 2)), np.zeros(8)

    def fit(X_train: object = X, y_train: object = y) -> object:
        return fit_regression(nn.Linear(2, 1), X_train, y_train, X, y, steps=1)  # type: ignore[arg-type]

    return [
        Case(
            "monotonic_mlp", "dtype", "fit_regression strings", lambda: fit(X_train=X.astype(str)), "X_train"
        ),
        Case(
            "monotonic_mlp",
            "dtype",
            "fit_regression objects",
            lambda: fit(X_train=X.astype(object)),
            "X_train",
        ),
        Case(
            "monotonic_mlp",
            "empty",
            "fit_regression empty X",
            lambda: fit(X_train=np.zeros((0, 2)), y_train=np.zeros(0)),
            "X_train",
        ),
        Case(
            "monotonic_mlp",
            "nonfinite",
            "fit_regression NaN y",
            lambda: fit(y_train=np.full(8, NAN)),
            "y_train",
        ),
        Case(
            "monotonic_mlp",
            "shape",
            "fit_regression rows differ",
            lambda: fit(y_train=np.zeros(5)),
            "y_train",
        ),
    ]


def _tarflow() -> list[Case]:
    from icml25.generative.tarflow import TarFlow, TarFlowConfig, TrainConfig, bits_per_dim, train_flow

    cfg = TarFlowConfig(in_channels=1, img_size=4, patch_size=2, channels=16, num_blocks=2, head_dim=8)
    model = TarFlow(cfg)
    return [
        Case(
            "tarflow",
            "dtype",
            "TarFlow float64 input",
            lambda: model(torch.zeros(2, 1, 4, 4, dtype=torch.float64)),
            "x",
        ),
        Case("tarflow", "shape", "TarFlow wrong size", lambda: model(torch.zeros(2, 1, 6, 6)), "x"),
        Case("tarflow", "nonfinite", "TarFlow NaN input", lambda: model(torch.full((2, 1, 4, 4), NAN)), "x"),
        Case(
            "tarflow",
            "empty",
            "bits_per_dim empty batch",
            lambda: bits_per_dim(model, torch.zeros(0, 1, 4, 4), num_levels=17),
            "x_int",
        ),
        Case(
            "tarflow",
            "empty",
            "train_flow empty data",
            lambda: train_flow(
                model, torch.zeros(0, 1, 4, 4), num_levels=17, config=TrainConfig(steps=1), seed=0
            ),
            "x_train",
        ),
        Case(
            "tarflow",
            "size",
            "bits_per_dim num_levels 1",
            lambda: bits_per_dim(model, torch.zeros(1, 1, 4, 4), num_levels=1),
            "num_levels",
        ),
    ]


def _pde() -> list[Case]:
    from icml25.physics.pde_transformer import PDETransformer, PDETransformerConfig, nrmse

    tiny = PDETransformerConfig.preset("tiny", hidden_size=16, num_classes=3, cpb_hidden=16)
    model = PDETransformer(replace(tiny, depth=(1, 1, 1), window_size=2))  # grid multiple 16
    c = model.config.in_channels if hasattr(model, "config") else tiny.in_channels
    x = torch.zeros(1, c, 16, 16)
    return [
        Case("pde_transformer", "dtype", "PDETransformer float64", lambda: model(x.double()), "x"),
        Case(
            "pde_transformer", "nonfinite", "PDETransformer NaN", lambda: model(torch.full_like(x, NAN)), "x"
        ),
        Case(
            "pde_transformer",
            "shape",
            "PDETransformer channels",
            lambda: model(torch.zeros(1, c + 1, 16, 16)),
            "x",
        ),
        Case(
            "pde_transformer",
            "nonfinite",
            "nrmse all-zero target",
            lambda: nrmse(torch.ones(1, 2, 4, 4), torch.zeros(1, 2, 4, 4)),
            "target",
        ),
        Case(
            "pde_transformer",
            "shape",
            "nrmse shapes differ",
            lambda: nrmse(torch.ones(1, 2, 4, 4), torch.ones(1, 2, 4, 5)),
            "target",
        ),
    ]


def _condensed() -> list[Case]:
    from icml25.physics.condensed_sparse_solver import gaussian_random_field, poisson

    return [
        Case(
            "condensed_sparse_solver",
            "size",
            "gaussian_random_field n0 = 0",
            lambda: gaussian_random_field(0, 8),
            "n0",
        ),
        Case(
            "condensed_sparse_solver",
            "size",
            "gaussian_random_field batch = 0",
            lambda: gaussian_random_field(8, 8, batch=0),
            "batch",
        ),
        Case(
            "condensed_sparse_solver",
            "size",
            "gaussian_random_field length_scale <= 0",
            lambda: gaussian_random_field(8, 8, length_scale=0.0),
            "length_scale",
        ),
        Case("condensed_sparse_solver", "size", "poisson n1 = 0", lambda: poisson(8, 0), "n1"),
    ]


def _slimllm() -> list[Case]:
    from icml25.language.slimllm import fit_output_regression, magnitude_scores, pearson_similarity

    a = torch.randn(6, 3)
    nan_a = a.clone()
    nan_a[0, 0] = NAN
    return [
        Case("slimllm", "empty", "magnitude_scores no groups", lambda: magnitude_scores([]), "groups"),
        Case(
            "slimllm",
            "empty",
            "magnitude_scores empty block",
            lambda: magnitude_scores([torch.zeros(0, 3)]),
            "groups",
        ),
        Case("slimllm", "nonfinite", "pearson_similarity one NaN", lambda: pearson_similarity(nan_a, a), "a"),
        Case(
            "slimllm",
            "nonfinite",
            "fit_output_regression NaN target",
            lambda: fit_output_regression(a, torch.full_like(a, NAN)),
            "y",
        ),
        Case(
            "slimllm",
            "shape",
            "fit_output_regression shapes",
            lambda: fit_output_regression(a, a[:, :2]),
            "y",
        ),
    ]


def _dycodeeval() -> list[Case]:
    from icml25.agents.dycodeeval import extract_function_params, sentence_bleu, tfidf_cosine

    return [
        Case("dycodeeval", "dtype", "sentence_bleu None", lambda: sentence_bleu(None, "a b"), "reference"),  # type: ignore[arg-type]
        Case(
            "dycodeeval",
            "dtype",
            "sentence_bleu hypothesis int",
            lambda: sentence_bleu("a b", 3),
            "hypothesis",
        ),  # type: ignore[arg-type]
        Case("dycodeeval", "empty", "tfidf_cosine no pairs", lambda: tfidf_cosine([]), "pairs"),
        Case(
            "dycodeeval",
            "dtype",
            "extract_function_params unparsable",
            lambda: extract_function_params("def f(:\n", "f"),
            "code",
        ),
        Case(
            "dycodeeval", "size", "sentence_bleu max_n 0", lambda: sentence_bleu("a", "a", max_n=0), "max_n"
        ),
    ]


def _lexmorl() -> list[Case]:
    from icml25.rl.lexicographic_morl import LLRL, evaluate_policy, one_hot_features

    P = np.full((2, 2, 2), 0.5)
    R = np.zeros((1, 2, 2))
    bad_probs = np.full((1, 2, 2), 0.5)
    bad_probs[0, 0, 0] = NAN
    phi = one_hot_features(2, 2)
    nan_phi = phi.copy()
    nan_phi[0, 0, 0] = NAN
    rng = np.random.default_rng(0)
    return [
        Case("lexicographic_morl", "size", "one_hot_features S = 0", lambda: one_hot_features(0, 3), "S"),
        Case(
            "lexicographic_morl",
            "nonfinite",
            "evaluate_policy NaN probabilities",
            lambda: evaluate_policy(P, R, 1, bad_probs),
            "pi_probs",
        ),
        Case(
            "lexicographic_morl",
            "nonfinite",
            "LLRL NaN features",
            lambda: LLRL(nan_phi, H=1, m=1, K=1, lam=1.0, rng=rng),
            "phi",
        ),
        Case(
            "lexicographic_morl",
            "shape",
            "evaluate_policy wrong shape",
            lambda: evaluate_policy(P, R, 1, np.ones((3, 3))),
            "pi_probs",
        ),
    ]


def _mrpe() -> list[Case]:
    from icml25.rl.multi_reward_policy_eval import FiniteRewardSet, empirical_transitions

    return [
        Case(
            "multi_reward_policy_eval",
            "shape",
            "empirical_transitions 2-D",
            lambda: empirical_transitions(np.ones((2, 2))),
            "counts",
        ),
        Case(
            "multi_reward_policy_eval",
            "size",
            "empirical_transitions prior 0",
            lambda: empirical_transitions(np.ones((2, 2, 2)), prior=0),
            "prior",
        ),
        Case(
            "multi_reward_policy_eval",
            "nonfinite",
            "FiniteRewardSet NaN",
            lambda: FiniteRewardSet(np.array([[NAN, 1.0]])),
            "reward",
        ),
    ]


def _rmt() -> list[Case]:
    from icml25.language.residual_matrix_transformer import ResidualMatrixTransformer, RMTConfig, read

    small = dict(vocab_size=16, n_ctx=8, n_layers=1, d_value=4, rank=2, d_ff=8)
    model = ResidualMatrixTransformer(RMTConfig(d_key=4, **small))  # type: ignore[arg-type]
    slug = "residual_matrix_transformer"
    return [
        Case(slug, "size", "RMTConfig d_key=0", lambda: RMTConfig(d_key=0, **small), "d_key"),  # type: ignore[arg-type]
        Case(slug, "dtype", "float tokens", lambda: model(torch.zeros(2, 4)), "tokens"),
        Case(slug, "shape", "longer than n_ctx", lambda: model(torch.zeros(2, 9, dtype=torch.long)), "n_ctx"),
        Case(
            slug, "empty", "empty token batch", lambda: model(torch.zeros(0, 4, dtype=torch.long)), "tokens"
        ),
        Case(
            slug,
            "shape",
            "read with mismatched keys",
            lambda: read(torch.zeros(3, 4), torch.zeros(2, 5)),
            "d_key",
        ),
    ]


def _turing() -> list[Case]:
    from icml25.language.turing_programs import AdditionTask, DecoderConfig, hard_alibi_mask

    slug = "turing_programs"
    return [
        Case(slug, "size", "hard_alibi_mask seq_len=0", lambda: hard_alibi_mask(0, [1, None]), "seq_len"),
        Case(slug, "size", "AdditionTask min_len=0", lambda: AdditionTask(min_len=0, max_len=3), "min_len"),
        Case(slug, "size", "DecoderConfig vocab_size=0", lambda: DecoderConfig(vocab_size=0), "vocab_size"),
    ]


def _wgformer() -> list[Case]:
    from icml25.life.wgformer import WGFormerConfig, kabsch_rotation

    slug = "wgformer"
    return [
        Case(slug, "size", "WGFormerConfig layers=0", lambda: WGFormerConfig(layers=0), "layers"),
        Case(
            slug,
            "shape",
            "kabsch on 2-D points",
            lambda: kabsch_rotation(np.zeros((4, 2)), np.zeros((4, 2))),
            "p and q",
        ),
    ]


def _local_glivenko_cantelli() -> list[Case]:
    from icml25.theory.local_glivenko_cantelli import (
        EmpiricalMean,
        complexity_T,
        exact_sup_risk,
        polynomial,
        sample_counts,
    )

    slug = "local_glivenko_cantelli"
    return [
        Case(slug, "shape", "complexity_T 2-D means", lambda: complexity_T(np.full((2, 2), 0.1)), "p"),
        Case(
            slug, "nonfinite", "sample_counts NaN mean", lambda: sample_counts(np.array([0.1, NAN]), 5), "p"
        ),
        Case(
            slug, "empty", "exact_sup_risk no coordinate", lambda: exact_sup_risk(EmpiricalMean(), [], 5), "p"
        ),
        Case(slug, "dtype", "EME string counts", lambda: EmpiricalMean()(np.array(["1", "2"]), 5), "Y"),
        Case(
            slug, "nonfinite", "EME infinite count", lambda: EmpiricalMean()(np.array([1.0, np.inf]), 5), "Y"
        ),
        Case(slug, "size", "polynomial D = 0", lambda: polynomial(0), "D"),
        Case(slug, "size", "sample_counts n = 0", lambda: sample_counts(np.array([0.1]), 0), "n"),
    ]


def _dcg_statistics() -> list[Case]:
    from icml25.theory.dcg_statistics import ConceptGrid, make_learner, make_split, sensitivity

    rng = np.random.default_rng(0)
    grid = ConceptGrid(k_a=3, k_b=3, dim=4, noise=0.3, seed=0)
    s = grid.sample(np.array([[0, 0], [1, 1], [2, 2], [0, 1]]), 3, rng)
    y = np.zeros(len(s), dtype=np.int64)
    X_nan = s.X.copy()
    X_nan[0, 0] = NAN
    return [
        Case(
            "dcg_statistics",
            "shape",
            "ConceptGrid.sample combos not (c, 2)",
            lambda: grid.sample(np.zeros((4, 3), dtype=int), 2, rng),
            "combos",
        ),
        Case(
            "dcg_statistics",
            "nonfinite",
            "knn fit NaN inputs",
            lambda: make_learner("knn").fit(X_nan, y, s.combos, 2),
            "X",
        ),
        Case(
            "dcg_statistics",
            "dtype",
            "logistic fit float labels",
            lambda: make_learner("logistic").fit(s.X, y.astype(float), s.combos, 2),
            "y",
        ),
        Case(
            "dcg_statistics",
            "empty",
            "sensitivity of no predictions",
            lambda: sensitivity(
                np.zeros((0, 5), dtype=int), np.zeros((0, 3, 3), dtype=int), np.eye(3, dtype=bool)
            ),
            "pred_unseen",
        ),
        Case(
            "dcg_statistics",
            "size",
            "make_split seen_frac 0",
            lambda: make_split(3, 3, 0.0, rng=rng),
            "seen_frac",
        ),
        Case("dcg_statistics", "size", "ConceptGrid k_a 0", lambda: ConceptGrid(k_a=0), "k_a"),
        Case(
            "dcg_statistics",
            "size",
            "ConceptGrid.sample n_per_combo 0",
            lambda: grid.sample(np.array([[0, 0]]), 0, rng),
            "n_per_combo",
        ),
    ]


def _moe_sgd() -> list[Case]:
    from icml25.theory.moe_sgd import ClusteredSIMTask, MoE, StageSchedule, loglog_slope, overlaps

    task = ClusteredSIMTask(8, 2, seed=0)
    rng = np.random.default_rng(0)
    return [
        Case(
            "moe_sgd",
            "shape",
            "labels wrong width",
            lambda: task.labels(np.ones((3, 7)), np.zeros(3, int)),
            "X",
        ),
        Case(
            "moe_sgd",
            "nonfinite",
            "labels NaN inputs",
            lambda: task.labels(np.full((3, 8), NAN), np.zeros(3, int)),
            "X",
        ),
        Case(
            "moe_sgd",
            "empty",
            "labels no samples",
            lambda: task.labels(np.ones((0, 8)), np.zeros(0, int)),
            "X",
        ),
        Case(
            "moe_sgd",
            "dtype",
            "labels string inputs",
            lambda: task.labels(np.full((3, 8), "a"), np.zeros(3, int)),
            "X",
        ),
        Case(
            "moe_sgd", "shape", "overlaps wrong width", lambda: overlaps(np.ones((2, 5)), task), "directions"
        ),
        Case("moe_sgd", "size", "task d too small", lambda: ClusteredSIMTask(4, 2), "d"),
        Case("moe_sgd", "size", "MoE zero experts", lambda: MoE(8, 0, 2, rng=rng), "n_experts"),
        Case("moe_sgd", "size", "stage of zero samples", lambda: StageSchedule(0, 1, 1), "stage1"),
        Case("moe_sgd", "size", "slope from one dimension", lambda: loglog_slope([8], [1.0]), "dims"),
    ]


def _pnba() -> list[Case]:
    from icml25.life.pnba import PNBA, PNBAConfig, SyntheticPopulationConfig, preservation_stats

    slug = "pnba"

    def model() -> PNBA:
        return PNBA(PNBAConfig(n_recordings=1, max_neurons=8, T=8, hidden=8, channels=2, n_virtual=2))

    ids = np.arange(3)
    return [
        Case(
            slug,
            "shape",
            "encode_neural 2-D spikes",
            lambda: model().encode_neural(torch.rand(2, 5)),
            "spikes",
        ),
        Case(
            slug,
            "nonfinite",
            "encode_neural NaN spikes",
            lambda: model().encode_neural(torch.full((2, 5, 8), NAN)),
            "spikes",
        ),
        Case(
            slug,
            "empty",
            "encode_neural no trials",
            lambda: model().encode_neural(torch.rand(0, 5, 8)),
            "spikes",
        ),
        Case(
            slug,
            "dtype",
            "encode_neural integer spikes",
            lambda: model().encode_neural(torch.ones(2, 5, 8, dtype=torch.long)),
            "spikes",
        ),
        Case(
            slug,
            "size",
            "PNBAConfig latent_dim=0",
            lambda: PNBAConfig(n_recordings=1, max_neurons=4, T=8, latent_dim=0),
            "latent_dim",
        ),
        Case(slug, "size", "SyntheticPopulationConfig T=0", lambda: SyntheticPopulationConfig(T=0), "T"),
        Case(
            slug,
            "nonfinite",
            "preservation_stats NaN latents",
            lambda: preservation_stats(np.full((3, 2), NAN), np.zeros((3, 2)), ids, ids),
            "mu_a",
        ),
    ]


def _fedncn() -> list[Case]:
    from icml25.graphs import clustering_metrics, louvain_partition, make_attributed_sbm, split_by_assignment
    from icml25.graphs.fedncn import (
        ClientSignals,
        FedNCNConfig,
        GCNAutoencoder,
        mend_links,
        normalized_adjacency,
        run_fedncn,
        select_representatives,
        train_denoiser,
    )

    slug = "fedncn"
    data = make_attributed_sbm(40, 2, 6, avg_degree=4, seed=0)
    adj = normalized_adjacency(data.edge_index, 40)
    part = louvain_partition(data, 2, seed=0)
    cfg = FedNCNConfig(dims=(4, 2), rounds=1, local_epochs=1, server_epochs=1, denoiser_epochs=1)

    def model() -> GCNAutoencoder:
        return GCNAutoencoder(6, (4, 2))

    def sig(rows: torch.Tensor) -> list[ClientSignals]:
        return [ClientSignals(rows, torch.zeros(len(rows), dtype=torch.long), torch.arange(len(rows)))]

    return [
        Case(
            slug, "shape", "encode wrong feature count", lambda: model().encode(torch.ones(40, 5), adj), "x"
        ),
        Case(slug, "shape", "encode 1-D x", lambda: model().encode(torch.ones(40), adj), "x"),
        Case(
            slug,
            "shape",
            "normalized_adjacency 3-row edge_index",
            lambda: normalized_adjacency(torch.zeros(3, 4, dtype=torch.long), 5),
            "edge_index",
        ),
        Case(
            slug,
            "shape",
            "clustering_metrics length mismatch",
            lambda: clustering_metrics([0, 1], [0, 1, 1]),
            "y_true",
        ),
        Case(
            slug,
            "shape",
            "split_by_assignment wrong length",
            lambda: split_by_assignment(data, np.zeros(3, dtype=int)),
            "assignment",
        ),
        Case(
            slug,
            "shape",
            "select_representatives labels length",
            lambda: select_representatives(torch.randn(5, 2), np.zeros(4, int), torch.randn(1, 2), 0.5),
            "labels",
        ),
        Case(slug, "nonfinite", "encode NaN x", lambda: model().encode(torch.full((40, 6), NAN), adj), "x"),
        Case(
            slug,
            "nonfinite",
            "train_denoiser inf rows",
            lambda: train_denoiser(torch.full((3, 2), float("inf")), noise_std=0.1),
            "b",
        ),
        Case(
            slug,
            "nonfinite",
            "mend_links NaN rows",
            lambda: mend_links(sig(torch.full((4, 3), NAN)), 1),
            "rows",
        ),
        Case(
            slug,
            "nonfinite",
            "select_representatives NaN z",
            lambda: select_representatives(torch.full((5, 2), NAN), np.zeros(5, int), torch.randn(1, 2), 0.5),
            "z",
        ),
        Case(slug, "empty", "encode no nodes", lambda: model().encode(torch.ones(0, 6), adj), "x"),
        Case(slug, "empty", "mend_links no clients", lambda: mend_links([], 2), "signals"),
        Case(slug, "empty", "clustering_metrics empty", lambda: clustering_metrics([], []), "y_true"),
        Case(
            slug,
            "dtype",
            "encode integer x",
            lambda: model().encode(torch.ones(40, 6, dtype=torch.long), adj),
            "x",
        ),
        Case(
            slug,
            "dtype",
            "clustering_metrics float labels",
            lambda: clustering_metrics([0, 1], [0.5, 1.0]),
            "y_pred",
        ),
        Case(
            slug,
            "dtype",
            "normalized_adjacency float edge_index",
            lambda: normalized_adjacency(torch.zeros(2, 3), 5),
            "edge_index",
        ),
        Case(
            slug,
            "dtype",
            "run_fedncn with a Data instead of a Partition",
            lambda: run_fedncn(data, 2, cfg),
            "partition",
        ),
        Case(slug, "size", "GCNAutoencoder zero width", lambda: GCNAutoencoder(6, (4, 0)), "dims"),
        Case(slug, "size", "make_attributed_sbm n=0", lambda: make_attributed_sbm(0, 2, 4), "n"),
        Case(
            slug, "size", "louvain_partition zero clients", lambda: louvain_partition(data, 0), "num_clients"
        ),
        Case(slug, "size", "run_fedncn zero clusters", lambda: run_fedncn(part, 0, cfg), "num_clusters"),
        Case(slug, "size", "FedNCNConfig zero rounds", lambda: FedNCNConfig(rounds=0), "FedNCNConfig.rounds"),
        Case(
            slug, "size", "FedNCNConfig share above 1", lambda: FedNCNConfig(share=1.5), "FedNCNConfig.share"
        ),
        Case(
            slug,
            "size",
            "train_denoiser negative noise",
            lambda: train_denoiser(torch.ones(3, 2), noise_std=-1.0),
            "noise_std",
        ),
    ]


def _slogan() -> list[Case]:
    from torch_geometric.data import Batch

    from icml25.graphs.slogan import (
        N_FEATURES,
        SLOGAN,
        AdaptiveThreshold,
        MotifDomainConfig,
        SloganConfig,
        UDATrainConfig,
        density_split,
        dv_bound,
        make_motif_graph,
        make_spurious_motif_domains,
        train_uda,
    )

    slug = "slogan"
    rng = np.random.default_rng(0)

    def model() -> SLOGAN:
        return SLOGAN(SloganConfig(in_dim=N_FEATURES, n_classes=3, hidden=8, layers=1, z_dim=4))

    def graphs(n: int = 4):
        return make_spurious_motif_domains(
            MotifDomainConfig(n_per_domain=n, source_size=(5, 6), target_size=(5, 6)), seed=0
        )

    def with_x(x: torch.Tensor) -> Batch:
        g = graphs()[0][0].clone()
        g.x = x
        return Batch.from_data_list([g])

    def nan_source() -> object:
        src, tgt = graphs()
        bad = src[0].clone()
        bad.x = torch.full_like(bad.x, NAN)
        return train_uda(model(), [bad, *src[1:]], tgt, "erm", UDATrainConfig(epochs=1))

    return [
        Case(slug, "shape", "forward with wrong feature width",
             lambda: model()(with_x(torch.ones(7, N_FEATURES + 2))), "batch.x"),
        Case(slug, "shape", "dv_bound label vector of wrong length",
             lambda: dv_bound(torch.randn(4, 3), torch.zeros(3, dtype=torch.long), torch.randn(3, 2)), "y"),
        Case(slug, "shape", "AdaptiveThreshold probs with wrong class count",
             lambda: AdaptiveThreshold(3).update(torch.rand(4, 2)), "probs"),
        Case(slug, "nonfinite", "forward NaN node features",
             lambda: model()(with_x(torch.full((7, N_FEATURES), NAN))), "batch.x"),
        Case(slug, "nonfinite", "train_uda NaN source features", nan_source, "source"),
        Case(slug, "nonfinite", "AdaptiveThreshold inf probs",
             lambda: AdaptiveThreshold(3).update(torch.full((2, 3), float("inf"))), "probs"),
        Case(slug, "empty", "train_uda empty target",
             lambda: train_uda(model(), graphs()[0], [], "erm"), "target"),
        Case(slug, "empty", "density_split no graphs", lambda: density_split([], 4), "graphs"),
        Case(slug, "empty", "AdaptiveThreshold no rows",
             lambda: AdaptiveThreshold(3).update(torch.zeros(0, 3)), "probs"),
        Case(slug, "dtype", "forward integer node features",
             lambda: model()(with_x(torch.ones(7, N_FEATURES, dtype=torch.long))), "batch.x"),
        Case(slug, "dtype", "dv_bound float labels",
             lambda: dv_bound(torch.randn(4, 3), torch.zeros(4), torch.randn(3, 2)), "y"),
        Case(slug, "dtype", "train_uda config of the wrong type",
             lambda: train_uda(model(), *graphs(), "erm", {"epochs": 1}), "config"),
        Case(slug, "size", "MotifDomainConfig n_per_domain 0",
             lambda: MotifDomainConfig(n_per_domain=0), "n_per_domain"),
        Case(slug, "size", "make_motif_graph base_size 0",
             lambda: make_motif_graph(0, 0, 0, rng=rng), "base_size"),
        Case(slug, "size", "SloganConfig hidden 0",
             lambda: SloganConfig(in_dim=N_FEATURES, n_classes=3, hidden=0), "hidden"),
        Case(slug, "size", "UDATrainConfig epochs 0", lambda: UDATrainConfig(epochs=0), "epochs"),
        Case(slug, "size", "density_split n_domains 0",
             lambda: density_split(graphs()[0], 0), "n_domains"),
    ]  # fmt: skip


def _dynamic_message_passing() -> list[Case]:
    from icml25.generative.dynamic_message_passing import (
        GraphSchedule,
        NCGNConfig,
        NCGNVelocity,
        build_adaptive_graph,
        primitive_point_clouds,
        turing_st_dataset,
        voxel_cluster,
        w1_flattened,
    )
    from icml25.nn.flow_matching import euler_sample, linear_path, sample_times

    slug = "dynamic_message_passing"
    pos = torch.rand(2, 10, 2)
    torch.manual_seed(0)
    vel = NCGNVelocity(NCGNConfig(in_dim=3, cond_dim=2, hidden=8, layers=1, conv="gcn"), GraphSchedule())
    sched = GraphSchedule()
    return [
        Case(
            slug,
            "shape",
            "build_adaptive_graph 2-D pos",
            lambda: build_adaptive_graph(pos[0], torch.rand(1), sched),
            "pos",
        ),
        Case(
            slug,
            "shape",
            "NCGNVelocity wrong feature count",
            lambda: vel(torch.rand(2, 10, 4), torch.rand(2), pos),
            "x_t",
        ),
        Case(
            slug,
            "shape",
            "w1_flattened mismatched samples",
            lambda: w1_flattened(np.zeros((3, 4)), np.zeros((3, 5))),
            "generated",
        ),
        Case(
            slug,
            "shape",
            "linear_path mismatched shapes",
            lambda: linear_path(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2)),
            "x0 and x1",
        ),
        Case(
            slug,
            "nonfinite",
            "build_adaptive_graph NaN pos",
            lambda: build_adaptive_graph(torch.full((1, 10, 2), NAN), torch.rand(1), sched),
            "pos",
        ),
        Case(
            slug,
            "nonfinite",
            "build_adaptive_graph NaN clean_frac",
            lambda: build_adaptive_graph(pos, torch.tensor([NAN, 0.5]), sched),
            "clean_frac",
        ),
        Case(
            slug,
            "nonfinite",
            "NCGNVelocity inf x_t",
            lambda: vel(torch.full((2, 10, 3), float("inf")), torch.rand(2), pos),
            "x_t",
        ),
        Case(
            slug,
            "nonfinite",
            "w1_flattened NaN",
            lambda: w1_flattened(np.full((3, 4), NAN), np.zeros((3, 4))),
            "generated",
        ),
        Case(
            slug,
            "nonfinite",
            "linear_path NaN x1",
            lambda: linear_path(torch.zeros(2, 3), torch.full((2, 3), NAN), torch.zeros(2)),
            "x1",
        ),
        Case(
            slug,
            "empty",
            "build_adaptive_graph no nodes",
            lambda: build_adaptive_graph(torch.zeros(1, 0, 2), torch.rand(1), sched),
            "pos",
        ),
        Case(
            slug,
            "empty",
            "build_adaptive_graph no clean_frac",
            lambda: sched.resolution(torch.zeros(0), 10),
            "clean_frac",
        ),
        Case(
            slug,
            "empty",
            "w1_flattened empty set",
            lambda: w1_flattened(np.zeros((0, 4)), np.zeros((3, 4))),
            "generated",
        ),
        Case(
            slug,
            "dtype",
            "NCGNVelocity float64 x_t",
            lambda: vel(torch.rand(2, 10, 3, dtype=torch.float64), torch.rand(2), pos),
            "x_t",
        ),
        Case(
            slug,
            "dtype",
            "voxel_cluster float n_clusters",
            lambda: voxel_cluster(pos, torch.tensor([3.0, 4.0])),
            "n_clusters",
        ),
        Case(
            slug,
            "dtype",
            "integer clean_frac",
            lambda: sched.resolution(torch.tensor([0, 1]), 10),
            "clean_frac",
        ),
        Case(
            slug,
            "dtype",
            "w1_flattened strings",
            lambda: w1_flattened(np.array([["a"]]), np.zeros((1, 1))),
            "generated",
        ),
        Case(slug, "size", "GraphSchedule base_k 0", lambda: GraphSchedule(base_k=0), "base_k"),
        Case(slug, "size", "NCGNConfig hidden 0", lambda: NCGNConfig(in_dim=3, hidden=0), "hidden"),
        Case(slug, "size", "turing_st_dataset n_sim 0", lambda: turing_st_dataset(0), "n_sim"),
        Case(
            slug,
            "size",
            "primitive_point_clouds n_points 0",
            lambda: primitive_point_clouds(2, 0),
            "n_points",
        ),
        Case(
            slug,
            "size",
            "voxel_cluster n_clusters 0",
            lambda: voxel_cluster(pos, torch.tensor([0, 2])),
            "n_clusters",
        ),
        Case(
            slug,
            "size",
            "euler_sample steps 0",
            lambda: euler_sample(lambda x, t, c: x, torch.zeros(2, 2), steps=0),
            "steps",
        ),
        Case(slug, "size", "sample_times n 0", lambda: sample_times(0), "n"),
    ]


def _continual_robust_training() -> list[Case]:
    from icml25.robustness.continual_robust_training import (
        AdversarialLogitReg,
        LinfPGD,
        ReColor1D,
        SmallCNN,
        StageConfig,
        UniformNoiseReg,
        attack,
        robust_eval,
        square_attack,
        train_stage,
    )

    slug = "continual_robust_training"

    def model() -> SmallCNN:
        torch.manual_seed(0)
        return SmallCNN(widths=(2, 4), hidden=8)

    x, y = torch.rand(4, 1, 8, 8), torch.zeros(4, dtype=torch.long)
    return [
        Case(
            slug,
            "shape",
            "attack 3-D images",
            lambda: attack(model(), torch.rand(4, 8, 8), y, LinfPGD(0.1)),
            "x",
        ),
        Case(
            slug,
            "shape",
            "attack labels of wrong length",
            lambda: attack(model(), x, y[:3], LinfPGD(0.1)),
            "y",
        ),
        Case(
            slug,
            "nonfinite",
            "attack NaN images",
            lambda: attack(model(), torch.full((4, 1, 8, 8), NAN), y, LinfPGD(0.1)),
            "x",
        ),
        Case(
            slug,
            "nonfinite",
            "ALR inf images",
            lambda: AdversarialLogitReg(LinfPGD(0.1))(model(), torch.full((4, 1, 8, 8), float("inf"))),
            "x",
        ),
        Case(
            slug,
            "empty",
            "attack no images",
            lambda: attack(model(), torch.rand(0, 1, 8, 8), y[:0], LinfPGD(0.1)),
            "x",
        ),
        Case(
            slug,
            "empty",
            "train_stage no attacks",
            lambda: train_stage(model(), x, y, [], StageConfig()),
            "attacks",
        ),
        Case(
            slug,
            "dtype",
            "attack integer images",
            lambda: attack(model(), torch.ones(4, 1, 8, 8, dtype=torch.long), y, LinfPGD(0.1)),
            "x",
        ),
        Case(slug, "dtype", "attack float labels", lambda: attack(model(), x, y.float(), LinfPGD(0.1)), "y"),
        Case(
            slug,
            "dtype",
            "robust_eval attacks not threat models",
            lambda: robust_eval(model(), x, y, {"a": "linf"}),  # type: ignore[dict-item]
            "attacks",
        ),
        Case(slug, "size", "LinfPGD eps 0", lambda: LinfPGD(0.0), "eps"),
        Case(slug, "size", "attack steps 0", lambda: attack(model(), x, y, LinfPGD(0.1), steps=0), "steps"),
        Case(slug, "size", "ReColor1D knots 0", lambda: ReColor1D(0.1, knots=0), "knots"),
        Case(slug, "size", "UniformNoiseReg sigma < 0", lambda: UniformNoiseReg(-1.0), "sigma"),
        Case(slug, "size", "StageConfig epochs 0", lambda: StageConfig(epochs=0), "epochs"),
        Case(
            slug,
            "size",
            "square_attack queries 0",
            lambda: square_attack(model(), x, y, 0.1, queries=0),
            "queries",
        ),
        Case(slug, "size", "robust_eval steps 0", lambda: robust_eval(model(), x, y, {}, steps=0), "steps"),
    ]


def _h_tuning() -> list[Case]:
    from icml25.life.h_tuning import (
        BPTuner,
        ECGNet,
        HTuningConfig,
        HybridTuner,
        make_adamw,
        mix_gradients,
        multilabel_metrics,
        simulate_ecg_dataset,
    )

    torch.manual_seed(0)
    net = ECGNet(3, width=8, n_transformer=1, heads=2)
    y = torch.zeros(2, 3)

    def hyb() -> HybridTuner:
        return HybridTuner(net, make_adamw(net, 1e-3), None, HTuningConfig(bp_batch=1))

    return [
        Case(
            "h_tuning",
            "shape",
            "HybridTuner.step wrong lead count",
            lambda: hyb().step(torch.zeros(2, 5, 64), y),
            "x",
        ),
        Case(
            "h_tuning",
            "shape",
            "HybridTuner.step batch mismatch",
            lambda: hyb().step(torch.zeros(3, 12, 64), y),
            "batch",
        ),
        Case(
            "h_tuning",
            "nonfinite",
            "HybridTuner.step NaN x",
            lambda: hyb().step(torch.full((2, 12, 64), NAN), y),
            "x",
        ),
        Case(
            "h_tuning",
            "nonfinite",
            "BPTuner.step inf y",
            lambda: BPTuner(net, make_adamw(net, 1e-3)).step(
                torch.zeros(2, 12, 64), torch.full((2, 3), float("inf"))
            ),
            "y",
        ),
        Case(
            "h_tuning",
            "empty",
            "ECGNet.forward empty batch",
            lambda: hyb().step(torch.zeros(0, 12, 64), y[:0]),
            "x",
        ),
        Case(
            "h_tuning",
            "empty",
            "multilabel_metrics empty",
            lambda: multilabel_metrics(np.zeros((0, 3)), np.zeros((0, 3))),
            "y_true",
        ),
        Case(
            "h_tuning",
            "dtype",
            "HybridTuner.step float64 x",
            lambda: hyb().step(torch.zeros(2, 12, 64, dtype=torch.float64), y),
            "x",
        ),
        Case(
            "h_tuning",
            "dtype",
            "multilabel_metrics strings",
            lambda: multilabel_metrics(np.full((4, 3), "a"), np.zeros((4, 3))),
            "y_true",
        ),
        Case("h_tuning", "size", "simulate_ecg_dataset n=0", lambda: simulate_ecg_dataset(0), "n"),
        Case(
            "h_tuning",
            "size",
            "simulate_ecg_dataset duration<0",
            lambda: simulate_ecg_dataset(2, duration=-1.0),
            "duration",
        ),
        Case("h_tuning", "size", "HTuningConfig bp_batch=0", lambda: HTuningConfig(bp_batch=0), "bp_batch"),
        Case("h_tuning", "size", "HTuningConfig zo_eps=0", lambda: HTuningConfig(zo_eps=0.0), "zo_eps"),
        Case("h_tuning", "size", "ECGNet width=0", lambda: ECGNet(3, width=0), "width"),
        Case(
            "h_tuning",
            "shape",
            "mix_gradients shape mismatch",
            lambda: mix_gradients(torch.zeros(3), torch.zeros(4), 0.9),
            "g_bp",
        ),
    ]


def _acac() -> list[Case]:
    from icml25.rl.acac import (
        ACACConfig,
        AgentCentricCritic,
        AgentGRUActor,
        MacroBoxPushing,
        MacroMeeting,
        PaddedJointCritic,
        compact,
        joint_step_gae,
        joint_steps,
    )

    z2 = torch.zeros(1, 3)
    no = torch.zeros(1, 3, dtype=torch.bool)
    nan2 = torch.tensor([[0.0, NAN, 0.0]])
    starts = torch.ones(1, 4, 2, dtype=torch.bool)
    valid = torch.ones(1, 4, dtype=torch.bool)
    obs = torch.zeros(1, 4, 2, 5)
    joint = torch.ones(1, 4, dtype=torch.bool)
    t_idx = torch.arange(4)[None]
    critic = AgentCentricCritic(2, 5, mlp=8, rnn=8)
    padded = PaddedJointCritic(2, 5, mlp=8, rnn=8)
    actor = AgentGRUActor(5, 8, mlp=8, rnn=8)
    env = MacroBoxPushing(grid=4, horizon=5)
    env.reset(seed=0)
    slug = "acac"
    return [
        Case(
            slug,
            "shape",
            "joint_step_gae v_next shape",
            lambda: joint_step_gae(z2, z2, z2, torch.zeros(1, 4), no, 0.9),
            "v_next",
        ),
        Case(
            slug, "nonfinite", "joint_step_gae NaN R", lambda: joint_step_gae(nan2, z2, z2, z2, no, 0.9), "R"
        ),
        Case(
            slug,
            "nonfinite",
            "joint_step_gae lam NaN",
            lambda: joint_step_gae(z2, z2, z2, z2, no, NAN),
            "lam",
        ),
        Case(
            slug,
            "dtype",
            "joint_step_gae float done",
            lambda: joint_step_gae(z2, z2, z2, z2, z2, 0.9),
            "done",
        ),
        Case(
            slug,
            "empty",
            "joint_step_gae empty R",
            lambda: joint_step_gae(*(torch.zeros(1, 0),) * 4, torch.zeros(1, 0, dtype=torch.bool), 0.9),
            "R",
        ),
        Case(
            slug,
            "nonfinite",
            "joint_steps inf rewards",
            lambda: joint_steps(starts, torch.full((1, 4), float("inf")), valid, 0.9),
            "rewards",
        ),
        Case(
            slug,
            "shape",
            "joint_steps 2-D starts",
            lambda: joint_steps(valid, torch.zeros(1, 4), valid, 0.9),
            "starts",
        ),
        Case(
            slug,
            "size",
            "joint_steps gamma 0",
            lambda: joint_steps(starts, torch.zeros(1, 4), valid, 0.0),
            "gamma",
        ),
        Case(
            slug, "dtype", "compact float mask", lambda: compact(torch.zeros(1, 3), torch.zeros(1, 3)), "mask"
        ),
        Case(
            slug,
            "shape",
            "critic obs wrong agent count",
            lambda: critic(torch.zeros(1, 4, 3, 5), starts, joint, t_idx),
            "obs",
        ),
        Case(
            slug,
            "nonfinite",
            "critic NaN obs",
            lambda: critic(torch.full((1, 4, 2, 5), NAN), starts, joint, t_idx),
            "obs",
        ),
        Case(
            slug,
            "empty",
            "critic empty batch",
            lambda: critic(
                torch.zeros(0, 4, 2, 5),
                torch.zeros(0, 4, 2, dtype=torch.bool),
                torch.zeros(0, 4, dtype=torch.bool),
                torch.zeros(0, 4, dtype=torch.long),
            ),
            "obs",
        ),
        Case(
            slug,
            "dtype",
            "critic integer obs",
            lambda: critic(torch.zeros(1, 4, 2, 5, dtype=torch.long), starts, joint, t_idx),
            "obs",
        ),
        Case(
            slug,
            "dtype",
            "padded critic float starts",
            lambda: padded(obs, starts.float(), joint, t_idx),
            "starts",
        ),
        Case(
            slug,
            "dtype",
            "critic float t_index",
            lambda: critic(obs, starts, joint, t_idx.float()),
            "t_index",
        ),
        Case(
            slug,
            "shape",
            "actor obs width",
            lambda: actor(torch.zeros(1, 3, 4), torch.zeros(1, 3, dtype=torch.long)),
            "obs",
        ),
        Case(slug, "size", "critic rnn 0", lambda: AgentCentricCritic(2, 5, rnn=0), "rnn"),
        Case(slug, "size", "MacroBoxPushing grid 2", lambda: MacroBoxPushing(grid=2), "grid"),
        Case(slug, "size", "MacroMeeting length 0", lambda: MacroMeeting(length=0), "length"),
        Case(slug, "size", "ACACConfig total_steps 0", lambda: ACACConfig(total_steps=0), "total_steps"),
        Case(
            slug, "nonfinite", "MacroBoxPushing NaN penalty", lambda: MacroBoxPushing(penalty=NAN), "penalty"
        ),
        Case(
            slug,
            "dtype",
            "step with a string action",
            lambda: env.step({"agent_0": "push", "agent_1": 7}),
            "agent_0",
        ),
    ]


def _econ() -> list[Case]:
    from icml25.agents.econ import (
        BeliefEncoder,
        BeliefNetwork,
        DecodingStrategy,
        ECONConfig,
        ECONMixer,
        RewardModel,
        bayesian_nash_conv,
        bne_refine_beliefs,
        embed_texts,
        make_arithmetic_problems,
        nash_conv,
        parse_answer,
        pure_nash_equilibria,
        support_enumeration,
    )

    slug = "econ"
    pd = np.stack([np.array([[3.0, 0], [5, 1]]), np.array([[3.0, 5], [0, 1]])], -1)
    half = [np.ones(2) / 2, np.ones(2) / 2]
    net = BeliefNetwork(8, 3, belief_dim=4, hidden=8)
    mixer = ECONMixer(2, 4, 3, 8)

    def components(embeddings: np.ndarray) -> object:
        return RewardModel().components(
            [1.0, 2.0], embeddings, np.ones(2), np.ones(2), 1.0, np.ones(4) / 2, 1.0
        )

    return [
        Case(
            slug,
            "shape",
            "nash_conv payoff axis != players",
            lambda: nash_conv(np.zeros((2, 2, 3)), half),
            "payoffs",
        ),
        Case(
            slug,
            "shape",
            "nash_conv profile wrong length",
            lambda: nash_conv(pd, [np.ones(3) / 3, np.ones(2) / 2]),
            "profile",
        ),
        Case(
            slug,
            "shape",
            "bayesian_nash_conv profiles shape",
            lambda: bayesian_nash_conv(pd[None], np.ones((1, 3, 2)) / 2),
            "profiles",
        ),
        Case(
            slug,
            "shape",
            "support_enumeration 3-player game",
            lambda: support_enumeration(np.zeros((2, 2, 2, 3))),
            "two-player",
        ),
        Case(slug, "shape", "BeliefNetwork wrong obs width", lambda: net(torch.randn(2, 7)), "obs"),
        Case(
            slug,
            "shape",
            "BeliefEncoder wrong belief width",
            lambda: BeliefEncoder(4, 4, heads=2)(torch.randn(2, 3, 5)),
            "beliefs",
        ),
        Case(
            slug,
            "shape",
            "ECONMixer wrong agent count",
            lambda: mixer(torch.randn(2, 3), torch.randn(2, 4), torch.rand(2, 3, 3)),
            "q",
        ),
        Case(
            slug,
            "shape",
            "RewardModel embeddings rows != agents",
            lambda: components(np.eye(3, 4, dtype=np.float32)),
            "embeddings",
        ),
        Case(
            slug,
            "nonfinite",
            "nash_conv NaN payoffs",
            lambda: nash_conv(np.full((2, 2, 2), NAN), half),
            "payoffs",
        ),
        Case(
            slug,
            "nonfinite",
            "pure_nash_equilibria inf payoffs",
            lambda: pure_nash_equilibria(np.full((2, 2, 2), np.inf)),
            "payoffs",
        ),
        Case(slug, "nonfinite", "BeliefNetwork NaN obs", lambda: net(torch.full((2, 8), NAN)), "obs"),
        Case(
            slug,
            "nonfinite",
            "bne_refine_beliefs inf",
            lambda: bne_refine_beliefs(torch.full((1, 2, 3), float("inf"))),
            "beliefs",
        ),
        Case(
            slug,
            "nonfinite",
            "RewardModel NaN embeddings",
            lambda: components(np.full((2, 4), NAN)),
            "embeddings",
        ),
        Case(
            slug,
            "nonfinite",
            "DecodingStrategy inf temperature",
            lambda: DecodingStrategy("cot", float("inf")),
            "temperature",
        ),
        Case(slug, "empty", "nash_conv empty game", lambda: nash_conv(np.zeros((0, 2, 2)), half), "payoffs"),
        Case(slug, "empty", "embed_texts no texts", lambda: embed_texts([], 8), "texts"),
        Case(
            slug,
            "empty",
            "bne_refine_beliefs empty",
            lambda: bne_refine_beliefs(torch.zeros(0, 2, 3)),
            "beliefs",
        ),
        Case(
            slug,
            "dtype",
            "pure_nash_equilibria strings",
            lambda: pure_nash_equilibria(np.full((2, 2, 2), "a")),
            "payoffs",
        ),
        Case(
            slug, "dtype", "BeliefNetwork integer obs", lambda: net(torch.ones(2, 8, dtype=torch.long)), "obs"
        ),
        Case(slug, "dtype", "parse_answer non-string", lambda: parse_answer(7), "text"),  # type: ignore[arg-type]
        Case(slug, "dtype", "embed_texts non-strings", lambda: embed_texts([1, 2], 8), "texts"),  # type: ignore[list-item]
        Case(slug, "size", "make_arithmetic_problems n=0", lambda: make_arithmetic_problems(0), "n"),
        Case(slug, "size", "BeliefNetwork n_actions=0", lambda: BeliefNetwork(8, 0), "n_actions"),
        Case(slug, "size", "ECONMixer n_agents=0", lambda: ECONMixer(0, 4, 3, 8), "n_agents"),
        Case(slug, "size", "ECONConfig steps=0", lambda: ECONConfig(steps=0), "steps"),
        Case(
            slug,
            "size",
            "bne_refine_beliefs iters=0",
            lambda: bne_refine_beliefs(torch.randn(1, 2, 3), iters=0),
            "iters",
        ),
        Case(slug, "size", "embed_texts dim=0", lambda: embed_texts(["a"], 0), "dim"),
    ]


def _competitive_classification() -> list[Case]:
    from icml25.theory.competitive_classification import (
        AccuracyMarket,
        ChoiceRule,
        MarketAwareClassifier,
        Provider,
        best_response_weights,
        make_rings,
        market_shares,
        user_welfare,
    )

    slug = "competitive_classification"
    X, y = np.random.default_rng(0).normal(size=(8, 2)), np.array([0, 1] * 4)
    others = np.ones((8, 1), dtype=bool)
    return [
        Case(
            slug,
            "shape",
            "market_shares 1-D correctness",
            lambda: market_shares(np.ones(3, dtype=bool)),
            "correct",
        ),
        Case(
            slug,
            "shape",
            "best_response_weights wrong column count",
            lambda: best_response_weights(np.ones((3, 2)), 2),
            "correct_others",
        ),
        Case(
            slug,
            "shape",
            "MarketAwareClassifier.fit competitors rows != X rows",
            lambda: MarketAwareClassifier().fit(X, y, np.ones((5, 1), dtype=bool)),
            "competitors_correct",
        ),
        Case(
            slug,
            "nonfinite",
            "user_welfare NaN correctness",
            lambda: user_welfare(np.array([[1.0, np.nan]])),
            "correct",
        ),
        Case(
            slug,
            "nonfinite",
            "MarketAwareClassifier.fit NaN features",
            lambda: MarketAwareClassifier().fit(np.full((8, 2), NAN), y, others),
            "X",
        ),
        Case(
            slug,
            "nonfinite",
            "softmax rule infinite probabilities",
            lambda: ChoiceRule("softmax").selection_probs(
                np.ones((2, 2), dtype=bool), np.full((2, 2), np.inf)
            ),
            "proba_true",
        ),
        Case(
            slug,
            "empty",
            "market_shares no user",
            lambda: market_shares(np.zeros((0, 3), dtype=bool)),
            "correct",
        ),
        Case(
            slug,
            "empty",
            "AccuracyMarket no evaluation user",
            lambda: AccuracyMarket("uniform", np.zeros((0, 2)), np.zeros(0, dtype=int)),
            "X_eval",
        ),
        Case(
            slug, "dtype", "market_shares strings", lambda: market_shares(np.array([["a", "b"]])), "correct"
        ),
        Case(
            slug,
            "dtype",
            "Provider string labels",
            lambda: Provider("p", X, np.array(["a", "b"] * 4)),
            "y",
        ),
        Case(
            slug,
            "dtype",
            "market_shares non-0/1 values",
            lambda: market_shares(np.array([[0.5, 1.0]])),
            "correct",
        ),
        Case(slug, "size", "make_rings n = 0", lambda: make_rings(0), "n"),
        Case(
            slug,
            "size",
            "best_response_weights one provider",
            lambda: best_response_weights(others, 1),
            "n_providers",
        ),
        Case(slug, "size", "ChoiceRule tau = 0", lambda: ChoiceRule("softmax", tau=0.0), "tau"),
        Case(
            slug,
            "size",
            "Provider update_every < 0",
            lambda: Provider("p", X, y, update_every=-1),
            "update_every",
        ),
        Case(
            slug,
            "size",
            "AccuracyMarket.run tol = 0",
            lambda: AccuracyMarket("uniform", X, y).run(tol=0.0),
            "tol",
        ),
    ]


def _puzzle() -> list[Case]:
    from transformers import LlamaConfig, LlamaForCausalLM

    from icml25.language.puzzle import (
        Variant,
        build_library,
        causal_mask,
        ffn_channel_importance,
        kl_to_parent,
        least_squares_linear,
        normalized_mse,
        solve_mip,
        time_call,
        width_reduced_mlp,
    )

    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    mlp = model.model.layers[0].mlp
    ids = torch.randint(0, 32, (2, 8))
    attn = [Variant("attention", "noop")]
    ffn = [Variant("ffn", "noop")]
    lat = [[[1.0, 0.0]]]
    return [
        Case(
            "puzzle",
            "shape",
            "solve_mip 2-D score group",
            lambda: solve_mip([[[0.0, 1.0]]], lat, [1.0]),
            r"scores\[0\]",
        ),
        Case(
            "puzzle",
            "shape",
            "normalized_mse shapes differ",
            lambda: normalized_mse(torch.zeros(2, 3), torch.ones(3, 2)),
            "pred",
        ),
        Case(
            "puzzle",
            "shape",
            "build_library 1-D ids",
            lambda: build_library(model, ids[0], ids, attn, ffn, steps=1),
            "calib_ids",
        ),
        Case(
            "puzzle",
            "nonfinite",
            "solve_mip NaN score",
            lambda: solve_mip([[0.0, NAN]], lat, [1.0]),
            r"scores\[0\]",
        ),
        Case(
            "puzzle",
            "nonfinite",
            "solve_mip inf budget",
            lambda: solve_mip([[0.0, 1.0]], lat, [float("inf")]),
            "budgets",
        ),
        Case(
            "puzzle",
            "nonfinite",
            "ffn_channel_importance NaN",
            lambda: ffn_channel_importance(mlp, torch.full((2, 16), NAN)),
            "x",
        ),
        Case(
            "puzzle",
            "nonfinite",
            "kl_to_parent inf",
            lambda: kl_to_parent(torch.full((2, 4), float("inf")), torch.zeros(2, 4)),
            "parent_logits",
        ),
        Case("puzzle", "empty", "solve_mip no groups", lambda: solve_mip([], lat, [1.0]), "scores"),
        Case(
            "puzzle",
            "empty",
            "build_library no windows",
            lambda: build_library(model, ids[:0], ids, attn, ffn, steps=1),
            "calib_ids",
        ),
        Case(
            "puzzle",
            "empty",
            "width_reduced_mlp no channels",
            lambda: width_reduced_mlp(mlp, torch.zeros(0, dtype=torch.long)),
            "keep",
        ),
        Case(
            "puzzle",
            "empty",
            "least_squares_linear empty",
            lambda: least_squares_linear(torch.zeros(0, 3), torch.zeros(0, 2)),
            "x",
        ),
        Case(
            "puzzle",
            "dtype",
            "build_library float ids",
            lambda: build_library(model, ids.float(), ids, attn, ffn, steps=1),
            "calib_ids",
        ),
        Case(
            "puzzle",
            "dtype",
            "solve_mip string scores",
            lambda: solve_mip([["a", "b"]], lat, [1.0]),
            r"scores\[0\]",
        ),
        Case(
            "puzzle",
            "dtype",
            "width_reduced_mlp float keep",
            lambda: width_reduced_mlp(mlp, torch.zeros(3)),
            "keep",
        ),
        Case("puzzle", "size", "Variant size 0", lambda: Variant("ffn", "width", 0), "Variant.size"),
        Case("puzzle", "size", "causal_mask t 0", lambda: causal_mask(0), "t"),
        Case("puzzle", "size", "time_call reps 0", lambda: time_call(lambda: None, reps=0), "reps"),
        Case(
            "puzzle",
            "size",
            "build_library width above parent",
            lambda: build_library(model, ids, ids, attn, [Variant("ffn", "width", 99)], steps=1),
            "ffn variant",
        ),
    ]


def _aaar() -> list[Case]:
    from icml25.agents.aaar import (
        EquationInstance,
        binary_prf,
        choice_accuracy,
        copy_input,
        cosine_matrix,
        itf_idf,
        make_benchmark,
        soft_prf,
        split_chunks,
        truncate_context,
    )

    def embed(texts):  # one-hot per string length: enough for the calls below
        return np.eye(8)[[len(t) % 8 for t in texts]]

    def nan_embed(texts):
        return np.full((len(texts), 3), NAN)

    import random

    return [
        Case(
            "aaar",
            "shape",
            "cosine_matrix widths differ",
            lambda: cosine_matrix(np.ones((2, 3)), np.ones((2, 4))),
            "a and b",
        ),
        Case("aaar", "shape", "binary_prf 2-D labels", lambda: binary_prf([[1, 0]], [[1, 0]]), "predicted"),
        Case(
            "aaar",
            "shape",
            "binary_prf length mismatch",
            lambda: binary_prf([1, 0], [1]),
            "predicted and gold",
        ),
        Case(
            "aaar",
            "nonfinite",
            "cosine_matrix NaN",
            lambda: cosine_matrix(np.full((2, 2), NAN), np.ones((2, 2))),
            "a and b",
        ),
        Case("aaar", "nonfinite", "itf_idf tau NaN", lambda: itf_idf([["a"], ["b"]], embed, tau=NAN), "tau"),
        Case(
            "aaar",
            "nonfinite",
            "soft_prf embedder returns NaN",
            lambda: soft_prf(["a"], ["b"], nan_embed),
            "embed",
        ),
        Case("aaar", "empty", "binary_prf empty", lambda: binary_prf([], []), "predicted"),
        Case("aaar", "empty", "soft_prf empty gold", lambda: soft_prf(["a"], [], embed), "gold"),
        Case("aaar", "empty", "choice_accuracy empty gold", lambda: choice_accuracy([], []), "gold"),
        Case(
            "aaar",
            "empty",
            "EquationInstance no options",
            lambda: EquationInstance("p", "a", "b", (), 0),
            "options",
        ),
        Case("aaar", "dtype", "binary_prf float labels", lambda: binary_prf([0.5], [1]), "predicted"),
        Case(
            "aaar",
            "dtype",
            "soft_prf a string, not a list",
            lambda: soft_prf("abc", ["b"], embed),
            "predicted",
        ),
        Case(
            "aaar",
            "dtype",
            "EquationInstance answer str",
            lambda: EquationInstance("p", "a", "b", ("x", "y"), "1"),
            "answer",
        ),
        Case(
            "aaar", "dtype", "choice_accuracy float index", lambda: choice_accuracy([0.0], [0]), "predicted"
        ),
        Case("aaar", "size", "make_benchmark n_papers=0", lambda: make_benchmark(0), "n_papers"),
        Case("aaar", "size", "split_chunks window=0", lambda: split_chunks("a b", 0), "window"),
        Case("aaar", "size", "truncate_context k=-1", lambda: truncate_context("a", "b", -1), "k"),
        Case(
            "aaar", "size", "copy_input k=0", lambda: copy_input("One two three.", 0, random.Random(0)), "k"
        ),
    ]


def _pinnsagent() -> list[Case]:
    from icml25.physics.pinnsagent import (
        DEFAULT_CONFIG,
        PDE_SUITE,
        PINNNet,
        SearchSpace,
        burgers_reference,
        cosine,
        encode_text,
        train_pinn,
    )

    slug = "pinnsagent"

    def net() -> PINNNet:
        return PINNNet((0.0, 0.0), (1.0, 1.0), width=4, depth=2)

    return [
        Case(slug, "shape", "PINNNet wrong input width", lambda: net()(torch.rand(3, 3)), "x"),
        Case(slug, "nonfinite", "PINNNet NaN input", lambda: net()(torch.full((3, 2), NAN)), "x"),
        Case(slug, "empty", "PINNNet no points", lambda: net()(torch.rand(0, 2)), "x"),
        Case(
            slug, "dtype", "PINNNet float64 input", lambda: net()(torch.rand(3, 2, dtype=torch.float64)), "x"
        ),
        Case(slug, "size", "PINNNet width 0", lambda: PINNNet((0.0,), (1.0,), width=0, depth=2), "width"),
        Case(
            slug,
            "shape",
            "burgers_reference x 2-D",
            lambda: burgers_reference(np.zeros((2, 2)), np.zeros((2, 2)), 0.1),
            "x",
        ),
        Case(
            slug,
            "nonfinite",
            "burgers_reference NaN t",
            lambda: burgers_reference(np.zeros(2), np.array([0.1, NAN]), 0.1),
            "t",
        ),
        Case(
            slug,
            "empty",
            "burgers_reference empty x",
            lambda: burgers_reference(np.zeros(0), np.zeros(0), 0.1),
            "x",
        ),
        Case(
            slug,
            "dtype",
            "burgers_reference strings",
            lambda: burgers_reference(np.array(["a", "b"]), np.zeros(2), 0.1),
            "x",
        ),
        Case(
            slug,
            "size",
            "burgers_reference nu 0",
            lambda: burgers_reference(np.zeros(2), np.zeros(2), 0.0),
            "nu",
        ),
        Case(slug, "shape", "cosine 2-D", lambda: cosine(np.ones((2, 2)), np.ones((2, 2))), "a"),
        Case(slug, "nonfinite", "cosine inf", lambda: cosine(np.array([1.0, np.inf]), np.ones(2)), "a"),
        Case(slug, "empty", "cosine empty", lambda: cosine(np.zeros(0), np.zeros(0)), "a"),
        Case(slug, "dtype", "cosine strings", lambda: cosine(np.array(["a"]), np.ones(1)), "a"),
        Case(slug, "size", "encode_text dim 0", lambda: encode_text("heat", dim=0), "dim"),
        Case(
            slug,
            "size",
            "train_pinn steps 0",
            lambda: train_pinn(PDE_SUITE["heat1d"], DEFAULT_CONFIG, steps=0),
            "steps",
        ),
        Case(slug, "size", "SearchSpace max_width 0", lambda: SearchSpace(max_width=0), "max_width"),
    ]


def _l_diffusion() -> list[Case]:
    from icml25.generative.l_diffusion import (
        LDiffusion,
        LDiffusionConfig,
        SynthPathConfig,
        dice_loss,
        pixel_infonce,
        seg_metrics,
        to_gray,
        train_segmenter,
    )
    from icml25.nn.diffusion import NoiseSchedule, SmallUNet, q_sample, sample_noise

    s = "l_diffusion"
    lab = torch.tensor([0, 1, 1])
    ld = LDiffusion(SmallUNet(3, 3, (8, 8)), LDiffusionConfig(timesteps=(10,)))
    seg = SmallUNet(3, 2, (8,), time=False)
    sched = NoiseSchedule("linear", 10)
    return [
        Case(
            s,
            "shape",
            "pixel_infonce 3-D features",
            lambda: pixel_infonce(torch.zeros(3, 2, 1), lab),
            "features",
        ),
        Case(
            s,
            "nonfinite",
            "pixel_infonce NaN",
            lambda: pixel_infonce(torch.full((3, 2), NAN), lab),
            "features",
        ),
        Case(
            s,
            "empty",
            "pixel_infonce no pixels",
            lambda: pixel_infonce(torch.zeros(0, 2), lab[:0]),
            "features",
        ),
        Case(
            s,
            "dtype",
            "pixel_infonce float labels",
            lambda: pixel_infonce(torch.zeros(3, 2), lab.float()),
            "labels",
        ),
        Case(s, "size", "pixel_infonce tau 0", lambda: pixel_infonce(torch.zeros(3, 2), lab, tau=0.0), "tau"),
        Case(
            s,
            "shape",
            "dice_loss target shape",
            lambda: dice_loss(torch.zeros(1, 2, 4, 4), torch.zeros(1, 3, 3)),
            "logits",
        ),
        Case(
            s,
            "shape",
            "seg_metrics mismatch",
            lambda: seg_metrics(np.zeros((1, 2, 2), int), np.zeros((1, 3, 3), int), 3),
            "pred",
        ),
        Case(
            s,
            "nonfinite",
            "seg_metrics NaN",
            lambda: seg_metrics(np.full((1, 2, 2), NAN), np.zeros((1, 2, 2)), 3),
            "pred",
        ),
        Case(
            s,
            "empty",
            "seg_metrics empty",
            lambda: seg_metrics(np.zeros((0, 2, 2), int), np.zeros((0, 2, 2), int), 3),
            "pred",
        ),
        Case(
            s,
            "dtype",
            "seg_metrics float labels",
            lambda: seg_metrics(np.zeros((1, 2, 2)), np.zeros((1, 2, 2)), 3),
            "pred",
        ),
        Case(
            s,
            "size",
            "seg_metrics n_classes 0",
            lambda: seg_metrics(np.zeros((1, 2, 2), int), np.zeros((1, 2, 2), int), 0),
            "n_classes",
        ),
        Case(
            s,
            "shape",
            "pixel_features 1 channel",
            lambda: ld.pixel_features(torch.zeros(1, 1, 8, 8)),
            "images",
        ),
        Case(
            s,
            "nonfinite",
            "pixel_features NaN",
            lambda: ld.pixel_features(torch.full((1, 3, 8, 8), NAN)),
            "images",
        ),
        Case(
            s, "empty", "pixel_features empty", lambda: ld.pixel_features(torch.zeros(0, 3, 8, 8)), "images"
        ),
        Case(
            s,
            "dtype",
            "pixel_features int",
            lambda: ld.pixel_features(torch.zeros(1, 3, 8, 8, dtype=torch.long)),
            "images",
        ),
        Case(s, "size", "pretrain steps 0", lambda: ld.pretrain(torch.zeros(2, 3, 8, 8), steps=0), "steps"),
        Case(
            s,
            "size",
            "train_segmenter lr 0",
            lambda: train_segmenter(
                seg, torch.zeros(1, 3, 8, 8), torch.zeros(1, 8, 8, dtype=torch.long), steps=1, lr=0.0
            ),
            "lr",
        ),
        Case(s, "shape", "to_gray 4 channels", lambda: to_gray(torch.zeros(1, 4, 2, 2)), "x"),
        Case(s, "size", "SynthPathConfig size 0", lambda: SynthPathConfig(size=0), "size"),
        Case(s, "size", "LDiffusionConfig T 0", lambda: LDiffusionConfig(T=0, timesteps=(0,)), "T"),
        Case(s, "size", "sample_noise zero size", lambda: sample_noise((0, 2)), "shape"),
        Case(
            s,
            "nonfinite",
            "q_sample NaN",
            lambda: q_sample(torch.full((1, 2), NAN), torch.tensor([1]), sched, torch.zeros(1, 2)),
            "x0",
        ),
        Case(
            s,
            "dtype",
            "q_sample float steps",
            lambda: q_sample(torch.zeros(1, 2), torch.tensor([1.0]), sched, torch.zeros(1, 2)),
            "t",
        ),
    ]


def _selekt() -> list[Case]:
    from torch import nn

    from icml25.language.selekt import (
        ChatCodec,
        FinetuneConfig,
        SeleKT,
        encode_pairs,
        find_seed_functions,
        finetune,
        generate_tests,
        run_tests,
        snapshot_base,
        sparse_project_,
        topk_mask,
    )

    slug = "selekt"

    def net() -> nn.Module:
        torch.manual_seed(0)
        return nn.Linear(3, 2)

    def nan_model() -> nn.Module:
        m = net()
        with torch.no_grad():
            m.weight.fill_(NAN)
        return m

    base = snapshot_base(net())
    msgs = [[{"role": "user", "content": "hi"}]]
    ids = torch.zeros(2, 4, dtype=torch.long)
    return [
        Case(
            slug,
            "shape",
            "sparse_project_ base of wrong shape",
            lambda: sparse_project_(net(), {"weight": torch.zeros(3, 3)}, 0.1),
            "base_state",
        ),
        Case(
            slug,
            "shape",
            "finetune 1-D data",
            lambda: finetune(net(), (ids[0], ids[0], ids[0]), FinetuneConfig()),
            "data",
        ),
        Case(
            slug,
            "shape",
            "encode_pairs unequal lengths",
            lambda: encode_pairs(ChatCodec(None), msgs, ["a", "b"], 16),
            "prompts",
        ),
        Case(
            slug,
            "nonfinite",
            "sparse_project_ NaN weights",
            lambda: sparse_project_(nan_model(), base, 0.1),
            "model",
        ),
        Case(slug, "nonfinite", "topk_mask NaN", lambda: topk_mask(torch.tensor([1.0, NAN]), 1), "delta"),
        Case(slug, "nonfinite", "SeleKT alpha inf", lambda: SeleKT(base, alpha=float("inf")), "alpha"),
        Case(slug, "empty", "topk_mask empty", lambda: topk_mask(torch.ones(0), 0), "delta"),
        Case(
            slug, "empty", "sparse_project_ empty base", lambda: sparse_project_(net(), {}, 0.1), "base_state"
        ),
        Case(slug, "empty", "run_tests no tests", lambda: run_tests(["def f(): pass"], "f", []), "tests"),
        Case(slug, "empty", "find_seed_functions no modules", lambda: find_seed_functions(()), "modules"),
        Case(
            slug, "dtype", "topk_mask integer", lambda: topk_mask(torch.ones(3, dtype=torch.long), 1), "delta"
        ),
        Case(slug, "dtype", "SeleKT alpha string", lambda: SeleKT(base, alpha="0.1"), "alpha"),  # type: ignore[arg-type]
        Case(
            slug,
            "dtype",
            "run_tests one string",
            lambda: run_tests("def f(): pass", "f", [("()", "1")]),
            "codes",
        ),
        Case(
            slug,
            "dtype",
            "finetune list data",
            lambda: finetune(net(), [ids, ids, ids], FinetuneConfig()),
            "data",
        ),  # type: ignore[arg-type]
        Case(slug, "size", "sparse_project_ alpha 0", lambda: sparse_project_(net(), base, 0.0), "alpha"),
        Case(
            slug, "size", "SeleKT period 0", lambda: SeleKT(base, alpha=0.1, period_steps=0), "period_steps"
        ),
        Case(slug, "size", "FinetuneConfig steps 0", lambda: FinetuneConfig(steps=0), "steps"),
        Case(slug, "size", "topk_mask k -1", lambda: topk_mask(torch.ones(3), -1), "k"),
        Case(
            slug,
            "size",
            "encode_pairs max_len 1",
            lambda: encode_pairs(ChatCodec(None), msgs, ["a"], 1),
            "max_len",
        ),
        Case(
            slug,
            "size",
            "generate_tests n_cases 0",
            lambda: generate_tests("def f(x):\n    return x", "f", n_cases=0),
            "n_cases",
        ),
    ]


def _selekt_generation() -> list[Case]:
    # selekt's batched greedy decoding and fine-tuning precision
    from icml25.language.selekt import FinetuneConfig, greedy_generate
    from icml25.llm.models import tiny_random_llama

    slug = "selekt"

    def gen(*args: object, **kw: object) -> object:
        model = tiny_random_llama(eos_token_id=256, pad_token_id=256)
        return greedy_generate(model, *args, pad_id=256, eos_id=256, **kw)  # type: ignore[arg-type]

    return [
        Case(
            slug,
            "shape",
            "greedy_generate budgets != prompts",
            lambda: gen([[1], [2]], [3]),
            "max_new_tokens",
        ),
        Case(slug, "empty", "greedy_generate no prompts", lambda: gen([], 4), "prompts"),
        Case(slug, "empty", "greedy_generate empty prompt", lambda: gen([[]], 4), "prompts"),
        Case(slug, "dtype", "greedy_generate float ids", lambda: gen([[1.5]], 4), "prompts"),
        Case(
            slug,
            "dtype",
            "FinetuneConfig precision fp8",
            lambda: FinetuneConfig(precision="fp8"),  # type: ignore[arg-type]
            "precision",
        ),
        Case(slug, "size", "greedy_generate budget 0", lambda: gen([[1]], 0), "max_new_tokens"),
        Case(slug, "size", "greedy_generate batch 0", lambda: gen([[1]], 2, batch_size=0), "batch_size"),
    ]


def _isotropic_merging() -> list[Case]:
    from icml25.language.isotropic_merging import (
        apply_merge,
        cache_prefix,
        make_task,
        mean_sar,
        merge_iso_c,
        merge_iso_cts,
        merge_task_arithmetic,
        merge_ties,
        merge_tsv_m,
        subspace_alignment_ratio,
        task_vectors,
    )
    from icml25.llm.models import tiny_random_llama

    s = "isotropic_merging"
    tv = {"w": torch.ones(3, 2), "b": torch.ones(3)}
    return [
        Case(
            s,
            "shape",
            "task vectors of different shapes",
            lambda: merge_iso_c([tv, {"w": torch.ones(2, 2), "b": torch.ones(3)}]),
            "task_vecs",
        ),
        Case(
            s,
            "shape",
            "SAR on 1-D tensors",
            lambda: subspace_alignment_ratio(torch.ones(3), torch.ones(3)),
            "task_matrix",
        ),
        Case(
            s,
            "shape",
            "apply_merge shape mismatch",
            lambda: apply_merge({"w": torch.ones(2)}, {"w": torch.ones(3)}, 1.0),
            "merged",
        ),
        Case(
            s,
            "nonfinite",
            "NaN in a task vector",
            lambda: merge_iso_cts([{"w": torch.full((2, 2), NAN)}]),
            "task_vecs",
        ),
        Case(
            s,
            "nonfinite",
            "inf in merged matrix",
            lambda: subspace_alignment_ratio(torch.ones(2, 2), torch.full((2, 2), float("inf"))),
            "merged_matrix",
        ),
        Case(s, "nonfinite", "NaN alpha", lambda: apply_merge(tv, tv, NAN), "alpha"),
        Case(s, "empty", "no task vectors", lambda: merge_task_arithmetic([]), "task_vecs"),
        Case(s, "empty", "no fine-tuned checkpoints", lambda: task_vectors(tv, []), "finetuned"),
        Case(s, "empty", "empty state dict", lambda: merge_ties([{}]), "task_vecs"),
        Case(
            s,
            "dtype",
            "integer task matrix for SAR",
            lambda: subspace_alignment_ratio(torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2)),
            "task_matrix",
        ),
        Case(s, "dtype", "task vectors not a sequence", lambda: merge_iso_c(tv), "task_vecs"),
        Case(
            s,
            "dtype",
            "integer task-vector entry",
            lambda: mean_sar(
                [{"w": torch.ones(2, 2, dtype=torch.long)}, {"w": torch.ones(2, 2, dtype=torch.long)}], tv
            ),
            "task_vecs",
        ),
        Case(s, "size", "TIES density 0", lambda: merge_ties([tv], density=0.0), "density"),
        Case(
            s,
            "size",
            "Iso-CTS fraction 0",
            lambda: merge_iso_cts([tv], common_space_fraction=0.0),
            "common_space_fraction",
        ),
        Case(s, "size", "zero training examples", lambda: make_task("object", 0, 4, 4), "n_train"),
        # added with TSV-M, the per-tensor TIES trim and the frozen-prefix cache
        Case(
            s,
            "shape",
            "TSV-M task vectors of different shapes",
            lambda: merge_tsv_m([tv, {"w": torch.ones(2, 2), "b": torch.ones(3)}]),
            "task_vecs",
        ),
        Case(
            s,
            "nonfinite",
            "TSV-M NaN in a task vector",
            lambda: merge_tsv_m([{"w": torch.full((2, 2), NAN)}]),
            "task_vecs",
        ),
        Case(
            s,
            "nonfinite",
            "TSV-M inf in a task vector",
            lambda: merge_tsv_m([tv, {"w": torch.full((3, 2), float("inf")), "b": torch.ones(3)}]),
            "task_vecs",
        ),
        Case(s, "empty", "TSV-M no task vectors", lambda: merge_tsv_m([]), "task_vecs"),
        Case(s, "empty", "TSV-M empty state dict", lambda: merge_tsv_m([{}]), "task_vecs"),
        Case(
            s,
            "dtype",
            "TSV-M integer task vector",
            lambda: merge_tsv_m([{"w": torch.ones(2, 2, dtype=torch.long)}]),
            "task_vecs",
        ),
        Case(
            s,
            "dtype",
            "TSV-M matrix predicate not callable",
            lambda: merge_tsv_m([tv], is_matrix=1),
            "is_matrix",
        ),
        Case(s, "dtype", "TIES unknown trim scope", lambda: merge_ties([tv], trim_scope=3), "trim_scope"),
        Case(
            s,
            "size",
            "TIES per-tensor density 0",
            lambda: merge_ties([tv], density=0.0, trim_scope="per_tensor"),
            "density",
        ),
        Case(
            s,
            "size",
            "cache_prefix start layer 0",
            lambda: cache_prefix(tiny_random_llama(), (torch.zeros(1, 2, dtype=torch.long),) * 3, 0),
            "start_layer",
        ),
        Case(
            s,
            "empty",
            "cache_prefix no rows",
            lambda: cache_prefix(tiny_random_llama(), (torch.zeros(0, 2, dtype=torch.long),) * 3, 1),
            "data",
        ),
        Case(
            s,
            "dtype",
            "cache_prefix float token ids",
            lambda: cache_prefix(tiny_random_llama(), (torch.zeros(1, 2),) * 3, 1),
            "data",
        ),
    ]


def _csbm() -> list[Case]:
    from icml25.generative.csbm import (
        CategoricalReference,
        EndpointNet,
        ReferenceConfig,
        energy_distance,
        one_step_matrix,
        sinkhorn_coupling,
        tabular_dimf,
    )

    slug = "csbm"
    ref = CategoricalReference(ReferenceConfig(n_states=5, alpha=0.2, n_steps=2, skip=1))
    net = EndpointNet(2, 5, ref.N + 2)
    x = torch.zeros(3, 2, dtype=torch.long)
    return [
        Case(
            slug, "shape", "bridge_probs mismatched ends", lambda: ref.bridge_probs(x, x[:, :1], 1), "x_start"
        ),
        Case(
            slug, "shape", "EndpointNet 1-D input", lambda: net(x[0], torch.zeros(2, dtype=torch.long)), "x_t"
        ),
        Case(
            slug,
            "shape",
            "sinkhorn_coupling wrong marginal size",
            lambda: sinkhorn_coupling(ref.Q, torch.ones(4), torch.ones(5)),
            "p_start",
        ),
        Case(
            slug,
            "nonfinite",
            "sinkhorn_coupling NaN kernel",
            lambda: sinkhorn_coupling(torch.full((5, 5), NAN), torch.ones(5), torch.ones(5)),
            "kernel",
        ),
        Case(
            slug,
            "nonfinite",
            "energy_distance NaN sample",
            lambda: energy_distance(torch.full((3, 2), NAN), torch.ones(3, 2)),
            "a",
        ),
        Case(
            slug,
            "nonfinite",
            "tabular_dimf inf marginal",
            lambda: tabular_dimf(ref, torch.full((5,), float("inf")), torch.ones(5), 2),
            "p_start",
        ),
        Case(slug, "empty", "bridge_probs no states", lambda: ref.bridge_probs(x[:0], x[:0], 1), "x_start"),
        Case(
            slug,
            "empty",
            "energy_distance empty sample",
            lambda: energy_distance(torch.ones(0, 2), torch.ones(3, 2)),
            "a",
        ),
        Case(
            slug, "dtype", "bridge_probs float states", lambda: ref.bridge_probs(x.double(), x, 1), "x_start"
        ),
        Case(
            slug,
            "dtype",
            "EndpointNet float input",
            lambda: net(x.float(), torch.zeros(3, dtype=torch.long)),
            "x_t",
        ),
        Case(
            slug,
            "dtype",
            "sinkhorn_coupling integer kernel",
            lambda: sinkhorn_coupling(torch.ones(5, 5, dtype=torch.long), torch.ones(5), torch.ones(5)),
            "kernel",
        ),
        Case(
            slug,
            "size",
            "one_step_matrix zero states",
            lambda: one_step_matrix("gaussian", 0, 0.1),
            "n_states",
        ),
        Case(slug, "size", "ReferenceConfig zero steps", lambda: ReferenceConfig(n_steps=0), "n_steps"),
        Case(
            slug,
            "size",
            "tabular_dimf zero iterations",
            lambda: tabular_dimf(ref, torch.ones(5), torch.ones(5), 0),
            "n_iterations",
        ),
    ]


def _autoformulation() -> list[Case]:
    from icml25.agents.autoformulation import (
        AutoformulationMCTS,
        Budget,
        Formulation,
        LLMRoles,
        compile_formulation,
        is_correct,
        linear_form,
        parse_section,
        rank_priors,
        synthetic_problems,
    )
    from icml25.llm.chat import ScriptedChatModel

    roles = LLMRoles(ScriptedChatModel(lambda m, c, i: "none"))
    return [
        Case(
            "autoformulation",
            "empty",
            "linear_form empty expression",
            lambda: linear_form("", ("x",)),
            "expr",
        ),
        Case(
            "autoformulation",
            "nonfinite",
            "is_correct infinite reference",
            lambda: is_correct(1.0, float("inf")),
            "reference",
        ),
        Case(
            "autoformulation",
            "dtype",
            "parse_section non-string text",
            lambda: parse_section("objective", 3),  # type: ignore[arg-type]
            "text",
        ),
        Case(
            "autoformulation",
            "dtype",
            "compile_formulation not a Formulation",
            lambda: compile_formulation("max: x"),  # type: ignore[arg-type]
            "form",
        ),
        Case(
            "autoformulation",
            "empty",
            "compile_formulation no variables",
            lambda: compile_formulation(Formulation()),
            "form",
        ),
        Case("autoformulation", "size", "synthetic_problems n=0", lambda: synthetic_problems(0), "n"),
        Case("autoformulation", "size", "rank_priors k=0", lambda: rank_priors([[0]], 0), "k"),
        Case("autoformulation", "empty", "rank_priors no orders", lambda: rank_priors([], 2), "orders"),
        Case(
            "autoformulation",
            "shape",
            "rank_priors order not a permutation",
            lambda: rank_priors([[0, 0]], 2),
            "order",
        ),
        Case(
            "autoformulation",
            "size",
            "AutoformulationMCTS n_samples=0",
            lambda: AutoformulationMCTS(roles, n_samples=0),
            "n_samples",
        ),
        Case(
            "autoformulation",
            "empty",
            "AutoformulationMCTS.search empty problem",
            lambda: AutoformulationMCTS(roles).search("  ", Budget(8)),
            "problem",
        ),
        Case(
            "autoformulation",
            "size",
            "LLMRoles level_tokens=0",
            lambda: LLMRoles(roles.model, level_tokens=0),
            "level_tokens",
        ),
    ]


def _caption_hallucination() -> list[Case]:
    from icml25.agents.caption_hallucination import (
        CapMAS,
        HFVLMVerifier,
        LLMDecomposer,
        ModelConfig,
        RuleDecomposer,
        RuleReviser,
        TinyCaptioner,
        TinyVQA,
        TinyVQAVerifier,
        WordVocab,
        WorldConfig,
        coverage,
        detection_auroc,
        factuality,
        hallucination_score,
        parse_caption,
        scripted_control_model,
        verifier_scores,
    )

    vocab = WordVocab()
    mc = ModelConfig(d=16, heads=2, channels=8, layers=1)
    cap = TinyCaptioner(len(vocab), mc).eval()
    ver = TinyVQAVerifier(TinyVQA(len(vocab), mc).eval(), vocab)
    img = torch.zeros(2, 3, 12, 12)
    nan_img = img.clone()
    nan_img[0, 0, 0, 0] = NAN
    slug = "caption_hallucination"
    return [
        Case(slug, "shape", "generate 2-channel images", lambda: cap.generate(img[:, :2]), "images"),
        Case(
            slug,
            "shape",
            "hallucination_score shapes differ",
            lambda: hallucination_score(np.ones(2) / 2, np.ones(3) / 2),
            "p_true and p_false",
        ),
        Case(
            slug,
            "shape",
            "verifier_scores one list for two images",
            lambda: verifier_scores(ver, img, [["a."]]),
            "propositions",
        ),
        Case(slug, "nonfinite", "hallucination_score NaN", lambda: hallucination_score(NAN, 0.5), "p_true"),
        Case(slug, "nonfinite", "generate NaN image", lambda: cap.generate(nan_img), "images"),
        Case(
            slug,
            "nonfinite",
            "detection_auroc inf score",
            lambda: detection_auroc([0.1, float("inf")], [True, False]),
            "scores",
        ),
        Case(slug, "empty", "factuality no captions", lambda: factuality([], []), "captions"),
        Case(slug, "empty", "coverage no captions", lambda: coverage([], []), "captions"),
        Case(
            slug,
            "empty",
            "CapMAS.correct no images",
            lambda: CapMAS(RuleDecomposer(), ver, RuleReviser()).correct(torch.zeros(0, 3, 12, 12), []),
            "images",
        ),
        Case(slug, "dtype", "hallucination_score strings", lambda: hallucination_score("a", 0.5), "p_true"),
        Case(slug, "dtype", "parse_caption not a string", lambda: parse_caption(3), "caption"),
        Case(slug, "dtype", "LLMDecomposer not a ChatModel", lambda: LLMDecomposer("smollm2"), "chat"),
        Case(slug, "size", "ModelConfig d=0", lambda: ModelConfig(d=0), "ModelConfig.d"),
        Case(
            slug,
            "size",
            "WorldConfig image_size=0",
            lambda: WorldConfig(image_size=0),
            "WorldConfig.image_size",
        ),
        Case(
            slug,
            "size",
            "LLMDecomposer max_tokens=0",
            lambda: LLMDecomposer(scripted_control_model(), max_tokens=0),
            "max_tokens",
        ),
        Case(
            slug,
            "size",
            "HFVLMVerifier batch_size=0",
            lambda: HFVLMVerifier(None, dict, true_id=1, false_id=2, batch_size=0),
            "batch_size",
        ),
        Case(
            slug,
            "dtype",
            "HFVLMVerifier float token id",
            lambda: HFVLMVerifier(None, dict, true_id=1.5, false_id=2),
            "true_id",
        ),
        Case(
            slug,
            "size",
            "CapMAS threshold < 0",
            lambda: CapMAS(RuleDecomposer(), ver, RuleReviser(), threshold=-1.0),
            "threshold",
        ),
    ]


def _pisa() -> list[Case]:
    from icml25.generative.pisa import (
        DropSimulator,
        SegReward,
        SimConfig,
        StageConfig,
        TinyI2V,
        TinySeg,
        chamfer,
        fit_gravity,
        generate,
        oro,
        pisabench_metrics,
        rectified_flow_loss,
        scaled_l2,
        soft_iou,
        static_copy,
        threshold_masks,
    )

    s = "pisa"
    m = np.zeros((3, 8, 8), bool)
    model = TinyI2V(4, (8, 8))
    seg = TinySeg((8, 8))
    vid = torch.rand(2, 4, 8, 8)
    clips = DropSimulator(SimConfig(size=16, frames=4)).sample(2)
    return [
        Case(
            s,
            "shape",
            "pisabench_metrics 2-D masks",
            lambda: pisabench_metrics(np.zeros((3, 8)), m, 16, 16),
            "gt_masks",
        ),
        Case(
            s,
            "nonfinite",
            "pisabench_metrics NaN",
            lambda: pisabench_metrics(np.full((3, 8, 8), NAN), m, 16, 16),
            "gt_masks",
        ),
        Case(
            s,
            "empty",
            "pisabench_metrics no frames",
            lambda: pisabench_metrics(np.zeros((0, 8, 8)), m, 16, 16),
            "gt_masks",
        ),
        Case(
            s,
            "dtype",
            "pisabench_metrics strings",
            lambda: pisabench_metrics(np.full((3, 8, 8), "a"), m, 16, 16),
            "gt_masks",
        ),
        Case(s, "size", "pisabench_metrics fps 0", lambda: pisabench_metrics(m, m, 0, 16), "gt_fps"),
        Case(s, "dtype", "chamfer objects", lambda: chamfer(np.full((3, 8, 8), None), m, 8), "gt"),
        Case(
            s,
            "size",
            "scaled_l2 resolution 0",
            lambda: scaled_l2(np.zeros((3, 2)), np.zeros((3, 2)), 0),
            "resolution",
        ),
        Case(s, "empty", "fit_gravity no frames", lambda: fit_gravity([], 16.0, 8.0), "centroids_y"),
        Case(s, "size", "fit_gravity fps <= 0", lambda: fit_gravity([1.0, 2.0, 4.0], -1.0, 8.0), "fps"),
        Case(s, "size", "DropSimulator.sample n = 0", lambda: DropSimulator(SimConfig()).sample(0), "n"),
        Case(s, "size", "SimConfig size 0", lambda: SimConfig(size=0), "size"),
        Case(s, "size", "TinyI2V frames 0", lambda: TinyI2V(0), "frames"),
        Case(
            s, "shape", "generate 4-D first frame", lambda: generate(model, torch.zeros(2, 1, 8, 8)), "first"
        ),
        Case(
            s,
            "nonfinite",
            "generate NaN first frame",
            lambda: generate(model, torch.full((2, 8, 8), NAN)),
            "first",
        ),
        Case(
            s,
            "dtype",
            "generate integer first frame",
            lambda: generate(model, torch.zeros(2, 8, 8, dtype=torch.long)),
            "first",
        ),
        Case(s, "size", "generate steps 0", lambda: generate(model, torch.zeros(2, 8, 8), steps=0), "steps"),
        Case(
            s,
            "shape",
            "rectified_flow_loss wrong frame count",
            lambda: rectified_flow_loss(model, torch.rand(2, 3, 8, 8)),
            "video",
        ),
        Case(
            s,
            "nonfinite",
            "rectified_flow_loss inf",
            lambda: rectified_flow_loss(model, torch.full((2, 4, 8, 8), float("inf"))),
            "video",
        ),
        Case(
            s,
            "shape",
            "soft_iou shape mismatch",
            lambda: soft_iou(torch.zeros(2, 8, 8), torch.zeros(2, 8, 4)),
            "p and q",
        ),
        Case(s, "empty", "static_copy no clips", lambda: static_copy(torch.zeros(0, 8, 8), 4), "first"),
        Case(
            s,
            "shape",
            "oro masks shape",
            lambda: oro(model, vid, torch.zeros(2, 4, 8, 4), SegReward(seg), StageConfig(1, 2)),
            "masks",
        ),
        Case(
            s,
            "shape",
            "threshold_masks wrong video shape",
            lambda: threshold_masks(np.zeros((2, 4, 8, 8)), clips),
            "videos",
        ),
    ]


def _epicoder() -> list[Case]:
    from icml25.agents.epicoder import (
        AstFeatureExtractor,
        build_frequency_tree,
        complexity_metrics,
        diversity_metrics,
        embedding_dispersion,
        k_center_greedy,
        merge_trees,
        sample_subtree,
        smooth_probs,
        stdlib_functions,
    )

    tree = {"a": {"x": {}, "y": {}}, "b": {}}
    rng = np.random.default_rng(0)
    return [
        Case(
            "epicoder", "shape", "smooth_probs 2-D weights", lambda: smooth_probs(np.ones((2, 2)), 1.0), "p"
        ),
        Case("epicoder", "shape", "k_center_greedy 1-D points", lambda: k_center_greedy(np.ones(4), 2), "X"),
        Case("epicoder", "nonfinite", "smooth_probs NaN", lambda: smooth_probs([1.0, NAN], 1.0), "p"),
        Case(
            "epicoder",
            "nonfinite",
            "smooth_probs inf temperature",
            lambda: smooth_probs([1.0], float("inf")),
            "temperature",
        ),
        Case(
            "epicoder",
            "nonfinite",
            "k_center_greedy NaN",
            lambda: k_center_greedy(np.full((3, 2), NAN), 1),
            "X",
        ),
        Case("epicoder", "empty", "smooth_probs empty", lambda: smooth_probs([], 1.0), "p"),
        Case(
            "epicoder",
            "empty",
            "build_frequency_tree no inputs",
            lambda: build_frequency_tree([]),
            "feature_trees",
        ),
        Case(
            "epicoder",
            "empty",
            "sample_subtree empty tree",
            lambda: sample_subtree({}, (1,), rng=rng),
            "tree",
        ),
        Case(
            "epicoder",
            "empty",
            "sample_subtree no conditions",
            lambda: sample_subtree(tree, (), rng=rng),
            "conditions",
        ),
        Case("epicoder", "empty", "diversity_metrics no trees", lambda: diversity_metrics([]), "trees"),
        Case("epicoder", "empty", "embedding_dispersion no texts", lambda: embedding_dispersion([]), "texts"),
        Case("epicoder", "dtype", "smooth_probs strings", lambda: smooth_probs(["a", "b"], 1.0), "p"),
        Case(
            "epicoder", "dtype", "extract non-string code", lambda: AstFeatureExtractor().extract(3), "code"
        ),
        Case("epicoder", "dtype", "merge_trees list", lambda: merge_trees([], {}), "base"),
        Case("epicoder", "dtype", "complexity_metrics int", lambda: complexity_metrics(7), "files"),
        Case(
            "epicoder",
            "dtype",
            "sample_subtree non-string key",
            lambda: sample_subtree({1: {}}, (1,), rng=rng),
            "tree",
        ),
        Case(
            "epicoder",
            "size",
            "sample_subtree condition 0",
            lambda: sample_subtree(tree, (0,), rng=rng),
            "conditions",
        ),
        Case(
            "epicoder",
            "size",
            "sample_subtree max_depth 0",
            lambda: sample_subtree(tree, (1,), rng=rng, max_depth=0),
            "max_depth",
        ),
        Case(
            "epicoder",
            "size",
            "build_frequency_tree top_n 0",
            lambda: build_frequency_tree([tree], top_n=0),
            "top_n",
        ),
        Case("epicoder", "size", "k_center_greedy k 0", lambda: k_center_greedy(np.ones((3, 2)), 0), "k"),
        Case(
            "epicoder",
            "size",
            "stdlib_functions min_lines 0",
            lambda: stdlib_functions(min_lines=0),
            "min_lines",
        ),
    ]


def _nice() -> list[Case]:
    from icml25.language.nice import (
        RandomProjector,
        adam_preconditioned_grads,
        encode_examples,
        example_gradients,
        generate,
        influence_scores,
        make_pool,
        reward_weights,
        select_top_fraction,
        sequence_nll,
    )
    from icml25.llm.models import tiny_random_llama

    slug = "nice"
    model = tiny_random_llama(
        hidden_size=8, intermediate_size=16, num_attention_heads=2, num_key_value_heads=2
    )
    g = torch.ones(2, 3)
    m, v = torch.zeros(3), torch.ones(3)
    tr = [torch.ones(4, 3)]
    ids = torch.zeros(2, 4, dtype=torch.long)
    return [
        Case(
            slug,
            "shape",
            "adam_preconditioned_grads moment length",
            lambda: adam_preconditioned_grads(g, m[:2], v),
            "exp_avg",
        ),
        Case(
            slug,
            "shape",
            "influence_scores feature dims differ",
            lambda: influence_scores(tr, [torch.ones(2, 5)]),
            "val_feats",
        ),
        Case(
            slug,
            "shape",
            "RandomProjector wrong input width",
            lambda: RandomProjector(3, 4)(torch.ones(2, 5)),
            "x",
        ),
        Case(
            slug, "shape", "sequence_nll labels shape", lambda: sequence_nll(model, ids, ids[:, :3]), "labels"
        ),
        Case(
            slug,
            "nonfinite",
            "adam_preconditioned_grads NaN grads",
            lambda: adam_preconditioned_grads(torch.full((2, 3), NAN), m, v),
            "grads",
        ),
        Case(
            slug,
            "nonfinite",
            "select_top_fraction inf score",
            lambda: select_top_fraction(torch.tensor([1.0, float("inf")])),
            "scores",
        ),
        Case(
            slug,
            "nonfinite",
            "reward_weights NaN reward",
            lambda: reward_weights(torch.tensor([NAN])),
            "rewards",
        ),
        Case(
            slug, "empty", "influence_scores no checkpoints", lambda: influence_scores([], []), "train_feats"
        ),
        Case(
            slug, "empty", "select_top_fraction empty", lambda: select_top_fraction(torch.zeros(0)), "scores"
        ),
        Case(
            slug,
            "empty",
            "encode_examples no pairs",
            lambda: encode_examples([], [], eos_id=0, pad_id=0),
            "prompts",
        ),
        Case(
            slug,
            "empty",
            "generate empty prompt",
            lambda: generate(model, torch.zeros(0, dtype=torch.long)),
            "prompt_ids",
        ),
        Case(slug, "dtype", "generate float prompt", lambda: generate(model, torch.zeros(3)), "prompt_ids"),
        Case(
            slug,
            "dtype",
            "sequence_nll float ids",
            lambda: sequence_nll(model, ids.float(), ids),
            "input_ids",
        ),
        Case(
            slug,
            "dtype",
            "example_gradients float ids",
            lambda: example_gradients(model, (ids.float(), ids, ids)),
            "input_ids",
        ),
        Case(
            slug,
            "dtype",
            "reward_weights integer rewards",
            lambda: reward_weights(torch.tensor([1, 0])),
            "rewards",
        ),
        Case(slug, "size", "RandomProjector out_dim 0", lambda: RandomProjector(3, 0), "out_dim"),
        Case(
            slug,
            "size",
            "select_top_fraction frac 0",
            lambda: select_top_fraction(torch.ones(3), 0.0),
            "frac",
        ),
        Case(
            slug,
            "size",
            "generate num_samples 0",
            lambda: generate(model, torch.zeros(3, dtype=torch.long), num_samples=0),
            "num_samples",
        ),
        Case(slug, "size", "make_pool n 0", lambda: make_pool(0), "n"),
    ]


def _condensed_baselines() -> list[Case]:
    import scipy.sparse as sp

    from icml25.physics.condensed_sparse_solver import mumps_run, pardiso_run, splu_run
    from icml25.physics.condensed_sparse_solver.bench import batched_comparison, peak_memory, run_benchmark

    A = sp.csc_matrix(np.diag([2.0, 3.0, 4.0]))
    slug = "condensed_sparse_solver"
    return [
        Case(slug, "shape", "splu_run B rows != n", lambda: splu_run(A, np.ones((4, 1))), "B"),
        Case(
            slug,
            "shape",
            "pardiso_run A not square",
            lambda: pardiso_run(sp.csc_matrix(np.ones((2, 3))), np.ones(2)),
            "A",
        ),
        Case(slug, "nonfinite", "mumps_run NaN in B", lambda: mumps_run(A, np.array([1.0, NAN, 0.0])), "B"),
        Case(
            slug,
            "nonfinite",
            "splu_run inf in A",
            lambda: splu_run(sp.csc_matrix(np.diag([1.0, np.inf, 1.0])), np.ones(3)),
            "A",
        ),
        Case(slug, "empty", "splu_run empty A", lambda: splu_run(sp.csc_matrix((0, 0)), np.ones(0)), "A"),
        Case(slug, "empty", "splu_run B with no columns", lambda: splu_run(A, np.ones((3, 0))), "B"),
        Case(slug, "dtype", "splu_run complex B", lambda: splu_run(A, np.ones(3, dtype=complex)), "B"),
        Case(slug, "size", "run_benchmark size 3", lambda: run_benchmark([3], [1]), "sizes"),
        Case(
            slug, "size", "batched_comparison count = 0", lambda: batched_comparison(9, 0, ("ours",)), "count"
        ),
        Case(slug, "size", "peak_memory n_rhs = 0", lambda: peak_memory("ours", 9, 0), "n_rhs"),
    ]


def _thinkdiff() -> list[Case]:
    from icml25.generative.thinkdiff import (
        Aligner,
        AttributeJudge,
        TinyFlowDecoder,
        TinyFlowDecoderConfig,
        TinyT5,
        TinyT5Config,
        ToyWorld,
        random_split_batch,
        sample_prompts,
    )

    slug = "thinkdiff"

    def aligner() -> Aligner:
        return Aligner(6, 4)

    def decoder() -> TinyFlowDecoder:
        return TinyFlowDecoder(
            TinyFlowDecoderConfig(
                text_dim=8, channels=(4, 8), queries=1, num_heads=2, cond_dim=8, image_size=4
            )
        )

    def t5() -> TinyT5:
        return TinyT5(TinyT5Config(vocab_size=10, d_model=8, num_heads=2, enc_layers=1, dec_layers=1))

    world = ToyWorld(4, shapes=("circle", "square"), colours=("red", "blue"), backgrounds=("black", "white"))
    gen = torch.Generator().manual_seed(0)
    return [
        Case(slug, "shape", "Aligner wrong feature width", lambda: aligner()(torch.rand(2, 3, 5)), "d_in"),
        Case(slug, "nonfinite", "Aligner NaN features", lambda: aligner()(torch.full((2, 3, 6), NAN)), "z"),
        Case(slug, "empty", "Aligner no tokens", lambda: aligner()(torch.rand(2, 0, 6)), "z"),
        Case(
            slug,
            "dtype",
            "Aligner integer features",
            lambda: aligner()(torch.ones(2, 3, 6, dtype=torch.long)),
            "z",
        ),
        Case(slug, "size", "Aligner d_in 0", lambda: Aligner(0, 4), "d_in"),
        Case(
            slug,
            "shape",
            "random_split_batch 1-D features",
            lambda: random_split_batch([torch.rand(3)], [[1, 2, 3]]),
            "feats",
        ),
        Case(
            slug,
            "nonfinite",
            "random_split_batch inf features",
            lambda: random_split_batch([torch.full((3, 2), float("inf"))], [[1, 2, 3]]),
            "feats",
        ),
        Case(slug, "empty", "random_split_batch no examples", lambda: random_split_batch([], []), "feats"),
        Case(
            slug,
            "dtype",
            "random_split_batch integer features",
            lambda: random_split_batch([torch.ones(3, 2, dtype=torch.long)], [[1, 2, 3]]),
            "feats",
        ),
        Case(
            slug,
            "size",
            "random_split_batch max_split 0",
            lambda: random_split_batch([torch.rand(3, 2)], [[1, 2, 3]], max_split=0),
            "max_split",
        ),
        Case(
            slug,
            "shape",
            "TinyFlowDecoder.sample wrong width",
            lambda: decoder().sample(torch.rand(2, 3, 5)),
            "embeds",
        ),
        Case(
            slug,
            "nonfinite",
            "TinyFlowDecoder.sample NaN prompt",
            lambda: decoder().sample(torch.full((2, 3, 8), NAN)),
            "embeds",
        ),
        Case(
            slug,
            "empty",
            "TinyFlowDecoder.sample no prompt tokens",
            lambda: decoder().sample(torch.rand(2, 0, 8)),
            "embeds",
        ),
        Case(
            slug,
            "size",
            "TinyFlowDecoder.sample steps 0",
            lambda: decoder().sample(torch.rand(2, 3, 8), steps=0),
            "steps",
        ),
        Case(slug, "dtype", "TinyT5.encode float ids", lambda: t5().encode(torch.ones(2, 3)), "ids"),
        Case(
            slug,
            "empty",
            "TinyT5.encode no tokens",
            lambda: t5().encode(torch.ones(2, 0, dtype=torch.long)),
            "ids",
        ),
        Case(
            slug,
            "shape",
            "TinyT5.loss memory wrong width",
            lambda: t5().loss(torch.rand(2, 3, 5), None, torch.ones(2, 2, dtype=torch.long)),
            "memory",
        ),
        Case(
            slug,
            "nonfinite",
            "AttributeJudge NaN images",
            lambda: AttributeJudge(2, 2, 2)(torch.full((1, 3, 4, 4), NAN)),
            "images",
        ),
        Case(
            slug,
            "size",
            "sample_prompts shots 0",
            lambda: sample_prompts(world, "color_i", 0, 2, gen),
            "shots",
        ),
        Case(slug, "size", "ToyWorld image_size 0", lambda: ToyWorld(0), "image_size"),
    ]


CASES: list[Case] = [
    *_rfm(),
    *_lvlingam(),
    *_monotonic(),
    *_tarflow(),
    *_pde(),
    *_condensed(),
    *_slimllm(),
    *_dycodeeval(),
    *_lexmorl(),
    *_mrpe(),
    *_rmt(),
    *_turing(),
    *_wgformer(),
    *_local_glivenko_cantelli(),
    *_dcg_statistics(),
    *_moe_sgd(),
    *_pnba(),
    *_fedncn(),
    *_slogan(),
    *_dynamic_message_passing(),
    *_continual_robust_training(),
    *_h_tuning(),
    *_acac(),
    *_econ(),
    *_competitive_classification(),
    *_puzzle(),
    *_aaar(),
    *_pinnsagent(),
    *_l_diffusion(),
    *_selekt(),
    *_isotropic_merging(),
    *_csbm(),
    *_autoformulation(),
    *_caption_hallucination(),
    *_pisa(),
    *_epicoder(),
    *_nice(),
    *_condensed_baselines(),
    *_thinkdiff(),
    *_selekt_generation(),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.slug}:{c.what}")
def test_bad_input_gives_a_clear_error(case: Case) -> None:
    with pytest.raises((ValueError, TypeError), match=case.match) as info:
        case.call()
    assert type(info.value).__module__ == "builtins", f"a library error, not {type(info.value)}"


def test_every_implemented_paper_joins_the_battery() -> None:
    implemented = {p.slug for p in PAPERS if p.implemented}
    covered = {c.slug for c in CASES}
    missing = sorted(implemented - covered - set(PENDING))
    assert not missing, f"add bad-input cases for {missing} to tests/test_bad_input.py"
    assert not set(PENDING) & covered, "a pending paper has entries now: remove it from PENDING"
