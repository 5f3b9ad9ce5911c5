"""Pure renderings of a ``Plan``: text for terminals, HTML/SVG for notebooks, code snippets."""
