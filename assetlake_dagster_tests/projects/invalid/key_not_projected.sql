-- materialize delta://bad/key_not_projected key=order_id

SELECT ordr_id, amount FROM raw.src
