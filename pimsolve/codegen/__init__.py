"""Step 4 of the flow: Mapping + Workload -> Program (one instruction stream per core)."""
