-- materialize delta://analytics/dim_customer key=customer_id history track=tier,country deletes=close
-- schedule 0 2 * * *
-- group customers
-- owner team:data-eng
-- tags layer=core
-- description Customer dimension with full change history (SCD2): a new version whenever tier or country changes.
-- column tier "Loyalty tier; a change opens a new version"

SELECT customer_id, name, tier, country
FROM raw.customers
