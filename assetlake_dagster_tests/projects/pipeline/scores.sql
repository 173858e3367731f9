-- materialize delta://mart/scores
-- $min_score (float) = 0
-- $label (string) = scored

CREATE OR REPLACE TEMP VIEW eligible AS
SELECT id, score FROM mart.people_clean WHERE coalesce(score, 0) >= :min_score;

SELECT p.id, p.score, :label AS label, e.weight
FROM eligible p
JOIN ext.weights e ON e.id = p.id
