-- materialize delta://dim/customer key=id history track=name,tier deletes=close
-- description Customer dimension with full change history.

SELECT id, name, tier, email FROM raw.customers
