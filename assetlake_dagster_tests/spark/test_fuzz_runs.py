"""Layer 4, CI guard for ``scripts/fuzz_annotations.py --run``: what validate accepts runs
on real Spark + Delta to a data error at worst (never a crash, never a hang).

The full run (hundreds of folders) is the script itself; see its docstring.
"""

from assetlake_dagster_tests.helpers import load_fuzzer


def test_folders_that_load_run_to_a_data_error_at_worst(spark, tmp_path):
    # Inputs are mutations of the repository's SQL files, so which of them load and run moves
    # with every edit there; 1000 (loads take a second or two) leave room for 12 runnable.
    counts = load_fuzzer().run(1000, seed=15, timeout_s=10, out_dir=str(tmp_path / "findings"), quiet=True, runs=12, run_timeout_s=120)
    assert [(f[0], f[1], f[3][-2000:]) for f in counts["findings"]] == []
    runs = counts["runs"]
    assert sum(runs.values()) == 12
    assert runs["ran"] > 0 and runs["data error"] > 0  # both outcomes exercised
