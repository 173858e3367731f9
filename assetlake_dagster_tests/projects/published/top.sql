-- materialize delta://mart/top key=customer
-- publish_with sales
-- data_test not_null customer

SELECT t.customer, t.total FROM mart.totals t JOIN raw.orders_src s ON s.customer = t.customer
