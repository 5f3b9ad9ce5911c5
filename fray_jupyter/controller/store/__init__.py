"""The controller's SQLite store: ``store`` (jobs, tasks, attempts) with its tables' mixins
(``logstore``, ``endpointstore``, ``statsstore`` with the namespaces' ``statscatalog``,
``userstore``), the migrations (``schema``), captured output batched on its way in (``logbuffer``)
and what is kept on disk and for how long (``retention``).

Every SQL statement of the controller is in this package. It reads and writes the kernel's plain rows
(``kernel.rows``) and imports nothing else of the controller.
"""
