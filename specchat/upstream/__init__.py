"""The only place that touches mlx-lm, mlx-optiq and huggingface_hub (import-linter enforces it).

One module per upstream: `mlx_lm`, `mlx_optiq`, `hf_hub`. Each gives the rest of the app
small named functions for the internals SpecChat relies on, and a self-check that verifies
every hook against the installed version (see `checks`). Importing this package imports
none of the upstreams; each module imports its own (mlx-optiq only when a head is attached).
"""
