"""fray-jupyter: describe, preview and launch Fray jobs on Iris from a notebook."""
