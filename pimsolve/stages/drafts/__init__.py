"""DCC's tiling drafts for DRAM-PIM kernels: instance, cost model, exact engines, baselines.

``instance`` builds dimension sets and per-set options (DCC Sec. 4.2), ``cost`` is the latency
model (DCC Sec. 4.3, from the target's DRAM timings), ``enumerate`` and ``cpsat`` find the
cheapest draft (both exact), ``baselines`` gives the backend's default layout, ``decode`` the
``ir.Draft``, and ``llm`` an LLM decode step with each kernel on GPU or PIM.
"""
