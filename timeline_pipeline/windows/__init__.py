"""Synthesis windows: discovery and its tick, run batches and the run queue, and health.

Discovery planning (`planning`, pure) and the tick that applies it (`discovery`); whether a
window waits for collection (`collection`, pure); how requests become runs in lanes
(`batches`); the run queue's tags, lanes and limit checks (`run_queue`, pure); reruns
under a new processor version (`rerun`); the health measurement (`health`), its values
(`health_model`, pure) and alert rules (`health_checks`, pure). Window keys are in
`domain/window_keys.py`.
"""
