"""scripts/compare-runners: outcomes and the digests of what each step sent."""

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compare-runners"


def _module():
    loader = importlib.machinery.SourceFileLoader("compare_runners", str(SCRIPT))
    spec = importlib.util.spec_from_loader("compare_runners", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _results(path, scenarios):
    path.write_text(
        json.dumps({"impl": "x", "features": ["core"], "scenarios": scenarios, "featureTable": {}})
    )
    return path


def _sent(*digests):
    return [{"step": f"steps[{i}] (run)", "sha256": d} for i, d in enumerate(digests)]


def test_the_first_step_that_sent_other_bytes_is_named(tmp_path):
    py = _results(tmp_path / "py.json", {
        "a": {"outcome": "passed", "features": ["core"], "sent": _sent("11", "22", "33")},
        "b": {"outcome": "passed", "features": ["core"], "sent": _sent("11")},
        "c": {"outcome": "failed", "features": ["core"], "sent": _sent("11")},
    })  # fmt: skip
    node = _results(tmp_path / "node.json", {
        "a": {"outcome": "passed", "features": ["core"], "sent": _sent("11", "2x", "3x")},
        "b": {"outcome": "passed", "features": ["core"], "sent": _sent("11", "44")},
        "c": {"outcome": "passed", "features": ["core"], "sent": _sent("99")},
    })  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--pytest-results", str(py), "--node-results", str(node)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["differences"] == [{"id": "c", "pytest": "failed", "node": "passed"}]
    assert report["sentDifferences"] == [
        {"id": "a", "step": "steps[1] (run)", "pytest": "22", "node": "2x"},
        {"id": "b", "step": "steps[1] (run)", "pytest": "absent", "node": "44"},
    ]


def test_results_without_digests_are_compared_by_outcome(tmp_path):
    compare = _module()
    old = {"a": {"outcome": "passed", "sent": None}}
    new = {"a": {"outcome": "passed", "sent": _sent("11")}}
    assert compare.compare(old, new)["agree"] is True
    assert compare.compare(new, {"a": {"outcome": "passed", "sent": _sent("11")}})["agree"] is True


def test_the_parts_of_one_run_are_merged_a_skip_giving_way_to_a_run(tmp_path):
    """scripts/test: most scenarios by pytest on files and Node on PostgreSQL, the rest the other
    way round; each runner's parts are merged before comparing."""
    py_files = _results(tmp_path / "py-files.json", {
        "a": {"outcome": "passed", "features": ["core"], "sent": _sent("11")},
        "pg-only": {"outcome": "skipped", "features": ["postgresql-store"], "sent": []},
    })  # fmt: skip
    py_pg = _results(tmp_path / "py-pg.json", {
        "pg-only": {"outcome": "passed", "features": ["postgresql-store"], "sent": _sent("22")},
    })  # fmt: skip
    node_pg = _results(tmp_path / "node-pg.json", {
        "a": {"outcome": "passed", "features": ["core"], "sent": _sent("11")},
        "pg-only": {"outcome": "passed", "features": ["postgresql-store"], "sent": _sent("22")},
        "files-only": {"outcome": "skipped", "features": ["file-store"], "sent": []},
    })  # fmt: skip
    node_files = _results(tmp_path / "node-files.json", {
        "files-only": {"outcome": "failed", "features": ["file-store"], "sent": _sent("33")},
    })  # fmt: skip
    py_files_only = _results(tmp_path / "py-files-only.json", {
        "files-only": {"outcome": "passed", "features": ["file-store"], "sent": _sent("33")},
    })  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(SCRIPT),
         "--pytest-results", str(py_files), "--pytest-results", str(py_pg),
         "--pytest-results", str(py_files_only),
         "--node-results", str(node_pg), "--node-results", str(node_files)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["differences"] == [{"id": "files-only", "pytest": "passed", "node": "failed"}], report
    assert report["sentDifferences"] == [] and report["scenarios"] == 3


def test_two_parts_that_ran_a_scenario_to_other_outcomes_count_as_failed(tmp_path):
    compare = _module()
    a = _results(tmp_path / "a.json", {"x": {"outcome": "passed", "features": ["core"], "sent": _sent("1")}})
    b = _results(tmp_path / "b.json", {"x": {"outcome": "failed", "features": ["core"], "sent": _sent("1")}})
    assert compare.load_all([a, b], "pytest")["x"]["outcome"] == "failed"
    assert compare.load_all([b, a], "pytest")["x"]["outcome"] == "failed"
