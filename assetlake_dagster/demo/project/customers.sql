-- materialize delta://analytics/customers key=customer_id
-- data_test unique customer_id
-- data_test not_null name
-- data_test accepted_values tier = bronze,silver,gold
-- group customers
-- owner team:data-eng
-- tags layer=core
-- description Customers, upserted on customer_id: only changed rows are rewritten.

SELECT customer_id, name, tier, country, email
FROM raw.customers
