"""Cluster profiles: the scale groups a target Iris cluster offers (``profile``), and the built-in
profile in Iris's own cluster-config schema (``default.yaml``)."""
