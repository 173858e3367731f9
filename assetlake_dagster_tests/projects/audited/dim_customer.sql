-- materialize delta://mart/dim_customer key=customer_id history
-- data_test accepted_values tier = gold,silver

SELECT customer_id, tier FROM raw.customers
