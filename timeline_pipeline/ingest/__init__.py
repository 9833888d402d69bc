"""How evidence comes in: eligibility, the write path both intakes share, and recalls."""
