"""finelog's stats namespaces on the embedded controller: the rows kept (``stats``: task usage,
task events, profiles), their Arrow mirror (``mirror``), the SQL over them (``sqlquery``) and what
it keeps between queries (``session``: the DataFusion session and recent plans), and the sampler
that appends every running task's resource use (``sampler``). The rows are kept in the store
(``store.statsstore``, their columns in ``store.statscatalog``).
"""
