"""Sessions: a held slice, iterated on cell by cell, with state kept on every host.

A session is one job as Iris runs it (one task per host, coscheduled); each task serves a
:class:`~fray_jupyter.session.host.HostEngine` that keeps a namespace across cells, and each cell
is a call to every host. The modules:

* ``outputs``: what a host sends back (streams, mime bundles, remote errors, results), defined once;
* ``host``: the per-host engine (``cells``: compiling a cell and describing its exceptions;
  ``capture``: its output, readable while it runs; ``mime`` and ``figures``: rich outputs;
  ``values``: push and pull by cloudpickle);
* ``merge`` and ``words``: the kernel's side, pure functions of what the hosts returned: the
  outputs the notebook shows and the sentences said on interrupt and loss.
"""
