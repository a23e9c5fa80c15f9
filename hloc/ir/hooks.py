"""What Module.run and the Jupyter reprs call: the hloc package (above the IR layer:
runner, graph drawing) installs them, so the IR imports nothing above it."""
from __future__ import annotations

_HOOKS: dict = {}


def install_hooks(**hooks) -> None:
    """run(module, *args, backend=, seed=), repr_svg(module), repr_html(module)."""
    _HOOKS.update(hooks)


def hook(name: str):
    fn = _HOOKS.get(name)
    if fn is None:
        raise RuntimeError(f"Module.{name} needs the hloc package (import hloc)")
    return fn
