-- materialize manual delta://mart/manual_copy
-- description Written by its own SQL; assetlake only records the version.

CREATE TABLE IF NOT EXISTS mart.manual_copy (id BIGINT, display_name STRING) USING delta;
INSERT INTO mart.manual_copy SELECT id, display_name FROM mart.people_clean
