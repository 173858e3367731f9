"""The Dagster asset of a seed (:mod:`assetlake_dagster.project.seeds`): its rows, as a Spark
DataFrame of the seed's schema, handed to the Delta IO manager's managed write.

A ``TIMESTAMP`` value without an offset is a wall time in the session's zone
(``spark.sql.session.timeZone``), wherever the run's Python process is
(:mod:`assetlake_dagster.spark.python_values`)."""

import dagster as dg

from assetlake_dagster.errors import display_path
from assetlake_dagster.defs.write_contract import managed_write
from assetlake_dagster.project.seeds import SeedSpec
from assetlake_dagster.spark.python_values import rows_in_session_zone

#: The kinds the UI shows on a seed's asset.
SEED_KINDS = {"csv", "delta"}


def seed_asset(spec: SeedSpec, spark_resource_key: str = "spark", io_manager_key: str = "io_manager") -> dg.AssetsDefinition:
    """The asset that writes ``spec``'s rows to its table: a replace, or a merge on its key.

    Its key is ``[schema, table]``, its group the schema (as a SQL file's without ``-- group``),
    its code version the file's hash.

    Example:
        >>> from assetlake_dagster.project.seeds import parse_seed
        >>> spec, _ = parse_seed("ref/sizes.csv", "-- seed delta://ref/sizes key=id\\nid,label\\n1,S\\n")
        >>> asset = seed_asset(spec)
        >>> asset.key.to_user_string(), asset.metadata_by_key[asset.key]["assetlake/write"]["strategy"]
        ('ref/sizes', 'merge')
    """
    shown = display_path(spec.path)

    @dg.asset(
        key=spec.uri.asset_key_path,
        group_name=spec.uri.schema,
        description=spec.description or f"Seed {shown}.",
        metadata={
            **managed_write(spec.strategy, key=list(spec.key), table=str(spec.uri)),
            "assetlake/seed": shown,
            "dagster/column_schema": dg.TableSchema(columns=[dg.TableColumn(n, t) for n, t in spec.columns]),
        },
        code_version=spec.code_version,
        kinds=SEED_KINDS,
        required_resource_keys={spark_resource_key},
        io_manager_key=io_manager_key,
    )
    def _seed(context: dg.AssetExecutionContext):
        session = getattr(context.resources, spark_resource_key).get_session()
        context.log.info(f"loading {len(spec.rows)} rows of {shown} into {spec.uri}")
        # A TIMESTAMP cell is a wall time in the session's zone, not this process's.
        return session.createDataFrame(rows_in_session_zone(session, [list(row) for row in spec.rows]), spec.ddl)

    return _seed
