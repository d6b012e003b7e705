"""SpecChat: local Qwen chat on MLX with speculative decoding you can see and trust."""

import os as _os
import signal as _signal

__version__ = "0.1.0"

if "MLX_RANK" in _os.environ and hasattr(_signal, "pthread_sigmask"):
    # A cluster rank (mlx.launch sets MLX_RANK): hold SIGTERM before any import starts a thread (BLAS's),
    # so every thread inherits the block and rank 0 can read who sent it (cluster/sigterm.py); without
    # this, hold_sigterm has to run the process again. The cluster command releases it where unwatched.
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGTERM})
