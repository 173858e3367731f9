-- materialize delta://reports/weekly_b
-- group reports
-- schedule 0 6 * * MON tz=Europe/Berlin

SELECT id FROM raw.customers
