"""Review-card callbacks: admission rate and answer time, queue drain rate, cache effect."""
