"""Seeds at load time: a CSV file's '-- ' lines, its typed rows, and every problem located."""

import datetime as dt
import decimal

import pytest

from assetlake_dagster.project.seeds import infer_type, load_seeds, parse_seed
from assetlake_dagster.spec import TableUri

COUNTRIES = """\
-- seed delta://ref/countries key=code
-- column population BIGINT
-- column area DECIMAL(10,2)
-- description ISO 3166 countries, by hand.
code,name,population,area,joined,eu,updated_at
FR,France,68000000,551695.00,1958-01-01,true,2024-05-01 10:00:00
DE,"Germany, Federal Republic",84000000,357588.5,1958-01-01,TRUE,2024-05-01T11:30:00
NO,Norway,,385207,,false,
"""


def parsed(text, path="ref/countries.csv"):
    spec, problems = parse_seed(path, text)
    return spec, [p.render().splitlines()[0] for p in problems]


def test_a_seed_is_parsed_into_typed_rows_with_its_table_key_and_description():
    spec, problems = parsed(COUNTRIES)
    assert problems == []
    assert spec.uri == TableUri("ref", "countries") and spec.key == ("code",) and spec.strategy == "merge"
    assert spec.description == "ISO 3166 countries, by hand."
    assert spec.columns == (
        ("code", "STRING"), ("name", "STRING"), ("population", "BIGINT"), ("area", "DECIMAL(10,2)"),
        ("joined", "DATE"), ("eu", "BOOLEAN"), ("updated_at", "TIMESTAMP"),
    )
    assert spec.rows == (
        ("FR", "France", 68000000, decimal.Decimal("551695.00"), dt.date(1958, 1, 1), True,
         dt.datetime(2024, 5, 1, 10, 0)),
        ("DE", "Germany, Federal Republic", 84000000, decimal.Decimal("357588.50"), dt.date(1958, 1, 1), True,
         dt.datetime(2024, 5, 1, 11, 30)),
        ("NO", "Norway", None, decimal.Decimal("385207.00"), None, False, None),
    )
    assert spec.ddl.startswith("`code` STRING, `name` STRING, `population` BIGINT, `area` DECIMAL(10,2)")


def test_without_a_seed_line_the_file_replaces_seeds_dot_its_name():
    spec, problems = parsed("id,label\n1,a\n\n2,b\n", path="lake/sizes.csv")
    assert problems == []
    assert (spec.uri, spec.key, spec.strategy) == (TableUri("seeds", "sizes"), (), "replace")
    assert spec.rows == ((1, "a"), (2, "b"))  # the blank line is skipped


@pytest.mark.parametrize("values, expected", [
    (["1", "-2", ""], "BIGINT"),
    (["1", "2.5", "1e3"], "DOUBLE"),
    (["true", "False"], "BOOLEAN"),
    (["2024-01-31", ""], "DATE"),
    (["2024-01-31 10:00", "2024-01-31T10:00:01.5"], "TIMESTAMP"),
    (["2024-01-31", "2024-01-31 10:00"], "STRING"),
    (["1", "x"], "STRING"),
    (["", ""], "STRING"),
    (["99999999999999999999"], "DOUBLE"),  # beyond BIGINT
    (["0012"], "BIGINT"),
])
def test_inferred_types(values, expected):
    assert infer_type(values) == expected


def test_a_ragged_row_is_located_at_its_line():
    _, problems = parsed("id,name\n1,a\n2,b,extra\n3\n", path="s.csv")
    assert problems == [
        "s.csv:3:1: the row has 3 fields, the header has 2. Give every row one value per column (an empty value "
        "is NULL); quote values that hold a comma.",
        "s.csv:4:1: the row has 1 field, the header has 2. Give every row one value per column (an empty value "
        "is NULL); quote values that hold a comma.",
    ]


def test_a_value_not_of_its_declared_type_is_located_at_its_cell():
    _, problems = parsed("-- column n INT\nid,n\n1,7\n2,seven\n3,99999999999\n", path="s.csv")
    assert problems == [
        "s.csv:4:3: 'seven' in column 'n' is not of type INT. Fix the value, or declare the column's type: "
        "'-- column n STRING'.",
        "s.csv:5:3: '99999999999' in column 'n' is not of type INT. Fix the value, or declare the column's type: "
        "'-- column n STRING'.",
    ]


def test_a_decimal_that_would_be_rounded_is_refused():
    _, problems = parsed("-- column price DECIMAL(5,2)\nprice\n1.25\n1.255\n12345.0\n", path="s.csv")
    assert [p.split(": ", 1)[0] for p in problems] == ["s.csv:4:1", "s.csv:5:1"]


def test_repeated_and_empty_keys_are_located():
    _, problems = parsed("-- seed delta://ref/c key=code\nname,code\nFrance,FR\nGermany,\nFrench Republic,FR\n",
                         path="c.csv")
    assert problems == [
        "c.csv:4:9: the key column 'code' is empty (NULL). Every row of a keyed seed needs its key.",
        "c.csv:5:17: the key (code) = 'FR' repeats the row at line 3. Each key appears once; remove or merge the rows.",
    ]


def test_a_composite_key_repeats_only_as_a_whole():
    spec, problems = parsed("-- seed delta://ref/c key=a,b\na,b\n1,1\n1,2\n", path="c.csv")
    assert problems == [] and spec.key == ("a", "b")
    _, problems = parsed("-- seed delta://ref/c key=a,b\na,b\n1,1\n1,1\n", path="c.csv")
    assert problems == ["c.csv:4:1: the key (a, b) = (1, 1) repeats the row at line 3. Each key appears once; "
                        "remove or merge the rows."]


@pytest.mark.parametrize("text, expected", [
    ("-- seed delta://ref/c key=cod\ncode\nFR\n",
     "c.csv:1:27: key column 'cod' is not a column of the seed (code). Name a column of the header row."),
    ("-- seed ref/c\ncode\nFR\n",
     "c.csv:1:9: expected 'delta://<schema>/<table>', got 'ref/c'. Name the table as delta://<schema>/<table>."),
    ("-- seed delta://ref/c kye=code\ncode\nFR\n",
     "c.csv:1:23: unknown seed option 'kye=code'. The option is key=<col>[,<col>…]."),
    ("-- column code TEXT\ncode\nFR\n",
     "c.csv:1:16: expected '-- column <name> <TYPE>'. Use STRING, BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p,s), DATE "
     "or TIMESTAMP."),
    ("-- column cod STRING\ncode\nFR\n",
     "c.csv:1:11: 'cod' is not a column of the seed (code). Name a column of the header row."),
    ("-- materialize delta://ref/c\ncode\nFR\n",
     "c.csv:1:4: unknown seed line '-- materialize'. A seed's '-- ' lines are 'seed', 'column' and 'description'."),
    ("code,na me\nFR,France\n",
     "c.csv:1:6: column name 'na me' is not a plain identifier. Use letters, digits and underscores, not starting "
     "with a digit."),
    ("code,CODE\nFR,fr\n",
     "c.csv:1:6: columns 'code' and 'CODE' collide (Delta column names are case-insensitive). Rename one of them."),
    ("code,_partition\nFR,x\n",
     "c.csv:1:6: column name '_partition' is reserved (managed by assetlake). Rename the column."),
    ('code,name\nFR,"France\n',
     "c.csv:2:1: the CSV cannot be read: unexpected end of data. Close every quoted value, and double a quote "
     "inside one (\"\")."),
    ("-- seed delta://ref/c\n",
     "c.csv:2:1: the seed has no header row (the column names). Put the column names on the first line after the "
     "'-- ' lines."),
])
def test_each_problem_is_located_with_its_fix(text, expected):
    spec, problems = parsed(text, path="c.csv")
    assert spec is None and problems == [expected]


def test_a_file_name_that_is_no_table_name_needs_a_seed_line():
    _, problems = parsed("code\nFR\n", path="ref/country-codes.csv")
    assert problems == [
        "ref/country-codes.csv:1:1: the file name 'country-codes' is not a table name, and no '-- seed' line names "
        "the table. Add '-- seed delta://<schema>/<table>' as the first line, or rename the file (letters, digits "
        "and underscores)."
    ]


def test_load_seeds_finds_every_csv_below_the_folder_and_hashes_its_bytes(tmp_path):
    (tmp_path / "ref").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "ref" / "a.csv").write_text("id\n1\n")
    (tmp_path / "b.csv").write_bytes(b"\xef\xbb\xbfid\r\n2\r\n")  # a BOM and CRLF line ends, as Excel saves
    (tmp_path / ".hidden" / "c.csv").write_text("id\n3\n")
    seeds, problems = load_seeds(str(tmp_path))
    assert problems == []
    assert [(str(s.uri), s.rows) for s in seeds] == [("delta://seeds/b", ((2,),)), ("delta://seeds/a", ((1,),))]
    before = seeds[1].code_version
    (tmp_path / "ref" / "a.csv").write_text("id\n1\n4\n")
    assert load_seeds(str(tmp_path))[0][1].code_version != before


def test_a_file_that_is_not_utf8_is_located(tmp_path):
    (tmp_path / "latin.csv").write_bytes("name\nFran\xe7ois\n".encode("latin-1"))
    _, problems = load_seeds(str(tmp_path))
    assert [p.render().split(": ", 1)[1] for p in problems] == ["the file is not valid UTF-8 (byte 0xe7). Save it as UTF-8."]
    assert (problems[0].location.line, problems[0].location.col) == (2, 5)


def test_a_seed_linking_outside_the_project_or_a_named_pipe_is_refused(tmp_path):
    import os

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere.csv"
    project.mkdir()
    elsewhere.write_text("secret\n1\n")
    (project / "linked.csv").symlink_to(elsewhere)
    os.mkfifo(project / "pipe.csv")  # would block a plain open() for ever
    seeds, problems = load_seeds(str(project))
    assert seeds == []
    assert sorted(p.message for p in problems) == [
        f"the file is a symlink to {elsewhere}, outside the project folder.",
        "the file is not a regular file (a named pipe), so it cannot be read as a seed (CSV).",
    ]


SIZES_SQL = """\
-- materialize delta://mart/orders_sized

SELECT s.label FROM ref.sizes AS s
"""


def _project(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return str(tmp_path)


def test_a_sql_file_reads_a_seed_as_its_upstream_asset(tmp_path):
    import dagster as dg

    from assetlake_dagster.defs.build import build_definitions
    from assetlake_dagster.project.load import load_project

    root = _project(tmp_path, {"ref/sizes.csv": "-- seed delta://ref/sizes key=id\nid,label\n1,S\n", "o.sql": SIZES_SQL})
    project = load_project(root)
    assert [str(s.uri) for s in project.seeds] == ["delta://ref/sizes"] and project.external == ()
    defs = build_definitions(root)
    graph = defs.resolve_asset_graph()
    seed = graph.get(dg.AssetKey(["ref", "sizes"]))
    assert seed.code_version == project.seeds[0].code_version and seed.kinds == {"csv", "delta"}
    assert dg.AssetKey(["ref", "sizes"]) in graph.get(dg.AssetKey(["mart", "orders_sized"])).parent_keys


def test_a_table_two_producers_write_is_located(tmp_path):
    from assetlake_dagster.errors import ProjectError
    from assetlake_dagster.project.load import load_project

    root = _project(tmp_path, {
        "a.csv": "-- seed delta://ref/sizes\nid\n1\n",
        "b.csv": "-- seed delta://ref/sizes\nid\n2\n",
        "c.sql": "-- materialize delta://ref/sizes\n\nSELECT 1 AS id\n",
    })
    with pytest.raises(ProjectError) as raised:
        load_project(root)
    lines = [p.render().splitlines()[0] for p in raised.value.diagnostics]
    assert any(line.endswith("b.csv:1:1: delta://ref/sizes is also produced by the seed ref/sizes in "
                             f"{_shown(tmp_path, 'a.csv')}. A table has exactly one producer: name another table "
                             "with '-- seed delta://<schema>/<table>'.") for line in lines), lines
    assert any("c.sql:1:" in line and "also produced by the seed ref/sizes" in line for line in lines), lines


def _shown(tmp_path, name):
    from assetlake_dagster.errors import display_path

    return display_path(str(tmp_path / name))


def test_validate_reports_a_bad_seed(tmp_path, capsys):
    from assetlake_dagster_tests.helpers import run_cli

    root = _project(tmp_path, {"ref/sizes.csv": "-- column n INT\nid,n\n1,x\n"})
    code, out, err = run_cli(capsys, "validate", root)
    assert code != 0
    assert "sizes.csv:3:3: 'x' in column 'n' is not of type INT." in out + err


def test_validate_counts_the_seeds(tmp_path, capsys):
    from assetlake_dagster_tests.helpers import run_cli

    root = _project(tmp_path, {"ref/sizes.csv": "id\n1\n", "o.sql": SIZES_SQL.replace("ref.sizes", "seeds.sizes")})
    code, out, err = run_cli(capsys, "validate", root)
    assert (code, out, err) == (0, f"ok: 1 assets, 1 seed, 0 external tables in {root}\n", "")
