"""Regenerate the Python code for fray-jupyter's Iris-compatible protos.

Usage: ``.venv/bin/python protos/generate.py [--out DIR]`` (default: ``fray_jupyter/iris/proto/``).

Sources: ``protos/iris/*.proto`` (the Iris controller API) and ``protos/finelog/*.proto`` (the read
side of finelog's log service and the task-status part of its stats service, written out as
``finelog_logging_pb2.py`` and ``finelog_stats_pb2.py``).

protoc output is post-processed so the generated modules obey two rules:

* They never import the real ``iris`` (or ``finelog``) package. protoc writes ``from iris import
  job_pb2`` because the sources live under ``protos/iris/``; those imports are rewritten to
  ``fray_jupyter.iris.proto``, and the message classes' ``__module__`` is fixed to match.
* They register their descriptors in the private pool ``fray_jupyter.iris.proto.POOL``
  instead of protobuf's default pool. Our full names (``iris.job.*``, ``iris.cluster.*``)
  equal the real Iris ones, so sharing the default pool with ``iris.rpc`` would fail with
  a duplicate-symbol error as soon as both are imported in one process.

Every generated file is written flat into the output directory. protoc output is
deterministic, so ``tests/test_proto.py`` can require the checked-in files to be
byte-identical to a fresh run.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]

PROTO_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PROTO_ROOT.parent
DEFAULT_OUT = REPO_ROOT / "fray_jupyter" / "iris" / "proto"
PACKAGE = "fray_jupyter.iris.proto"

# Sources relative to PROTO_ROOT, in dependency order.
PROTO_FILES: tuple[str, ...] = (
    "iris/time.proto",
    "iris/logging.proto",
    "iris/job.proto",
    "iris/vm.proto",
    "iris/controller.proto",
    "finelog/logging.proto",
    "finelog/stats.proto",
)
# Only controller.proto declares a service; protoc's empty *_pb2_grpc.py for the others are dropped.
GENERATED_FILES: tuple[str, ...] = (
    "time_pb2.py",
    "time_pb2.pyi",
    "logging_pb2.py",
    "logging_pb2.pyi",
    "job_pb2.py",
    "job_pb2.pyi",
    "vm_pb2.py",
    "vm_pb2.pyi",
    "controller_pb2.py",
    "controller_pb2.pyi",
    "controller_pb2_grpc.py",
    "finelog_logging_pb2.py",
    "finelog_logging_pb2.pyi",
    "finelog_stats_pb2.py",
    "finelog_stats_pb2.pyi",
)
# A generated file's protoc output path (relative to protoc's output dir) when it is not iris/<name>.
_SOURCES: dict[str, str] = {
    "finelog_logging_pb2.py": "finelog/logging_pb2.py",
    "finelog_logging_pb2.pyi": "finelog/logging_pb2.pyi",
    "finelog_stats_pb2.py": "finelog/stats_pb2.py",
    "finelog_stats_pb2.pyi": "finelog/stats_pb2.pyi",
}

_IRIS_IMPORT = re.compile(r"^from iris import (\w+) as ", re.MULTILINE)
_MODULE_NAME = re.compile(r"'(iris|finelog)\.(\w+_pb2)'")
_ANY_IRIS_IMPORT = re.compile(r"^\s*(from (iris|finelog)[ .]|import (iris|finelog)\b)", re.MULTILINE)
_POOL_IMPORT_OLD = "from google.protobuf import descriptor_pool as _descriptor_pool\n"
_POOL_IMPORT_NEW = f"from {PACKAGE} import POOL as _POOL\n"
_POOL_USE_OLD = "_descriptor_pool.Default().AddSerializedFile("
_POOL_USE_NEW = "_POOL.AddSerializedFile("


def _replace_once(text: str, old: str, new: str, name: str) -> str:
    """Replace exactly one occurrence of ``old``; anything else means protoc's output changed shape."""
    count = text.count(old)
    if count != 1:
        raise RuntimeError(f"{name}: expected exactly one {old!r}, found {count}")
    return text.replace(old, new)


def _rewrite_imports(text: str) -> str:
    """Point ``from iris import X`` at our package."""
    return _IRIS_IMPORT.sub(rf"from {PACKAGE} import \1 as ", text)


def _rewrite_message_module(text: str, name: str) -> str:
    """Make the ``__module__`` of the built message classes our module path (``name`` without
    its suffix)."""
    text, count = _MODULE_NAME.subn(f"'{PACKAGE}.{name.removesuffix('.py')}'", text)
    if count != 1:
        raise RuntimeError(f"{name}: expected one generated module name, found {count}")
    return text


def _rewrite_pool(text: str, name: str) -> str:
    """Register descriptors in the private POOL instead of the default pool."""
    text = _replace_once(text, _POOL_IMPORT_OLD, _POOL_IMPORT_NEW, name)
    return _replace_once(text, _POOL_USE_OLD, _POOL_USE_NEW, name)


def postprocess(name: str, text: str) -> str:
    """Apply the import, module-name and pool rewrites that apply to generated file ``name``."""
    text = _rewrite_imports(text)
    if name.endswith("_pb2.py"):
        text = _rewrite_pool(_rewrite_message_module(text, name), name)
    if _ANY_IRIS_IMPORT.search(text):
        raise RuntimeError(f"{name}: still imports the real iris package after rewriting")
    return text


def _run_protoc(out_dir: Path) -> None:
    """Run grpc_tools' bundled protoc on PROTO_FILES, writing into ``out_dir``."""
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(PROTO_ROOT / source) for source in PROTO_FILES),
    ]
    status: int = protoc.main(args)
    if status != 0:
        raise RuntimeError(f"protoc failed with exit status {status}")


def generate(out_dir: Path, *, log: Callable[[str], None] = lambda _: None) -> list[Path]:
    """Generate, post-process and write GENERATED_FILES into ``out_dir``; return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="fray-jupyter-protoc-") as raw:
        raw_dir = Path(raw)
        _run_protoc(raw_dir)
        for name in GENERATED_FILES:
            text = (raw_dir / _SOURCES.get(name, f"iris/{name}")).read_text(encoding="utf-8")
            target = out_dir / name
            target.write_text(postprocess(name, text), encoding="utf-8")
            log(f"wrote {target}")
            written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output directory (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    generate(args.out, log=print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
