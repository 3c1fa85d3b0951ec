"""Step 6 of the flow: reports as JSON-ready data and as tables for people."""
