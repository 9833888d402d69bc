"""The database layer: engine, schema, migrations and the SQL helpers every store shares."""
