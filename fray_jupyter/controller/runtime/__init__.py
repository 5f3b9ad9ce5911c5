"""What runs on this machine: one attempt's processes (``runner``) and its setup (``task_setup``),
named ports (``ports``), the machine's process trees (``proctree``) and the controller's own status
(``procstatus``), profiles and commands inside a running task (``profiling``, ``taskexec``), and the
owner of a loopback connection (``peer``).

It knows processes, not jobs' records: nothing here reads or writes the store.
"""
