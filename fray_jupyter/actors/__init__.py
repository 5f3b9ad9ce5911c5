"""Fray's actors over Iris's actor protocol: long-lived objects served by tasks, whose methods other
code calls (``wire`` the protocol, ``server`` the task side, ``lease`` its registration,
``resolver`` where a name is served, ``handle`` the caller side, ``group`` an actor group, ``host``
what each replica of a group runs). ``fray_jupyter.fray_client()`` (``fray_jupyter.fray_protocol``) puts them behind Fray's
``create_actor`` / ``create_actor_group`` / ``host_actor``."""
