"""The `icml25` command-line contract: list, show, check, report, exit codes, bad input."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icml25.catalog import PAPERS
from icml25.cli import main

ROOT = Path(__file__).resolve().parents[1]
SLUG = "rfm_grokking"
# Any paper that is still planned (none once every paper has landed).
PLANNED = next((p.slug for p in PAPERS if not p.implemented), "")


def icml25(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icml25.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=600,
    )


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("results")
    proc = icml25("check", SLUG, "--scale", "tiny", "--json", "--quiet", "--out", str(out))
    return proc, out


def test_list_json_has_contract_keys(capsys) -> None:
    assert main(["list", "--json", "--results", "/nonexistent"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 38
    for key in ("slug", "title", "domain", "seed", "status", "last_verdict"):
        assert key in rows[0]


def test_list_table(capsys) -> None:
    assert main(["list", "--results", "/nonexistent"]) == 0
    assert SLUG in capsys.readouterr().out


def test_show(capsys) -> None:
    assert main(["show", SLUG, "--results", "/nonexistent"]) == 0
    out = capsys.readouterr().out
    assert "criteria (declared in advance)" in out and "last result: none" in out


def test_check_tiny_json_contract(tiny_run) -> None:
    proc, out = tiny_run
    assert proc.returncode in (0, 1), proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 1
    row = rows[0]
    for key in ("slug", "scale", "verdict", "criteria", "metrics", "wall_time_s"):
        assert key in row
    assert row["slug"] == SLUG and row["scale"] == "tiny"
    assert row["criteria"] and {"name", "passed", "value"} <= set(row["criteria"][0])
    smoke_held = all(c["passed"] is True for c in row["criteria"])
    assert row["verdict"] == "inconclusive"  # tiny never judges the claim...
    assert proc.returncode == (0 if smoke_held else 1)  # ...but a run whose smoke criteria hold succeeds
    assert list((out / SLUG / "tiny").iterdir())


def test_show_and_list_see_the_stored_result(tiny_run, capsys) -> None:
    _, out = tiny_run
    assert main(["list", "--json", "--results", str(out)]) == 0
    rows = {r["slug"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[SLUG]["last_verdict"] is not None
    assert main(["show", SLUG, "--results", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "last result: none" not in shown and "at scale tiny" in shown


def test_report_from_results(tiny_run, tmp_path, capsys) -> None:
    _, out = tiny_run
    assert main(["report", "--results", str(out), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "REPORT.md").read_text()
    page = (tmp_path / "index.html").read_text()
    assert SLUG in md and "| paper |" in md
    assert "data:image/png;base64," in page  # self-contained figures
    assert list((tmp_path / "figures").glob(f"{SLUG}_tiny_*.png"))
    assert (tmp_path / "figures" / "summary.png").is_file() and "summary.png" in md.split("## Verdicts")[0]
    again = tmp_path / "again"
    assert main(["report", "--results", str(out), "--out", str(again)]) == 0
    assert (again / "REPORT.md").read_bytes() == (tmp_path / "REPORT.md").read_bytes()  # no clock inside


def test_report_survives_corrupt_result(tiny_run, tmp_path, capsys) -> None:
    import shutil

    _, out = tiny_run
    results = tmp_path / "results"
    shutil.copytree(out, results)
    bad = results / "broken_paper" / "small" / "20990101T000000000000Z-000000"
    bad.mkdir(parents=True)
    (bad / "result.json").write_text("{truncated")
    good = next((out / SLUG / "tiny").iterdir())
    wrong = json.loads((good / "result.json").read_text())
    wrong["slug"], wrong["claim"] = "typed_wrong", {}  # valid JSON, wrong content
    typed = results / "typed_wrong" / "tiny" / "20990101T000000000000Z-000001"
    typed.mkdir(parents=True)
    (typed / "result.json").write_text(json.dumps(wrong))
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep")]) == 0
    captured = capsys.readouterr()
    assert "2 unreadable" in captured.out and "warning" in captured.err
    assert SLUG in (tmp_path / "rep" / "REPORT.md").read_text()
    assert main(["list", "--json", "--results", str(results)]) == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "rfm_grokin", "--scale", "tiny"], "did you mean rfm_grokking"),
        (["show", "nope_nope"], "unknown paper"),
        (["check", SLUG, "--set", "no_such_key=3", "--scale", "tiny"], "unknown config key"),
        (["check", SLUG, "--set", "p=abc", "--scale", "tiny"], "expected an int"),
        (["check", SLUG, "--set", "p", "--scale", "tiny"], "key=value"),
        (["check", SLUG, "--seeds", "0", "--scale", "tiny"], "--seeds"),
        (["check", "--scale", "tiny"], "at least one slug"),
        *([(["check", PLANNED, "--scale", "tiny"], "planned")] if PLANNED else []),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], message: str, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args", [["check", SLUG, "--scale", "huge"], ["check", SLUG, "--seeds", "abc"], ["frob"]]
)
def test_usage_errors_are_one_line(args: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("icml25") and "error:" in err and "\n" not in err


def test_debug_flag_after_the_subcommand_shows_traceback_and_keeps_the_exit_code(capsys) -> None:
    assert main(["show", "nope_nope", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "UnknownSlugError" in err and "icml25: error: unknown paper" in err


def test_show_prints_the_paper_readme(capsys) -> None:
    assert main(["show", SLUG, "--results", "/nonexistent"]) == 0
    out = capsys.readouterr().out
    assert "## How the check differs from the paper" in out and "../shared" not in out


def test_show_into_a_closed_pipe_exits_quietly() -> None:
    code = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-m', 'icml25.cli', 'show', 'rfm_grokking', "
        "'--results', '/nonexistent'], stdout=subprocess.PIPE, stderr=subprocess.PIPE); "
        "p.stdout.close(); err = p.stderr.read(); p.wait(); "
        "print(p.returncode, repr(err.decode()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "0 ''", out.stdout + out.stderr


def test_report_without_results_directory(tmp_path, capsys) -> None:
    assert main(["report", "--results", str(tmp_path / "missing"), "--out", str(tmp_path / "rep")]) == 2
    assert "no results directory" in capsys.readouterr().err


def test_report_keeps_foreign_files(tiny_run, tmp_path, capsys) -> None:
    _, out = tiny_run
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "mine.png").write_bytes(b"x")
    assert main(["report", "--results", str(out), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "figures" / "mine.png").read_bytes() == b"x"


def test_unwritable_output_directory(tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["check", SLUG, "--scale", "tiny", "--out", str(blocker / "sub")]) == 2
    assert "not writable" in capsys.readouterr().err


def test_subprocess_error_has_no_traceback() -> None:
    proc = icml25("check", "nope_nope")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "unknown paper" in proc.stderr


@pytest.mark.skipif(os.environ.get("ICML25_SKIP_ENTRYPOINT") == "1", reason="entry point not installed")
def test_console_script_installed() -> None:
    exe = Path(sys.executable).with_name("icml25")
    proc = subprocess.run(
        [str(exe), "list", "--json", "--results", "/nonexistent"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 38


def test_bench_without_benchmark_is_a_one_line_error(capsys) -> None:
    assert main(["bench", SLUG, "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "has no benchmark" in err and "\n" not in err


def test_a_bench_module_without_main_is_not_a_speed_benchmark(capsys) -> None:
    assert main(["bench", "pisa"]) == 2  # pisa/bench.py scores its video benchmark; no speed runner
    err = capsys.readouterr().err.strip()
    assert "pisa has no benchmark" in err and "condensed_sparse_solver" in err and "pisa," not in err


def test_every_benchmark_option_has_a_help_text() -> None:
    import argparse

    from icml25.catalog import PAPERS
    from icml25.cli import _has_benchmark

    for module in [f"{p.module}.bench" for p in PAPERS if _has_benchmark(p)] + ["icml25.llm.bench"]:
        parser = importlib.import_module(module).build_parser()
        assert isinstance(parser, argparse.ArgumentParser), module
        bare = [a.dest for a in parser._actions if not a.help]  # noqa: SLF001
        assert not bare, f"{module}: options without help: {bare}"


def test_bench_passes_remaining_args(monkeypatch, tmp_path, capsys) -> None:
    import icml25.cli as cli

    seen: list[list[str]] = []
    bench_file = tmp_path / "bench.py"
    bench_file.write_text("\ndef main(argv): ...\n")
    monkeypatch.setattr(cli, "_bench_file", lambda paper: bench_file)
    monkeypatch.setattr("icml25.catalog.resolve", lambda path: lambda argv: seen.append(argv) or 0)
    assert main(["bench", SLUG, "--json", "--sizes", "65"]) == 0
    assert seen == [["--json", "--sizes", "65"]]


def test_show_prints_the_criteria_judged_for_the_small_preset(monkeypatch, capsys) -> None:
    import dataclasses

    from icml25.catalog import get_paper
    from icml25.core.claims import Criterion

    check_class = type(get_paper(SLUG).load_check())

    def claim_for(self, config):
        probe = Criterion("probe", arm=self.claim.ours, metric=f"probe_p{config.p}", op=">", threshold=0.0)
        return dataclasses.replace(self.claim, criteria=(probe,), headline=None, headline_baseline=None)

    monkeypatch.setattr(check_class, "claim_for", claim_for)
    small_p = get_paper(SLUG).load_check().config("small").p
    assert main(["show", SLUG, "--results", "/nonexistent"]) == 0
    out = capsys.readouterr().out
    assert f"probe_p{small_p}" in out and "as judged for the small preset" in out


def test_checks_in_parallel_processes_share_one_store(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("ICML25_HEARTBEAT_S", "0.5")  # a heartbeat line every half second
    slugs = ["lexicographic_morl", "multi_reward_policy_eval"]  # the two quickest tiny checks
    code = main(["check", *slugs, "--scale", "tiny", "--jobs", "2", "--json", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert "/2 done, " in captured.err and "elapsed" in captured.err  # live progress while they run
    rows = json.loads(captured.out)
    assert [r["slug"] for r in rows] == slugs and code in (0, 1)
    for slug in slugs:
        assert len(list((tmp_path / slug / "tiny").iterdir())) == 1


def test_parallel_pool_takes_the_longest_recorded_check_first(tmp_path, monkeypatch, capsys) -> None:
    import types

    import icml25.core.parallel as parallel
    from icml25.core.results import ResultStore

    slugs = ["lexicographic_morl", "multi_reward_policy_eval"]
    walls = {"lexicographic_morl": 10.0, "multi_reward_policy_eval": 500.0}

    def latest(self, slug, scale=None):
        return types.SimpleNamespace(result=types.SimpleNamespace(wall_time_s=walls[slug]))

    submitted: list[str] = []

    def fake_pool(jobs, workers, on_done=None, **progress):  # on_tick, tick_s, expected_s
        assert progress["expected_s"] == [500.0, 10.0]  # the estimate uses the recorded times
        submitted.extend(job.slug for job in jobs)
        return [types.SimpleNamespace(slug=job.slug, scale="tiny", verdict="reproduced") for job in jobs]

    monkeypatch.setattr(ResultStore, "latest", latest)
    monkeypatch.setattr(parallel, "run_in_processes", fake_pool)
    returned: list[str] = []

    def finish(args, results, main):
        returned.extend(r.slug for r in results)
        return 0

    monkeypatch.setattr("icml25.cli._finish", finish)
    assert main(["check", *slugs, "--scale", "tiny", "--jobs", "2", "--quiet", "--out", str(tmp_path)]) == 0
    assert submitted == ["multi_reward_policy_eval", "lexicographic_morl"]
    assert returned == slugs  # results come back in the order asked for


def test_checks_through_submitit_local_executor(tmp_path, capsys) -> None:
    pytest.importorskip("submitit")
    quick = "lexicographic_morl"
    args = ["check", quick, "--scale", "tiny", "--executor", "submitit", "--submitit-cluster", "local"]
    args += ["--json", "--out", str(tmp_path / "res"), "--submitit-folder", str(tmp_path / "logs")]
    code = main(args)
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["slug"] == quick and code in (0, 1)
    assert list((tmp_path / "res" / quick / "tiny").iterdir()) and any((tmp_path / "logs").iterdir())


def test_jobs_must_be_positive(capsys) -> None:
    assert main(["check", SLUG, "--scale", "tiny", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err


# -- issue 16: stored results are untrusted; bad arguments; Ctrl-C ---------------------------------


def _copy_results(tiny_run, tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    _, out = tiny_run
    results = tmp_path / "results"
    shutil.copytree(out, results)
    run_dir = next((results / SLUG / "tiny").iterdir())
    return results, run_dir


def _edit_result(run_dir: Path, **changes: object) -> dict:
    data = json.loads((run_dir / "result.json").read_text())
    data.update(changes)
    (run_dir / "result.json").write_text(json.dumps(data))
    return data


def test_report_never_writes_outside_out(tiny_run, tmp_path, capsys) -> None:
    results, run_dir = _copy_results(tiny_run, tmp_path)
    figure = {"file": "evil.png", "caption": "x"}
    # a result whose slug climbs out, with a real figure, placed where the slug says
    evil = results / "x" / "tiny" / run_dir.name
    evil.mkdir(parents=True)
    data = json.loads((run_dir / "result.json").read_text())
    data.update(slug="../../x", figures=[figure])
    (evil / "result.json").write_text(json.dumps(data))
    (evil / "evil.png").write_bytes(b"\x89PNG")
    # and a figure that is a symlink to a file outside the run folder
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"secret")
    (run_dir / "leak.png").symlink_to(secret)
    _edit_result(run_dir, figures=[{"file": "leak.png", "caption": "leak"}])
    out = tmp_path / "a" / "b" / "rep"
    assert main(["report", "--results", str(results), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "slug" in err and str(evil / "result.json") in err
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    assert not any(p.name.endswith("evil.png") and not str(p).startswith("results") for p in written)
    assert not any(p.name.endswith("leak.png") for p in (out / "figures").iterdir())


def test_report_and_show_carry_no_html_or_terminal_escapes(tiny_run, tmp_path, capsys) -> None:
    results, run_dir = _copy_results(tiny_run, tmp_path)
    data = json.loads((run_dir / "result.json").read_text())
    data["claim"]["statement"] = "<script>alert(1)</script> \x1b]0;pwned\x07\x1b[31mred"
    data["notes"] = ["<img src=x onerror=alert(1)>"]
    data["criteria"][0]["name"] = "\x1b[2J<b>bold</b>"
    (run_dir / "result.json").write_text(json.dumps(data))
    out = tmp_path / "rep"
    assert main(["report", "--results", str(results), "--out", str(out)]) == 0
    md = (out / "REPORT.md").read_text()
    assert "<script" not in md and "<img" not in md and "<b>" not in md and "\x1b" not in md
    assert "&lt;script" in md
    page = (out / "index.html").read_text()
    assert "<script" not in page and "<img src=x" not in page
    capsys.readouterr()
    assert main(["show", SLUG, "--results", str(results)]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\x07" not in shown


def test_tampered_verdict_is_recomputed_in_list_and_report(tiny_run, tmp_path, capsys) -> None:
    results, run_dir = _copy_results(tiny_run, tmp_path)
    data = json.loads((run_dir / "result.json").read_text())
    for c in data["criteria"]:
        c.update(value=0.0, threshold=1.0, op=">", passed=True)
    _edit_result(run_dir, criteria=data["criteria"], verdict="reproduced")
    assert main(["list", "--json", "--results", str(results)]) == 0
    captured = capsys.readouterr()
    row = next(r for r in json.loads(captured.out) if r["slug"] == SLUG)
    assert row["last_verdict"] == "inconclusive"  # tiny never judges, whatever the file says
    assert "disagrees" in captured.err and str(run_dir) in captured.err
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep")]) == 0
    assert "reproduced**" not in (tmp_path / "rep" / "REPORT.md").read_text().replace("not reproduced", "")


def test_report_tolerates_a_concurrent_report(tiny_run, tmp_path, monkeypatch) -> None:
    results, _ = _copy_results(tiny_run, tmp_path)
    out = tmp_path / "rep"
    assert main(["report", "--results", str(results), "--out", str(out)]) == 0
    real_unlink = Path.unlink

    def raced(self: Path, missing_ok: bool = False) -> None:  # the other report deleted it first
        real_unlink(self, missing_ok=True)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", raced)
    assert main(["report", "--results", str(results), "--out", str(out)]) == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", SLUG, "--seeds", "1000000000", "--scale", "tiny"], "--seeds"),
        (["check", SLUG, "--scale", "tiny", "--out", ""], "--out"),
        (["report", "--out", ""], "--out"),
        (["list", "--results", ""], "--results"),
    ],
)
def test_bad_sizes_and_empty_folders_are_one_line_errors(args, message, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_while_starting_is_one_line(monkeypatch, capsys) -> None:
    import icml25.cli as cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert main(["list"]) == 2
    assert capsys.readouterr().err.strip() == "icml25: interrupted"


def test_ctrl_c_after_the_result_is_stored_says_so(monkeypatch, tmp_path, capsys) -> None:
    import icml25.cli as cli

    def interrupted(result: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_print_result", interrupted)
    assert main(["check", SLUG, "--scale", "tiny", "--quiet", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("icml25: interrupted; already stored:") and str(tmp_path) in err
    assert len(err.splitlines()) == 1


def test_show_config_lists_every_key_with_type_and_scales(capsys) -> None:
    assert main(["show", "h_tuning", "--config"]) == 0
    out = capsys.readouterr().out
    assert "lrs" in out and "tuple[float, ...]" in out and "max_ap_drop" in out
    assert "tiny" in out and "small" in out and "full" in out


def test_config_rows_cover_every_field_of_every_check() -> None:
    import dataclasses

    from icml25.catalog import PAPERS
    from icml25.cli import config_rows
    from icml25.core.config import config_to_dict

    def flat(d: dict, prefix: str = "") -> set[str]:
        keys = set()
        for k, v in d.items():
            keys |= flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
        return keys

    for paper in PAPERS:
        if not paper.implemented:
            continue
        check = paper.load_check()
        rows = config_rows(check)
        assert {r[0] for r in rows} == flat(config_to_dict(check.config("small"))), paper.slug
        assert dataclasses.is_dataclass(check.config("small"))


def test_list_shows_the_recorded_verdict_without_local_results(capsys, tmp_path) -> None:
    assert main(["list", "--json", "--results", str(tmp_path / "none")]) == 0
    rows = {r["slug"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["h_tuning"]["last_scale"] == "small, recorded"
    # the verdict the README table records (it changes when the table is re-synced)
    from icml25.catalog import get_paper

    recorded = get_paper("h_tuning").recorded_small_run()
    assert recorded is not None
    assert rows["h_tuning"]["last_verdict"] == recorded.verdict


def test_check_json_carries_config_and_overrides(tmp_path) -> None:
    proc = icml25(
        "check",
        "multi_reward_policy_eval",
        "--scale",
        "tiny",
        "--set",
        "horizon=4000",
        "--json",
        "--quiet",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr  # a tiny run whose smoke criteria hold exits 0 (README)
    row = json.loads(proc.stdout)[0]
    assert row["overrides"] == {"horizon": 4000} and row["config"]["horizon"] == 4000
    assert {"role", "outcome", "interval", "smallest_effect"} <= set(row["criteria"][0])


def test_medium_scale_without_a_preset_is_a_one_line_error(capsys, tmp_path) -> None:
    assert main(["check", SLUG, "--scale", "medium", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{SLUG} has no medium preset" in err and "\n" not in err
