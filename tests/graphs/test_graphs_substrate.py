"""Tests for the graphs substrate: generators, partitions, clustering metrics and local-file loaders."""

from __future__ import annotations

import pickle
from collections import defaultdict

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.graphs import (
    cluster_accuracy,
    clustering_metrics,
    edge_homophily,
    hungarian_match,
    karate_club_data,
    load_amazon_npz,
    load_planetoid,
    louvain_partition,
    make_attributed_sbm,
    metis_style_partition,
    networkx_to_data,
    random_partition,
    split_by_assignment,
)


@pytest.fixture(scope="module")
def sbm():
    return make_attributed_sbm(400, 4, 60, avg_degree=6, homophily=0.8, topic_words=10, seed=1)


# ---------------------------------------------------------------- generators


def test_sbm_shapes_and_symmetry(sbm) -> None:
    assert sbm.x.shape == (400, 60) and sbm.x.dtype == torch.float32
    assert sbm.y.shape == (400,) and sbm.y.dtype == torch.long and set(sbm.y.tolist()) == {0, 1, 2, 3}
    ei = sbm.edge_index
    assert ei.dtype == torch.long and (ei[0] != ei[1]).all()
    pairs = set(map(tuple, ei.T.tolist()))
    assert all((v, u) in pairs for u, v in pairs) and len(pairs) == ei.shape[1]


@pytest.mark.parametrize("h", [0.3, 0.75, 0.95])
def test_sbm_homophily_and_degree_controlled(h: float) -> None:
    d = make_attributed_sbm(1500, 5, 20, avg_degree=10, homophily=h, seed=0)
    assert abs(d.homophily - h) < 0.04
    assert abs(d.edge_index.shape[1] / 1500 - 10) < 0.8
    assert edge_homophily(d.edge_index, d.y) == pytest.approx(d.homophily)


def test_sbm_feature_signal() -> None:
    kw = dict(topic_words=30, p_background=0.02, class_concentration=None, seed=0)
    strong = make_attributed_sbm(600, 3, 90, p_topic=0.5, **kw)
    none = make_attributed_sbm(600, 3, 90, p_topic=0.02, **kw)
    for d, lo, hi in ((strong, 0.9, 1.01), (none, 0.0, 0.75)):  # class means overfit a little
        y = d.y.numpy()
        means = np.stack([d.x.numpy()[y == c].mean(0) for c in range(3)])
        pred = np.argmin(((d.x.numpy()[:, None] - means[None]) ** 2).sum(-1), 1)
        assert lo <= cluster_accuracy(y, pred) < hi


def test_sbm_deterministic() -> None:
    a, b = make_attributed_sbm(200, 3, 10, seed=5), make_attributed_sbm(200, 3, 10, seed=5)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)


def test_networkx_wrappers() -> None:
    k = karate_club_data()
    assert k.num_nodes == 34 and k.edge_index.shape[1] == 2 * 78 and set(k.y.tolist()) == {0, 1}
    g = nx.path_graph(4)
    nx.set_node_attributes(g, {i: [float(i), 1.0] for i in range(4)}, "f")
    d = networkx_to_data(g, feature_attr="f")
    assert d.x.shape == (4, 2) and d.edge_index.shape[1] == 6


def test_generator_bad_input() -> None:
    with pytest.raises(ValueError, match="homophily"):
        make_attributed_sbm(100, 3, 10, homophily=1.5)
    with pytest.raises(ValueError, match="n must"):
        make_attributed_sbm(4, 3, 10)
    with pytest.raises(ValueError, match="num_features"):
        make_attributed_sbm(100, 3, 0)
    with pytest.raises(TypeError, match="graph"):
        networkx_to_data([1, 2])


# ---------------------------------------------------------------- partitions


def _check_partition(data, part, num_clients: int) -> None:
    assert part.num_clients == num_clients
    ids = torch.cat([c.node_ids for c in part.clients])
    assert torch.equal(torch.sort(ids).values, torch.arange(data.num_nodes))  # every node exactly once
    kept = 0
    for c, cl in enumerate(part.clients):
        assert (part.assignment[cl.node_ids] == c).all()
        g = cl.node_ids[cl.data.edge_index]  # back to global ids
        assert (part.assignment[g] == c).all()
        assert torch.equal(cl.data.x, data.x[cl.node_ids]) and torch.equal(cl.data.y, data.y[cl.node_ids])
        kept += cl.data.edge_index.shape[1] // 2
    u, v = part.dropped_edges
    assert (u < v).all() and (part.assignment[u] != part.assignment[v]).all()
    assert kept + part.dropped_edges.shape[1] == data.edge_index.shape[1] // 2


@pytest.mark.parametrize("fn", [louvain_partition, metis_style_partition, random_partition])
@pytest.mark.parametrize("m", [1, 3, 5])
def test_partitions_cover_and_drop_only_cross_edges(sbm, fn, m: int) -> None:
    _check_partition(sbm, fn(sbm, m), m)


def test_partition_properties(sbm) -> None:
    metis = metis_style_partition(sbm, 4)
    assert max(c.num_nodes for c in metis.clients) - min(c.num_nodes for c in metis.clients) <= 2
    rnd = random_partition(sbm, 4)
    assert metis.dropped_fraction < rnd.dropped_fraction  # min-cut parts lose fewer links
    louv = louvain_partition(sbm, 4, delta=20)
    assert max(c.num_nodes for c in louv.clients) <= 400 / 4 + 20 + 1
    assert louv.dropped_fraction < rnd.dropped_fraction


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10_000))
def test_split_by_assignment_property(m: int, seed: int) -> None:
    d = make_attributed_sbm(40, 2, 4, avg_degree=4, seed=seed % 7)
    rng = np.random.default_rng(seed)
    a = np.concatenate([np.arange(m), rng.integers(0, m, 40 - m)])
    _check_partition(d, split_by_assignment(d, rng.permutation(a)), m)


def test_partition_bad_input(sbm) -> None:
    with pytest.raises(ValueError, match="num_clients"):
        louvain_partition(sbm, 0)
    with pytest.raises(ValueError, match="num_clients"):
        metis_style_partition(sbm, 10_000)
    with pytest.raises(ValueError, match="assignment"):
        split_by_assignment(sbm, np.zeros(3, dtype=int))
    with pytest.raises(TypeError, match="data"):
        random_partition(np.zeros((3, 3)), 2)


# ---------------------------------------------------------------- metrics


def test_metrics_permutation_invariant_and_perfect() -> None:
    y = np.array([0, 0, 1, 1, 2, 2, 2])
    perm = np.array([2, 0, 1])[y]
    m = clustering_metrics(y, perm)
    assert m == pytest.approx({"acc": 1.0, "nmi": 1.0, "ari": 1.0, "f1": 1.0})
    assert hungarian_match(y, perm) == {2: 0, 0: 1, 1: 2}


def test_accuracy_matches_brute_force() -> None:
    import itertools

    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    best = max((np.array(perm)[p] == y).mean() for perm in itertools.permutations(range(3)))
    assert cluster_accuracy(y, p) == pytest.approx(best)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=40), st.integers(0, 100))
def test_metrics_in_range(labels, seed: int) -> None:
    y = np.array(labels)
    p = np.random.default_rng(seed).integers(0, 5, len(y))
    m = clustering_metrics(y, p)
    assert 0 <= m["acc"] <= 1 and 0 <= m["nmi"] <= 1 + 1e-9 and -1 <= m["ari"] <= 1 and 0 <= m["f1"] <= 1
    assert m["acc"] >= np.bincount(y).max() / len(y) / 5 - 1e-12  # never worse than a fifth of the mode


def test_metrics_bad_input() -> None:
    with pytest.raises(ValueError, match="same shape"):
        clustering_metrics([0, 1], [0, 1, 1])
    with pytest.raises(TypeError, match="y_pred"):
        clustering_metrics([0, 1], [0.5, 1.0])
    with pytest.raises(ValueError, match="y_true"):
        clustering_metrics([], [])
    with pytest.raises(ValueError, match="y_true"):
        clustering_metrics([-1, 0], [0, 0])


# ---------------------------------------------------------------- loaders


def _write_planetoid(tmp_path, name: str, *, gap: bool) -> tuple[np.ndarray, np.ndarray, dict]:
    rng = np.random.default_rng(0)
    n_all, d, c = 6, 5, 3
    test_ids = np.array([9, 6, 8]) if not gap else np.array([9, 6, 10])  # gap: node 7, 8 missing
    n = n_all + (4 if not gap else 5)
    feats = (rng.random((n, d)) < 0.5).astype(np.float32)
    labels = rng.integers(0, c, n)
    if not gap:  # ids 6..9 with 7 unlisted would be a gap; use 6, 8, 9 + 7 -> list all four
        test_ids = np.array([9, 6, 8, 7])
    graph = defaultdict(list, {i: [(i + 1) % n] for i in range(n)})
    onehot = np.eye(c, dtype=np.float32)
    parts = {
        "x": sp.csr_matrix(feats[:3]),
        "y": onehot[labels[:3]],
        "allx": sp.csr_matrix(feats[:n_all]),
        "ally": onehot[labels[:n_all]],
        "tx": sp.csr_matrix(feats[test_ids]),
        "ty": onehot[labels[test_ids]],
        "graph": graph,
    }
    for k, v in parts.items():
        with open(tmp_path / f"ind.{name}.{k}", "wb") as f:
            pickle.dump(v, f)
    np.savetxt(tmp_path / f"ind.{name}.test.index", test_ids, fmt="%d")
    return feats, labels, graph


def test_load_planetoid_roundtrip(tmp_path) -> None:
    feats, labels, graph = _write_planetoid(tmp_path, "toy", gap=False)
    d = load_planetoid(tmp_path, "toy")
    n = len(feats)
    np.testing.assert_array_equal(d.x.numpy(), feats)
    np.testing.assert_array_equal(d.y.numpy(), labels)
    assert d.edge_index.shape[1] == 2 * n  # a ring


def test_load_planetoid_citeseer_gap(tmp_path) -> None:
    feats, labels, _ = _write_planetoid(tmp_path, "gap", gap=True)
    d = load_planetoid(tmp_path, "gap")
    assert d.num_nodes == 11
    for i in (9, 6, 10):
        np.testing.assert_array_equal(d.x[i].numpy(), feats[i])
        assert int(d.y[i]) == labels[i]
    assert float(d.x[7].abs().sum()) == 0.0 and float(d.x[8].abs().sum()) == 0.0


def test_load_planetoid_refuses_code(tmp_path) -> None:
    _write_planetoid(tmp_path, "evil", gap=False)
    with open(tmp_path / "ind.evil.graph", "wb") as f:
        pickle.dump(np.random.default_rng, f)  # a callable global: not allowed
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_planetoid(tmp_path, "evil")
    with pytest.raises(FileNotFoundError, match="ind.none"):
        load_planetoid(tmp_path, "none")


def test_load_amazon_npz(tmp_path) -> None:
    adj = sp.csr_matrix(np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 1]], dtype=np.float32))
    attr = sp.csr_matrix(np.eye(4, 3, dtype=np.float32))
    np.savez(
        tmp_path / "amazon.npz",
        adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr, adj_shape=adj.shape,
        attr_data=attr.data, attr_indices=attr.indices, attr_indptr=attr.indptr, attr_shape=attr.shape,
        labels=np.array([0, 1, 1, 0]),
    )  # fmt: skip
    d = load_amazon_npz(tmp_path / "amazon.npz")
    assert d.x.shape == (4, 3) and d.y.tolist() == [0, 1, 1, 0]
    assert d.edge_index.shape[1] == 6  # 3 undirected edges, the self-loop dropped
    with pytest.raises(FileNotFoundError):
        load_amazon_npz(tmp_path / "missing.npz")


def test_attributed_sbm_one_community_per_class_is_the_class_level_sbm() -> None:
    """``communities_per_class=1`` draws the class-level SBM draw for draw, whatever ``community_share``
    says about edges inside a community (the community is the class)."""
    a = make_attributed_sbm(300, 3, 30, avg_degree=6, seed=4)
    b = make_attributed_sbm(300, 3, 30, avg_degree=6, communities_per_class=1, community_share=0.75, seed=4)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert not hasattr(a, "community")
