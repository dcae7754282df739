"""The ``icml25`` command: list, show, check, report, bench.

Exit codes: 0 every check reproduced (or the command succeeded; a ``tiny`` smoke run whose
smoke criteria all hold counts as success), 1 some claim was not reproduced or was inconclusive,
2 a usage or runtime error (one line on stderr; ``--debug`` adds the traceback and keeps the code).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from icml25.catalog import PAPERS, Paper, UnknownSlugError, get_paper

EXIT_OK, EXIT_NOT_REPRODUCED, EXIT_ERROR = 0, 1, 2

LIST_EPILOG = """examples:
  icml25 list
  icml25 list --json | python -m json.tool
"""
SHOW_EPILOG = """examples:
  icml25 show rfm_grokking
  icml25 show rfm_grokking --config             # every config key with its type and each scale's value
"""
CHECK_EPILOG = """examples:
  icml25 check rfm_grokking                      # small scale, default seeds
  icml25 check rfm_grokking --scale tiny --seeds 1
  icml25 check rfm_grokking --set p=41 --set iters=20
  icml25 check --all --json > results.json
  icml25 check --all --jobs 2                    # two checks at a time, threads shared out
  icml25 check --all --executor submitit         # one SLURM job per check (local without SLURM)
"""
BENCH_EPILOG = """examples:
  icml25 bench condensed_sparse_solver           # the paper's speed comparison, as a table
  icml25 bench solver --sizes 513 1025           # the same ('solver' is its short name), with our CPU goals
  icml25 bench condensed_sparse_solver --json    # everything after the slug goes to the benchmark
  icml25 bench llm --batches 1,8,32              # the embedded LLM's generation tokens/s vs the CPU ceiling
"""
MERGE_EPILOG = """examples:
  icml25 merge iso.yaml merged/   # write merged/model.safetensors and the base model's config files

A recipe uses mergekit's field names (merge_method, base_model, models, parameters, dtype); methods:
iso_c, iso_cts, tsv_m, ties, task_arithmetic, average. A listed model that is a PEFT LoRA adapter
folder contributes its task matrices s * B A. See icml25.language.isotropic_merging.recipe.
"""
REPORT_EPILOG = """examples:
  icml25 report                                  # results/ -> report/REPORT.md, report/index.html
  icml25 report --results /tmp/res --out /tmp/report
  icml25 report --sync-readmes                   # refill each checked paper's README result table
  icml25 report --sync-readmes fedncn slogan     # only these papers
"""


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2), as every other error here."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C after something was already stored: the message says what."""


def _folder_arg(flag: str, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise CliError(f"{flag} must name a directory, got an empty string")
    return value


def _store(path: str | None, flag: str = "--results") -> Any:
    from icml25.core.results import DEFAULT_RESULTS_DIR, ResultStore

    path = _folder_arg(flag, path)
    return ResultStore(Path(path) if path else DEFAULT_RESULTS_DIR, known_slugs={p.slug for p in PAPERS})


def term_safe(text: str) -> str:
    """``text`` without terminal control sequences (ESC, C0/C1 controls, DEL); newlines and tabs stay."""
    return "".join(
        ch if ch in "\n\t" or not (ord(ch) < 32 or 127 <= ord(ch) < 160) else "\N{REPLACEMENT CHARACTER}"
        for ch in text
    )


def _rich_safe(text: str) -> str:
    from rich.markup import escape

    return escape(term_safe(text))


def _last_verdict(store: Any, paper: Paper) -> tuple[str | None, str | None]:
    stored = store.latest(paper.slug)
    if stored is None:
        return None, None
    return str(stored.result.verdict), stored.result.scale


# -- list ---------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args.results)
    rows = []
    for paper in PAPERS:
        verdict, scale = _last_verdict(store, paper)
        if verdict is None and paper.implemented:  # no local result: the run recorded in the README
            recorded = paper.recorded_small_run()
            if recorded is not None:
                verdict, scale = recorded.verdict, "small, recorded"
        rows.append(
            {
                "slug": paper.slug,
                "title": paper.title,
                "domain": paper.domain,
                "seed": paper.seed,
                "status": paper.status,
                "last_verdict": verdict,
                "last_scale": scale,
                "claim": paper.claim,
            }
        )
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        _print_store_warnings(store)
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"icml25: {len(rows)} papers", show_lines=False)
    for col in ("slug", "domain", "seed", "status", "last verdict", "title"):
        table.add_column(col, overflow="fold")
    for r in rows:
        verdict = f"{r['last_verdict']} ({r['last_scale']})" if r["last_verdict"] else "-"
        cells = (r["slug"], r["domain"], r["seed"], r["status"], verdict, r["title"])
        table.add_row(*(_rich_safe(str(x)) for x in cells))
    Console(width=max(140, Console().width)).print(table)
    _print_store_warnings(store)
    return EXIT_OK


def _print_store_warnings(store: Any) -> None:
    """One line on stderr per stored result that was flagged or skipped (each names its file)."""
    found, problems = store.scan()
    for message in [w for s in found for w in s.warnings] + problems:
        print(f"warning: {term_safe(message)}", file=sys.stderr)


# -- show ---------------------------------------------------------------------------------------


def paper_readme(paper: Paper) -> Path:
    """The README.md in the paper's folder (it exists for every checked paper)."""
    import icml25

    return Path(icml25.__file__).resolve().parent / paper.domain / paper.slug / "README.md"


def config_rows(check: Any) -> list[tuple[str, str, dict[str, str]]]:
    """``(key, type, {scale: value})`` for every (nested, dotted) field of a check's config."""
    import dataclasses
    import typing

    def walk(configs: dict[str, Any], prefix: str) -> list[tuple[str, str, dict[str, str]]]:
        first = next(iter(configs.values()))
        hints = typing.get_type_hints(type(first))
        rows = []
        for f in dataclasses.fields(first):
            values = {scale: getattr(c, f.name) for scale, c in configs.items()}
            if all(dataclasses.is_dataclass(v) for v in values.values()):
                rows += walk(values, f"{prefix}{f.name}.")
                continue
            kind = hints.get(f.name, f.type)
            plain = isinstance(kind, type) and typing.get_origin(kind) is None
            kind_name = kind.__name__ if plain else str(kind).replace("typing.", "")
            rows.append((f"{prefix}{f.name}", str(kind_name), {k: repr(v) for k, v in values.items()}))
        return rows

    return walk({scale: check.config(scale) for scale in check.scales()}, "")


def _print_config(paper: Paper) -> int:
    from rich.console import Console
    from rich.table import Table

    check = paper.load_check()
    scales = check.scales()
    table = Table(title=f"{paper.slug}: config keys (override with --set KEY=VALUE)")
    for col in ("key", "type", *scales):
        table.add_column(col, overflow="fold")
    for key, kind, values in config_rows(check):
        differs = len(set(values.values())) > 1
        cells = [values[scale] for scale in scales]
        table.add_row(
            _rich_safe(key),
            _rich_safe(kind),
            *(f"[bold]{c}[/]" if differs else c for c in map(_rich_safe, cells)),
        )
    Console(width=max(140, Console().width)).print(table)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    paper = get_paper(args.slug)
    if getattr(args, "config", False):
        if not paper.implemented:
            raise CliError(f"{paper.slug} is planned: it has no check and no config yet")
        return _print_config(paper)
    readme = paper_readme(paper)
    out = [
        f"{paper.slug}: {paper.title}",
        f"  domain: {paper.domain}   seed: {paper.seed} ({paper.seed_file})   status: {paper.status}",
        f"  paper: {paper.url or '-'}   code: {paper.code_url or '-'}",
        f"  readme: {readme if readme.is_file() else '-'}",
        f"  claim: {paper.claim}",
        f"  baseline: {paper.baseline}",
    ]
    if paper.implemented:
        check = paper.load_check()
        claim = check.claim_for(check.config("small"))  # criteria may name sizes of the preset
        out.append(
            f"  check: {paper.check_path}  (ours: {claim.ours}; baselines: {', '.join(claim.baselines)})"
        )
        out.append(f"  claim as checked ({claim.source}): {claim.statement}")
        out.append("  criteria (declared in advance), as judged for the small preset:")
        for c in claim.criteria:
            role = claim.role_of(c.name)
            effect = f" (smallest effect: {c.effect_source})" if c.smallest_effect is not None else ""
            out.append(
                f"    - {c.name} [{role}; {', '.join(c.scales)}]: {c.describe()}  {c.description}{effect}"
            )
        if claim.references:
            out.append(f"  references (floors, never baselines): {', '.join(claim.references)}")
        for g in claim.gates:
            out.append(f"    - gate {g.name} [{', '.join(g.scales)}]: {g.describe()}  {g.description}")
    stored = _store(args.results).latest(paper.slug)
    if stored is None:
        out.append("  last result: none")
    else:
        r = stored.result
        out.append(
            f"  last result: {r.verdict} at scale {r.scale}, seeds {list(r.seeds)}, "
            f"{r.wall_time_s:.1f} s, {r.started_at} ({stored.run_dir})"
        )
        for c in r.criteria:
            out.append(f"    [{c.role}] {c.summary()}")
        out += [f"  warning: {w}" for w in stored.warnings]
    if readme.is_file():
        out += ["", readme.read_text(encoding="utf-8").rstrip()]
    print(term_safe("\n".join(out)))
    return EXIT_OK


# -- check --------------------------------------------------------------------------------------


def _selected_papers(args: argparse.Namespace) -> list[Paper]:
    if args.all and args.slugs:
        raise CliError("give slugs or --all, not both")
    if args.all:
        papers = [p for p in PAPERS if p.implemented]
        if not papers:
            raise CliError("no paper is implemented yet")
        return papers
    if not args.slugs:
        raise CliError("name at least one slug, or --all (see `icml25 list`)")
    papers = [get_paper(s) for s in args.slugs]
    for p in papers:
        if not p.implemented:
            raise CliError(f"{p.slug} is planned: it has no implementation yet")
    return list(dict.fromkeys(papers))


def _jsonable(obj: Any) -> Any:
    from icml25.core.claims import to_jsonable

    return to_jsonable(obj)


def _result_row(result: Any, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    data = result.to_json()
    return {
        "config": data["config"],
        "overrides": _jsonable(dict(overrides or {})),
        "slug": data["slug"],
        "scale": data["scale"],
        "verdict": data["verdict"],
        "verdict_reason": data["verdict_reason"],
        "seeds": data["seeds"],
        "criteria": [
            {
                "name": c["name"],
                "passed": c["passed"],
                "value": c["value"],
                "threshold": c["threshold"],
                "op": c["op"],
                "formula": c["formula"],
                "role": c["role"],
                "outcome": c["outcome"],
                "interval": c["interval"],
                "smallest_effect": c["smallest_effect"],
            }
            for c in data["criteria"]
        ],
        "metrics": data["metrics"],
        "wall_time_s": data["wall_time_s"],
        "run_id": data["run_id"],
    }


def _print_result(result: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width))
    claim = result.claim
    references = list(claim.get("references", []))
    arms = [claim["ours"], *claim["baselines"], *references]
    metric_names = sorted({m for arm in arms for m in result.metrics.get(arm, {})})
    table = Table(title=f"{result.slug} ({result.scale}, seeds {list(result.seeds)}): metrics, mean ± sd")
    table.add_column("metric")
    for arm in arms:
        tag = " (ours)" if arm == claim["ours"] else (" (ref.)" if arm in references else "")
        table.add_column(arm + tag, justify="right")
    for name in metric_names:
        cells = []
        for arm in arms:
            s = result.metrics.get(arm, {}).get(name)
            cells.append("-" if s is None else f"{s.mean:.4g} ± {s.std:.2g}")
        table.add_row(name, *cells)
    console.print(table)
    crit = Table(title="criteria (declared in advance)")
    for col in ("criterion", "role", "condition", "value", "threshold", "interval", "outcome"):
        crit.add_column(col)
    colors = {"holds": "green", "fails": "red"}
    for c in result.criteria:
        outcome = c.outcome if c.outcome != "n/a" else {True: "holds", False: "fails", None: "n/a"}[c.passed]
        crit.add_row(
            c.name,
            c.role,
            c.formula,
            "-" if c.value is None else f"{c.value:.4g}",
            "-" if c.threshold is None else f"{c.threshold:.4g}",
            "-" if c.interval is None else f"[{c.interval[0]:+.3g}, {c.interval[1]:+.3g}]",
            f"[{colors.get(outcome, 'yellow')}]{outcome}[/]",
        )
    console.print(crit)
    console.print(
        f"[bold]verdict: {result.verdict}[/] ({result.verdict.reason}); wall time {result.wall_time_s:.1f} s",
        highlight=False,
    )


def cmd_check(args: argparse.Namespace) -> int:
    from icml25.core.check import MAX_SEEDS
    from icml25.core.config import parse_overrides
    from icml25.core.progress import make_reporter
    from icml25.nn.distributed import get_accelerator, is_main_process

    papers = _selected_papers(args)
    overrides = parse_overrides(args.set or [])
    if args.quiet:
        _quiet_third_party()
    if args.seeds is not None and not 1 <= args.seeds <= MAX_SEEDS:
        raise CliError(f"--seeds must be between 1 and {MAX_SEEDS}, got {args.seeds}")
    # under `accelerate launch` every process runs the check (training splits each batch across
    # them); only the main process stores the result and prints
    main = is_main_process()
    store = _store(args.out, "--out") if main else None
    if store is not None:
        store.ensure_writable()
    checks = []
    for paper in papers:  # resolve and validate every config before running anything
        check = paper.load_check()
        check.config(args.scale, overrides)
        checks.append(check)
    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    if (args.jobs > 1 or args.executor == "submitit") and get_accelerator() is not None:
        raise CliError("--jobs/--executor cannot be combined with a multi-process (accelerate) launch")
    if args.jobs > 1 or args.executor == "submitit":
        assert store is not None
        results = _run_elsewhere(args, [c.slug for c in checks], overrides, store)
        return _finish(args, results, main=True)
    results = []
    stored_dirs: list[str] = []
    try:
        for check in checks:
            reporter = make_reporter(f"[{check.slug} {args.scale}] ", quiet=args.quiet or not main)
            try:
                result = check.run(
                    args.scale, n_seeds=args.seeds, overrides=overrides, store=store, reporter=reporter
                )
            finally:
                reporter.close()
            results.append(result)
            run_dir = None if store is None else store.root / result.slug / result.scale / result.run_id
            if run_dir is not None:
                stored_dirs.append(str(run_dir))
            if main and not args.json:
                _print_result(result)
                if run_dir is not None:
                    figures = f" with {len(result.figures)} figure(s)" if result.figures else ""
                    print(f"result{figures} written to {run_dir}")
    except KeyboardInterrupt as err:
        if stored_dirs:
            raise _Interrupted(f"; already stored: {', '.join(stored_dirs)}") from err
        raise
    accelerator = get_accelerator()
    if accelerator is not None:
        accelerator.wait_for_everyone()  # no process leaves (and is reaped) while another still trains
        if not main:
            return EXIT_OK  # the main process's exit code carries the verdict
    return _finish(args, results, main=main)


def _finish(args: argparse.Namespace, results: list[Any], *, main: bool) -> int:
    if main and args.json:
        from icml25.core.config import parse_overrides

        overrides = parse_overrides(args.set or []) if getattr(args, "set", None) else {}
        json.dump([_result_row(r, overrides) for r in results], sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    elif main and len(results) > 1:
        for r in results:
            print(f"{r.slug:28s} {r.scale:6s} {str(r.verdict):16s} {r.wall_time_s:8.1f} s")
    return EXIT_OK if all(_succeeded(r) for r in results) else EXIT_NOT_REPRODUCED


def _run_elsewhere(args: argparse.Namespace, slugs: list[str], overrides: Any, store: Any) -> list[Any]:
    """``--jobs N`` (a local process pool) or ``--executor submitit``; each worker stores its result."""
    from icml25.core.parallel import (
        CheckJob,
        longest_first,
        run_in_processes,
        run_with_submitit,
        threads_per_job,
    )

    workers = min(args.jobs, len(slugs))
    threads = threads_per_job(workers)
    last_wall = {}
    for slug in slugs:
        stored = store.latest(slug, args.scale)
        if stored is not None:
            last_wall[slug] = stored.result.wall_time_s
        elif args.scale == "small":  # a fresh clone: the time recorded in the paper's README
            recorded = get_paper(slug).recorded_small_run()
            if recorded is not None:
                last_wall[slug] = recorded.wall_time_s
    # the pool takes the longest checks first; submitit queues everything at once, so order is moot
    order = longest_first(slugs, last_wall) if args.executor != "submitit" else list(slugs)
    jobs = [CheckJob(s, args.scale, args.seeds, dict(overrides), str(store.root), threads) for s in order]

    def done(result: Any) -> None:
        if not args.quiet:
            print(
                f"[{result.slug} {result.scale}] {result.verdict} in {result.wall_time_s:.0f} s "
                f"(run {result.run_id})",
                file=sys.stderr,
                flush=True,
            )

    if not args.quiet:
        where = "submitit" if args.executor == "submitit" else f"{workers} local process(es)"
        print(f"running {len(jobs)} check(s) on {where}, {threads} thread(s) each", file=sys.stderr)
    if args.executor == "submitit":
        folder = Path(args.submitit_folder or store.root / ".submitit")
        return run_with_submitit(jobs, folder, cluster=args.submitit_cluster, on_done=done)

    def tick(progress: Any) -> None:  # a heartbeat line, so a long run never looks stalled
        if not args.quiet:
            print(progress.line(), file=sys.stderr, flush=True)

    tick_s = float(os.environ.get("ICML25_HEARTBEAT_S", "30"))
    results = run_in_processes(
        jobs, workers, on_done=done, on_tick=tick, tick_s=tick_s, expected_s=[last_wall.get(s) for s in order]
    )
    by_slug = dict(zip(order, results, strict=True))
    return [by_slug[s] for s in slugs]  # the order asked for


def _succeeded(result: Any) -> bool:
    """Reproduced, or a tiny smoke run (never a verdict on the claim) whose smoke criteria all hold."""
    if result.scale == "tiny":
        return bool(result.criteria) and all(c.passed is True for c in result.criteria)
    return bool(result.verdict.reproduced)


def _quiet_third_party() -> None:
    """Silence the loading bars and advisories of Hugging Face libraries (``--quiet``)."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    if "transformers" in sys.modules:  # already imported: its settings were read at import time
        import transformers

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()


# -- report -------------------------------------------------------------------------------------


def cmd_report(args: argparse.Namespace) -> int:
    from icml25.report import sync_paper_readmes, write_report

    store = _store(args.results)
    out_dir = _folder_arg("--out", args.out)
    if args.slugs and not args.sync_readmes:
        raise CliError("paper slugs go with --sync-readmes; a report covers every stored result")
    if args.sync_readmes:
        try:
            changed = sync_paper_readmes(store.root, slugs=args.slugs or None)
        except ValueError as e:
            raise CliError(str(e)) from e
        for path in changed:
            print(f"updated {path}")
        print(f"{len(changed)} paper README(s) changed" if changed else "paper READMEs already in sync")
        return EXIT_OK
    if not store.root.is_dir():
        raise CliError(
            f"no results directory at {str(store.root)!r} (run `icml25 check` first, or pass --results)"
        )
    assert out_dir is not None
    out = write_report(store, Path(out_dir))
    print(f"wrote {out.markdown} and {out.html} ({out.n_results} results", end="")
    print(f", {len(out.problems)} unreadable skipped)" if out.problems else ")")
    for problem in (*out.warnings, *out.problems):
        print(f"warning: {term_safe(problem)}", file=sys.stderr)
    return EXIT_OK


# -- bench --------------------------------------------------------------------------------------


def _bench_file(paper: Paper) -> Path:
    import icml25

    return Path(icml25.__file__).parent / paper.domain / paper.slug / "bench.py"


def _has_benchmark(paper: Paper) -> bool:
    """A speed benchmark is a ``bench.py`` with a ``main(argv)`` (pisa's ``bench.py`` is its video
    benchmark's scoring code, not a speed benchmark)."""
    path = _bench_file(paper)
    return paper.implemented and path.is_file() and "\ndef main(" in path.read_text(encoding="utf-8")


def cmd_merge(args: argparse.Namespace) -> int:
    """Run a mergekit-style recipe with the isotropic-merging rules and write the merged model folder."""
    import shutil

    from safetensors.torch import save_file

    from icml25.language.isotropic_merging.recipe import parse_recipe, run_recipe

    recipe_path = Path(args.recipe)
    if not recipe_path.is_file():
        raise CliError(f"recipe: no file at {recipe_path}")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise CliError(f"out: {out} exists and is not empty (pass --overwrite to replace its files)")
    recipe = parse_recipe(recipe_path.read_text(encoding="utf-8"), relative_to=recipe_path.parent)
    print(
        f"merging {len(recipe.models)} models with {recipe.merge_method} (alpha {recipe.alpha:g})", flush=True
    )
    merged = run_recipe(recipe)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(recipe.base_model)
    if base.is_dir():  # the base's config, tokenizer and generation files describe the merged model too
        for f in base.iterdir():
            if (
                f.is_file()
                and f.suffix not in (".safetensors", ".bin", ".pt", ".pth")
                and f.name != "model.safetensors.index.json"
            ):
                shutil.copy2(f, out / f.name)
    save_file(
        {k: v.contiguous() for k, v in merged.items()},
        str(out / "model.safetensors"),
        metadata={"format": "pt"},
    )
    shutil.copy2(recipe_path, out / "merge_recipe.yaml")
    print(f"wrote {out / 'model.safetensors'} ({len(merged)} tensors)")
    return EXIT_OK


#: short names of benchmarks: ``icml25 bench solver`` is the sparse solver's (our CPU targets vs CHOLMOD,
#: BLAS efficiency and the 5x ratios, which its claim check does not judge)
BENCH_ALIASES = {"solver": "condensed_sparse_solver"}


def cmd_bench(args: argparse.Namespace) -> int:
    """Run a paper's side-by-side speed benchmark (``<paper>/bench.py:main``) with the remaining args."""
    from icml25.catalog import resolve

    if args.slug == "llm":  # not a paper: the shared language-model backend's generation throughput
        return int(resolve("icml25.llm.bench:main")(list(args.bench_args)))
    paper = get_paper(BENCH_ALIASES.get(args.slug, args.slug))
    if not _has_benchmark(paper):
        have = [p.slug for p in PAPERS if _has_benchmark(p)]
        raise CliError(f"{paper.slug} has no benchmark; papers with one: {', '.join(have) or 'none'}")
    bench_main = resolve(f"{paper.module}.bench:main")
    return int(bench_main(list(args.bench_args)))


# -- entry point --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors"
    )
    parser = _Parser(
        prog="icml25",
        description="Reference implementations and claim checks for 38 ICML 2025 papers.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,show,check,report,bench,merge}")
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser(
        "list",
        parents=[common],
        help="every paper with status and last verdict",
        epilog=LIST_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--results", metavar="DIR", help="results directory (default: results/)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "show",
        parents=[common],
        help="one paper's claim, criteria and last result",
        epilog=SHOW_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("slug")
    p.add_argument("--results", metavar="DIR", help="results directory (default: results/)")
    p.add_argument(
        "--config", action="store_true", help="list every config key, its type and its value at each scale"
    )
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "check",
        parents=[common],
        help="run claim checks and store their results",
        epilog=CHECK_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("slugs", nargs="*", metavar="SLUG")
    p.add_argument("--all", action="store_true", help="every implemented paper")
    p.add_argument(
        "--scale",
        choices=("tiny", "small", "medium", "full"),
        default="small",
        help="tiny: smoke run; small: the CPU claim check; medium: one GPU, where a check has it; "
        "full: the paper's configuration",
    )
    p.add_argument("--seeds", type=int, metavar="N", help="run seeds 0..N-1 (default: the check's own)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config field; dotted keys reach nested configs (model.width=64); repeatable",
    )
    p.add_argument("--out", metavar="DIR", help="results directory (default: results/)")
    p.add_argument("--json", action="store_true", help="print a JSON array of results on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="run checks in N local processes (threads shared)"
    )
    p.add_argument(
        "--executor",
        choices=("local", "submitit"),
        default="local",
        help="submitit: one job per check (SLURM when available, else submitit's local executor)",
    )
    p.add_argument("--submitit-folder", metavar="DIR", help="submitit logs (default: <results>/.submitit)")
    p.add_argument(
        "--submitit-cluster", choices=("slurm", "local", "debug"), help="force submitit's executor kind"
    )
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "report",
        parents=[common],
        help="write REPORT.md and index.html from stored results",
        epilog=REPORT_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("--results", metavar="DIR", help="results directory (default: results/)")
    p.add_argument("--out", metavar="DIR", default="report", help="output directory (default: report/)")
    p.add_argument(
        "--sync-readmes",
        action="store_true",
        help="instead: rewrite the small-result table in each checked paper's README.md "
        "(a paper with no stored run keeps the table it has)",
    )
    p.add_argument("slugs", nargs="*", metavar="SLUG", help="with --sync-readmes: only these papers")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "bench",
        parents=[common],
        help="a paper's speed benchmark against its baselines (ratios measured in one run)",
        epilog=BENCH_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument(
        "slug",
        help="a paper with a bench.py, 'solver' (condensed_sparse_solver) or 'llm' (the language model)",
    )
    p.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS", help="passed to the benchmark")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "merge",
        parents=[common],
        help="merge fine-tunes or LoRA adapters from a mergekit-style YAML recipe (Iso-C, Iso-CTS, ...)",
        epilog=MERGE_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("recipe", help="the YAML recipe")
    p.add_argument("out", help="folder for the merged model")
    p.add_argument("--overwrite", action="store_true", help="write into a non-empty OUT")
    p.set_defaults(func=cmd_merge)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:  # Ctrl-C while parsing or importing: one line, no traceback
        parser = build_parser()
        args = parser.parse_args(argv)
        from icml25.core.config import ConfigError
        from icml25.core.results import ResultsError
    except KeyboardInterrupt:
        print("icml25: interrupted", file=sys.stderr)
        return EXIT_ERROR

    debug = getattr(args, "debug", False)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # the reader went away (`icml25 show X | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush cannot fail again
        return EXIT_OK
    except (CliError, UnknownSlugError, ConfigError, ResultsError, NotImplementedError) as err:
        if debug:
            traceback.print_exc()
        print(f"icml25: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as err:
        print(f"icml25: interrupted{err if isinstance(err, _Interrupted) else ''}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # noqa: BLE001 - one line, no traceback, unless --debug
        if debug:
            traceback.print_exc()
            print(f"icml25: error: {type(err).__name__}: {err}", file=sys.stderr)
            return EXIT_ERROR
        print(
            f"icml25: error: {type(err).__name__}: {err} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
