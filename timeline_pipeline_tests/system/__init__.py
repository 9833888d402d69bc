"""System tests: the real `dagster-daemon` and `dagster-webserver` on the production instance
configuration, driven and observed only through Dagster's GraphQL API and the product database."""
