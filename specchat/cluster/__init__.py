"""A target sharded over several machines with MLX distributed: rank 0 serves HTTP, the others follow.

group.py     the mx.distributed group, each rank's host, and the few collectives we use
protocol.py  a job as bytes (broadcast from rank 0) and the per-event lockstep check
sharding.py  load a target with mlx-lm's shard(group)
follower.py  what ranks > 0 run: receive a job, run it on their shard, in lockstep
leader.py    rank 0: the backend that broadcasts jobs, the watchdog, the cluster's state
serve.py     `python -m specchat serve` under mlx.launch
"""
