"""The SQL text itself: statements, analysis, rewrites, predicates, column lineage, incremental reads."""
