"""The HTTP side of `timeline-pipeline serve`: the composition root (`app.py`), the resources
its lifespan owns (`resources.py`) and the health routes; what routers share (responses, body
reading, cursors, dependencies) is the web core, web/."""
