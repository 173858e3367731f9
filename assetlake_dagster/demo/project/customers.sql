-- materialize delta://analytics/customers key=customer_id
-- group customers
-- owner team:data-eng
-- tags layer=core
-- description Customers, upserted on customer_id: only changed rows are rewritten.

SELECT customer_id, name, tier, country, email
FROM raw.customers
