"""The HTTP side of `timeline-pipeline serve`: the composition root (`app.py`), the resources
its lifespan owns (`resources.py`) and the dependencies routes ask for (`deps.py`)."""
