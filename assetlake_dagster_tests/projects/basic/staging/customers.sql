// materialize delta://analytics/customers key=customer_id
// group sales
// description One row per customer, upserted on customer_id.

SELECT customer_id, name, tier FROM raw.customers
