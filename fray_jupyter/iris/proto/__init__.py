"""Generated protobuf code for the subset of the Iris controller API that fray-jupyter uses.

The ``*_pb2.py`` / ``*_pb2.pyi`` / ``controller_pb2_grpc.py`` modules here are generated from
``protos/iris/*.proto``; never edit them by hand. Regenerate with::

    .venv/bin/python protos/generate.py

(``tests/test_proto.py`` fails when the checked-in files differ from a fresh run.)

Private descriptor pool
-----------------------
Our messages carry the same full names as Iris's own (``iris.job.JobStatus``,
``iris.cluster.Controller.LaunchJobRequest``, ...) so that they are wire- and JSON-compatible.
protobuf refuses to register two different definitions of one name in a pool, so if our
modules used the default pool, importing them next to the real ``iris.rpc`` package (as the
conformance tests do) would fail. Every generated module therefore registers into ``POOL``
below. Message classes from the two pools are distinct types: convert between them with
``SerializeToString()`` / ``FromString()``, never by passing one where the other is expected.

The isolation holds with protobuf's default (upb) backend. The pure-Python backend
(``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``) additionally registers every generated
message class in the default pool, so there the two packages still clash.

This module must define ``POOL`` and nothing that imports the generated modules, because
each of them imports ``POOL`` from here while it is being loaded.
"""

from google.protobuf import descriptor_pool

POOL = descriptor_pool.DescriptorPool()
