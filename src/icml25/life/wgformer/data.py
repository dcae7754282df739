"""Conformer data for WGFormer (Wang, Cheng, Xu, ICML 2025, https://arxiv.org/abs/2410.09795).

The paper refines a cheap RDKit conformation into the DFT ground state (QM9, Molecule3D). Offline we
build a stand-in from RDKit alone (Sec. 4 of the paper describes the real inputs: RDKit ETKDG +
MMFF conformers). Two kinds of target (``target_mode``):

* ``"mmff_from_input"``: the MMFF94 minimum reached from each input conformation itself. The inputs
  are raw ETKDG conformers, so the target is a systematic correction of its own input (bond lengths,
  angles, local relaxation), the kind of correction RDKit -> DFT mostly is, and learnable.
* ``"lowest_mmff"``: one *pseudo ground state* per molecule, the lowest-MMFF94-energy conformer among
  ``k_target`` ETKDG embeddings, each MMFF-minimised; the *low-quality inputs* are ETKDG conformers
  from other seeds, raw (``input_mode="raw"``) or each MMFF-minimised to its local minimum
  (``"mmff_local"``: a local minimum instead of the global one). Which local minimum is the lowest is
  mostly a torsion choice that the input distances do not reveal. Molecules come from the NCI
SMILES list shipped with RDKit (``RDConfig.RDDataDir/NCI/first_5K.smi``) or from a caller's list.

Also here: the token vocabulary (``[CLS]``/``[SEP]`` around the atoms, as in the official Uni-Mol based
code), the padded tensor batch (:class:`ConformerTensors`), and the Bemis-Murcko scaffold split.
Nothing in this module reads or writes files except the SMILES list RDKit ships.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from icml25.core.validate import check_positive

__all__ = [
    "VOCAB",
    "PAD",
    "CLS",
    "SEP",
    "ALLOWED_ELEMENTS",
    "ConformerRecord",
    "ConformerTensors",
    "nci_smiles",
    "make_record",
    "build_conformer_dataset",
    "scaffold_split",
    "random_split",
    "SPLIT_MODES",
    "split_indices",
    "collate",
]

# The official dictionary (data/QM9/dict.txt) begins with these tokens; index 0 is padding.
VOCAB: tuple[str, ...] = ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "C", "N", "O", "S", "H", "Cl", "F", "Br", "I",
                          "Si", "P", "B")  # fmt: skip
PAD, CLS, SEP, UNK = 0, 1, 2, 3
ALLOWED_ELEMENTS = frozenset({"C", "N", "O", "F", "S", "Cl", "Br"})
_INDEX = {s: i for i, s in enumerate(VOCAB)}
INPUT_MODES = ("raw", "mmff_local")
TARGET_MODES = ("mmff_from_input", "lowest_mmff")


@dataclass(frozen=True)
class ConformerRecord:
    """One molecule: its atoms (hydrogens included, RDKit's ``AddHs`` order), inputs and target.

    Attributes:
        smiles: canonical SMILES; ``Chem.AddHs(Chem.MolFromSmiles(smiles))`` has the atom order used.
        atoms: element symbols, length ``n``.
        input_coords: ``[n_inputs, n, 3]`` low-quality input conformations (Å).
        target_coords: ``[n, 3]`` one (pseudo) ground state for every input, or ``[n_inputs, n, 3]``
            one target per input (Å); :meth:`target` gives input ``i``'s.
    """

    smiles: str
    atoms: tuple[str, ...]
    input_coords: np.ndarray
    target_coords: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.atoms)
        if n < 2:
            raise ValueError(f"ConformerRecord.atoms: need at least 2 atoms, got {n}")
        if self.input_coords.ndim != 3 or self.input_coords.shape[1:] != (n, 3) or not len(self.input_coords):
            raise ValueError(
                f"ConformerRecord.input_coords must be [k>=1, {n}, 3], got {self.input_coords.shape}"
            )
        k = self.input_coords.shape[0]
        if self.target_coords.shape not in ((n, 3), (k, n, 3)):
            raise ValueError(
                f"ConformerRecord.target_coords must be [{n}, 3] or [{k}, {n}, 3], "
                f"got {self.target_coords.shape}"
            )
        if not (np.isfinite(self.input_coords).all() and np.isfinite(self.target_coords).all()):
            raise ValueError("ConformerRecord coordinates contain NaN or infinite values")

    @property
    def n_atoms(self) -> int:
        return len(self.atoms)

    @property
    def n_inputs(self) -> int:
        return int(self.input_coords.shape[0])

    def target(self, i: int = 0) -> np.ndarray:
        """``[n, 3]`` target of input conformation ``i``."""
        if not 0 <= i < self.n_inputs:
            raise ValueError(f"input index must be in [0, {self.n_inputs}), got {i}")
        return self.target_coords if self.target_coords.ndim == 2 else self.target_coords[i]

    def targets(self) -> np.ndarray:
        """``[n_inputs, n, 3]`` the target of every input (repeated when they share one)."""
        if self.target_coords.ndim == 3:
            return self.target_coords
        return np.broadcast_to(self.target_coords, self.input_coords.shape).copy()

    def mol(self):  # type: ignore[no-untyped-def]  # rdkit has no type stubs
        """The RDKit molecule with explicit hydrogens (no conformer)."""
        from rdkit import Chem

        return Chem.AddHs(Chem.MolFromSmiles(self.smiles))


def nci_smiles(max_heavy: int = 12, *, min_heavy: int = 2) -> list[str]:
    """Canonical SMILES from RDKit's ``NCI/first_5K.smi``, filtered and deduplicated, in file order.

    Kept: parses, one fragment, net charge 0 and no charged atom, elements in :data:`ALLOWED_ELEMENTS`
    (+ H), ``min_heavy <= heavy atoms <= max_heavy``.
    """
    from rdkit import Chem, RDConfig, RDLogger

    check_positive("max_heavy", max_heavy, integer=True)
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    path = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
    out: list[str] = []
    seen: set[str] = set()
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                continue
            mol = Chem.MolFromSmiles(parts[0])
            if mol is None or len(Chem.GetMolFrags(mol)) != 1:
                continue
            if any(a.GetFormalCharge() != 0 or a.GetSymbol() not in ALLOWED_ELEMENTS for a in mol.GetAtoms()):
                continue
            if not min_heavy <= mol.GetNumHeavyAtoms() <= max_heavy:
                continue
            smi = Chem.MolToSmiles(mol)
            if smi not in seen:
                seen.add(smi)
                out.append(smi)
    return out


def _embed(mol, n: int, seed: int):  # type: ignore[no-untyped-def]
    from rdkit.Chem import AllChem

    params = AllChem.ETKDGv3()  # type: ignore[attr-defined]
    params.randomSeed = int(seed)
    params.numThreads = 1
    return list(AllChem.EmbedMultipleConfs(mol, numConfs=n, params=params))  # type: ignore[attr-defined]


def _check_modes(input_mode: str, target_mode: str) -> None:
    if input_mode not in INPUT_MODES:
        raise ValueError(f"input_mode must be one of {INPUT_MODES}, got {input_mode!r}")
    if target_mode not in TARGET_MODES:
        raise ValueError(f"target_mode must be one of {TARGET_MODES}, got {target_mode!r}")
    if target_mode == "mmff_from_input" and input_mode != "raw":
        raise ValueError(
            "target_mode='mmff_from_input' needs input_mode='raw' (an MMFF-minimised input is its own target)"
        )


def _positions(mol, ids) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.stack([np.asarray(mol.GetConformer(i).GetPositions(), dtype=np.float64) for i in ids])


def make_record(
    smiles: str,
    *,
    k_target: int = 10,
    n_inputs: int = 4,
    input_mode: str = "raw",
    target_mode: str = "mmff_from_input",
    seed: int = 0,
) -> ConformerRecord | None:
    """Low-quality inputs and their target(s) for one molecule (``None`` if RDKit fails).

    Inputs: ``n_inputs`` ETKDG conformers from seed ``seed + 1000``, raw or MMFF-minimised
    (``input_mode``). Target (``target_mode``): ``"mmff_from_input"``, each input's own MMFF94 minimum
    (``maxIters=1000``; needs raw inputs); ``"lowest_mmff"``, the lowest-MMFF94 energy of ``k_target``
    ETKDG conformers (seed ``seed``), each MMFF-minimised, shared by every input.
    """
    from rdkit import Chem
    from rdkit.Chem import AllChem

    check_positive("k_target", k_target, integer=True)
    check_positive("n_inputs", n_inputs, integer=True)
    _check_modes(input_mode, target_mode)
    base = Chem.MolFromSmiles(smiles)
    if base is None:
        return None
    mol = Chem.AddHs(base)
    if not AllChem.MMFFHasAllMoleculeParams(mol):  # type: ignore[attr-defined]
        return None
    atoms = tuple(a.GetSymbol() for a in mol.GetAtoms())
    if target_mode == "mmff_from_input":
        ids = _embed(mol, n_inputs, seed + 1000)
        if len(ids) < n_inputs:
            return None
        raw = _positions(mol, ids)
        res = AllChem.MMFFOptimizeMoleculeConfs(mol, numThreads=1, maxIters=1000)  # type: ignore[attr-defined]
        if any(conv == -1 for conv, _ in res):
            return None
        return ConformerRecord(smiles, atoms, raw, _positions(mol, ids))
    ids = _embed(mol, k_target, seed)
    if not ids:
        return None
    res = AllChem.MMFFOptimizeMoleculeConfs(mol, numThreads=1, maxIters=1000)  # type: ignore[attr-defined]
    energies = [e if conv != -1 else np.inf for conv, e in res]
    best = int(np.argmin(energies))
    if not np.isfinite(energies[best]):
        return None
    target = np.asarray(mol.GetConformer(ids[best]).GetPositions(), dtype=np.float64)

    inp = Chem.AddHs(base)
    in_ids = _embed(inp, n_inputs, seed + 1000)
    if len(in_ids) < n_inputs:
        return None
    if input_mode == "mmff_local":
        AllChem.MMFFOptimizeMoleculeConfs(inp, numThreads=1, maxIters=1000)  # type: ignore[attr-defined]
    inputs = _positions(inp, in_ids)
    return ConformerRecord(smiles=smiles, atoms=atoms, input_coords=inputs, target_coords=target)


def build_conformer_dataset(
    smiles: Iterable[str] | None = None,
    *,
    n_molecules: int | None = None,
    max_heavy: int = 12,
    k_target: int = 10,
    n_inputs: int = 4,
    input_mode: str = "raw",
    target_mode: str = "mmff_from_input",
    seed: int = 0,
) -> list[ConformerRecord]:
    """Records for ``smiles`` (default: the filtered NCI list, :func:`nci_smiles`).

    Args:
        smiles: molecules to use; default the NCI SMILES with at most ``max_heavy`` heavy atoms.
        n_molecules: stop after this many successful records (default: all).
        max_heavy: heavy-atom cap of the default list.
        k_target, n_inputs, input_mode, target_mode, seed: see :func:`make_record`.
    """
    if n_molecules is not None:
        check_positive("n_molecules", n_molecules, integer=True)
    _check_modes(input_mode, target_mode)
    pool = nci_smiles(max_heavy) if smiles is None else list(smiles)
    records: list[ConformerRecord] = []
    for smi in pool:
        rec = make_record(
            smi,
            k_target=k_target,
            n_inputs=n_inputs,
            input_mode=input_mode,
            target_mode=target_mode,
            seed=seed,
        )
        if rec is not None:
            records.append(rec)
            if n_molecules is not None and len(records) >= n_molecules:
                break
    if not records:
        raise ValueError("build_conformer_dataset: RDKit produced no record for the given molecules")
    return records


def scaffold_split(
    records: Sequence[ConformerRecord], frac: tuple[float, float, float] = (0.8, 0.1, 0.1), *, seed: int = 0
) -> tuple[list[int], list[int], list[int]]:
    """Bemis-Murcko scaffold split into train/valid/test index lists.

    Scaffold groups are shuffled with ``seed``, ordered largest first (stable) and assigned whole (no
    scaffold is shared between splits), each to the split that is furthest below its fraction.
    """
    from rdkit.Chem.Scaffolds import MurckoScaffold

    _check_frac(frac)
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        key = MurckoScaffold.MurckoScaffoldSmiles(smiles=r.smiles, includeChirality=False)
        groups.setdefault(key, []).append(i)
    rng = np.random.default_rng(seed)
    order = list(groups.values())
    perm = rng.permutation(len(order))
    order = [order[i] for i in perm]
    order.sort(key=len, reverse=True)  # stable: big scaffold sets go to train first
    targets = [f * len(records) for f in frac]
    parts: list[list[int]] = [[], [], []]
    for g in order:  # each scaffold set goes to the split furthest below its target size
        k = min((j for j in range(3) if targets[j] > 0), key=lambda j: (len(parts[j]) / targets[j], j))
        parts[k].extend(g)
    train, valid, test = parts
    return sorted(train), sorted(valid), sorted(test)


def _check_frac(frac: tuple[float, float, float]) -> None:
    if len(frac) != 3 or any(f < 0 for f in frac) or abs(sum(frac) - 1.0) > 1e-6:
        raise ValueError(f"frac must be three non-negative fractions summing to 1, got {frac}")


def random_split(
    records: Sequence[ConformerRecord], frac: tuple[float, float, float] = (0.8, 0.1, 0.1), *, seed: int = 0
) -> tuple[list[int], list[int], list[int]]:
    """Random train/valid/test index lists (the paper's QM9 and Molecule3D-random protocol).

    The molecules are permuted with ``seed``; the first ``round(frac[0] n)`` are train, the next
    ``round(frac[1] n)`` valid, the rest test.
    """
    _check_frac(frac)
    n = len(records)
    perm = np.random.default_rng(seed).permutation(n)
    n_tr = int(round(frac[0] * n))
    n_va = int(round(frac[1] * n))
    return (
        sorted(perm[:n_tr].tolist()),
        sorted(perm[n_tr : n_tr + n_va].tolist()),
        sorted(perm[n_tr + n_va :].tolist()),
    )


SPLIT_MODES = ("random", "scaffold")


def split_indices(
    records: Sequence[ConformerRecord], frac: tuple[float, float, float], mode: str, *, seed: int = 0
) -> tuple[list[int], list[int], list[int]]:
    """:func:`random_split` (``mode="random"``) or :func:`scaffold_split` (``"scaffold"``)."""
    if mode == "random":
        return random_split(records, frac, seed=seed)
    if mode == "scaffold":
        return scaffold_split(records, frac, seed=seed)
    raise ValueError(f"split mode must be one of {SPLIT_MODES}, got {mode!r}")


@dataclass(frozen=True)
class ConformerTensors:
    """Padded tensors of ``N`` molecules: ``[CLS] atoms [SEP]`` then padding, length ``L``.

    Attributes:
        tokens: ``[N, L]`` long, :data:`VOCAB` indices (0 = pad).
        inputs: ``[N, k, L, 3]`` input conformations, centred on the atoms; special tokens and pads at 0.
        target: ``[N, k, L, 3]`` the target of each input conformation, centred.
        atom_mask: ``[N, L]`` bool, real atoms.
    """

    tokens: Tensor
    inputs: Tensor
    target: Tensor
    atom_mask: Tensor

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def index(self, idx: Tensor, conformer: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Rows ``idx`` trimmed to their longest molecule: ``(tokens, coords, target, atom_mask)``.

        ``conformer`` (``[len(idx)]`` long) picks the input conformation per row (default 0).
        """
        tok = self.tokens[idx]
        length = int((tok != PAD).sum(1).max())
        conf = torch.zeros(len(idx), dtype=torch.long) if conformer is None else conformer
        coords = self.inputs[idx, conf, :length]
        return tok[:, :length], coords, self.target[idx, conf, :length], self.atom_mask[idx, :length]


def _centre(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=-2, keepdims=True)


def collate(records: Sequence[ConformerRecord], *, dtype: torch.dtype = torch.float32) -> ConformerTensors:
    """Pad ``records`` into :class:`ConformerTensors` (every record must have the same number of inputs)."""
    if not records:
        raise ValueError("collate: records is empty")
    k = records[0].input_coords.shape[0]
    if any(r.input_coords.shape[0] != k for r in records):
        raise ValueError("collate: every record needs the same number of input conformations")
    n_max = max(r.n_atoms for r in records) + 2
    N = len(records)
    tokens = torch.zeros(N, n_max, dtype=torch.long)
    inputs = torch.zeros(N, k, n_max, 3, dtype=dtype)
    target = torch.zeros(N, k, n_max, 3, dtype=dtype)
    mask = torch.zeros(N, n_max, dtype=torch.bool)
    for i, r in enumerate(records):
        n = r.n_atoms
        tokens[i, 0] = CLS
        tokens[i, 1 : n + 1] = torch.tensor([_INDEX.get(a, UNK) for a in r.atoms])
        tokens[i, n + 1] = SEP
        inputs[i, :, 1 : n + 1] = torch.as_tensor(_centre(r.input_coords), dtype=dtype)
        target[i, :, 1 : n + 1] = torch.as_tensor(_centre(r.targets()), dtype=dtype)
        mask[i, 1 : n + 1] = True
    return ConformerTensors(tokens=tokens, inputs=inputs, target=target, atom_mask=mask)
