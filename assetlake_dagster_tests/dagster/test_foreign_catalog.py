"""Layer 5: a source in another Spark catalog, read by its three-part name.

Spark's JDBC catalog plugin over an in-memory Derby database stands in for any catalog
plugin (Unity Catalog, Iceberg, Glue): it is configured by `spark.sql.catalog.<name>` in the
resource's settings, and a SQL file reads `jdbc_src.sales.orders` as written, with no asset for it.
"""

import dagster as dg

from assetlake_dagster.defs.build import build_definitions
from assetlake_dagster.defs.resources import SparkDeltaResource

#: Not named like any schema of the suite's projects: the resource's settings also reach the
#: worker's shared session (as `getOrCreate` applies them), where a catalog named `ext` would
#: shadow the `ext.weights` table later tests read.
EXT = {
    "spark.sql.catalog.jdbc_src": "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog",
    "spark.sql.catalog.jdbc_src.url": "jdbc:derby:memory:assetlake_ext;create=true",
    "spark.sql.catalog.jdbc_src.driver": "org.apache.derby.iapi.jdbc.AutoloadedDriver",
}


def test_a_file_reads_a_table_of_another_catalog_by_its_three_part_name(spark, lake_root, tmp_path):
    for key, value in EXT.items():
        spark.conf.set(key, value)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS jdbc_src.sales")
    spark.sql("DROP TABLE IF EXISTS jdbc_src.sales.orders")
    spark.sql("CREATE TABLE jdbc_src.sales.orders (id INT, amount DOUBLE)")
    spark.sql("INSERT INTO jdbc_src.sales.orders VALUES (1, 2.5), (2, 4.0), (1, 1.5)")
    project = tmp_path / "project"
    project.mkdir()
    (project / "order_totals.sql").write_text(
        "-- materialize delta://mart/order_totals key=id\n\n"
        "SELECT id, sum(amount) AS total FROM jdbc_src.sales.orders GROUP BY id\n"
    )
    defs = build_definitions(str(project), spark=SparkDeltaResource(lake_root=lake_root, spark_conf=EXT))
    graph = defs.resolve_asset_graph()
    # The other catalog's table is read as written: no asset stands for it.
    assert {key.to_user_string() for key in graph.get_all_asset_keys()} == {"mart/order_totals"}
    assert defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=dg.DagsterInstance.ephemeral()).success
    rows = spark.read.format("delta").load(f"{lake_root}/mart/order_totals").orderBy("id").collect()
    assert [(r.id, r.total) for r in rows] == [(1, 4.0), (2, 4.0)]
