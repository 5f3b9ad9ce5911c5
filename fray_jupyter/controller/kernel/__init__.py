"""The controller's pure kernel: its rules as functions over plain values, with no I/O.

``rows`` (a job, its tasks and attempts as values), ``state_rules`` (a job's state from its tasks',
the retry rule), ``transitions`` (a job's rows and one event in, the ``Effects`` out), ``trees`` (what
a job's end does to the jobs below it), ``taskevents`` (the decisions Iris records), ``exits`` (how an
attempt ended, in Iris's words) and ``scheduler`` (which queued tasks start, and why others wait).

Importing it loads no database, no process machinery and no other package of the controller
(``tests/test_layers.py``), so its rules are tested in milliseconds.
"""
