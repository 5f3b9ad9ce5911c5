"""The controller's API: one method per RPC (``service``), the method table both transports serve
(``methods``) and who the call comes from (``caller``), with the rules each RPC answers by:
admission (``validation``), ListJobs' query (``job_query``), stored rows as Iris's messages
(``messages``), status text (``taskstatus``), looking inside a task (``inspector``), users
(``users``), finelog's FetchLogs (``logservice``) and checkpoints (``checkpoint``).

Transport-free: a method takes a request message and returns a response message or raises an
``RpcError``; every change of a job goes through the ``engine``.
"""
