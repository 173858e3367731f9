"""``-- publish_with <name>``: the tables of the files that name one group are published together.

The line only names the group; what the group means across files (two or more members,
partitioned alike, none of them ``manual`` or a view) is checked by
:func:`assetlake_dagster.project.dag.check_project`, and what a run does with it by
:mod:`assetlake_dagster.run.publish_group`.
"""

import re
from typing import Optional

from assetlake_dagster.annotations.fields import FieldLine, HeaderField
from assetlake_dagster.spec import PublishGroupSpec

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
NAME_HINT = "Name the group with letters, digits and '_' (at most 63, not starting with a digit), e.g. '-- publish_with daily_sales'."


def parse_publish_with(line: FieldLine) -> Optional[PublishGroupSpec]:
    name = line.rest[0]
    if len(line.rest) > 1:
        line.error(line.rest[1], "'-- publish_with' names one group.", "A table is published with one group; keep one name.")
        return None
    if not _NAME.fullmatch(name.text):
        line.error(name, f"'{name.text}' is not a publish group name.", NAME_HINT)
        return None
    return PublishGroupSpec(name.text, location=line.draft.src.location(line.keyword.line, line.keyword.col))


#: The publish group line, declared once.
FIELDS = (
    HeaderField(
        "publish_with", into="publish_with", parse=parse_publish_with, form="-- publish_with <group>",
        noun="the publish group", once_hint="A table is published with one group; keep one '-- publish_with' line.",
    ),
)
