-- materialize delta://mart/daily
-- partitioned static d1,d2
-- data_test unique order_id

SELECT order_id, amount FROM raw.orders WHERE day = {partition}
