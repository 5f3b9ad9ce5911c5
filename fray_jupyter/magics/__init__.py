"""The ``%%fray`` cell magic and ``%fray`` line magic; ``%load_ext fray_jupyter`` registers them."""

from fray_jupyter.magics.core import FrayMagics, load_ipython_extension
from fray_jupyter.magics.errors import ControllerError, JobFailed, MagicFailure

__all__ = ["ControllerError", "FrayMagics", "JobFailed", "MagicFailure", "load_ipython_extension"]
