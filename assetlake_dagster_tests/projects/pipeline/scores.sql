-- materialize delta://mart/scores
-- $min_score (float) = 0
-- $label (string) = scored

SELECT p.id, p.score, :label AS label, e.weight
FROM mart.people_clean p
JOIN ext.weights e ON e.id = p.id
WHERE coalesce(p.score, 0) >= :min_score
