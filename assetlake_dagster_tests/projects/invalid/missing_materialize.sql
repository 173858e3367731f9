-- group bad

SELECT id FROM raw.src
