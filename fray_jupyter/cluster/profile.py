"""Cluster profiles: the scale groups of an Iris cluster, read from Iris's cluster-config YAML.

A profile is what placement needs to know about a cluster, and nothing else: per group its name,
slice size (``num_vms``), ``max_slices`` / ``buffer_slices``, routing priority, per-VM cpu/ram/disk,
device type/variant/count, capacity type, region and zone (from ``slice_template``: a GCP zone, whose
region is the zone minus its ``-<letter>`` suffix, or a CoreWeave region, which is both) and the
worker attributes the group's workers advertise.

Names: ``default`` (or None) is the built-in profile (``fray_jupyter/cluster/default.yaml``);
``marin`` is the manifest shipped inside marin-iris (``iris/config/marin.yaml``), which uses Iris's
``tpu_pools`` / multi-zone expansion and so is loaded through Iris's own ``load_config`` (it needs
marin-iris installed); anything else is a path to a YAML file in the same schema. A file that uses
the expansion keys is loaded through ``load_config`` too; a plain one only needs PyYAML.
Sizes (``ram: 448GB``) are binary, as Iris parses them (448 GiB).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import humanfriendly

from fray_jupyter.lazy import one_import_at_a_time

BUILT_IN: Final[Path] = Path(__file__).with_name("default.yaml")
DEFAULT_NAME: Final[str] = "default"
MARIN_NAME: Final[str] = "marin"
DEVICE_TYPES: Final[tuple[str, ...]] = ("cpu", "gpu", "tpu")
CAPACITY_TYPES: Final[tuple[str, ...]] = ("preemptible", "on_demand", "reserved")
DEFAULT_PRIORITY: Final[int] = 100
_EXPANSION_KEYS: Final[tuple[str, ...]] = ("tpu_pools",)


class ProfileError(ValueError):
    """A cluster profile that cannot be loaded; the message names the file, group and field."""


@dataclass(frozen=True)
class ScaleGroup:
    """One scale group, per VM (0 for cpu/ram/disk means unlimited, as in Iris)."""

    name: str
    num_vms: int
    max_slices: int
    buffer_slices: int
    priority: int
    cpu_millicores: int
    memory_bytes: int
    disk_bytes: int
    device_type: str
    device_variant: str
    device_count: int
    capacity_type: str
    region: str | None = None
    zone: str | None = None
    attributes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def preemptible(self) -> bool:
        """Workers of a ``preemptible`` group advertise ``preemptible=true``; on-demand and reserved ``false``."""
        return self.capacity_type == "preemptible"

    def routing_attributes(self) -> dict[str, str]:
        """The attributes the autoscaler matches a job's routing constraints against: device-type,
        device-variant (lowercase, when set), preemptible ("true"/"false"), region and zone (when known)."""
        attrs = {"device-type": self.device_type, "preemptible": str(self.preemptible).lower()}
        if self.device_variant:
            attrs["device-variant"] = self.device_variant.lower()
        if self.region:
            attrs["region"] = self.region
        if self.zone:
            attrs["zone"] = self.zone
        return attrs


@dataclass(frozen=True)
class ClusterProfile:
    """A cluster's scale groups, in declaration order (routing sorts them by ``priority``)."""

    name: str
    groups: tuple[ScaleGroup, ...]
    source: str = ""

    @property
    def by_priority(self) -> tuple[ScaleGroup, ...]:
        """Routing order: lower ``priority`` first, ties in declaration order."""
        return tuple(sorted(self.groups, key=lambda g: g.priority))

    def group(self, name: str) -> ScaleGroup | None:
        """The group called ``name``, if any."""
        return next((g for g in self.groups if g.name == name), None)

    @property
    def regions(self) -> tuple[str, ...]:
        """Regions any group occupies, sorted."""
        return tuple(sorted({g.region for g in self.groups if g.region}))

    @property
    def device_variants(self) -> tuple[str, ...]:
        """Accelerator variants (lowercase) any group provides, sorted."""
        return tuple(sorted({g.device_variant.lower() for g in self.groups if g.device_variant}))


def _size(value: object, where: str) -> int:
    if isinstance(value, bool):
        raise ProfileError(f"{where} must be a size such as '64GB' or a number of bytes, got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        if not value.strip() or value.strip() == "0":
            return 0
        try:
            return int(humanfriendly.parse_size(value, binary=True))
        except humanfriendly.InvalidSize:
            raise ProfileError(f"{where} must be a size such as '64GB', got {value!r}") from None
    raise ProfileError(f"{where} must be a size such as '64GB', got {type(value).__name__}")


def _int(value: object, where: str, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ProfileError(f"{where} must be an integer >= {least}, got {value!r}")
    return value


def _location(template: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(region, zone) of a slice template, as Iris derives them."""
    gcp = template.get("gcp") or {}
    if isinstance(gcp, Mapping) and gcp.get("zone"):
        zone = str(gcp["zone"])
        return zone.rsplit("-", 1)[0], zone
    coreweave = template.get("coreweave") or {}
    if isinstance(coreweave, Mapping) and coreweave.get("region"):
        region = str(coreweave["region"])
        return region, region
    return None, None


def group_from_mapping(name: str, raw: object) -> ScaleGroup:
    """One ``scale_groups`` entry of the YAML schema (friendly keys ``cpu``/``ram``/``disk`` or
    ``cpu_millicores``/``memory_bytes``/``disk_bytes``) as a ``ScaleGroup``; ``ProfileError`` names
    the field that is wrong."""
    where = f"scale group {name!r}"
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{where} must be a mapping")
    resources = raw.get("resources")
    if not isinstance(resources, Mapping):
        raise ProfileError(f"{where} must set resources")
    device_type = str(resources.get("device_type") or "").strip().lower()
    if device_type not in DEVICE_TYPES:
        raise ProfileError(f"{where}: resources.device_type must be one of {', '.join(DEVICE_TYPES)}, "
                           f"got {resources.get('device_type')!r}")
    capacity = str(resources.get("capacity_type") or "").strip().lower().replace("-", "_")
    if capacity not in CAPACITY_TYPES:
        raise ProfileError(f"{where}: resources.capacity_type is required (one of: preemptible, on-demand, "
                           f"reserved), got {resources.get('capacity_type')!r}")
    cpu = resources.get("cpu")
    cpu_millicores = (_int(resources.get("cpu_millicores", 0), f"{where}: resources.cpu_millicores", least=0)
                      if cpu is None else int(float(cpu) * 1000))
    template = raw.get("slice_template") or {}
    if not isinstance(template, Mapping):
        raise ProfileError(f"{where}: slice_template must be a mapping")
    region, zone = _location(template)
    worker = raw.get("worker") or {}
    attributes = worker.get("attributes") or {} if isinstance(worker, Mapping) else {}
    if not isinstance(attributes, Mapping):
        raise ProfileError(f"{where}: worker.attributes must be a mapping")
    return ScaleGroup(
        name=str(raw.get("name") or name),
        num_vms=_int(raw.get("num_vms", 1), f"{where}: num_vms", least=1),
        max_slices=_int(raw.get("max_slices", 0), f"{where}: max_slices", least=0),
        buffer_slices=_int(raw.get("buffer_slices", 0), f"{where}: buffer_slices", least=0),
        priority=_int(raw.get("priority", DEFAULT_PRIORITY), f"{where}: priority", least=0) or DEFAULT_PRIORITY,
        cpu_millicores=cpu_millicores,
        memory_bytes=_size(resources.get("ram", resources.get("memory_bytes", 0)), f"{where}: resources.ram"),
        disk_bytes=_size(resources.get("disk", resources.get("disk_bytes", 0)), f"{where}: resources.disk"),
        device_type=device_type,
        device_variant=str(resources.get("device_variant") or ""),
        device_count=_int(resources.get("device_count", 0), f"{where}: resources.device_count", least=0),
        capacity_type=capacity,
        region=region,
        zone=zone,
        attributes=MappingProxyType({str(k): str(v) for k, v in attributes.items()}),
    )


def profile_from_mapping(data: object, *, source: str = "") -> ClusterProfile:
    """A profile from an already-expanded cluster config mapping (``scale_groups`` is required)."""
    if not isinstance(data, Mapping):
        raise ProfileError(f"{source or 'cluster config'}: expected a mapping with scale_groups")
    raw_groups = data.get("scale_groups")
    if not isinstance(raw_groups, Mapping) or not raw_groups:
        raise ProfileError(f"{source or 'cluster config'}: scale_groups must be a non-empty mapping")
    groups = [group_from_mapping(str(name), raw) for name, raw in raw_groups.items()]
    return ClusterProfile(str(data.get("name") or Path(source).stem or "cluster"), tuple(groups), source)


def _needs_expansion(data: Mapping[str, Any]) -> bool:
    groups = data.get("scale_groups")
    zoned = isinstance(groups, Mapping) and any(isinstance(g, Mapping) and "zones" in g for g in groups.values())
    return zoned or any(key in data for key in _EXPANSION_KEYS)


def _via_iris(path: Path, name: str) -> ClusterProfile:
    """Load ``path`` with Iris's own ``load_config`` (tpu_pools / zones expansion)."""
    try:
        with one_import_at_a_time():
            from iris.cluster.config import load_config  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        raise ProfileError(
            f"cluster config {name!r} uses Iris's tpu_pools/zones expansion, which needs marin-iris "
            "(pip install 'marin-iris[controller]'); or give a YAML file with plain scale_groups"
        ) from None
    config = load_config(path)
    groups = []
    for group_name, sg in config.scale_groups.items():
        res = sg.resources
        template = sg.slice_template
        gcp_zone = template.gcp.zone if template is not None and template.gcp is not None else ""
        coreweave = template.coreweave.region if template is not None and template.coreweave is not None else ""
        region, zone = _location({"gcp": {"zone": gcp_zone}, "coreweave": {"region": coreweave}})
        groups.append(ScaleGroup(
            name=group_name, num_vms=sg.num_vms or 1, max_slices=sg.max_slices, buffer_slices=sg.buffer_slices,
            priority=sg.priority or DEFAULT_PRIORITY, cpu_millicores=res.cpu_millicores,
            memory_bytes=res.memory_bytes, disk_bytes=res.disk_bytes,
            device_type=res.device_type.value if res.device_type is not None else "cpu",
            device_variant=res.device_variant, device_count=res.device_count,
            capacity_type=str(res.capacity_type.value) if res.capacity_type is not None else "",
            region=region, zone=zone,
            attributes=MappingProxyType(dict(sg.worker.attributes) if sg.worker is not None else {}),
        ))
    return ClusterProfile(config.name or path.stem, tuple(groups), str(path))


def marin_manifest() -> Path:
    """Where marin-iris ships Marin's cluster manifest; ``ProfileError`` without marin-iris."""
    import importlib.util

    spec = importlib.util.find_spec("iris")
    if spec is None or not spec.submodule_search_locations:
        raise ProfileError("cluster config 'marin' is the manifest inside marin-iris; install it with "
                           "pip install 'marin-iris[controller]' (Python >= 3.12), or give a YAML path")
    return Path(next(iter(spec.submodule_search_locations))) / "config" / "marin.yaml"


def load_profile(name: str | Path | None = None) -> ClusterProfile:
    """The profile called ``name``: None or ``default`` → built-in; ``marin`` → marin-iris's manifest
    (through Iris's ``load_config``); anything else a YAML path, read anew each call (a file that did
    not change is not parsed again). ``ProfileError`` says what is wrong."""
    if name is None or str(name) == DEFAULT_NAME:
        path, label = BUILT_IN, DEFAULT_NAME
    elif str(name) == MARIN_NAME:
        return _via_iris(marin_manifest(), MARIN_NAME)
    else:
        path, label = Path(name).expanduser(), str(name)
    try:
        text = path.read_text()
    except OSError as error:
        raise ProfileError(f"cannot read cluster config {label!r}: {error.strerror or error}; give 'default', "
                           "'marin' or a path to an Iris cluster-config YAML") from None
    return _parsed(text, path, label)


@functools.lru_cache(maxsize=32)
def _parsed(text: str, path: Path, label: str) -> ClusterProfile:
    """``load_profile``'s reading of the file at ``path`` holding ``text`` (a profile is immutable)."""
    import yaml  # type: ignore[import-untyped, unused-ignore]

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ProfileError(f"cluster config {label!r} is not valid YAML: {' '.join(str(error).split())}") from None
    if isinstance(data, Mapping) and _needs_expansion(data):
        return _via_iris(path, label)
    profile = profile_from_mapping(data, source=str(path))
    return ClusterProfile(DEFAULT_NAME if path == BUILT_IN else profile.name, profile.groups, profile.source)


_GROUP_FIELDS: Final[tuple[str, ...]] = tuple(f for f in ScaleGroup.__dataclass_fields__ if f != "attributes")


def profile_to_json(profile: ClusterProfile) -> dict[str, Any]:
    """The profile as a JSON object (what the embedded controller's ``GetClusterProfile`` answers):
    ``{"name", "source", "groups": [{<every ScaleGroup field>, "attributes": {…}}]}``."""
    groups = [{**{f: getattr(g, f) for f in _GROUP_FIELDS}, "attributes": dict(g.attributes)} for g in profile.groups]
    return {"name": profile.name, "source": profile.source, "groups": groups}


def profile_from_json(data: Mapping[str, Any]) -> ClusterProfile:
    """``profile_to_json``'s inverse; ``ProfileError`` naming the group when a field is missing or mistyped."""
    groups = []
    for raw in data.get("groups") or ():
        try:
            values = {f: raw[f] for f in _GROUP_FIELDS if f in raw}
            group = ScaleGroup(**values, attributes=MappingProxyType(dict(raw.get("attributes") or {})))
        except (TypeError, KeyError) as error:
            raise ProfileError(f"cluster profile group {raw!r:.80}: {error}") from None
        if not isinstance(group.name, str) or not all(isinstance(getattr(group, f), int) for f in (
                "num_vms", "max_slices", "buffer_slices", "priority", "cpu_millicores", "memory_bytes", "disk_bytes",
                "device_count")):
            raise ProfileError(f"cluster profile group {group.name!r}: a field has the wrong type")
        groups.append(group)
    return ClusterProfile(str(data.get("name", "cluster")), tuple(groups), str(data.get("source", "")))
