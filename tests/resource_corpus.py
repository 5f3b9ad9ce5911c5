"""Resource configurations that cover the picker's and the snippets' cases (CPU, TPU single and
multi-slice, alternatives, GPU gangs, every optional field), and the names a Python snippet of one
may use (``NAMESPACE``, to ``eval`` it back)."""

from __future__ import annotations

from fray_jupyter import ANY_REGION, ResourceConfig, TpuConfig

NAMESPACE = {"ResourceConfig": ResourceConfig, "ANY_REGION": ANY_REGION, "TpuConfig": TpuConfig}

CORPUS = [
    ResourceConfig(),
    ResourceConfig.with_cpu(cpu=4, ram="16g", replicas=3),
    ResourceConfig.with_cpu(cpu=0.25, disk="10GB", regions=["us-central1", "us-east5"], zone="us-east5-a"),
    ResourceConfig.with_tpu("v5p-8"),
    ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["us-central1"]),
    ResourceConfig.with_tpu("v4-32", slice_count=4, preemptible=False, cpu=8, ram="32g"),
    ResourceConfig.with_tpu(["v4-8", "v5p-8", "v6e-4"], regions=[ANY_REGION]),
    ResourceConfig.with_tpu("v5litepod-16", image="ghcr.io/marin/task:1", target_cluster="peer-a"),
    ResourceConfig.with_tpu("v5p-12288", slice_count=2),
    ResourceConfig.with_gpu("H100", count=8),
    ResourceConfig.with_gpu("H100", count=8, replicas=2, cpu=32, ram="512g", disk="256g"),
    ResourceConfig.with_gpu("GB200", count=4, replicas=32, device_alternatives=["GB300"]),
    ResourceConfig.with_gpu("auto", count=8, zone="z"),
    ResourceConfig.with_gpu("RTX4090"),
    ResourceConfig.with_gpu("mi250", count=2, preemptible=False),
]
