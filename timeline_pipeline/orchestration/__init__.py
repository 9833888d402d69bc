"""Dagster: the resources, assets, sensors, schedules and jobs `definitions.py` composes."""
