"""Layer 5: real Dagster runs (materialize, execute_in_process) on Spark + Delta."""
