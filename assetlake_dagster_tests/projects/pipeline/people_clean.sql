-- materialize delta://mart/people_clean key=id
-- group mart
-- owner alice@example.com
-- tags tier=gold
-- description People with a display name.
-- kinds silver

SELECT id, coalesce(name, 'unknown') AS display_name, score, active, born, seen_at
FROM src.people
