"""The header grammar: the leading comment block of an annotated SQL file → typed specs.

* :mod:`~assetlake_dagster.annotations.keywords`: the keyword registry and the header loop.
* :mod:`~assetlake_dagster.annotations.header`: words, positions, the draft, shared helpers.
* one module per family of lines: :mod:`.materialize`, :mod:`.partitioned`,
  :mod:`.upstreams` (``-- on``), :mod:`.data_test`, :mod:`.arguments` (``-- $name``),
  :mod:`.catalog_attributes` (group, owner, tags, description, kinds), :mod:`.automation`
  (schedule, automation), :mod:`.freshness`, :mod:`.table_layout` (cluster_by, properties),
  :mod:`.maintain`, :mod:`.column` (a column's lineage or description).
* :mod:`~assetlake_dagster.annotations.fields`: what every declared field shares (a keyword
  whose value goes straight into the spec: one declaration each).

Checks that need the SQL body or other files happen afterwards, in
:mod:`assetlake_dagster.project.load` and :mod:`assetlake_dagster.project.dag`.
"""

from assetlake_dagster.annotations.header import (
    Header as Header,
    Word as Word,
    header_length as header_length,
)
from assetlake_dagster.annotations.keywords import (
    FIELDS as FIELDS,
    KEYWORDS as KEYWORDS,
    LINE_PARSERS as LINE_PARSERS,
    parse_header as parse_header,
    parse_line_text as parse_line_text,
)
