-- materialize delta://mart/score_log append

SELECT count(*) AS scored, sum(score) AS total FROM mart.scores
