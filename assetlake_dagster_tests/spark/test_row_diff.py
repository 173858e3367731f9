"""``assetlake diff``: the rows added, removed and changed between two versions of a table,
by key or by whole row, and between a dev lake's copy and prod's, on real Delta tables."""

import os

from assetlake_dagster.cli.main import main

SCHEMA = "id INT, name STRING, tier STRING"


def save(spark, path, rows, schema=SCHEMA, mode="overwrite"):
    spark.createDataFrame(rows, schema).write.format("delta").mode(mode).option("overwriteSchema", "true").save(path)


def run_cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_versions_by_key_whole_rows_and_another_lake(spark, tmp_path, capsys):
    lake = str(tmp_path / "dev")
    path = os.path.join(lake, "s", "t")
    save(spark, path, [(1, "ann", "gold"), (2, "bob", "silver"), (3, "cy", None)])  # version 0
    save(spark, path, [(1, "ann", "platinum", None), (3, "cy", "bronze", None), (4, "di", "gold", "d@x")], SCHEMA + ", email STRING")  # 1

    code, out, err = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "id")
    assert (code, err) == (0, "")
    assert out == (
        "delta://s/t: version 0 -> version 1, rows matched by id\n"
        "schema: added: email string\n"
        "1 added, 1 removed, 2 changed\n"
        "+ id=4, name='di', tier='gold'\n"
        "- id=2, name='bob', tier='silver'\n"
        "~ id=1: tier 'gold' -> 'platinum'\n"
        "~ id=3: tier None -> 'bronze'\n"
    )

    # By whole row (no key): a changed row is one removed and one added; --sample bounds them.
    code, out, _ = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "", "--sample", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[1:3] == ["schema: added: email string", "3 added, 3 removed"]
    assert lines[3].startswith("+ ") and lines[4] == "+ … and 2 more"
    assert lines[5].startswith("- ") and lines[6] == "- … and 2 more"

    # From nothing: version 0 against no table.
    code, out, _ = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "id", "--to", "0")
    assert out.splitlines()[:3] == ["delta://s/t: no table -> version 0, rows matched by id", "schema: unchanged", "3 added, 0 removed, 0 changed"]

    # The same table in another lake (prod) against this one.
    prod = str(tmp_path / "prod")
    save(spark, os.path.join(prod, "s", "t"), [(1, "ann", "platinum", None), (3, "cy", "bronze", None)], SCHEMA + ", email STRING")
    code, out, _ = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "id", "--against", prod)
    assert out == (
        f"delta://s/t: {prod} version 0 -> this lake's version 1, rows matched by id\n"
        "schema: unchanged\n"
        "1 added, 0 removed, 0 changed\n"
        "+ id=4, name='di', tier='gold', email='d@x'\n"
    )


def test_the_defaults_pass_over_commits_that_change_no_rows(spark, tmp_path, capsys):
    """An edited description or column comment is a commit of its own; "the latest change"
    is still the last commit that changed rows."""
    lake = str(tmp_path / "lake")
    path = os.path.join(lake, "s", "t")
    save(spark, path, [(1, "ann", "gold"), (2, "bob", "silver")])  # version 0
    save(spark, path, [(1, "ann", "platinum"), (2, "bob", "silver")])  # 1
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('comment' = 'Customers.')")  # 2
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN tier COMMENT 'The tier.'")  # 3

    code, out, _ = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "id")
    assert code == 0
    assert out.splitlines()[:3] == [
        "delta://s/t: version 0 -> version 1, rows matched by id", "schema: unchanged", "0 added, 0 removed, 1 changed",
    ]
    # A version named with --to is taken as given; the one before it is the last that changed rows.
    code, out, _ = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "id", "--to", "3")
    assert out.splitlines()[0] == "delta://s/t: version 1 -> version 3, rows matched by id"


def test_bad_requests_are_refused_clearly(spark, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    path = os.path.join(lake, "s", "t")
    save(spark, path, [(1, "a", "x"), (1, "b", "y")])
    code, _, err = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--key", "id", "--to", "0")
    assert code == 1
    assert err == (
        "delta://s/t: id is not unique in version 0 (1 keys appear more than once). "
        "Name a unique key with --key, or none to compare whole rows.\n"
    )
    code, _, err = run_cli(capsys, "diff", "delta://s/t", "--lake-root", lake, "--from", "3")
    assert (code, err) == (1, f"delta://s/t: version 3 does not exist at {path}; its versions are 0 to 0.\n")
    code, _, err = run_cli(capsys, "diff", "delta://s/none", "--lake-root", lake, "--key", "id")
    assert code == 1 and err.startswith("delta://s/none: no Delta table at ")


def test_the_key_comes_from_the_project(spark, tmp_path, capsys, monkeypatch):
    """A merge's key= and a history table's key + valid_from, read from the project's files."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "m.sql").write_text("-- materialize delta://s/m key=id\n\nSELECT id, name FROM raw.src\n")
    (project / "h.sql").write_text("-- materialize delta://s/h key=id history\n\nSELECT id, name FROM raw.src\n")
    lake = str(tmp_path / "lake")
    save(spark, os.path.join(lake, "s", "m"), [(1, "a", "x")])
    save(spark, os.path.join(lake, "s", "m"), [(1, "b", "x")])
    code, out, _ = run_cli(capsys, "diff", "delta://s/m", "--lake-root", lake, "--project-dir", str(project))
    assert (code, out.splitlines()[0]) == (0, "delta://s/m: version 0 -> version 1, rows matched by id")
    history = os.path.join(lake, "s", "h")
    spark.sql(
        "SELECT 1 AS id, 'a' AS name, TIMESTAMP'2024-01-01' AS valid_from, CAST(NULL AS TIMESTAMP) AS valid_to, true AS is_current"
    ).write.format("delta").save(history)
    code, out, _ = run_cli(capsys, "diff", "delta://s/h", "--lake-root", lake, "--project-dir", str(project), "--to", "0")
    assert (code, out.splitlines()[0]) == (0, "delta://s/h: no table -> version 0, rows matched by id, valid_from")
