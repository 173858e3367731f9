-- materialize delta://analytics/dim_customer key=customer_id history track=tier,country deletes=close valid_from=updated_at
-- schedule 0 2 * * *
-- group customers
-- owner team:data-eng
-- tags layer=core
-- description Customer dimension with full change history (SCD2): a new version whenever tier or country changes, starting when the source changed the customer.
-- column tier "Loyalty tier; a change opens a new version"
-- column updated_at "When the source last changed the customer; a version starts then"

SELECT customer_id, name, tier, country, updated_at
FROM raw.customers
