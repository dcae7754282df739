"""Task matrices and merging rules from *No Task Left Behind: Isotropic Model Merging with Common
and Task-Specific Subspaces* (Marczak et al., ICML 2025, arXiv 2502.04959).

Every function works on plain state dicts (parameter name -> tensor), so any checkpoints of one
architecture merge unchanged. Conventions (Section 3 of the paper): the task matrix of task t is
``Δ_t = θ_t − θ_0``; a merge returns one direction ``Δ`` and the merged model is ``θ_0 + α·Δ``
(:func:`apply_merge`) with one scalar α chosen on validation data.

- :func:`merge_average` — weight averaging, ``mean_t Δ_t`` (with α = 1 this is the averaged model).
- :func:`merge_task_arithmetic` — task arithmetic, ``Σ_t Δ_t``.
- :func:`merge_ties` — TIES: trim each task vector to its top-k % magnitudes, elect a sign per entry
  by the sign of the trimmed sum, average the entries that agree with it ("disjoint mean").
- :func:`merge_iso_c` — Iso-C (Section 4.1): for every 2-D matrix, the SVD of ``M = Σ_t Δ_t`` with all
  singular values replaced by their mean, ``σ̄ U Vᵀ``.
- :func:`merge_iso_cts` — Iso-CTS (Section 4.2): the top ``k`` singular directions of ``M`` (common
  subspace) plus, per task, the top directions of ``Δ_t`` with the common part projected out
  (task-specific subspace); the stacked bases are made orthonormal through their polar factors and
  all singular values set to their mean.
- :func:`merge_tsv_m` — TSV-M (Gargiulo et al., *Task Singular Vectors: Reducing Task Interference in
  Model Merging*, CVPR 2025), the strongest prior method the paper compares with: each task keeps its
  top ``r/T`` singular triplets, the stacked left and right vectors are orthogonalised through their
  polar factors, and the singular values are kept as they are (not flattened).
- :func:`subspace_alignment_ratio` — SAR (Section 3, Eq. 4) as the official ``fig_3a.py`` computes
  it: the share of ``‖Δ_t‖_F`` inside the dominant left singular subspace of a merged matrix (the
  leading directions before the norm share √(cumsum σ²/Σσ²) passes 0.95; for a flat spectrum the
  directions are ordered by the summed task matrix, as the script does for Iso-C).

Parameters that are not matrices (biases, norms, 1-D tensors) are merged by plain averaging in
both Iso methods, as in the paper. As in the official code (``src/utils/iso.py``), every other 2-D
floating tensor is a matrix, token embeddings and output heads included; the one name it excludes,
CLIP's ``text_projection``, is the default ``exclude`` (:data:`OFFICIAL_EXCLUDE`). Integer buffers
never enter a task vector.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch
from torch import Tensor

__all__ = [
    "OFFICIAL_EXCLUDE",
    "StateDict",
    "apply_merge",
    "is_matrix_param",
    "load_state_dict",
    "mean_sar",
    "merge_average",
    "merge_iso_c",
    "merge_iso_cts",
    "merge_task_arithmetic",
    "merge_ties",
    "merge_tsv_m",
    "normalized_accuracy",
    "subspace_alignment_ratio",
    "task_vectors",
]

StateDict = Mapping[str, Tensor]
#: Names the official code keeps out of the spectral treatment (averaged instead): CLIP's
#: ``text_projection``. Every other 2-D tensor, token embeddings and LM heads included, is a matrix.
OFFICIAL_EXCLUDE: tuple[str, ...] = ("text_projection",)
MatrixPredicate = Callable[[str, Tensor], bool]


def is_matrix_param(name: str, tensor: Tensor) -> bool:
    """Default predicate for the spectral treatment: any 2-D floating tensor."""
    return tensor.ndim == 2 and tensor.is_floating_point()


def load_state_dict(source: str | Path | StateDict | torch.nn.Module) -> dict[str, Tensor]:
    """A state dict from a mapping, a model object (``nn.Module``, e.g. a transformers model), a
    Hugging Face model folder or a ``.pt``/``.safetensors`` file.

    Raises:
        ValueError: if ``source`` is an empty mapping, a missing path, or a folder without weights.
    """
    if isinstance(source, torch.nn.Module):
        state = {k: v.detach() for k, v in source.state_dict().items()}
        if not state:
            raise ValueError(f"source: the {type(source).__name__} has no parameters or buffers")
        return state
    if isinstance(source, Mapping):
        if not source:
            raise ValueError("source is an empty state dict")
        return {str(k): v for k, v in source.items()}
    if not isinstance(source, (str, Path)):
        raise TypeError(
            f"source must be a state dict, a model, a folder or a file path, got {type(source).__name__}"
        )
    path = Path(source)
    if path.is_dir():
        files = sorted(path.glob("*.safetensors")) or sorted(path.glob("pytorch_model*.bin"))
        if not files:
            raise ValueError(f"source: no *.safetensors or pytorch_model*.bin in {str(path)!r}")
    elif path.is_file():
        files = [path]
    else:
        raise ValueError(f"source: {str(path)!r} does not exist")
    out: dict[str, Tensor] = {}
    for f in files:
        if f.suffix == ".safetensors":
            from safetensors.torch import load_file

            out.update(load_file(str(f)))
        else:
            obj = torch.load(str(f), map_location="cpu", weights_only=True)
            if not isinstance(obj, Mapping):
                raise ValueError(f"source: {str(f)!r} does not hold a state dict")
            out.update(obj)
    if not out:
        raise ValueError(f"source: {str(path)!r} holds no tensors")
    return out


def _check_state(name: str, sd: StateDict) -> None:
    if not isinstance(sd, Mapping):
        raise TypeError(f"{name} must be a mapping of parameter name -> tensor, got {type(sd).__name__}")
    if not sd:
        raise ValueError(f"{name} is empty")
    for key, t in sd.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}[{key!r}] must be a torch.Tensor, got {type(t).__name__}")
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise ValueError(f"{name}[{key!r}] contains NaN or infinite values")


def task_vectors(
    pretrained: StateDict | str | Path | torch.nn.Module,
    finetuned: Sequence[StateDict | str | Path | torch.nn.Module],
    *,
    keys: Sequence[str] | None = None,
) -> list[dict[str, Tensor]]:
    """Task matrices ``Δ_t = θ_t − θ_0`` (float32) for every floating parameter (or only ``keys``).

    Args:
        pretrained: the common base, as a state dict, a model or a path (:func:`load_state_dict`).
        finetuned: one or more fine-tuned checkpoints of the same architecture (same forms).
        keys: restrict to these parameter names (e.g. the trained ones).

    Raises:
        ValueError: no checkpoints, mismatched names or shapes, NaN/inf, or an unknown key.
    """
    base = load_state_dict(pretrained)
    _check_state("pretrained", base)
    if isinstance(finetuned, (str, Path, Mapping, torch.nn.Module)) or not isinstance(finetuned, Sequence):
        raise TypeError("finetuned must be a sequence of state dicts, models or paths")
    if len(finetuned) == 0:
        raise ValueError("finetuned must hold at least one checkpoint")
    names = list(keys) if keys is not None else [k for k, v in base.items() if v.is_floating_point()]
    if not names:
        raise ValueError("keys is empty: nothing to merge")
    for k in names:
        if k not in base:
            raise ValueError(f"keys: {k!r} is not a parameter of pretrained")
        if not base[k].is_floating_point():
            raise TypeError(f"keys: {k!r} is not a floating-point parameter ({base[k].dtype})")
    out = []
    for i, ft in enumerate(finetuned):
        sd = load_state_dict(ft)
        _check_state(f"finetuned[{i}]", sd)
        delta = {}
        for k in names:
            if k not in sd:
                raise ValueError(f"finetuned[{i}] lacks parameter {k!r}")
            if sd[k].shape != base[k].shape:
                raise ValueError(
                    f"finetuned[{i}][{k!r}] has shape {tuple(sd[k].shape)}, pretrained {tuple(base[k].shape)}"
                )
            delta[k] = sd[k].detach().float() - base[k].detach().float()
        out.append(delta)
    return out


def _check_tvs(tvs: Sequence[StateDict]) -> list[str]:
    if isinstance(tvs, Mapping) or not isinstance(tvs, Sequence):
        raise TypeError("task_vecs must be a sequence of state dicts (one per task)")
    if len(tvs) == 0:
        raise ValueError("task_vecs must hold at least one task vector")
    for i, tv in enumerate(tvs):
        _check_state(f"task_vecs[{i}]", tv)
    names = list(tvs[0].keys())
    for k in names:
        if not tvs[0][k].is_floating_point():
            raise TypeError(f"task_vecs[0][{k!r}] must be floating point, got {tvs[0][k].dtype}")
    for i, tv in enumerate(tvs[1:], start=1):
        if set(tv.keys()) != set(names):
            raise ValueError(f"task_vecs[{i}] has different parameter names from task_vecs[0]")
        for k in names:
            if tv[k].shape != tvs[0][k].shape:
                raise ValueError(
                    f"task_vecs[{i}][{k!r}] shape {tuple(tv[k].shape)} != {tuple(tvs[0][k].shape)}"
                )
            if not tv[k].is_floating_point():
                raise TypeError(f"task_vecs[{i}][{k!r}] must be floating point, got {tv[k].dtype}")
    return names


def merge_average(task_vecs: Sequence[StateDict]) -> dict[str, Tensor]:
    """Weight averaging: ``mean_t Δ_t`` for every parameter."""
    names = _check_tvs(task_vecs)
    return {k: torch.stack([tv[k].float() for tv in task_vecs]).mean(0) for k in names}


def merge_task_arithmetic(task_vecs: Sequence[StateDict]) -> dict[str, Tensor]:
    """Task arithmetic (Ilharco et al. 2023): ``Σ_t Δ_t`` for every parameter."""
    names = _check_tvs(task_vecs)
    return {k: torch.stack([tv[k].float() for tv in task_vecs]).sum(0) for k in names}


def merge_ties(
    task_vecs: Sequence[StateDict], *, density: float = 0.2, trim_scope: str = "global"
) -> dict[str, Tensor]:
    """TIES merging (Yadav et al. 2023): trim, elect sign, disjoint mean.

    Trim: each task vector keeps its ``density`` fraction (rounded up, at least one entry) of
    largest-magnitude entries. With ``trim_scope="global"`` (default) the ranking runs over all
    parameters of the task flattened together, as in the original TIES code and the paper's
    repository; with ``"per_tensor"`` every tensor keeps its own top fraction, as mergekit's
    ``ties`` method does. Elect: the sign of each entry is the sign of the sum of the trimmed values.
    Disjoint mean: the mean of the trimmed values that share the elected sign (zero where no value
    survives or the trimmed sum is exactly zero).

    Args:
        density: fraction of entries kept per task (or per task and tensor), in (0, 1] (paper: 0.2).
        trim_scope: ``"global"`` or ``"per_tensor"``.
    """
    names = _check_tvs(task_vecs)
    if isinstance(density, bool) or not isinstance(density, (int, float)) or not 0.0 < float(density) <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density!r}")
    if trim_scope not in ("global", "per_tensor"):
        raise ValueError(f"trim_scope must be 'global' or 'per_tensor', got {trim_scope!r}")
    if trim_scope == "per_tensor":
        return {
            k: _ties_flat(
                torch.stack([tv[k].float().reshape(-1) for tv in task_vecs]), float(density)
            ).reshape(task_vecs[0][k].shape)
            for k in names
        }
    flat = torch.stack([torch.cat([tv[k].float().reshape(-1) for k in names]) for tv in task_vecs])
    merged = _ties_flat(flat, float(density))
    out, start = {}, 0
    for k in names:
        size = task_vecs[0][k].numel()
        out[k] = merged[start : start + size].reshape(task_vecs[0][k].shape).clone()
        start += size
    return out


def _ties_flat(flat: Tensor, density: float) -> Tensor:
    """TIES on a [T, N] matrix of flattened task vectors (trim per row, elect, disjoint mean)."""
    n = flat.shape[1]
    keep = max(1, int(math.ceil(density * n)))
    trimmed = torch.zeros_like(flat)
    for t in range(flat.shape[0]):
        idx = torch.topk(flat[t].abs(), keep, sorted=False).indices
        trimmed[t, idx] = flat[t, idx]
    sign = torch.sign(trimmed.sum(0))
    agree = (torch.sign(trimmed) == sign) & (trimmed != 0)
    count = agree.sum(0).clamp(min=1)
    return (trimmed * agree).sum(0) / count


def _svd_dtype(m: Tensor, svd_dtype: torch.dtype | None) -> torch.dtype:
    """The SVD's dtype: ``svd_dtype``, or by default float64 up to 10⁶ entries, else float32."""
    if svd_dtype is not None:
        return svd_dtype
    return torch.float64 if m.numel() <= 1_000_000 else torch.float32


def _check_svd_dtype(svd_dtype: torch.dtype | None) -> None:
    if svd_dtype is not None and svd_dtype not in (torch.float32, torch.float64):
        raise ValueError(f"svd_dtype must be None, torch.float32 or torch.float64, got {svd_dtype!r}")


def _svd(m: Tensor, svd_dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor, Tensor]:
    u, s, vh = torch.linalg.svd(m.to(_svd_dtype(m, svd_dtype)), full_matrices=False)
    return u, s, vh


def _polar(a: Tensor) -> Tensor:
    """The nearest matrix with orthonormal columns (or rows): ``P Qᵀ`` from ``a = P S Qᵀ``."""
    p, _, qh = torch.linalg.svd(a, full_matrices=False)
    return p @ qh


def _split(
    task_vecs: Sequence[StateDict], is_matrix: MatrixPredicate, exclude: Sequence[str]
) -> tuple[list[str], list[str]]:
    names = _check_tvs(task_vecs)
    if not callable(is_matrix):
        raise TypeError("is_matrix must be a callable (name, tensor) -> bool")
    mats = [
        k
        for k in names
        if task_vecs[0][k].ndim == 2 and is_matrix(k, task_vecs[0][k]) and not any(e in k for e in exclude)
    ]
    return mats, [k for k in names if k not in mats]


def merge_iso_c(
    task_vecs: Sequence[StateDict],
    *,
    is_matrix: MatrixPredicate = is_matrix_param,
    exclude: Sequence[str] = OFFICIAL_EXCLUDE,
    svd_dtype: torch.dtype | None = None,
) -> dict[str, Tensor]:
    """Iso-C (Section 4.1, Eq. 6): ``σ̄ U Vᵀ`` from the SVD ``U Σ Vᵀ`` of ``Σ_t Δ_t``, σ̄ = mean(diag Σ).

    Matrices are the 2-D tensors accepted by ``is_matrix`` and not containing any ``exclude``
    substring; every other tensor is averaged over tasks. ``svd_dtype``: the SVDs' precision
    (default float64 up to 10⁶ entries, else float32; the official code runs float32).
    """
    _check_svd_dtype(svd_dtype)
    mats, others = _split(task_vecs, is_matrix, exclude)
    out = {k: torch.stack([tv[k].float() for tv in task_vecs]).mean(0) for k in others}
    for k in mats:
        m = torch.stack([tv[k].float() for tv in task_vecs]).sum(0)
        u, s, vh = _svd(m, svd_dtype)
        out[k] = (s.mean() * (u @ vh)).to(torch.float32)
    return {k: out[k] for k in task_vecs[0]}


def _cts_sizes(r: int, n_tasks: int, fraction: float) -> tuple[int, int]:
    """Common rank ``k`` and per-task rank ``s_t`` with ``k + T·s_t = r`` (paper's rounding)."""
    k = int(r * fraction)
    s = int(round((r - k) / n_tasks)) * n_tasks
    s = min(s, (r // n_tasks) * n_tasks)
    return r - s, s // n_tasks


def merge_iso_cts(
    task_vecs: Sequence[StateDict],
    *,
    common_space_fraction: float = 0.8,
    is_matrix: MatrixPredicate = is_matrix_param,
    exclude: Sequence[str] = OFFICIAL_EXCLUDE,
    svd_dtype: torch.dtype | None = None,
) -> dict[str, Tensor]:
    """Iso-CTS (Section 4.2, Algorithm 1): common plus task-specific subspaces, isotropic scaling.

    For an m×n matrix, r = min(m, n): the common subspace is the top ``k ≈ f·r`` singular triplets
    of ``M = Σ_t Δ_t``; each task adds its top ``s_t = (r − k)/T`` triplets of ``Δ_t − U_c U_cᵀ Δ_t``.
    The stacked left vectors (m×r) and right vectors (r×n) are replaced by their polar factors and
    every singular value by the mean of the stacked ones. With ``f = 1`` this is Iso-C.

    Args:
        common_space_fraction: f in (0, 1] (paper default 0.8).
        svd_dtype: the SVDs' precision (as in :func:`merge_iso_c`).
    """
    _check_svd_dtype(svd_dtype)
    f = common_space_fraction
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 < float(f) <= 1.0:
        raise ValueError(f"common_space_fraction must be in (0, 1], got {f!r}")
    mats, others = _split(task_vecs, is_matrix, exclude)
    n_tasks = len(task_vecs)
    out = {k: torch.stack([tv[k].float() for tv in task_vecs]).mean(0) for k in others}
    for name in mats:
        m = torch.stack([tv[name].float() for tv in task_vecs]).sum(0)
        u, s, vh = _svd(m, svd_dtype)
        r = s.shape[0]
        k, st = _cts_sizes(r, n_tasks, float(f))
        if st == 0:
            out[name] = (s.mean() * (u @ vh)).to(torch.float32)
            continue
        uc, sc, vhc = u[:, :k], s[:k], vh[:k]
        us, ss, vs = [], [], []
        for tv in task_vecs:
            d = tv[name].to(u.dtype)
            d = d - uc @ (uc.T @ d)
            ut, sig, vht = torch.linalg.svd(d, full_matrices=False)
            us.append(ut[:, :st])
            ss.append(sig[:st])
            vs.append(vht[:st])
        u_all = torch.cat([*us, uc], dim=1)
        vh_all = torch.cat([*vs, vhc], dim=0)
        s_all = torch.cat([*ss, sc])
        out[name] = (s_all.mean() * (_polar(u_all) @ _polar(vh_all))).to(torch.float32)
    return {k: out[k] for k in task_vecs[0]}


def merge_tsv_m(
    task_vecs: Sequence[StateDict],
    *,
    is_matrix: MatrixPredicate = is_matrix_param,
    exclude: Sequence[str] = OFFICIAL_EXCLUDE,
    svd_dtype: torch.dtype | None = None,
) -> dict[str, Tensor]:
    """TSV-M, Task Singular Vectors merging (Gargiulo et al., CVPR 2025; a baseline in the paper's
    Tables 1-3).

    For an m×n matrix with r = min(m, n) and T tasks, each task keeps the top ``k = ⌊r/T⌋`` singular
    triplets of its own ``Δ_t`` (at least one). The T blocks of left vectors are placed side by side
    (m×Tk), the right vectors stacked (Tk×n) and the singular values concatenated; both bases are
    replaced by their polar factors (nearest matrices with orthonormal columns / rows, which removes
    the interference between tasks' directions), and the merge is
    ``U_⊥ diag(σ_concat) V_⊥ᵀ`` — unlike Iso-CTS the singular values are kept, not flattened. When the
    tasks' matrices already have mutually orthogonal left and right subspaces of rank ≤ k, this is
    exactly their sum (task arithmetic). Tensors that are not matrices are averaged. Like every merge
    here the result is a direction Δ, scaled by α in :func:`apply_merge` (the reference code sums
    the triplets and then searches α on validation data). ``svd_dtype``: as in :func:`merge_iso_c`.
    """
    _check_svd_dtype(svd_dtype)
    mats, others = _split(task_vecs, is_matrix, exclude)
    n_tasks = len(task_vecs)
    out = {k: torch.stack([tv[k].float() for tv in task_vecs]).mean(0) for k in others}
    for name in mats:
        us, ss, vs = [], [], []
        for tv in task_vecs:
            ut, sig, vht = _svd(tv[name].float(), svd_dtype)
            k = max(1, sig.shape[0] // n_tasks)
            us.append(ut[:, :k])
            ss.append(sig[:k])
            vs.append(vht[:k])
        u_all, s_all, vh_all = torch.cat(us, dim=1), torch.cat(ss), torch.cat(vs, dim=0)
        out[name] = ((_polar(u_all) * s_all) @ _polar(vh_all)).to(torch.float32)
    return {k: out[k] for k in task_vecs[0]}


def apply_merge(pretrained: StateDict, merged: StateDict, alpha: float) -> dict[str, Tensor]:
    """``θ_0 + α·Δ`` for the parameters in ``merged``; the rest of ``pretrained`` is copied unchanged."""
    _check_state("pretrained", pretrained)
    _check_state("merged", merged)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(float(alpha)):
        raise ValueError(f"alpha must be a finite number, got {alpha!r}")
    out = dict(pretrained)
    for k, d in merged.items():
        if k not in pretrained:
            raise ValueError(f"merged has parameter {k!r} that pretrained lacks")
        if d.shape != pretrained[k].shape:
            raise ValueError(
                f"merged[{k!r}] shape {tuple(d.shape)} != pretrained {tuple(pretrained[k].shape)}"
            )
        base = pretrained[k]
        out[k] = (base.float() + float(alpha) * d.float()).to(base.dtype)
    return out


def _sar_rank(s: Tensor, energy: float) -> int:
    """The official rank rule (``calc_rank`` in the paper's ``fig_3a.py``): the number of leading
    singular values before ``√(cumsum σ² / Σσ²)`` first exceeds ``energy`` (the Frobenius-norm share,
    not the energy share). With ``energy = 1`` every direction counts."""
    total = float((s**2).sum())
    if total == 0.0:
        return 0
    share = torch.sqrt(torch.cumsum(s**2, 0) / total)
    return min(int((share <= float(energy) + 1e-12).sum()), s.shape[0])


def _flat_scale(merged: Tensor) -> float:
    """``σ̄²`` when every singular value of ``merged`` equals ``σ̄`` (the Gram matrix of its short side
    is ``σ̄² I`` to within 2·10⁻⁴ σ̄² in every entry), else 0. A matrix product, no SVD."""
    gram = merged.T @ merged if merged.shape[0] >= merged.shape[1] else merged @ merged.T
    scale = float(gram.diagonal().mean())
    if scale <= 0.0:
        return 0.0
    dev = (gram - scale * torch.eye(gram.shape[0], dtype=gram.dtype)).abs().max()
    return scale if float(dev) <= 2e-4 * scale else 0.0


def _sar_basis(
    merged: Tensor, summed: Tensor | None, energy: float, svd_dtype: torch.dtype | None = None
) -> Tensor:
    """The left singular directions of ``merged`` that SAR projects on (``m × k``).

    A merge with a flat spectrum (Iso-C, Iso-CTS) has no preferred basis: any orthonormal basis of
    its column space is a set of singular vectors, and an arbitrary one cut at a rank makes SAR a
    constant of the rank (about √0.9 for a random cut). The official figure script takes the
    directions of the summed task matrix instead (for Iso-C, whose singular vectors are the sum's,
    ``U_iso_k = U_sum[:, :k]``, with k from the flat spectrum ``S_iso = mean(S)·1``); so for a flat
    spectrum and a given ``summed`` the merge's column space (an orthonormal basis Q from a QR
    factorisation) is ordered by ``summed``: Q times the left singular vectors of ``Qᵀ · summed``,
    exactly the sum's own for Iso-C. One SVD either way."""
    m = merged.to(_svd_dtype(merged, svd_dtype))
    if summed is not None and _flat_scale(m) > 0.0:
        r = min(m.shape)
        k = _sar_rank(torch.ones(r, dtype=m.dtype), energy)
        q = torch.linalg.qr(m)[0] if m.shape[0] > m.shape[1] else None
        target = summed.to(m.dtype) if q is None else q.T @ summed.to(m.dtype)
        u = torch.linalg.svd(target, full_matrices=False)[0]
        return (u if q is None else q @ u)[:, :k]
    u, s, _ = torch.linalg.svd(m, full_matrices=False)
    return u[:, : _sar_rank(s, energy)]


def subspace_alignment_ratio(
    task_matrix: Tensor,
    merged_matrix: Tensor,
    *,
    energy: float = 0.95,
    summed: Tensor | None = None,
    svd_dtype: torch.dtype | None = None,
) -> float:
    """SAR (Eq. 4), as the paper's ``fig_3a.py`` computes it: ``‖U_k U_kᵀ Δ_t‖_F / ‖Δ_t‖_F`` with
    ``U_k`` the top-k left singular vectors of the merged matrix and k the number of leading
    singular values before ``√(cumsum σ²/Σσ²)`` exceeds ``energy`` (:func:`_sar_rank`).

    Args:
        summed: the summed task matrix ``Σ_t Δ_t``; when the merge's spectrum is flat (Iso-C,
            Iso-CTS) its directions order the merge's basis, as in the official script
            (:func:`_sar_basis`). Without it a flat spectrum gives an arbitrary basis.
        svd_dtype: the SVD's precision (as in :func:`merge_iso_c`).

    Returns NaN when ``Δ_t`` is zero.

    Raises:
        ValueError: non-2-D, mismatched, empty or non-finite inputs, or ``energy`` outside (0, 1].
    """
    pairs = [("task_matrix", task_matrix), ("merged_matrix", merged_matrix)]
    if summed is not None:
        pairs.append(("summed", summed))
    for nm, x in pairs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{nm} must be a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 2:
            raise ValueError(f"{nm} must be 2-D, got shape {tuple(x.shape)}")
        if x.numel() == 0:
            raise ValueError(f"{nm} is empty")
        if not x.is_floating_point():
            raise TypeError(f"{nm} must be floating point, got {x.dtype}")
        if not torch.isfinite(x).all():
            raise ValueError(f"{nm} contains NaN or infinite values")
    for nm, x in pairs[1:]:
        if x.shape != task_matrix.shape:
            raise ValueError(f"task_matrix {tuple(task_matrix.shape)} and {nm} {tuple(x.shape)} differ")
    if isinstance(energy, bool) or not isinstance(energy, (int, float)) or not 0.0 < float(energy) <= 1.0:
        raise ValueError(f"energy must be in (0, 1], got {energy!r}")
    _check_svd_dtype(svd_dtype)
    uk = _sar_basis(merged_matrix, summed, float(energy), svd_dtype)
    d = task_matrix.to(uk.dtype)
    norm = float(torch.linalg.norm(d))
    if norm == 0.0:
        return math.nan
    if uk.shape[1] == 0:
        return 0.0
    return float(torch.linalg.norm(uk @ (uk.T @ d)) / norm)


def mean_sar(
    task_vecs: Sequence[StateDict],
    merged: StateDict,
    *,
    is_matrix: MatrixPredicate = is_matrix_param,
    energy: float = 0.95,
    svd_dtype: torch.dtype | None = None,
) -> list[float]:
    """SAR of each task vector with a merge (:func:`subspace_alignment_ratio`, the official rule,
    flat spectra ordered by the summed task matrix), averaged over the shared matrix parameters (as
    in the paper's Fig. 3); one basis per merged matrix serves all tasks. ``svd_dtype``: as in
    :func:`merge_iso_c`."""
    _check_svd_dtype(svd_dtype)
    names = _check_tvs(task_vecs)
    _check_state("merged", merged)
    if isinstance(energy, bool) or not isinstance(energy, (int, float)) or not 0.0 < float(energy) <= 1.0:
        raise ValueError(f"energy must be in (0, 1], got {energy!r}")
    sums = [0.0] * len(task_vecs)
    counts = [0] * len(task_vecs)
    for k in names:
        d0 = task_vecs[0][k]
        if k not in merged or d0.ndim != 2 or not is_matrix(k, d0) or merged[k].shape != d0.shape:
            continue
        if float(torch.linalg.norm(merged[k].float())) == 0.0:
            continue
        summed = torch.stack([tv[k].float() for tv in task_vecs]).sum(0)
        uk = _sar_basis(merged[k].float(), summed, float(energy), svd_dtype)
        for t, tv in enumerate(task_vecs):
            d = tv[k].to(uk.dtype)
            norm = float(torch.linalg.norm(d))
            if norm > 0.0:
                proj = float(torch.linalg.norm(uk @ (uk.T @ d))) if uk.shape[1] else 0.0
                sums[t] += proj / norm
                counts[t] += 1
    if not any(counts):
        raise ValueError("task_vecs and merged share no non-zero matrix parameter")
    return [sums[t] / counts[t] if counts[t] else math.nan for t in range(len(task_vecs))]


def normalized_accuracy(merged_acc: float, finetuned_acc: float) -> float:
    """``merged / fine-tuned`` accuracy of one task (NaN when the fine-tuned accuracy is 0)."""
    for nm, v in (("merged_acc", merged_acc), ("finetuned_acc", finetuned_acc)):
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not math.isfinite(float(v))
            or not 0 <= v <= 1
        ):
            raise ValueError(f"{nm} must be an accuracy in [0, 1], got {v!r}")
    return float(merged_acc) / float(finetuned_acc) if finetuned_acc > 0 else math.nan
