"""Feature-tree code-task synthesis: *EpiCoder: Encompassing Diversity and Complexity in Code
Generation* (Wang et al., ICML 2025, arXiv 2501.04694).

Seed code and core sets (:mod:`.corpus`), feature extraction from code (:mod:`.extract`: an
``ast`` extractor and the paper's LLM extractor), the frequency feature tree with its sampler and
merge rules (:mod:`.tree`), tree evolution (:mod:`.evolve`: the LLM evolver and an offline
catalogue stand-in), task synthesis from subtrees or snippets with sandboxed validation
(:mod:`.synth`), and complexity/diversity metrics (:mod:`.metrics`). Every LLM step takes any
:class:`icml25.llm.chat.ChatModel`.
"""

from .corpus import CodeSnippet, code_embeddings, k_center_greedy, stdlib_functions
from .evolve import (
    CatalogEvolver,
    EvolutionResult,
    Evolver,
    LLMEvolver,
    default_catalog,
    evolve_tree,
    public_names,
)
from .extract import (
    CATEGORIES,
    AstFeatureExtractor,
    LLMFeatureExtractor,
    parse_json_block,
    salvage_parse,
    tree_from_json,
)
from .metrics import ast_depth, complexity_metrics, diversity_metrics, embedding_dispersion, feature_set
from .synth import (
    GeneratedTask,
    TaskSynthesizer,
    feature_task_prompt,
    has_tests,
    parse_generation,
    render_tree,
    run_own_tests,
    snippet_task_prompt,
    subtree_features,
    test_program,
)
from .tree import (
    FeatureTree,
    FrequencyMap,
    Path,
    build_frequency_tree,
    count_leaf_paths,
    descendant_counts,
    leaf_paths,
    merge_trees,
    new_node_frequencies,
    node_paths,
    prune_top_n,
    sample_mandatory_leaves,
    sample_subtree,
    smooth_probs,
    subtree_at,
    tree_depth,
    tree_stats,
    validate_tree,
)

__all__ = [
    "CATEGORIES",
    "AstFeatureExtractor",
    "CatalogEvolver",
    "CodeSnippet",
    "EvolutionResult",
    "Evolver",
    "FeatureTree",
    "FrequencyMap",
    "GeneratedTask",
    "LLMEvolver",
    "LLMFeatureExtractor",
    "Path",
    "TaskSynthesizer",
    "ast_depth",
    "build_frequency_tree",
    "code_embeddings",
    "complexity_metrics",
    "count_leaf_paths",
    "default_catalog",
    "descendant_counts",
    "diversity_metrics",
    "embedding_dispersion",
    "evolve_tree",
    "feature_set",
    "feature_task_prompt",
    "has_tests",
    "k_center_greedy",
    "leaf_paths",
    "merge_trees",
    "new_node_frequencies",
    "node_paths",
    "parse_generation",
    "parse_json_block",
    "prune_top_n",
    "public_names",
    "render_tree",
    "run_own_tests",
    "salvage_parse",
    "sample_mandatory_leaves",
    "sample_subtree",
    "smooth_probs",
    "snippet_task_prompt",
    "stdlib_functions",
    "subtree_at",
    "subtree_features",
    "test_program",
    "tree_depth",
    "tree_from_json",
    "tree_stats",
    "validate_tree",
]
