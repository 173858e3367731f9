"""The Dagster face: definitions built from the project (assets, checks, partitions, schedules, automation, freshness, maintenance jobs)."""
