"""`timeline-pipeline demo`: the whole product in one process on the bundled chat, end to end
(`run`), and the demo's steps (`pin`, `review`, `scenario`, `view`)."""
