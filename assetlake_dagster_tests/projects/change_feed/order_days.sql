-- materialize delta://mart/order_days key=customer_id
-- description Not a supported shape (DISTINCT): always reads raw.orders in full.

SELECT DISTINCT customer_id, 1 AS seen FROM raw.orders WHERE customer_id IS NOT NULL
