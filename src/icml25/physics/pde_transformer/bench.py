"""Runtime scaling benchmark for PDE-Transformer against a global-attention DiT.

*PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations* (Holzschuh et al.,
ICML 2025, https://arxiv.org/abs/2505.24717). Checks the efficiency side of the paper's claim (the
"Efficient" of its title, and its comparison of training cost against DiT-style backbones): attention
restricted to local shifted windows costs time linear in the number of tokens, where global attention
grows quadratically. The benchmark itself is our own design, not a figure or table of the paper. One
run times a forward pass (batch 1, no gradients, median of repeats) of an equal-width PDE-Transformer
(MC, D = 64, 4 heads, window 4, patch 4, depths [2, 4, 2], i.e. 8 blocks) and a DiT (D = 64, 4 heads,
patch 4, 8 blocks) at 32^2, 64^2, 128^2 and 256^2 grids, prints the times, the DiT / PDE-T ratio and
the exponent ``a`` of ``time ~ tokens^a`` fitted over the two largest grids for each model (near 1 is
linear, near 2 quadratic). ``--json`` prints the same numbers as JSON.

    icml25 bench pde_transformer [--json] [--sizes 32 64 128 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Sequence

import torch

from icml25.core.runtime import set_threads
from icml25.nn.params import count_parameters

from .dit import DiTBaseline, DiTConfig
from .model import PDETransformer, PDETransformerConfig

__all__ = ["main", "time_forward", "scaling_table"]


def time_forward(model: torch.nn.Module, res: int, repeats: int) -> float:
    """Median seconds of ``model(x)`` for one ``[1, 2, res, res]`` input (after one warm-up call)."""
    x = torch.randn(1, 2, res, res, generator=torch.Generator().manual_seed(0))
    times = []
    with torch.no_grad():
        model(x)
        for _ in range(repeats):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _exponent(tokens: Sequence[int], seconds: Sequence[float]) -> float:
    return math.log(seconds[-1] / seconds[-2]) / math.log(tokens[-1] / tokens[-2])


def scaling_table(sizes: Sequence[int] = (32, 64, 128, 256), repeats: int = 3) -> dict[str, object]:
    """Forward times of both models at every grid size, the ratios and the fitted exponents."""
    torch.manual_seed(0)
    pdet = PDETransformer(
        PDETransformerConfig(
            hidden_size=64, num_heads=4, depth=(2, 4, 2), window_size=4, patch_size=4, cpb_hidden=64
        )
    ).eval()
    dit = DiTBaseline(DiTConfig(hidden_size=64, depth=8, num_heads=4, patch_size=4)).eval()
    rows = []
    for res in sizes:
        t_p = time_forward(pdet, res, repeats)
        t_d = time_forward(dit, res, repeats)
        rows.append(
            {
                "res": res,
                "tokens": (res // 4) ** 2,
                "pde_transformer_s": t_p,
                "dit_s": t_d,
                "ratio": t_d / t_p,
            }
        )
    tokens = [int(r["tokens"]) for r in rows]
    return {
        "rows": rows,
        "exponent_pde_transformer": _exponent(tokens, [float(r["pde_transformer_s"]) for r in rows]),
        "exponent_dit": _exponent(tokens, [float(r["dit_s"]) for r in rows]),
        "params": {"pde_transformer": count_parameters(pdet), "dit": count_parameters(dit)},
        "threads": torch.get_num_threads(),
    }


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's options (``icml25 bench pde_transformer --help``)."""
    parser = argparse.ArgumentParser(
        prog="icml25 bench pde_transformer", description=__doc__.split("\n\n")[1]
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[32, 64, 128, 256], help="grid sides (multiples of 32)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per size (median)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if len(args.sizes) < 2 or any(s % 32 for s in args.sizes):
        parser.error("give at least two --sizes, each a multiple of 32")
    set_threads()
    table = scaling_table(sorted(args.sizes), args.repeats)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"forward pass, batch 1, {table['threads']} thread(s); params {table['params']}")
    print(f"{'grid':>6} {'tokens':>7} {'PDE-T (ms)':>11} {'DiT (ms)':>10} {'DiT/PDE-T':>10}")
    for r in table["rows"]:  # type: ignore[attr-defined]
        print(
            f"{r['res']:>5}² {r['tokens']:>7} {1e3 * r['pde_transformer_s']:>11.1f} "
            f"{1e3 * r['dit_s']:>10.1f} {r['ratio']:>10.2f}"
        )
    print(
        f"growth exponent in tokens (two largest grids): PDE-T {table['exponent_pde_transformer']:.2f}, "
        f"DiT {table['exponent_dit']:.2f}  (1 = linear, 2 = quadratic)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
