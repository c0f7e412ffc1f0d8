"""Many machines: cost-balanced shards of a plan (``shard``) and the Slurm job array
that runs them, then merges their stores into one page (``slurm``)."""
