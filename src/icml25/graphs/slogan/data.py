"""Synthetic unsupervised graph-domain-adaptation benchmarks with a known causal part.

SLOGAN (Luo et al., ICML 2025, https://arxiv.org/abs/2507.07621) is evaluated on TU benchmarks (PTC,
NCI1, Twitter, Letter-Med) split into domains by data-set variant or by graph density. Those need a
download, so the check uses graphs generated here, where the causal structure is known:

* **spurious-motif domains** (:func:`make_spurious_motif_domains`): the label ``y`` is the attached
  motif (house, 5-cycle, 2x3 grid: the causal part); the base graph (random tree, ladder, wheel) is
  the spurious part. In the source domain the base type equals the label with probability
  ``bias_source``, in the target with ``bias_target`` (1/3 = no correlation); the target also has
  larger bases, extra random edges and shifted Gaussian node features.
* **density split** (:func:`make_density_pool` + :func:`density_split`): one pool without spurious
  correlation, sorted by edge density and cut into equal domains, as in the paper's density-split
  protocol (Sec. 5, following CoCo/DEAL-style UGDA work).

Node features: ``[1, one-hot(min(degree, 10)), 4 Gaussian dims]`` (16 columns); degree carries the
base type's (spurious) signature, as degree statistics do in real molecules and social graphs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from torch_geometric.data import Data

from icml25.core.validate import check_fields, check_non_negative, check_positive

__all__ = [
    "BASE_TYPES",
    "MOTIFS",
    "N_FEATURES",
    "MotifDomainConfig",
    "density_split",
    "edge_density",
    "make_density_pool",
    "make_motif_graph",
    "make_spurious_motif_domains",
]

MOTIFS: tuple[str, ...] = ("house", "cycle5", "grid2x3")
BASE_TYPES: tuple[str, ...] = ("tree", "ladder", "wheel")
MAX_DEGREE = 10
N_GAUSS = 4
N_FEATURES = 1 + (MAX_DEGREE + 1) + N_GAUSS


@dataclass(frozen=True)
class MotifDomainConfig:
    """Settings of the spurious-motif source/target pair.

    Args:
        n_per_domain: graphs in each domain.
        bias_source: P(base type = label) in the source domain.
        bias_target: P(base type = label) in the target domain (1/3 = independent).
        source_size: inclusive range of base-graph sizes in the source.
        target_size: inclusive range of base-graph sizes in the target.
        extra_edges_target: random extra edges in the target, as a fraction of its edges.
        feature_shift: mean of the Gaussian node features in the target (0 in the source).
    """

    n_per_domain: int = 1000
    bias_source: float = 0.9
    bias_target: float = 1.0 / 3.0
    source_size: tuple[int, int] = (15, 25)
    target_size: tuple[int, int] = (30, 45)
    extra_edges_target: float = 0.1
    feature_shift: float = 0.5

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("n_per_domain",), unit_interval=("bias_source", "bias_target"))
        check_fields(self, non_negative=("extra_edges_target",))
        if not np.isfinite(self.feature_shift):
            raise ValueError(f"MotifDomainConfig.feature_shift must be finite, got {self.feature_shift!r}")
        for name in ("source_size", "target_size"):
            lo, hi = getattr(self, name)
            if not (isinstance(lo, int) and isinstance(hi, int) and 4 <= lo <= hi):
                raise ValueError(
                    f"MotifDomainConfig.{name} must be integers 4 <= low <= high, got {(lo, hi)}"
                )


def _motif(label: int) -> nx.Graph:
    if label == 0:
        return nx.house_graph()
    if label == 1:
        return nx.cycle_graph(5)
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(2, 3))


def _base(kind: int, n: int, rng: np.random.Generator) -> nx.Graph:
    if kind == 0:  # uniform random labelled tree from a random Pruefer sequence
        return nx.from_prufer_sequence(rng.integers(0, n, size=n - 2).tolist())
    if kind == 1:
        return nx.ladder_graph(max(2, n // 2))
    return nx.wheel_graph(n)


def make_motif_graph(
    label: int,
    base_type: int,
    base_size: int,
    *,
    rng: np.random.Generator,
    extra_edges: float = 0.0,
    feature_shift: float = 0.0,
    domain: int = 0,
) -> Data:
    """One graph: motif ``label`` attached by one edge to a base graph of type ``base_type``.

    Returns:
        ``Data`` with ``x`` (N, 16) float32, ``edge_index`` (2, E) both directions, ``y`` (1,),
        ``motif`` (N,) bool (ground-truth causal nodes), ``base_type`` (1,) and ``domain`` (1,).
    """
    if label not in range(len(MOTIFS)):
        raise ValueError(f"label must be in 0..{len(MOTIFS) - 1}, got {label!r}")
    if base_type not in range(len(BASE_TYPES)):
        raise ValueError(f"base_type must be in 0..{len(BASE_TYPES) - 1}, got {base_type!r}")
    check_positive("base_size", base_size, integer=True)
    if base_size < 4:
        raise ValueError(f"base_size must be >= 4, got {base_size}")
    check_non_negative("extra_edges", extra_edges)
    base = _base(base_type, base_size, rng)
    motif = _motif(label)
    nb = base.number_of_nodes()
    g = nx.disjoint_union(base, motif)  # base nodes 0..nb-1, motif nodes after
    g.add_edge(int(rng.integers(nb)), nb + int(rng.integers(motif.number_of_nodes())))
    n = g.number_of_nodes()
    n_extra = int(round(extra_edges * g.number_of_edges()))
    for _ in range(n_extra):  # random extra edges inside the base (the causal motif stays intact)
        u, v = rng.integers(nb, size=2)
        if u != v:
            g.add_edge(int(u), int(v))
    edges = np.asarray(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    edge_index = torch.from_numpy(np.concatenate([edges, edges[:, ::-1]]).T.copy())
    deg = np.bincount(edge_index[0].numpy(), minlength=n)
    x = np.zeros((n, N_FEATURES), dtype=np.float32)
    x[:, 0] = 1.0
    x[np.arange(n), 1 + np.minimum(deg, MAX_DEGREE)] = 1.0
    x[:, 1 + MAX_DEGREE + 1 :] = rng.normal(feature_shift, 1.0, size=(n, N_GAUSS))
    is_motif = torch.zeros(n, dtype=torch.bool)
    is_motif[nb:] = True
    return Data(
        x=torch.from_numpy(x),
        edge_index=edge_index,
        y=torch.tensor([label]),
        motif=is_motif,
        base_type=torch.tensor([base_type]),
        domain=torch.tensor([domain]),
    )


def _domain(
    n: int,
    bias: float,
    size: tuple[int, int],
    extra: float,
    shift: float,
    domain: int,
    rng: np.random.Generator,
) -> list[Data]:
    k = len(MOTIFS)
    labels = rng.integers(k, size=n)
    graphs = []
    for y in labels:
        # P(base = label) = bias exactly; otherwise one of the other base types, uniformly
        base = int(y) if rng.random() < bias else int((y + rng.integers(1, k)) % k)
        graphs.append(
            make_motif_graph(
                int(y),
                base,
                int(rng.integers(size[0], size[1] + 1)),
                rng=rng,
                extra_edges=extra,
                feature_shift=shift,
                domain=domain,
            )
        )
    return graphs


def make_spurious_motif_domains(
    config: MotifDomainConfig | None = None, *, seed: int = 0
) -> tuple[list[Data], list[Data]]:
    """Source and target domains of the spurious-motif benchmark.

    A base type equals the label with probability ``bias`` and is one of the other two types
    otherwise, so P(base = label) = bias: 0.9 in the source, 1/3 (independence) in the target.

    Returns:
        ``(source, target)`` lists of ``Data`` (``domain`` 0 and 1).
    """
    cfg = config or MotifDomainConfig()
    if not isinstance(cfg, MotifDomainConfig):
        raise TypeError(f"config must be a MotifDomainConfig, got {type(cfg).__name__}")
    check_non_negative("seed", seed, integer=True)
    rng = np.random.default_rng(seed)
    src = _domain(cfg.n_per_domain, cfg.bias_source, cfg.source_size, 0.0, 0.0, 0, rng)
    tgt = _domain(
        cfg.n_per_domain,
        cfg.bias_target,
        cfg.target_size,
        cfg.extra_edges_target,
        cfg.feature_shift,
        1,
        rng,
    )
    return src, tgt


def make_density_pool(
    n_graphs: int,
    *,
    size: tuple[int, int] = (12, 40),
    max_extra_edges: float = 0.6,
    seed: int = 0,
) -> list[Data]:
    """A pool of motif graphs without spurious correlation (base type independent of the label) whose
    edge density varies (base size and the fraction of extra random edges are drawn per graph)."""
    check_positive("n_graphs", n_graphs, integer=True)
    check_non_negative("max_extra_edges", max_extra_edges)
    check_non_negative("seed", seed, integer=True)
    lo, hi = size
    if not (isinstance(lo, int) and isinstance(hi, int) and 4 <= lo <= hi):
        raise ValueError(f"size must be integers 4 <= low <= high, got {size}")
    rng = np.random.default_rng(seed)
    k = len(MOTIFS)
    return [
        make_motif_graph(
            int(rng.integers(k)),
            int(rng.integers(k)),
            int(rng.integers(lo, hi + 1)),
            rng=rng,
            extra_edges=float(rng.uniform(0.0, max_extra_edges)),
        )
        for _ in range(n_graphs)
    ]


def edge_density(graph: Data) -> float:
    """Undirected edge density ``2E / (N (N - 1))`` of a graph stored with both edge directions."""
    n = int(graph.num_nodes)
    if n < 2:
        return 0.0
    return float(graph.edge_index.shape[1]) / (n * (n - 1))


def density_split(graphs: Sequence[Data], n_domains: int = 4) -> list[list[Data]]:
    """Sort ``graphs`` by edge density and cut them into ``n_domains`` equal-size domains
    (lowest density first); each graph's ``domain`` attribute is set to its domain index."""
    check_positive("n_domains", n_domains, integer=True)
    if len(graphs) < n_domains:
        raise ValueError(f"graphs must hold at least n_domains={n_domains} graphs, got {len(graphs)}")
    order = np.argsort([edge_density(g) for g in graphs], kind="stable")
    out: list[list[Data]] = []
    for d, part in enumerate(np.array_split(order, n_domains)):
        dom = []
        for i in part:
            g = graphs[int(i)].clone()
            g.domain = torch.tensor([d])
            dom.append(g)
        out.append(dom)
    return out
