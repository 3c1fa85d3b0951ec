"""Step 3 of the flow: each compilation decision as instance, formulations, fallbacks, decode."""
