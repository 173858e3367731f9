"""CI guard for scripts/fuzz_annotations.py: 200 generated and mutated files, no traceback, no hang.

The full run (thousands of files) is the script itself; see its docstring.
"""

from assetlake_dagster_tests.helpers import load_fuzzer


def test_the_fuzzer_finds_no_traceback_and_no_hang(tmp_path):
    counts = load_fuzzer().run(200, seed=15, timeout_s=10, out_dir=str(tmp_path / "findings"), quiet=True)
    assert [(f[1], f[3]) for f in counts["findings"]] == []
    assert counts["loaded"] + counts["located"] == 200
    assert counts["loaded"] > 0 and counts["located"] > 0  # both paths exercised


def test_the_inputs_are_reproducible_from_the_seed():
    fuzzer = load_fuzzer()
    assert list(fuzzer.inputs(7, 30)) == list(fuzzer.inputs(7, 30))
    assert list(fuzzer.inputs(7, 30)) != list(fuzzer.inputs(8, 30))


class _Error:
    """The fields of Dagster's SerializableErrorInfo that the fuzzer's run judge reads."""

    def __init__(self, cls_name, message="m", cause=None):
        self.cls_name, self.message, self.cause, self.context = cls_name, message, cause, None

    def to_string(self):
        return f"{self.cls_name}: {self.message}\n"


def test_a_run_failure_is_a_data_error_only_when_spark_or_the_product_refused():
    judge = load_fuzzer()._failure_kind
    spark_errors = {"AnalysisException", "ParseException"}
    wrapped = lambda inner: _Error("DagsterExecutionStepExecutionError", cause=inner)  # noqa: E731
    assert judge(wrapped(_Error("AnalysisException")), spark_errors)[0] == "data error"
    assert judge(wrapped(_Error("WriteError")), spark_errors)[0] == "data error"
    assert judge(_Error("Failure"), spark_errors)[0] == "data error"
    assert judge(wrapped(_Error("KeyError", "'x'")), spark_errors) == ("crash", "KeyError: 'x'\n\nDagsterExecutionStepExecutionError: m\nKeyError: 'x'\n")
    # A Python error that Spark's error was raised from is still ours: the first one judged counts.
    assert judge(wrapped(_Error("TypeError", cause=_Error("AnalysisException"))), spark_errors)[0] == "crash"
