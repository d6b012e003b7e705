"""SpecChat: local Qwen chat on MLX with speculative decoding you can see and trust."""

__version__ = "0.1.0"
