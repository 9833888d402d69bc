"""The timeline page's routers, one per resource; `ui/router.py` mounts them under `/ui`."""
