-- materialize delta://sales/monthly_orders
-- partitioned monthly start=2025-01-01
-- group sales
-- schedule 0 2 * * *

SELECT count(*) AS days FROM sales.orders WHERE day >= {partition_start} AND day < {partition_end}
