"""Readers for a user's local copy of standard graph benchmarks; nothing here downloads.

* :func:`load_planetoid` reads the raw Planetoid files (Yang et al., 2016) of CiteSeer, Cora or PubMed
  from one folder: ``ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index}``. They are Python pickles
  (scipy sparse matrices, numpy arrays, a dict of adjacency lists); they are read with an unpickler
  that only admits those types, so a tampered file cannot run code. As in PyG's reader, test nodes
  are put back in order and CiteSeer's missing test ids get zero features and class 0 (isolated).
* :func:`load_amazon_npz` reads the ``.npz`` files of Amazon-Computers / Amazon-Photo (Shchur et al.,
  2018; ``amazon_electronics_{computers,photo}.npz``) without pickles.

Both return ``Data(x float32 [n, d], edge_index int64 [2, 2m] symmetric without loops, y int64 [n])``.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from icml25.core.validate import check_str

from .generators import undirected_edge_index

__all__ = ["load_planetoid", "load_amazon_npz"]

_PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph")
_ALLOWED = {
    ("collections", "defaultdict"),
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "set"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}
_SPARSE = {"csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix", "dok_matrix"}


class _SafeUnpickler(pickle.Unpickler):
    """Admits only the containers, numpy arrays and scipy sparse matrices Planetoid files hold."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED or (module.startswith("scipy.sparse") and name in _SPARSE):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a Planetoid file")


def _read_pickle(path: Path) -> Any:
    with open(path, "rb") as f:
        return _SafeUnpickler(io.BytesIO(f.read()), encoding="latin1").load()


def _dense(m: Any) -> np.ndarray:
    return np.asarray(m.todense() if hasattr(m, "todense") else m, dtype=np.float32)


def load_planetoid(root: str | Path, name: str) -> Data:
    """Read raw Planetoid files ``<root>/ind.<name>.*`` (name as in the file names, e.g. ``citeseer``).

    Raises:
        FileNotFoundError: a file is missing (the message lists what was expected).
        ValueError: the files disagree in size.
    """
    check_str("name", name)
    root = Path(root)
    paths = {p: root / f"ind.{name}.{p}" for p in (*_PLANETOID_PARTS, "test.index")}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"Planetoid files not found: {', '.join(missing)}")
    x, tx, allx, y, ty, ally, graph = (_read_pickle(paths[p]) for p in _PLANETOID_PARTS)
    test_index = np.loadtxt(paths["test.index"], dtype=np.int64, ndmin=1)
    x, tx, allx = _dense(x), _dense(tx), _dense(allx)
    y, ty, ally = (np.asarray(v, dtype=np.float32) for v in (y, ty, ally))
    if len(tx) != len(test_index) or len(ty) != len(tx) or len(ally) != len(allx):
        raise ValueError(f"Planetoid files of {name!r} disagree in size (tx {len(tx)}, ty {len(ty)}, "
                         f"test.index {len(test_index)}, allx {len(allx)}, ally {len(ally)})")  # fmt: skip
    sorted_test = np.sort(test_index)
    lo, hi = int(sorted_test[0]), int(sorted_test[-1])
    if hi - lo + 1 != len(test_index):  # CiteSeer: some test ids have no node; pad them with zeros
        full_tx = np.zeros((hi - lo + 1, tx.shape[1]), dtype=np.float32)
        full_ty = np.zeros((hi - lo + 1, ty.shape[1]), dtype=np.float32)
        full_tx[sorted_test - lo], full_ty[sorted_test - lo] = tx, ty
        tx, ty = full_tx, full_ty
    feats = np.concatenate([allx, tx])
    labels = np.concatenate([ally, ty])
    # the test rows are stored in test.index order; move each to its node id (Kipf & Welling's rule)
    feats[test_index] = feats[sorted_test]
    labels[test_index] = labels[sorted_test]
    n = len(feats)
    pairs = [(int(u), int(v)) for u, nbrs in dict(graph).items() for v in nbrs if int(u) < n and int(v) < n]
    edge_index = undirected_edge_index(np.array(pairs, dtype=np.int64).reshape(-1, 2).T, n)
    return Data(
        x=torch.from_numpy(feats),
        edge_index=edge_index,
        y=torch.from_numpy(labels.argmax(1).astype(np.int64)),
    )


def load_amazon_npz(path: str | Path) -> Data:
    """Read an Amazon co-purchase ``.npz`` (CSR ``adj_*``, ``attr_*`` or ``attr_matrix``, ``labels``)."""
    import scipy.sparse as sp

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Amazon npz file not found: {path}")
    with np.load(path, allow_pickle=False) as f:
        keys = set(f.files)
        need = {"adj_data", "adj_indices", "adj_indptr", "adj_shape", "labels"}
        if not need <= keys:
            raise ValueError(f"{path} lacks the arrays {sorted(need - keys)}")
        adj = sp.csr_matrix((f["adj_data"], f["adj_indices"], f["adj_indptr"]), shape=tuple(f["adj_shape"]))
        if "attr_data" in keys:
            attr = sp.csr_matrix(
                (f["attr_data"], f["attr_indices"], f["attr_indptr"]), shape=tuple(f["attr_shape"])
            ).toarray()
        elif "attr_matrix" in keys:
            attr = np.asarray(f["attr_matrix"])
        else:
            raise ValueError(f"{path} has no node attributes (attr_data/... or attr_matrix)")
        labels = np.asarray(f["labels"], dtype=np.int64)
    n = adj.shape[0]
    if attr.shape[0] != n or labels.shape != (n,):
        raise ValueError(
            f"{path}: adjacency has {n} nodes, attributes {attr.shape[0]}, labels {labels.shape}"
        )
    coo = adj.tocoo()
    return Data(
        x=torch.from_numpy(attr.astype(np.float32)),
        edge_index=undirected_edge_index(np.stack([coo.row, coo.col]).astype(np.int64), n),
        y=torch.from_numpy(labels),
    )
