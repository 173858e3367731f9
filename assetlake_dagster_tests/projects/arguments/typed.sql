-- materialize delta://mart/typed
-- $since (date)
-- $until (timestamp) = 2024-01-31T08:00:00
-- $top_n (int) = 20
-- $ratio (float) = 0.5
-- $active (bool) = true
-- $label (string) = 'all'
-- description One argument of every type; 'since' has no default, so a run must give it.

SELECT event_id, :label AS label, amount * :ratio AS scaled
FROM raw.events
WHERE day >= :since AND day < :until AND :active AND event_id < :top_n
