"""Names the write contract reserves or allow-lists: identifiers, table URIs, managed columns.

Every module that spells a managed column (``_partition``, the SCD2 validity columns) or
checks an identifier imports it from here, so the contract has one spelling.
"""

import re
from dataclasses import dataclass

IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: How to fix a name that is not an identifier (:data:`IDENTIFIER_RE`), wherever it is refused.
IDENTIFIER_HINT = "Use letters, digits and underscores, not starting with a digit."
URI_SCHEME = "delta://"
#: Spark's name of its session catalog, where the lake's tables are registered: ``spark_catalog.s.t``
#: is the lake's ``s.t``.
SESSION_CATALOG_NAME = "spark_catalog"

#: The managed column holding each row's partition key; the table's Delta partition column.
PARTITION_COLUMN = "_partition"
#: SCD2 history: when a version became current (the run's UTC timestamp).
VALID_FROM = "valid_from"
#: SCD2 history: when a version stopped being current (NULL: it still is).
VALID_TO = "valid_to"
#: SCD2 history: whether the row is its key's current version.
IS_CURRENT = "is_current"
#: The SCD2 managed columns, in the order they follow the data columns.
HISTORY_COLUMNS = (VALID_FROM, VALID_TO, IS_CURRENT)
#: Columns the IO manager owns; a SELECT may not project them (case-insensitive).
RESERVED_COLUMNS = frozenset({PARTITION_COLUMN, *HISTORY_COLUMNS})
#: Suffix reserved for the SCD2 companion view.
RESERVED_TABLE_SUFFIX = "_current"

def is_identifier(name: str) -> bool:
    """Whether ``name`` is an allow-listed identifier (``^[A-Za-z_][A-Za-z0-9_]*$``).

    Example:
        >>> is_identifier("dim_customer"), is_identifier("a-b"), is_identifier("1x")
        (True, False, False)
    """
    return bool(IDENTIFIER_RE.match(name))


def quote_identifier(name: str) -> str:
    """Backtick-quote an allow-listed identifier for Spark SQL.

    Raises ValueError for anything not allow-listed, so callers cannot splice text.

    Example:
        >>> quote_identifier("order_id")
        '`order_id`'
    """
    if not is_identifier(name):
        raise ValueError(f"not an allowed identifier: {name!r}")
    return f"`{name}`"



@dataclass(frozen=True)
class TableUri:
    """A managed table ``delta://<schema>/<table>``.

    Example:
        >>> uri = TableUri("analytics", "dim_customer")
        >>> str(uri), uri.sql_name, uri.asset_key_path
        ('delta://analytics/dim_customer', 'analytics.dim_customer', ['analytics', 'dim_customer'])
        >>> uri.qualified_name
        'spark_catalog.analytics.dim_customer'
    """

    schema: str
    table: str

    def __post_init__(self) -> None:
        for part in (self.schema, self.table):
            if not is_identifier(part):
                raise ValueError(f"not an allowed identifier: {part!r}")

    def __str__(self) -> str:
        return f"{URI_SCHEME}{self.schema}/{self.table}"

    @property
    def sql_name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def qualified_name(self) -> str:
        """The name with its catalog, as the catalog knows it (``dagster/table_name``)."""
        return f"{SESSION_CATALOG_NAME}.{self.sql_name}"

    @property
    def asset_key_path(self) -> list[str]:
        return [self.schema, self.table]

    @classmethod
    def parse(cls, text: str) -> "TableUri":
        """Parse ``delta://schema/table``; raises ValueError with the reason."""
        if not text.startswith(URI_SCHEME):
            raise ValueError(f"expected '{URI_SCHEME}<schema>/<table>', got {text!r}")
        parts = text[len(URI_SCHEME) :].split("/")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"expected '{URI_SCHEME}<schema>/<table>', got {text!r}")
        return cls(parts[0], parts[1])
