"""Layer 6: the process boundary: the CLI, `dagster dev`, the warm engine, a cluster."""
