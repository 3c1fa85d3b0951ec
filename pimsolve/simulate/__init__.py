"""Step 5 of the flow, the judge: simulate, measure, bound and verify; never calls a solver."""
