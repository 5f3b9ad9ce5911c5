"""The Jupyter server extension: a REST API under ``<base_url>/fray/`` over the controller that
the kernels use, for the Fray Jobs sidebar (``labextension/``).

``fray_jupyter._jupyter_server_extension_points`` names this module; Jupyter calls
``_load_jupyter_server_extension`` when the server starts (enabled by
``jupyter-config/server-config/fray_jupyter.json``, which ``pip install`` puts in place).
"""

from fray_jupyter.server.extension import (
    FrayServer,
    _load_jupyter_server_extension,
    _unload_jupyter_server_extension,
    routes,
)

__all__ = ["FrayServer", "_load_jupyter_server_extension", "_unload_jupyter_server_extension", "routes"]
