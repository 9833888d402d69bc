"""The API's routers, one per resource; `api/router.py` mounts them under `/api`."""
