"""The model manager window: catalog + Hugging Face + local models, downloads, and the pair builder.

The main window opens it with `open_models_window(parent, paths, settings)` and connects
`use_as_target(str)` / `use_as_draft(str)` (folder paths of complete models).
"""

from .window import ModelsWindow, open_models_window

__all__ = ["ModelsWindow", "open_models_window"]
