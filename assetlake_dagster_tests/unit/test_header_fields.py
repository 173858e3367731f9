"""Declared header fields: each keyword that fills a spec attribute is one declaration
(annotations/fields.py), and what they share (a repeated line, a missing value, where the
value goes) is done once for all of them."""

import dataclasses

import dagster as dg
import pytest

from assetlake_dagster import build_definitions
from assetlake_dagster.annotations import keywords
from assetlake_dagster.annotations.fields import HeaderField, Repeat, declared_attributes, spec_arguments
from assetlake_dagster.project.load import parse_file
from assetlake_dagster.spec import CatalogSpec, SqlAssetSpec
from assetlake_dagster.defs.translator import DEPRECATED_TAG, AssetlakeTranslator
from assetlake_dagster_tests.helpers import header_errors

M = "-- materialize delta://a/t\n"
#: A valid line of every declared field (a new field adds its own here).
SAMPLE_LINES = {
    "group": "-- group sales",
    "owner": "-- owner team:data-eng",
    "tags": "-- tags tier=gold",
    "description": "-- description Cleaned orders.",
    "kinds": "-- kinds silver",
    "deprecated": "-- deprecated Read delta://a/t2.",
    "cluster_by": "-- cluster_by id",
    "properties": "-- properties delta.enableChangeDataFeed=true",
    "maintain": "-- maintain 0 3 * * 0 vacuum=30d",
    "schedule": "-- schedule 0 2 * * *",
    "automation": "-- automation eager",
    "freshness": "-- freshness fail=26h",
    "publish_with": "-- publish_with daily_sales",
}


def test_every_field_fills_an_attribute_of_the_spec_and_has_a_keyword_of_its_own():
    attributes = declared_attributes(SqlAssetSpec)
    assert [f.into for f in keywords.FIELDS if f.into not in attributes] == []
    assert len({f.keyword for f in keywords.FIELDS}) == len(keywords.FIELDS)
    assert len({f.into for f in keywords.FIELDS}) == len(keywords.FIELDS)
    assert set(keywords.FIELDS_BY_KEYWORD).isdisjoint(keywords.LINE_PARSERS)
    assert set(SAMPLE_LINES) == set(keywords.FIELDS_BY_KEYWORD)


def test_every_catalog_attribute_is_declared_once():
    catalog = {f"catalog.{f.name}" for f in dataclasses.fields(CatalogSpec)}
    assert sorted(f.into for f in keywords.FIELDS if f.into.startswith("catalog.")) == sorted(catalog)


@pytest.mark.parametrize("field", [f for f in keywords.FIELDS if f.repeat is Repeat.ONCE], ids=lambda f: f.keyword)
def test_a_second_line_of_a_field_that_takes_one_names_the_first(field):
    line = SAMPLE_LINES[field.keyword]
    assert header_errors(line + "\n" + line) == [
        f"f.sql:3:4: {field.noun} is already set on line 2. {field.once_hint}"
    ]


@pytest.mark.parametrize("field", [f for f in keywords.FIELDS if f.form is not None], ids=lambda f: f.keyword)
def test_a_field_line_without_a_value_shows_its_form(field):
    assert header_errors(f"-- {field.keyword}") == [
        f"f.sql:2:4: '-- {field.keyword}' needs a value. Write '{field.form}'."
    ]


def test_every_sample_line_loads_into_the_spec():
    spec, problems = parse_file("/p/f.sql", M + "\n".join(SAMPLE_LINES.values()) + "\nSELECT 1 AS id\n")
    assert problems == []
    assert spec.catalog == CatalogSpec(
        "sales", ("team:data-eng",), (("tier", "gold"),), "Cleaned orders.", ("silver",), "Read delta://a/t2."
    )
    assert spec.layout.to_metadata()["assetlake/layout"] == {
        "cluster_by": ["id"], "properties": {"delta.enableChangeDataFeed": "true"},
    }
    assert (spec.schedule.cron, spec.automation.kind.value, spec.freshness.fail.total_seconds()) == (
        "0 2 * * *", "eager", 26 * 3600,
    )


def test_a_new_field_is_one_declaration(monkeypatch):
    """A keyword declared once reaches the spec, and through it the translator, with no
    other change: here a `-- summary` line that adds to the description."""
    summary = HeaderField("summary", into="catalog.description", parse=lambda line: line.text().text,
                          form="-- summary <text>", repeat=Repeat.JOIN)
    monkeypatch.setitem(keywords.FIELDS_BY_KEYWORD, "summary", summary)
    spec, problems = parse_file("/p/f.sql", M + "-- summary One row per order,\n-- summary cleaned.\nSELECT 1 AS id\n")
    assert problems == []
    assert spec.catalog.description == "One row per order, cleaned."
    assert AssetlakeTranslator().get_description(spec).startswith("One row per order, cleaned.")
    assert header_errors("-- summary") == ["f.sql:2:4: '-- summary' needs a value. Write '-- summary <text>'."]


def test_a_deprecated_file_says_so_in_the_catalog(tmp_path):
    """``-- deprecated`` is one declaration (catalog_attributes.FIELDS) and its consumer (the
    translator): the asset's description starts with the note, and it has a badge."""
    (tmp_path / "old.sql").write_text(
        "-- materialize delta://a/old\n-- description Orders, the first cut.\n"
        "-- deprecated Read delta://a/orders;\n-- deprecated this table goes in March.\nSELECT 1 AS id\n"
    )
    (tmp_path / "orders.sql").write_text("-- materialize delta://a/orders\nSELECT 1 AS id\n")
    defs = build_definitions(str(tmp_path), lake_root=str(tmp_path / "lake"), load_python_files=False)
    specs = {spec.key: spec for spec in defs.resolve_all_asset_specs()}
    old, orders = specs[dg.AssetKey(["a", "old"])], specs[dg.AssetKey(["a", "orders"])]
    assert old.description.startswith(
        "**Deprecated:** Read delta://a/orders; this table goes in March.\n\nOrders, the first cut."
    )
    assert old.tags.get(DEPRECATED_TAG) == "" and DEPRECATED_TAG not in orders.tags
    assert "Deprecated" not in orders.description


def test_spec_arguments_gather_bundles_and_leave_absent_fields_to_the_defaults():
    arguments = spec_arguments({"catalog.group": "g", "catalog.kinds": ("k",)}, SqlAssetSpec)
    assert arguments == {"catalog": CatalogSpec(group="g", kinds=("k",))}
    assert spec_arguments({}, SqlAssetSpec) == {}
