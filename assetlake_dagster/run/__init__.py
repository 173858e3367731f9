"""What a run does: the resource, the IO manager, the SQL asset's run, data tests, materialization metadata, run decisions."""
