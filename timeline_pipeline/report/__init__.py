"""The incident report: milestones, durations and sections read from the curated timeline."""
