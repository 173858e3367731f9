"""Layer 4: the warm engine without the Delta jars on disk and without a reachable Maven
repository (Spark's resolver pointed at a closed port): its start fails with what to do,
not only Spark's log tail."""

import pytest

from assetlake_dagster.spark.engine import EngineError, WarmEngine

DEAD_REPOSITORY = """<ivysettings>
  <settings defaultResolver="dead"/>
  <resolvers><ibiblio name="dead" m2compatible="true" root="http://127.0.0.1:9/maven2/"/></resolvers>
</ivysettings>
"""


def test_an_engine_that_cannot_download_delta_says_what_to_run(tmp_path, monkeypatch):
    (tmp_path / "no-jars").mkdir()
    (tmp_path / "ivysettings.xml").write_text(DEAD_REPOSITORY)
    monkeypatch.setenv("ASSETLAKE_JARS_DIR", str(tmp_path / "no-jars"))
    engine = WarmEngine(str(tmp_path / "engine"), spark_conf={
        "spark.jars.ivySettings": str(tmp_path / "ivysettings.xml"),
        "spark.jars.ivy": str(tmp_path / "ivy"),  # an empty cache: nothing resolved before
    }, log=lambda message: None)
    try:
        with pytest.raises(EngineError) as raised:
            engine.ensure()
    finally:
        engine.stop()
    message = str(raised.value)
    assert "unresolved dependency: io.delta#delta-spark_2.13" in message  # Spark's own line, in the tail
    assert "Spark could not download the Delta jars io.delta:delta-spark_2.13:" in message
    assert "Run `assetlake setup`" in message and str(tmp_path / "no-jars") in message
