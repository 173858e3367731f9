-- Custom test, run once per partition of a batch: rows of another day fail.
SELECT event_id, day FROM {this} WHERE day <> {partition}
