"""Tests for the EpiCoder feature-tree synthesis pipeline (arXiv 2501.04694)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse as sp

from icml25.agents.epicoder import (
    AstFeatureExtractor,
    CatalogEvolver,
    FrequencyMap,
    LLMEvolver,
    LLMFeatureExtractor,
    TaskSynthesizer,
    block_diversity,
    build_frequency_tree,
    combination_novelty,
    complexity_metrics,
    descendant_counts,
    diversity_metrics,
    embedding_dispersion,
    evolve_tree,
    feature_task_prompt,
    has_tests,
    k_center_greedy,
    leaf_paths,
    merge_trees,
    new_node_frequencies,
    node_paths,
    parse_generation,
    parse_json_block,
    prune_top_n,
    run_own_tests,
    salvage_parse,
    sample_mandatory_leaves,
    sample_subtree,
    smooth_probs,
    snippet_specs,
    snippet_task_prompt,
    stdlib_functions,
    top_specs,
    tree_from_json,
    tree_specs,
    tree_stats,
    uniform_specs,
)
from icml25.agents.epicoder.check import CHECK
from icml25.llm.chat import ScriptedChatModel

CODE = '''
import math
import os.path as osp
from collections import Counter

def norm(values):
    """Euclidean norm."""
    total = 0.0
    for v in values:
        total += v ** 2
    return math.sqrt(total)

def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)

def save(path, words):
    try:
        with open(path, "w") as f:
            f.write(", ".join(w.strip() for w in words))
    except OSError:
        raise ValueError(f"cannot write {path}")
    return osp.basename(path), Counter(words)
'''


def _tree() -> dict:
    return {
        "a": {"a1": {"x": {}, "y": {}}, "a2": {}},
        "b": {"b1": {}, "b2": {}, "b3": {}},
        "c": {},
    }


# -- feature trees ----------------------------------------------------------------------------------


def test_build_frequency_tree_counts_prunes_and_sums() -> None:
    trees = [
        {"cat": {"sub": {"f1": {}, "f2": {}, "f3": {}}, "small": {"g": {}}, "z": {}}},
        {"cat": {"sub": {"f1": {}}, "small": {"g": {}, "h": {}}}},
        {"other": {"leaf": {}}},
    ]
    tree, freq = build_frequency_tree(trees, max_depth=3, top_n=50, dict_min_size=3)
    # "small" has 2 children (< 3): collapsed into a leaf carrying its number of children (released)
    assert tree["cat"]["small"] == {}
    assert set(tree["cat"]["sub"]) == {"f1", "f2", "f3"}
    assert freq.frequency(("cat", "sub", "f1")) == 2.0
    assert freq.frequency(("cat", "small")) == 2.0
    assert freq.frequency(("cat", "sub")) == 4.0  # internal = sum of children
    assert freq.frequency(("cat",)) == 7.0
    assert freq.avg_sub_frequency(("cat",)) == pytest.approx(7.0 / 3)  # stored mean child count
    assert tree["other"] == {"leaf": {}}  # a category is never collapsed
    # sub-dicts come before leaves, each group by decreasing count
    assert list(tree["cat"]) == ["sub", "small", "z"]
    _, total = build_frequency_tree(trees, dict_min_size=3, collapsed_count="total")
    assert total.frequency(("cat", "small")) == 3.0  # the sum of its counts instead


def test_prune_top_n_keeps_the_most_frequent() -> None:
    counted = {"r": {"a": 5, "b": 1, "c": 3, "d": {"x": 1, "y": 1, "z": 1}}}
    pruned = prune_top_n(counted, top_n=2, dict_min_size=2)
    assert list(pruned["r"]) == ["d", "a"]  # the dict first, then the largest leaf
    assert prune_top_n({"r": {"d": {"x": 1, "y": 2}}}, top_n=5, dict_min_size=3) == {"r": {"d": 2}}


def test_prune_top_n_never_collapses_a_category() -> None:
    """Regression: categories with fewer than dict_min_size children used to become bare leaves,
    losing e.g. every module name under "dependency relations" (the released code prunes inside
    each category and never collapses one)."""
    counted = {
        "dependency relations": {"standard library": {"os": 7, "re": 3, "json": 2, "sys": 1}},
        "logging": {"logger": 4},
        "security": {"hashing": {"sha256": 2}},
    }
    pruned = prune_top_n(counted, top_n=50, dict_min_size=3)
    assert pruned["dependency relations"] == {"standard library": {"os": 7, "re": 3, "json": 2, "sys": 1}}
    assert pruned["logging"] == {"logger": 4}
    assert pruned["security"] == {"hashing": 1}  # below a category, small sub-dicts still collapse
    assert prune_top_n(counted, dict_min_size=3, collapsed_count="total")["security"] == {"hashing": 2}
    tree, _ = build_frequency_tree(
        [{"dependency relations": {"standard library": {m: {}}}} for m in ("os", "re", "json")] * 2
        + [{"logging": {"logger": {}}}],
        dict_min_size=3,
    )
    assert set(tree["dependency relations"]["standard library"]) == {"os", "re", "json"}
    assert tree["logging"] == {"logger": {}}


def test_descendant_counts_and_stats() -> None:
    t = _tree()
    counts = descendant_counts(t, match="path")
    assert counts[("a",)] == 5 and counts[("a", "a1")] == 3 and counts[("c",)] == 1
    assert descendant_counts(t) == counts  # no name is a prefix of another here
    stats = tree_stats(t)
    assert stats["leaves"] == 7 and stats["depth"] == 3 and stats["nodes"] == 10


def test_descendant_counts_match_the_released_string_prefix_rule() -> None:
    """Released ``count_descendant``: keys whose joined path string starts with the node's."""
    t = {"a": {"sort": {"x": {}}, "sorted": {"y": {}, "z": {}}}, "ab": {}}
    naive = {p: sum("---".join(q).startswith("---".join(p)) for q in node_paths(t)) for p in node_paths(t)}
    counts = descendant_counts(t)
    assert counts == {p: float(n) for p, n in naive.items()}
    assert counts[("a", "sort")] == 5 and counts[("a",)] == 7 and counts[("ab",)] == 1  # "ab" too
    assert descendant_counts(t, match="path")[("a", "sort")] == 2
    with pytest.raises(ValueError, match="match"):
        descendant_counts(t, match="bad")


def test_smooth_probs_limits() -> None:
    p = np.array([1.0, 2.0, 7.0])
    np.testing.assert_allclose(smooth_probs(p, 1.0), p / p.sum(), rtol=1e-6)
    np.testing.assert_allclose(smooth_probs(p, 100.0), np.full(3, 1 / 3))
    flat = smooth_probs(p, 10.0)
    assert flat.max() - flat.min() < (p / p.sum()).max() - (p / p.sum()).min()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.01, 1e4, allow_nan=False), min_size=2, max_size=8),
    st.floats(0.2, 50.0),
)
def test_smooth_probs_is_a_distribution_preserving_order(weights: list[float], t: float) -> None:
    probs = smooth_probs(weights, t)
    assert probs.sum() == pytest.approx(1.0) and (probs >= 0).all()
    order = np.argsort(weights, kind="stable")
    assert np.all(np.diff(probs[order]) >= -1e-12)


def test_sample_subtree_respects_conditions_fixed_and_depth() -> None:
    rng = np.random.default_rng(0)
    t = _tree()
    for _ in range(20):
        sub = sample_subtree(t, (2, 1), rng=rng, fixed=["c"])
        assert "c" in sub and len(sub) == 2
        for child in sub.values():
            assert len(child) <= 1
            for grand in child.values():
                assert set(grand) <= {"x", "y"}
    cut = sample_subtree(t, (3,), rng=rng, max_depth=1)
    assert set(cut) == {"a", "b", "c"} and all(v == {} for v in cut.values())
    whole = sample_subtree(t, (3, 5, 5), rng=rng)
    assert whole == t
    a = sample_subtree(t, (2, 1), rng=np.random.default_rng(3))
    b = sample_subtree(t, (2, 1), rng=np.random.default_rng(3))
    assert a == b


def test_sample_subtree_frequencies_match_smoothed_probabilities() -> None:
    """Naive reference: one draw per call at depth 1 follows smooth_probs of the frequencies."""
    tree = {"a": {}, "b": {}, "c": {}}
    freq = FrequencyMap({("a",): [6.0], ("b",): [3.0], ("c",): [1.0]})
    rng = np.random.default_rng(1)
    for t in (1.0, 3.0):
        draws = Counter(
            next(iter(sample_subtree(tree, (1,), rng=rng, weights=freq, temperature=t))) for _ in range(4000)
        )
        expected = smooth_probs([6.0, 3.0, 1.0], t)
        observed = np.array([draws[k] for k in "abc"]) / 4000
        np.testing.assert_allclose(observed, expected, atol=0.03)


def test_sample_mandatory_leaves() -> None:
    leaves = sample_mandatory_leaves(_tree(), 2, rng=np.random.default_rng(0))
    assert len(set(leaves)) == 2 and set(leaves) <= set(leaf_paths(_tree()))
    assert sample_mandatory_leaves({}, 2, rng=np.random.default_rng(0)) == []


def test_merge_trees_unions_and_deduplicates() -> None:
    merged = merge_trees({"Data Processing": {"split": {}}}, {"data_processing": {"join": {}}, "new": {}})
    assert merged == {"Data Processing": {"split": {}, "join": {}}, "new": {}}


_names = st.sampled_from(["a", "b", "c", "d"])
_trees = st.recursive(st.just({}), lambda kids: st.dictionaries(_names, kids, max_size=3), max_leaves=8)


@settings(max_examples=50, deadline=None)
@given(_trees, _trees)
def test_merge_is_a_union_and_idempotent(a: dict, b: dict) -> None:
    merged = merge_trees(a, b)
    assert set(node_paths(a)) | set(node_paths(b)) == set(node_paths(merged))
    assert merge_trees(merged, a) == merged and merge_trees(a, a) == a


def test_new_node_frequencies_direct_sibling_rule() -> None:
    freq = FrequencyMap(
        {("p",): [10.0], ("p", "x"): [4.0], ("p", "y"): [2.0], ("q",): [1.0], ("q", "z"): [9.0]}
    )
    sampled = {"p": {"x": {}, "y": {}}, "q": {}}
    expanded = {"p": {"x": {}, "y": {}, "new": {}}, "q": {"z": {}, "w": {}}, "r": {}}
    out = new_node_frequencies(sampled, expanded, freq, siblings="direct")
    assert out.frequency(("p", "new")) == pytest.approx(3.0)  # mean of sampled siblings x, y
    assert out.frequency(("r",)) == pytest.approx(np.mean([10.0, 1.0]))  # mean of sampled siblings p, q
    # z already had 9; its sampled parent q had no sampled children -> parent's average child = 9
    assert out.history[("q", "z")] == [9.0, 9.0]
    assert out.frequency(("q", "w")) == pytest.approx(9.0)
    assert ("p", "new") not in freq  # the input map is unchanged


def test_new_node_frequencies_follow_the_released_rule() -> None:
    """Released ``get_new_node_frequencies`` + ``merge_frequencies``: the mean over every sampled
    node below the parent (any depth), depth-1 nodes skipped, the parent's stored mean child
    frequency when none, then the parent's mean updated over all its descendants."""
    freq = FrequencyMap(
        {
            ("p",): [10.0],
            ("p", "x"): [4.0],
            ("p", "x", "x1"): [8.0],
            ("p", "y"): [2.0],
            ("q",): [1.0],
            ("q", "z"): [9.0],
        },
        {("p",): 3.0, ("p", "x"): 8.0, ("q",): 6.0},
    )
    sampled = {"p": {"x": {"x1": {}}, "y": {}}, "q": {}}
    expanded = {"p": {"x": {"x1": {}, "x2": {}}, "y": {}, "new": {}}, "q": {"z": {}, "w": {}}, "r": {}}
    out = new_node_frequencies(sampled, expanded, freq)
    # below p: x (4), x1 (8), y (2) were sampled -> (4 + 8 + 2) / 3, not the direct mean 3
    assert out.frequency(("p", "new")) == pytest.approx(14.0 / 3)
    assert out.frequency(("p", "x", "x2")) == pytest.approx(8.0)  # below x: only x1
    assert ("r",) not in out  # depth 1: no entry
    # q's sampled subtree holds nothing below q: its stored mean child frequency 6 (not 9)
    assert out.frequency(("q", "w")) == pytest.approx(6.0)
    assert out.history[("q", "z")] == [9.0, 6.0]
    # p's stored mean is now over every node below it: x, x1, x2, y, new
    assert out.avg_sub[("p",)] == pytest.approx(np.mean([4.0, 8.0, 8.0, 2.0, 14.0 / 3]))
    assert out.avg_sub[("q",)] == pytest.approx(np.mean([7.5, 6.0]))
    assert freq.avg_sub[("p",)] == 3.0  # the input map is unchanged
    with pytest.raises(ValueError, match="siblings"):
        new_node_frequencies(sampled, expanded, freq, siblings="bad")


# -- extraction -------------------------------------------------------------------------------------


def test_ast_extractor_finds_structural_features() -> None:
    tree = AstFeatureExtractor().extract(CODE)
    leaves = {p[-1] for p in leaf_paths(tree)}
    for feature in (
        "math",
        "collections",
        "for loop",
        "recursive call",
        "OSError",
        "ValueError",
        "f-string",
        "join",
        "strip",
        "power",
        "open for write",
        "with statement",
        "math.sqrt",
        "os.path.basename",
        "collections.Counter",
    ):
        assert feature in leaves, feature
    assert "os" in tree["dependency relations"]["standard library"]
    assert max(len(p) for p in leaf_paths(tree)) == 3
    assert AstFeatureExtractor().extract("this is not python (") == {}


def test_salvage_parse_cuts_to_the_parsable_prefix() -> None:
    module = salvage_parse("def f(x):\n    return x\n\ndef g(y):\n    return (y +")
    assert module is not None and [n.name for n in module.body] == ["f"]
    assert salvage_parse("") is None and salvage_parse("((((") is None


def test_llm_extractor_parses_the_released_json_format() -> None:
    reply = '<begin>{"data processing": {"string manipulation": ["split", "join"]}, "security": []}<end>'
    model = ScriptedChatModel(lambda m, c, i: reply)
    (tree,) = LLMFeatureExtractor(model).extract_many(["x = 1"])
    assert tree == {"data processing": {"string manipulation": {"split": {}, "join": {}}}}
    bad = LLMFeatureExtractor(ScriptedChatModel(lambda m, c, i: "no json here"))
    assert bad.extract("x = 1") == {} and bad.failures == 1
    assert parse_json_block('```json\n{"a": 1}\n```') == {"a": 1}
    assert tree_from_json({"a": ["x", {"b": ["y"]}]}) == {"a": {"x": {}, "b": {"y": {}}}}


# -- evolution --------------------------------------------------------------------------------------


def test_catalog_evolver_grows_in_breadth_and_depth() -> None:
    sub = {
        "data processing": {"string manipulation": {"split": {}}},
        "dependency relations": {"standard library": {"json": {}}},
    }
    grown = CatalogEvolver(breadth=2, depth=2).expand(sub, np.random.default_rng(0))
    assert set(node_paths(sub)) <= set(node_paths(grown))
    assert len(grown["data processing"]["string manipulation"]) == 3  # two new siblings of split
    assert len(grown["dependency relations"]["standard library"]["json"]) == 2  # public functions of json
    assert len(grown) >= 4  # new categories beside the two sampled ones


def test_llm_evolver_merges_the_reply_and_survives_garbage() -> None:
    reply = '<begin>{"a": {"a1": {}, "a3": ["fine"]}, "z": []}<end>'
    evolver = LLMEvolver(ScriptedChatModel(lambda m, c, i: reply))
    grown = evolver.expand({"a": {"a1": {}}}, np.random.default_rng(0))
    assert grown == {"a": {"a1": {}, "a3": {"fine": {}}}}
    broken = LLMEvolver(ScriptedChatModel(lambda m, c, i: "sorry"))
    assert broken.expand({"a": {}}, np.random.default_rng(0)) == {"a": {}} and broken.failures == 1


def test_evolve_tree_grows_and_records_frequencies() -> None:
    trees = AstFeatureExtractor().extract_many(
        [CODE, "def f(s):\n    return s.split(',')\n", "x = [i % 3 for i in range(9)]\n"]
    )
    tree, freq = build_frequency_tree(trees, dict_min_size=1)
    result = evolve_tree(
        tree, freq, CatalogEvolver(), rounds=2, samples_per_round=3, rng=np.random.default_rng(0)
    )
    assert len(result.stats) == 3
    assert result.stats[-1]["leaves"] > result.stats[0]["leaves"]
    assert set(node_paths(tree)) <= set(node_paths(result.tree))
    assert all(result.freq.frequency(p) > 0 for p in node_paths(result.tree))


def test_evolve_tree_counts_proposed_and_new_nodes() -> None:
    """Each step's proposals are the nodes the evolver added to its sample; only those the tree did
    not hold (up to case, spaces and underscores) count as new."""

    class Proposer:
        steps = 0

        def expand(self, subtree: dict, rng: np.random.Generator) -> dict:
            # a node the tree holds under another spelling, and one new node, under category "b"
            self.steps += 1
            return merge_trees(subtree, {"b": {"Known_Leaf": {}, f"new {self.steps}": {}}})

    tree = {"a": {"x": {}}, "b": {"known leaf": {}}}
    freq = FrequencyMap({p: [1.0] for p in node_paths(tree)})
    rng = np.random.default_rng(0)
    result = evolve_tree(
        tree, freq, Proposer(), rounds=1, samples_per_round=2, rng=rng, conditions=(1,), categories=("a",)
    )
    # every sample is {"a": {"x": {}}}: the proposals are b, b > Known_Leaf and b > new N, 3 a step;
    # b and its known leaf exist, so one node a step is new
    assert result.proposed == 6 and result.proposed_new == 2
    assert result.new_share == pytest.approx(1 / 3)
    assert set(result.tree["b"]) == {"known leaf", "new 1", "new 2"}
    # nothing proposed: share 0, not a division by zero
    idle = evolve_tree(
        tree,
        freq,
        CatalogEvolver(breadth=0, depth=0),
        rounds=1,
        samples_per_round=2,
        rng=rng,
        categories=None,
    )
    assert idle.proposed == 0 and idle.new_share == 0.0


def test_catalog_evolver_adds_no_empty_category() -> None:
    """Regression: the catalogue lists categories it has no features for ("workflow",
    "functionality", "algorithm"); proposed as new top-level siblings they became bare leaves that
    the task sampler then drew as one-feature categories."""
    sub = {"data processing": {"string manipulation": {"split": {}}}}
    grown = CatalogEvolver(breadth=50, depth=0).expand(sub, np.random.default_rng(0))
    new = set(grown) - set(sub)
    assert new and all(grown[c] == {} for c in new)  # breadth only: new categories come bare here
    from icml25.agents.epicoder.evolve import default_catalog

    catalog = default_catalog()
    assert all(catalog[c] for c in new)  # ... but each has features in the catalogue
    assert "workflow" not in grown and "functionality" not in grown


def test_evolve_tree_samples_only_the_evolution_categories() -> None:
    tree = {
        "data processing": {"string manipulation": {"split": {}, "join": {}}},
        "implementation logic": {"control flow": {"for loop": {}, "while loop": {}}},
    }
    freq = FrequencyMap({p: [1.0] for p in node_paths(tree)})
    result = evolve_tree(
        tree, freq, CatalogEvolver(), rounds=2, samples_per_round=4, rng=np.random.default_rng(0)
    )
    # "implementation logic" is not one of the released ten evolution categories: untouched
    assert result.tree["implementation logic"] == tree["implementation logic"]
    assert len(leaf_paths(result.tree["data processing"])) > 2
    everything = evolve_tree(
        tree,
        freq,
        CatalogEvolver(),
        rounds=2,
        samples_per_round=4,
        rng=np.random.default_rng(0),
        categories=None,
    )
    assert len(leaf_paths(everything.tree["implementation logic"])) > 2
    with pytest.raises(ValueError, match="categories"):
        evolve_tree(
            tree,
            freq,
            CatalogEvolver(),
            rounds=1,
            samples_per_round=1,
            rng=np.random.default_rng(0),
            categories=("security",),
        )


# -- specs ------------------------------------------------------------------------------------------


def test_block_diversity_known_values() -> None:
    a, b, c = ("x", "a"), ("x", "b"), ("y", "c")
    specs = [frozenset({a, b}), frozenset({a}), frozenset({c}), frozenset({c}), frozenset({a})]
    d = block_diversity(specs, 2)  # the fifth spec is a partial block: dropped
    np.testing.assert_array_equal(d["distinct"], [2.0, 1.0])
    p = np.array([2, 1]) / 3
    np.testing.assert_allclose(d["entropy"], [-(p * np.log(p)).sum(), 0.0])
    np.testing.assert_array_equal(d["mentions"], [3.0, 2.0])
    with pytest.raises(ValueError, match="block"):
        block_diversity(specs, 6)


def test_combination_novelty_against_a_naive_subset_check() -> None:
    corpus = [{"x": {"a": {}, "b": {}}}, {"x": {"a": {}}, "y": {"c": {"d": {}}}}]
    nodes = [{p[:k] for p in leaf_paths(t) for k in range(1, len(p) + 1)} for t in corpus]
    specs = [
        frozenset({("x", "a"), ("x", "b")}),  # snippet 0 holds both
        frozenset({("x", "a"), ("y", "c")}),  # snippet 1 holds both (c is an inner node there)
        frozenset({("x", "b"), ("y", "c")}),  # no single snippet: novel
        frozenset({("z",)}),  # unknown feature: novel
    ]
    naive = np.mean([not any(s <= n for n in nodes) for s in specs])
    assert combination_novelty(specs, corpus) == pytest.approx(naive) == pytest.approx(0.5)


def test_spec_arms_sizes_and_references() -> None:
    rng = np.random.default_rng(0)
    tree = {
        "computation operation": {"mathematical": {"power": {}, "modulo": {}}},
        "data processing": {"string manipulation": {"split": {}, "join": {}, "strip": {}}},
        "implementation logic": {"control flow": {"for loop": {}}},
    }
    specs = tree_specs(tree, 30, rng=rng, conditions=(2, 1, 1))
    # "implementation logic" is not a released task category; "computation operation" is fixed
    assert all(any(p[0] == "computation operation" for p in s) for s in specs)
    assert not any(p[0] == "implementation logic" for s in specs for p in s)
    snippets = [tree, {"data processing": {"string manipulation": {"split": {}}}}]
    snip = snippet_specs(snippets, [2] * 20, rng=rng)
    assert all(1 <= len(s) <= 2 for s in snip)
    assert not any(p[0] == "implementation logic" for s in snip for p in s)
    vocab = leaf_paths(tree)
    uni = uniform_specs(vocab, [3, 3, 10], rng=rng)
    assert [len(s) for s in uni] == [3, 3, len(vocab)] and all(s <= set(vocab) for s in uni)
    top = top_specs({("a",): 5, ("b",): 5, ("c",): 1}, [1, 2])
    assert top == [frozenset({("a",)}), frozenset({("a",), ("b",)})]


# -- corpus -----------------------------------------------------------------------------------------


def _naive_kcenter(X: np.ndarray, k: int) -> list[int]:
    chosen = [0]
    while len(chosen) < k:
        d = [
            min(np.linalg.norm(X[i] - X[j]) for j in chosen) if i not in chosen else -1 for i in range(len(X))
        ]
        chosen.append(int(np.argmax(d)))
    return chosen


def test_k_center_greedy_matches_a_naive_reference_dense_and_sparse() -> None:
    X = np.random.default_rng(0).normal(size=(40, 5))
    ref = _naive_kcenter(X, 8)
    assert k_center_greedy(X, 8).tolist() == ref
    assert k_center_greedy(sp.csr_matrix(X), 8).tolist() == ref
    assert k_center_greedy(X, 100).size == 40


def test_stdlib_functions_respect_line_bounds() -> None:
    snippets = stdlib_functions(min_lines=5, max_lines=20, max_files=6)
    assert snippets and snippets == stdlib_functions(min_lines=5, max_lines=20, max_files=6)
    for s in snippets:
        assert 5 <= len(s.source.splitlines()) <= 20
        assert salvage_parse(s.source) is not None


# -- synthesis and validation -----------------------------------------------------------------------


REPLY = "Task: add two numbers.\n```python\ndef add(a, b):\n    return a + b\n\nassert add(2, 3) == 5\n```\n"
MULTI = (
    "Task: a tiny package.\n```python\n# file: util.py\ndef twice(x):\n    return 2 * x\n```\n"
    "```python\n# file: test_main.py\nfrom util import twice\n\n"
    "def test_twice():\n    assert twice(4) == 8\n```\n"
)


def test_parse_generation_single_and_multi_file() -> None:
    task = parse_generation(REPLY)
    assert task.task == "add two numbers." and list(task.files) == ["solution.py"] and has_tests(task)
    multi = parse_generation(MULTI)
    assert list(multi.files) == ["util.py", "test_main.py"]
    assert complexity_metrics(multi.files)["n_files"] == 2
    assert parse_generation("no code at all").files == {}
    repeated = parse_generation("```python\n# demo\n```python\ndef f():\n    return 1\n```\ntext")
    assert repeated.files == {"solution.py": "# demo\ndef f():\n    return 1\n"}


def test_sandbox_judges_own_tests() -> None:
    assert run_own_tests(parse_generation(REPLY)).ok
    wrong = parse_generation(REPLY.replace("== 5", "== 6"))
    assert not run_own_tests(wrong).ok
    assert run_own_tests(parse_generation(MULTI)).ok
    cut = parse_generation(REPLY.replace("```\n", "") + "\nassert add(1, 1) == 2\ndef broken(:")
    assert run_own_tests(cut).ok  # the unfinished tail is dropped, the complete asserts run
    assert run_own_tests(parse_generation("```python\ndef f():\n    return 1\n```")) is None  # no tests


def test_prompts_and_synthesizer_count_calls() -> None:
    sub = {"computation operation": {"mathematical": {"power": {}}}}
    prompt = feature_task_prompt(sub, [("computation operation", "mathematical", "power")])
    assert "power" in prompt[0]["content"] and "Mandatory" in prompt[0]["content"]
    assert "file: test_main.py" in feature_task_prompt(sub, multi_file=True)[0]["content"]
    assert "def f" in snippet_task_prompt("def f():\n    return 1\n")[0]["content"]
    synth = TaskSynthesizer(ScriptedChatModel(lambda m, c, i: REPLY), max_tokens=32)
    tasks = synth.generate([prompt, prompt], seed=0)
    assert synth.calls == 2 and all(t.files for t in tasks)


# -- metrics ----------------------------------------------------------------------------------------


def test_complexity_metrics_known_values() -> None:
    m = complexity_metrics(
        "def f(x):\n    if x:\n        return 1\n    for i in range(3):\n        pass\n    return 0\n"
    )
    assert m["cc_total"] == 3 + 1 and m["cc_max"] == 3  # module level 1 + f's 3
    assert m["n_functions"] == 1 and m["n_files"] == 1 and m["parsed"] == 1
    empty = complexity_metrics("")
    assert empty["parsed"] == 0 and empty["n_files"] == 0


def test_diversity_metrics_known_values() -> None:
    trees = [{"a": {"x": {}}}, {"a": {"x": {}, "y": {}}}]
    d = diversity_metrics(trees)
    assert d["distinct_features"] == 2
    p = np.array([2, 1]) / 3
    assert d["entropy"] == pytest.approx(-(p * np.log(p)).sum())
    assert d["entropy_norm"] == pytest.approx(d["entropy"] / math.log(2))
    assert d["jaccard_distance"] == pytest.approx(0.5)
    assert embedding_dispersion(["a = 1", "a = 1"]) == pytest.approx(0.0, abs=1e-9)
    assert embedding_dispersion(["a = 1", "b + c"]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: smooth_probs([1.0, float("nan")], 1.0), "p"),
        (lambda: smooth_probs([], 1.0), "p"),
        (lambda: smooth_probs(["a"], 1.0), "p"),
        (lambda: smooth_probs([1.0], 0.0), "temperature"),
        (lambda: sample_subtree(_tree(), (), rng=np.random.default_rng(0)), "conditions"),
        (lambda: sample_subtree(_tree(), (0,), rng=np.random.default_rng(0)), "conditions"),
        (lambda: sample_subtree({}, (1,), rng=np.random.default_rng(0)), "tree"),
        (lambda: sample_subtree(_tree(), (1,), rng=np.random.default_rng(0), fixed=["zz"]), "fixed"),
        (lambda: build_frequency_tree([]), "feature_trees"),
        (lambda: build_frequency_tree([{}], top_n=0), "top_n"),
        (lambda: k_center_greedy(np.ones((3, 2)), 0), "k"),
        (lambda: k_center_greedy(np.full((3, 2), np.nan), 1), "X"),
        (lambda: diversity_metrics([]), "trees"),
        (lambda: stdlib_functions(min_lines=0), "min_lines"),
    ],
)
def test_bad_input_is_refused(call, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# -- the check --------------------------------------------------------------------------------------


def test_tiny_check_runs(tmp_path: Path) -> None:
    from icml25.core.results import ResultStore

    result = CHECK.run("tiny", store=ResultStore(tmp_path))
    crit = {c.name: c for c in result.criteria}
    assert crit["tiny_specs"].passed and crit["tiny_generated"].passed
    assert result.metrics["evolved_tree"]["llm_calls"].mean == 2 * CHECK.config("tiny").gen_tasks
    m = result.metrics
    # the references bracket the spec arms: the uniform ceiling above the most-frequent floor
    assert m["uniform"]["distinct_features"].mean > m["top_features"]["distinct_features"].mean
    assert m["snippet"]["novelty"].mean == 0.0  # a snippet's spec is held by that snippet
    assert m["tree"]["collapsed_categories"].mean == 0.0
    assert 0.0 <= m["snippet"]["gen_copied_share"].mean <= 1.0


def test_copied_share_counts_seed_lines() -> None:
    from icml25.agents.epicoder.check import copied_share

    seed = "def f(x):\n    return x + 1\n"
    assert copied_share("def f(x):\n    return x + 1\n\nassert f(1) == 2\n", seed) == pytest.approx(2 / 3)
    assert copied_share("", seed) == 0.0 and copied_share("y = 2", seed) == 0.0


def test_claim_follows_the_protocol() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    assert set(claim.references) == {"uniform", "top_features"} and claim.controls == ("uniform",)
    assert {g.name for g in claim.gates_at("small")} == {
        "metric_separates_references",
        "categories_keep_vocabulary",
        "evolver_proposes_new",
    }
    # the evolver's ability guards only the growth criterion, and names the resource it needs
    evolver_gate = next(g for g in claim.gates if g.name == "evolver_proposes_new")
    assert evolver_gate.guards == ("evolution_grows_tree",) and evolver_gate.needs
    assert evolver_gate.threshold == 0.5
    growth = next(c for c in claim.criteria if c.name == "evolution_grows_tree")
    assert growth.threshold == 1.5
    assert claim.headline_criterion().name == "more_distinct_features"
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or (c.smallest_effect and c.effect_source)
    gate = next(g for g in claim.gates if g.name == "generator_writes_code")
    assert gate.scales == ("full",) and gate.needs


def test_full_preset_constructs_and_runs_one_step(tmp_path: Path) -> None:
    from icml25.core.results import ResultStore

    full = CHECK.config("full")
    assert full.conditions == (5, 2, 1, 1) and full.sample_temperature == 10 and full.gen_tasks == 200
    result = CHECK.run(
        "full",
        seeds=[0],
        overrides={
            "model": "random-tiny",
            "max_files": 10,
            "core_size": 20,
            "n_specs": 20,
            "block": 10,
            "gen_tasks": 1,
            "max_tokens": 4,
            # the paper's LLM evolver path, with a random model whose replies never parse
            "evolution_rounds": 1,
            "samples_per_round": 2,
            "evolver_model": "random-tiny",
            "evolver_tokens": 4,
        },
        store=ResultStore(tmp_path),
    )
    assert result.metrics["evolved_tree"]["gen_tasks"].mean == 1
    # nothing proposed, so the scoped gate fails and sets aside only the growth criterion
    assert result.metrics["evolved_tree"]["evolver_new_share"].mean == 0.0
    crit = {c.name: c for c in result.criteria}
    assert crit["evolver_proposes_new"].passed is False
    assert crit["evolver_proposes_new"].guards == ("evolution_grows_tree",)
    with pytest.raises(ValueError, match="top_p"):
        CHECK.config("small", {"top_p": 1.5})
    with pytest.raises(ValueError, match="n_specs"):
        CHECK.config("small", {"n_specs": 10, "block": 50})
    with pytest.raises(ValueError, match="collapsed_count"):
        CHECK.config("small", {"collapsed_count": "sum"})
