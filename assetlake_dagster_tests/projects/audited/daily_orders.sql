-- materialize delta://mart/daily_orders
-- partitioned static d1,d2
-- data_test unique order_id
-- data_test tests/day_matches.sql

SELECT order_id, day, amount FROM raw.daily WHERE day = {partition}
