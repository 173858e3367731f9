"""The project model: the folder's files parsed into specs, their DAG, the parse cache, Python assets, seeds and SQL tests files."""
