"""Loading the code location imports no PySpark: a code server, `dagster asset list` and
each run's process pay for Spark only when a run needs a session."""

import subprocess
import sys


def test_the_code_location_loads_without_pyspark():
    code = (
        "import sys, assetlake_dagster.definitions as d; d.defs.resolve_asset_graph(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'pandas'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
