"""The controller's two transports, Connect over HTTP/1.1 (``connect_app``) and native gRPC
(``grpc_server``), with what they share (``rpc``: who may call, decoding, calling the service) and
fray-jupyter's own change feed (``changes``).

A transport knows the wire and the caller, never a job: it hands each decoded request to the service
(``api``) and answers what comes back, or the ``RpcError`` raised, in its own protocol.
"""
