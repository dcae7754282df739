"""Tests of WGFormer (Sinkhorn attention, pair track, equivariant decoder), EGNN, loss, metrics and data."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.life.wgformer import (
    EGNN,
    ConformerRecord,
    EGNNConfig,
    SinkhornAttention,
    WGFormer,
    WGFormerConfig,
    align,
    build_conformer_dataset,
    c_rmsd,
    collate,
    conformer_loss,
    distance_errors,
    equivariant_update,
    kabsch_rotation,
    mmff_refine,
    pairwise_distances,
    predict,
    random_split,
    scaffold_split,
    sinkhorn,
    train_model,
    validation_loss,
)
from icml25.life.wgformer.data import CLS, PAD, SEP
from icml25.nn.train import FitConfig

SMALL = WGFormerConfig(dim=16, layers=2, heads=2, ffn=32, n_gauss=8, dropout=0.0, zero_init_decoder=False)
SMILES = ["CCO", "c1ccccc1O", "CC(=O)N", "OCCN", "CC(C)CO", "c1ccncc1"]


@pytest.fixture
def one_thread():
    """Molecules are ~20 tokens: one torch thread is faster than several (and fair to a shared machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def records() -> list[ConformerRecord]:
    return build_conformer_dataset(SMILES, k_target=3, n_inputs=2)


@pytest.fixture(scope="module")
def batch(records):
    return collate(records).index(torch.arange(len(records)))


def _rotation(seed: int, dtype=torch.float64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    if torch.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q.to(dtype)


# ---------------------------------------------------------------------------------------------- data


def test_records_and_collate(records) -> None:
    assert len(records) == len(SMILES)
    r = records[1]
    assert r.input_coords.shape == (2, r.n_atoms, 3) and r.target_coords.shape == (2, r.n_atoms, 3)
    assert "H" in r.atoms  # hydrogens are explicit
    data = collate(records)
    n_max = max(x.n_atoms for x in records) + 2
    assert data.tokens.shape == (len(records), n_max) and data.inputs.shape == (len(records), 2, n_max, 3)
    for i, x in enumerate(records):
        assert data.tokens[i, 0] == CLS and data.tokens[i, x.n_atoms + 1] == SEP
        assert (data.tokens[i, x.n_atoms + 2 :] == PAD).all()
        assert int(data.atom_mask[i].sum()) == x.n_atoms
        centred = data.inputs[i, :, data.atom_mask[i]].mean(1)
        assert centred.abs().max() < 1e-5  # centred on the atoms
    tokens, coords, target, mask = data.index(torch.tensor([0, 2]))
    assert tokens.shape[1] == max(records[0].n_atoms, records[2].n_atoms) + 2  # trimmed to the batch


def test_target_is_the_mmff_minimum_reached_from_each_raw_input(records) -> None:
    for r in records[:3]:
        assert r.target_coords.shape == (r.n_inputs, r.n_atoms, 3)
        for c in range(r.n_inputs):
            preds, _ = mmff_refine([r], conformer=c)
            assert np.allclose(preds[0], r.target(c), atol=1e-6)  # the target is MMFF from this very input
            assert np.abs(r.input_coords[c] - r.target(c)).max() > 1e-3  # and differs from the raw input
    data = collate(records)
    assert data.target.shape == data.inputs.shape
    _, x1, t1, m1 = data.index(torch.tensor([1]), torch.tensor([1]))
    r = records[1]
    assert np.allclose(t1[0][m1[0]].numpy(), r.target(1) - r.target(1).mean(0), atol=1e-5)
    assert np.allclose(x1[0][m1[0]].numpy(), r.input_coords[1] - r.input_coords[1].mean(0), atol=1e-5)


def test_lowest_mmff_mode_shares_one_target_and_modes_are_checked() -> None:
    (r,) = build_conformer_dataset(
        ["CCO"], k_target=3, n_inputs=2, input_mode="mmff_local", target_mode="lowest_mmff"
    )
    assert r.target_coords.shape == (r.n_atoms, 3)
    assert np.array_equal(r.target(0), r.target(1)) and r.targets().shape == (2, r.n_atoms, 3)
    with pytest.raises(ValueError, match="needs input_mode='raw'"):
        build_conformer_dataset(["CCO"], input_mode="mmff_local")
    with pytest.raises(ValueError, match="target_mode"):
        build_conformer_dataset(["CCO"], target_mode="dft")
    with pytest.raises(ValueError, match="input index"):
        r.target(2)
    with pytest.raises(ValueError, match="target_coords"):
        ConformerRecord("CC", ("C", "C"), np.zeros((2, 2, 3)), np.zeros((3, 2, 3)))


def test_cache_round_trip_keeps_per_input_targets(records, tmp_path) -> None:
    from icml25.life.wgformer.check import _load, _save

    _save(records, tmp_path / "d.npz")
    back = _load(tmp_path / "d.npz")
    for a, b in zip(records, back, strict=True):
        assert a.smiles == b.smiles and a.atoms == b.atoms
        assert np.array_equal(a.input_coords, b.input_coords) and np.array_equal(a.targets(), b.targets())


def test_scaffold_split_is_a_partition_without_shared_scaffolds(records) -> None:
    from rdkit.Chem.Scaffolds import MurckoScaffold

    tr, va, te = scaffold_split(records, (0.5, 0.25, 0.25))
    assert sorted(tr + va + te) == list(range(len(records)))
    scaf = [MurckoScaffold.MurckoScaffoldSmiles(smiles=r.smiles) for r in records]
    for a, b in ((tr, va), (tr, te), (va, te)):
        assert not {scaf[i] for i in a} & {scaf[i] for i in b}
    with pytest.raises(ValueError, match="frac"):
        scaffold_split(records, (0.5, 0.5, 0.5))


def test_random_split_is_a_seeded_partition_of_the_requested_sizes() -> None:
    recs = [
        ConformerRecord(f"C{'C' * i}O", ("C", "O"), np.zeros((1, 2, 3)), np.zeros((2, 3))) for i in range(20)
    ]
    tr, va, te = random_split(recs, (0.7, 0.1, 0.2), seed=3)
    assert sorted(tr + va + te) == list(range(20)) and (len(tr), len(va), len(te)) == (14, 2, 4)
    assert (tr, va, te) == random_split(recs, (0.7, 0.1, 0.2), seed=3)
    assert (tr, va, te) != random_split(recs, (0.7, 0.1, 0.2), seed=4)
    with pytest.raises(ValueError, match="frac"):
        random_split(recs, (0.7, 0.1, 0.1))


def test_check_split_gives_every_part_the_acyclic_molecules() -> None:
    """Defect fixed: under the scaffold split every acyclic molecule (one scaffold, '') went to train,
    and in the small check's data (86 % acyclic) validation and test held none of them."""
    from icml25.life.wgformer.check import CHECK
    from icml25.life.wgformer.data import split_indices

    acyclic = [f"C{'C' * (i % 7)}{'O' * (i // 7)}N" for i in range(80)]
    rings = [f"C1CC{'C' * (i % 3)}C1{'C' * (i // 3)}" for i in range(20)]
    recs = [ConformerRecord(s, ("C", "N"), np.zeros((1, 2, 3)), np.zeros((2, 3))) for s in acyclic + rings]
    cfg = CHECK.config("small")
    tr, va, te = split_indices(recs, cfg.split, cfg.split_mode, seed=cfg.data_seed)
    for part in (tr, va, te):
        share = np.mean([i < 80 for i in part])
        assert 0.5 < share < 1.0  # the population's share is 0.8
    tr, va, te = split_indices(recs, cfg.split, "scaffold", seed=cfg.data_seed)
    assert not any(i < 80 for i in va + te)  # what the scaffold split does with one big scaffold
    with pytest.raises(ValueError, match="split"):
        split_indices(recs, cfg.split, "stratified")


def test_bad_records_and_settings() -> None:
    with pytest.raises(ValueError, match="input_coords"):
        ConformerRecord("CC", ("C", "C"), np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        ConformerRecord("CC", ("C", "C"), np.full((1, 2, 3), np.nan), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="input_mode"):
        build_conformer_dataset(["CC"], input_mode="dft")
    with pytest.raises(ValueError, match="no record"):
        build_conformer_dataset(["not a smiles"])
    with pytest.raises(ValueError, match="n_molecules"):
        build_conformer_dataset(["CC"], n_molecules=0)


# ---------------------------------------------------------------------------------------------- sinkhorn


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 9), pad=st.integers(0, 4), seed=st.integers(0, 10_000))
def test_sinkhorn_rows_sum_to_one_columns_converge_padding_zero(n: int, pad: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    mask = torch.zeros(2, n + pad, dtype=torch.bool)
    mask[0, :n] = True
    mask[1, : max(2, n - 1)] = True
    logits = torch.randn(2, 3, n + pad, n + pad, generator=gen, dtype=torch.float64)
    p = sinkhorn(logits, mask, n_iter=3)
    rows, valid = p.sum(-1), mask[:, None].double()
    assert torch.allclose(rows, valid, atol=1e-10)  # exact rows after the last (row) step
    assert (p[~(mask[:, None, :, None] & mask[:, None, None, :]).expand_as(p)] == 0).all()
    p_long = sinkhorn(logits, mask, n_iter=301)
    assert torch.allclose(p_long.sum(-2), valid, atol=1e-4)  # columns -> 1 as iterations grow
    assert (p >= 0).all()


def test_sinkhorn_equals_naive_loop_and_symmetric_kernel_gives_symmetric_plan() -> None:
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(1, 1, 5, 5, generator=gen, dtype=torch.float64)
    mask = torch.ones(1, 5, dtype=torch.bool)
    k = s[0, 0].exp()
    a = torch.ones(5, dtype=torch.float64) / 5
    u, v = torch.ones(5, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    u = a / (k @ v)
    v = a / (k.T @ u)
    u = a / (k @ v)
    naive = 5 * u[:, None] * k * v[None]
    assert torch.allclose(sinkhorn(s, mask, n_iter=3)[0, 0], naive, atol=1e-12)
    sym = s + s.transpose(-1, -2)
    p = sinkhorn(sym, mask, n_iter=401)[0, 0]
    assert torch.allclose(p, p.T, atol=1e-6)  # symmetric kernel -> symmetric doubly-stochastic plan
    with pytest.raises(ValueError, match="n_iter"):
        sinkhorn(s, mask, n_iter=0)


def test_attention_kinds_structure() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False
    bias = torch.zeros(2, 2, 6, 6, dtype=torch.float64)
    att = SinkhornAttention(16, 2, kind="sinkhorn").double()
    _, logits, p = att(x, bias, mask)
    q = att.w(x).view(2, 6, 2, 8).transpose(1, 2)
    assert torch.allclose(logits, q @ q.transpose(-1, -2) / 8)  # tied QK, official 1/e scaling
    assert torch.allclose(logits, logits.transpose(-1, -2))
    assert torch.allclose(p.sum(-1), mask[:, None].double(), atol=1e-10)
    # the value map is x (-A Aᵀ) (official orientation): negative semi-definite, <x, v(x)> <= 0
    w = att.w.weight
    v = x @ -(w @ w.T)
    assert ((x * v).sum(-1) <= 1e-12).all()
    soft = SinkhornAttention(16, 2, kind="softmax").double()
    _, _, ps = soft(x, bias, mask)
    assert torch.allclose(ps.sum(-1), mask[:, None].double(), atol=1e-12)
    assert (ps[1, :, :, 4:] == 0).all()
    with pytest.raises(ValueError, match="kind"):
        SinkhornAttention(16, 2, kind="linear")  # type: ignore[arg-type]


def _official_sinkhorn(c: torch.Tensor, max_iter: int = 3) -> torch.Tensor:
    """A naive log-domain Sinkhorn as the official one runs it (eps = 1, no padding, alternating row and
    column updates, the column potential detached): the plan ``Π``, a reference for the gradient."""
    mu = torch.full(c.shape[:-1], 1.0 / c.shape[-2], dtype=c.dtype)
    nu = torch.full(c.shape[:-2] + c.shape[-1:], 1.0 / c.shape[-1], dtype=c.dtype)
    u, v = torch.zeros_like(mu), torch.zeros_like(nu)

    def m(u, v):
        return c + u.unsqueeze(-1) + v.unsqueeze(-2)

    for i in range(max_iter):
        if i % 2 == 0:
            u = torch.log(mu) - torch.logsumexp(m(u, v), dim=-1) + u
        else:
            v = torch.log(nu) - torch.logsumexp(m(u, v).transpose(-2, -1), dim=-1) + v
            v = v.detach()
            v[v > 9e8] = 0.0
    return torch.exp(m(u, v))


def test_sinkhorn_detach_flag_matches_the_official_gradient_and_changes_only_the_gradient() -> None:
    gen = torch.Generator().manual_seed(7)
    s = torch.randn(2, 3, 6, 6, generator=gen, dtype=torch.float64)
    g = torch.randn(2, 3, 6, 6, generator=gen, dtype=torch.float64)
    mask = torch.ones(2, 6, dtype=torch.bool)
    grads = {}
    for name, fn in (
        ("official", lambda t: 6 * _official_sinkhorn(t)),
        ("detach", lambda t: sinkhorn(t, mask, 3, detach_columns=True)),
        ("full", lambda t: sinkhorn(t, mask, 3, detach_columns=False)),
        ("default", lambda t: sinkhorn(t, mask, 3)),
    ):
        t = s.clone().requires_grad_(True)
        p = fn(t)
        (p * g).sum().backward()
        grads[name] = (p.detach(), t.grad)
    for name in ("detach", "full", "default"):  # the same plan either way
        assert torch.allclose(grads[name][0], grads["official"][0], atol=1e-12)
    assert torch.allclose(grads["detach"][1], grads["official"][1], atol=1e-12)
    assert torch.allclose(grads["default"][1], grads["official"][1], atol=1e-12)  # default = official
    diff = (grads["full"][1] - grads["official"][1]).norm() / grads["official"][1].norm()
    assert diff > 0.01  # differentiating through the column step is a different gradient
    # the full gradient is the true derivative of the forward map (finite differences)
    t = s.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda z: sinkhorn(z, mask, 3, detach_columns=False), (t[:1, :1],))


def test_value_map_flag_official_and_paper_orientations() -> None:
    torch.manual_seed(1)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    mask = torch.ones(2, 5, dtype=torch.bool)
    bias = torch.zeros(2, 2, 5, 5, dtype=torch.float64)
    outs = {}
    for vm in ("official", "paper"):
        att = SinkhornAttention(8, 2, kind="sinkhorn", value_map=vm).double()
        outs[vm] = att
    outs["paper"].load_state_dict(outs["official"].state_dict())
    a = outs["official"].w.weight
    p = outs["official"](x, bias, mask)[2]
    expected = {"official": x @ -(a @ a.T), "paper": -(x @ a.T @ a)}
    for vm, att in outs.items():
        out, _, attn = att(x, bias, mask)
        v = expected[vm].view(2, 5, 2, 4).transpose(1, 2)
        ref = att.out_proj((attn @ v).transpose(1, 2).reshape(2, 5, 8))
        assert torch.allclose(out, ref, atol=1e-12), vm
        assert torch.allclose(attn, p)  # the value map does not touch the attention
    assert (outs["official"](x, bias, mask)[0] - outs["paper"](x, bias, mask)[0]).abs().max() > 1e-3
    default = SinkhornAttention(8, 2, kind="sinkhorn").double()
    default.load_state_dict(outs["official"].state_dict())
    assert torch.equal(default(x, bias, mask)[0], outs["official"](x, bias, mask)[0])  # default = official
    assert WGFormerConfig().value_map == "official" and WGFormerConfig().sinkhorn_detach
    with pytest.raises(ValueError, match="value_map"):
        WGFormerConfig(value_map="text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="value_map"):
        SinkhornAttention(8, 2, value_map="text")  # type: ignore[arg-type]


def test_model_flags_reach_every_layer() -> None:
    cfg = dataclasses.replace(SMALL, value_map="paper", sinkhorn_detach=False)
    model = WGFormer(cfg)
    assert all(lay.attn.value_map == "paper" and not lay.attn.detach_columns for lay in model.layers)
    default = WGFormer(SMALL)
    assert all(lay.attn.value_map == "official" and lay.attn.detach_columns for lay in default.layers)


# ---------------------------------------------------------------------------------------------- models


@pytest.mark.parametrize("kind", ["sinkhorn", "softmax", "shared_softmax", "egnn"])
def test_output_shapes_and_se3_equivariance_float64(kind: str, batch) -> None:
    tokens, coords, _, mask = batch
    torch.manual_seed(0)
    model = (
        EGNN(EGNNConfig(hidden=16, layers=2))
        if kind == "egnn"
        else WGFormer(dataclasses.replace(SMALL, attention=kind))
    )
    model = model.double().eval()
    x = coords.double()
    out = model(tokens, x, mask)
    b, n = tokens.shape
    assert out.coords.shape == (b, n, 3) and out.distances.shape == (b, n, n)
    assert out.coords.dtype == torch.float64
    assert (out.coords[tokens == PAD] == 0).all()
    assert (out.coords - x).abs().max() > 1e-6  # the update does something
    rot, shift = _rotation(1), torch.tensor([3.0, -2.0, 7.5], dtype=torch.float64)
    moved = model(tokens, x @ rot.T + shift, mask)
    atom = mask.unsqueeze(-1)
    err = ((out.coords @ rot.T + shift - moved.coords) * atom).abs().max()
    assert err < 1e-10
    pairs = mask.unsqueeze(-1) & mask.unsqueeze(-2)
    assert torch.allclose(out.distances[pairs], moved.distances[pairs], atol=1e-10)


def test_padding_invariance(batch) -> None:
    tokens, coords, _, mask = batch
    model = WGFormer(SMALL).eval()
    full = model(tokens, coords, mask).coords
    for i in range(tokens.shape[0]):
        n = int((tokens[i] != PAD).sum())
        alone = model(tokens[i : i + 1, :n], coords[i : i + 1, :n], mask[i : i + 1, :n]).coords
        assert torch.allclose(alone[0], full[i, :n], atol=1e-5)
        extra = torch.nn.functional.pad(tokens[i : i + 1, :n], (0, 5))
        more = model(
            extra,
            torch.nn.functional.pad(coords[i : i + 1, :n], (0, 0, 0, 5)),
            torch.nn.functional.pad(mask[i : i + 1, :n], (0, 5)),
        )
        assert torch.allclose(more.coords[0, :n], alone[0], atol=1e-5)


def test_permutation_equivariance(batch) -> None:
    tokens, coords, _, mask = batch
    model = WGFormer(SMALL).double().eval()
    t, x, m = tokens[:1], coords[:1].double(), mask[:1]
    n = int((t != PAD).sum())
    perm = torch.cat(
        [
            torch.tensor([0]),
            torch.randperm(n - 2, generator=torch.Generator().manual_seed(0)) + 1,
            torch.arange(n - 1, t.shape[1]),
        ]
    )
    a = model(t, x, m).coords[0]
    b = model(t[:, perm], x[:, perm], m[:, perm]).coords[0]
    assert torch.allclose(a[perm], b, atol=1e-10)


def test_zero_init_decoder_returns_input(batch) -> None:
    tokens, coords, _, mask = batch
    model = WGFormer(dataclasses.replace(SMALL, zero_init_decoder=True)).eval()
    out = model(tokens, coords, mask)
    assert torch.allclose(out.coords[mask], coords[mask], atol=1e-5)


def test_equivariant_update_matches_naive_loop() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 5, 3, generator=gen, dtype=torch.float64)
    c = torch.randn(1, 5, 5, generator=gen, dtype=torch.float64)
    mask = torch.tensor([[True, True, True, True, False]])
    out = equivariant_update(x, c, mask)
    for i in range(4):
        ref = x[0, i] + sum((x[0, j] - x[0, i]) * c[0, i, j] for j in range(4)) / 3
        assert torch.allclose(out[0, i], ref)


def test_gradients_flow_and_bad_input(batch) -> None:
    tokens, coords, target, mask = batch
    model = WGFormer(SMALL)
    out = model(tokens, coords, mask)
    conformer_loss(out.coords, out.distances, target, mask).backward()
    # the last layer's token update (out_proj, FFN) feeds nothing: the decoder reads its logits only
    unused = ("layers.1.attn.out_proj", "layers.1.norm2", "layers.1.ffn")
    grads = [p.grad for n, p in model.named_parameters() if not n.startswith(unused)]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert model.dist_bias.means.grad is not None and model.decoder[0].weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="coords"):
        model(tokens, coords[..., :2], mask)
    with pytest.raises(ValueError, match="NaN"):
        model(tokens, coords.masked_fill(mask.unsqueeze(-1), float("nan")), mask)
    with pytest.raises(ValueError, match="tokens"):
        model(tokens.float(), coords, mask)
    with pytest.raises(ValueError, match="floating"):
        model(tokens, coords.long(), mask)
    with pytest.raises(ValueError, match="atom_mask"):
        model(tokens, coords, mask.long())
    with pytest.raises(ValueError, match="at least 2 atoms"):
        model(tokens, coords, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="divisible"):
        WGFormerConfig(dim=10, heads=3)
    with pytest.raises(ValueError, match="layers"):
        WGFormerConfig(layers=0)
    with pytest.raises(ValueError, match="attention"):
        WGFormerConfig(attention="linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hidden"):
        EGNNConfig(hidden=0)


def test_full_config_is_the_papers_and_takes_one_step(records, one_thread) -> None:
    cfg = WGFormerConfig()
    assert (cfg.layers, cfg.dim, cfg.heads, cfg.ffn, cfg.n_gauss, cfg.n_iter) == (30, 512, 64, 2048, 128, 3)
    torch.manual_seed(0)
    model = WGFormer(cfg)
    data = collate([records[0], records[3]])  # the two smallest molecules
    hist = train_model(model, data, FitConfig(steps=1, batch_size=2, lr=2e-5, grad_clip=1.0), seed=0)
    assert len(hist.train_loss) == 1 and np.isfinite(hist.train_loss[0])


# ------------------------------------------------------------------------------------- loss & metrics


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12))
def test_kabsch_recovers_a_random_rotation(seed: int, n: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, n, 3, generator=gen, dtype=torch.float64)
    q = q - q.mean(1, keepdim=True)
    rot = _rotation(seed)
    p = q @ rot.T
    r = kabsch_rotation(p, q)
    assert torch.allclose(r[0], rot, atol=1e-8)
    assert torch.allclose(torch.linalg.det(r), torch.ones(1, dtype=torch.float64))


def test_kabsch_never_reflects_and_align_masks() -> None:
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(1, 6, 3, generator=gen, dtype=torch.float64)
    q = q - q.mean(1, keepdim=True)
    mirrored = q * torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64)
    assert torch.linalg.det(kabsch_rotation(mirrored, q)) > 0
    mask = torch.tensor([[True] * 5 + [False]])
    junk = q.clone()
    junk[0, 5] = 1e3  # a masked row must not change the alignment
    mob2, ref2 = align(q[:, :5] @ _rotation(2).T + 4.0, q[:, :5], mask[:, :5])
    assert torch.allclose(mob2, ref2, atol=1e-10)
    mob3, _ = align(junk @ _rotation(2).T + 4.0, q, mask)
    assert torch.allclose(mob3[:, :5], mob2, atol=1e-10) and (mob3[:, 5] == 0).all()


def test_loss_zero_at_target_up_to_rigid_motion_and_positive_otherwise(batch) -> None:
    tokens, _, target, mask = batch
    t = target.double()
    moved = (t @ _rotation(4).T + 2.0) * mask.unsqueeze(-1)
    loss = conformer_loss(moved, pairwise_distances(moved), t, mask)
    assert loss < 1e-10
    noisy = moved + 0.1 * torch.randn_like(moved) * mask.unsqueeze(-1)
    assert conformer_loss(noisy, pairwise_distances(noisy), t, mask) > 1e-3
    with pytest.raises(ValueError, match="disagree"):
        conformer_loss(moved[:, :-1], pairwise_distances(moved), t, mask)


def test_metrics_identity_and_known_values(records) -> None:
    r = records[1]
    assert c_rmsd(r, r.target(0)) < 1e-6 and c_rmsd(r, r.target(1), 1) < 1e-6
    rot = _rotation(5).numpy()
    assert c_rmsd(r, r.target(0) @ rot.T + 3.0) < 1e-6  # alignment inside GetBestRMS
    d = distance_errors([r.target(0) * 1.0], [r.target(0)])
    assert d == {"d_mae": 0.0, "d_rmse": 0.0}
    two = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    ref = np.array([[0.0, 0, 0], [2.0, 0, 0]])
    d = distance_errors([two], [ref])  # |1-2| twice over 4 entries
    assert d["d_mae"] == pytest.approx(0.5) and d["d_rmse"] == pytest.approx(np.sqrt(0.5))
    with pytest.raises(ValueError, match="pred"):
        c_rmsd(r, r.target(0)[:-1])
    with pytest.raises(ValueError, match="non-empty"):
        distance_errors([], [])
    preds, secs = mmff_refine(records[:2])
    assert secs > 0 and preds[0].shape == records[0].target(0).shape


def test_training_lowers_the_loss(records, one_thread) -> None:
    data = collate(records)
    torch.manual_seed(0)
    model = WGFormer(SMALL)  # random decoder init: the zero-initialised one starts at the identity optimum
    before = validation_loss(model, data)
    train_model(model, data, FitConfig(steps=30, batch_size=6, lr=3e-3), seed=0)
    after = validation_loss(model, data)
    assert after < before
    preds = predict(model, data)
    assert [p.shape for p in preds] == [r.target(0).shape for r in records]


# ---------------------------------------------------------------------------------------------- check config


def test_check_follows_the_protocol_and_the_config() -> None:
    from icml25.life.wgformer.check import CHECK, CRMSD_EFFECT

    small = CHECK.config("small")
    assert (small.input_mode, small.target_mode, small.steps, small.split_mode) == (
        "raw",
        "mmff_from_input",
        800,
        "random",
    )
    claim = CHECK.claim_for(small)
    names = {c.name for c in claim.criteria_at("small")}
    assert {"beats_softmax_crmsd", "beats_softmax_dmae", "beats_egnn_crmsd", "beats_egnn_dmae"} == names
    assert claim.headline == "beats_softmax_crmsd" and claim.headline_criterion().paired
    assert claim.headline_criterion().smallest_effect == CRMSD_EFFECT
    assert all(c.paired for c in claim.criteria_at("small"))
    assert set(claim.references) == {"identity", "mmff"} and claim.controls == ("mmff",)
    gates = claim.gates_at("small")
    assert {g.arm for g in gates} == {"wgformer", "softmax", "egnn"}
    assert all(g.other_arm == "identity" and g.metric == "val_loss" and g.factor == 0.98 for g in gates)
    only = CHECK.config("small", {"arms": ("wgformer", "egnn"), "gate_factor": 0.5})
    claim = CHECK.claim_for(only)
    assert not any(c.other_arm == "softmax" for c in claim.criteria)
    assert {g.arm for g in claim.gates} == {"wgformer", "egnn"} and claim.gates[0].factor == 0.5
    assert claim.headline_criterion().name == "beats_egnn_crmsd" and "softmax" not in claim.baselines
    with pytest.raises(ValueError, match="arms"):
        dataclasses.replace(small, arms=("softmax",))
    with pytest.raises(ValueError, match="lrs"):
        dataclasses.replace(small, lrs=())
    with pytest.raises(ValueError, match="mmff_from_input"):
        dataclasses.replace(small, input_mode="mmff_local")
    full = CHECK.config("full").model
    assert (full.layers, full.dim, full.heads) == (30, 512, 64)
    assert (full.value_map, full.sinkhorn_detach) == ("official", True)


def test_pooled_dmae_item_statistic_equals_eval_py(records) -> None:
    from icml25.life.wgformer.check import _pooled_dmae, test_items

    data = collate(records)
    items = test_items(records, data, None)
    assert items["c_rmsd"].shape == (len(records),) and items["d_mae"].shape == (len(records), 3)
    pooled = [
        distance_errors([r.input_coords[c] for r in records], [r.target(c) for r in records]) for c in (0, 1)
    ]
    # both conformers pooled together = the sums of eval.py over the two prediction sets
    num = sum(p["d_mae"] * sum(r.n_atoms**2 for r in records) for p in pooled)
    assert _pooled_dmae(items["d_mae"]) == pytest.approx(num / (2 * sum(r.n_atoms**2 for r in records)))
    expected = np.mean([[c_rmsd(r, r.input_coords[c], c) for c in (0, 1)] for r in records], axis=1)
    assert np.allclose(items["c_rmsd"], expected)


def test_medium_preset_constructs_and_takes_one_step_here(records, one_thread) -> None:
    from icml25.core.check import NeedsResource
    from icml25.life.wgformer.check import CHECK, build_model, resolve_device

    medium = CHECK.config("medium")
    assert (medium.model.layers, medium.model.dim, medium.model.heads) == (6, 128, 16)
    assert (
        medium.device == "auto" and medium.n_molecules == 3000 and CHECK.claim_for(medium).gates_at("medium")
    )
    if not torch.cuda.is_available():
        assert resolve_device(medium) == torch.device("cpu")
        with pytest.raises(NeedsResource, match="gpu"):
            resolve_device(dataclasses.replace(medium, device="cuda"))
    with pytest.raises(ValueError, match="device"):
        dataclasses.replace(medium, device="tpu")
    data = collate([records[0], records[3]])
    for arm in ("wgformer", "egnn"):
        model = build_model(medium, arm, 0)
        hist = train_model(
            model, data, dataclasses.replace(medium.fit_config(1e-3), steps=1, batch_size=2), seed=0
        )
        assert len(hist.train_loss) == 1 and np.isfinite(hist.train_loss[0])
        assert [p.shape for p in predict(model, data)] == [
            records[0].target(0).shape,
            records[3].target(0).shape,
        ]
