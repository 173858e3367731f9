"""An in-process driver keeps secret settings off its JVM's command line: PySpark would put
every builder setting there as ``--conf key=value`` (visible to every local user in ``ps``);
assetlake gives the secret ones in a private properties file. The suite's in-process session
(``conftest.py``) is started with one, so no JVM is started here."""

import os


def _jvm_command_lines() -> list[bytes]:
    """The command lines of this process's child JVMs (PySpark's spark-submit execs java)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            if parent != os.getpid():
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                line = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if b"org.apache.spark.deploy.SparkSubmit" in line:
            found.append(line)
    return found


def test_the_in_process_jvm_has_the_secret_setting_and_its_command_line_does_not(spark):
    value = spark.conf.get("spark.assetlake.test.token", None)
    assert value and value.startswith("suite-token-")
    # The JVM's own configuration has it (not only this session's SQL settings).
    assert spark.sparkContext.getConf().get("spark.assetlake.test.token") == value
    lines = _jvm_command_lines()
    assert len(lines) == 1, lines
    assert b"spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in lines[0]  # what a setting looks like
    assert value.encode() not in lines[0]
    # The properties file it came in is gone.
    assert b"--properties-file" in lines[0]
    path = lines[0].split(b"--properties-file\x00", 1)[1].split(b"\x00", 1)[0].decode()
    assert not os.path.exists(path)
