"""Cluster profiles: Iris's cluster-config schema read into scale groups, without marin installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fray_jupyter.cluster.profile import BUILT_IN, ProfileError, load_profile

GIB = 2**30


def test_built_in_profile_groups() -> None:
    profile = load_profile()
    assert profile.name == "default" and load_profile("default") == profile
    v4 = profile.group("tpu_v4_32")
    assert v4 is not None
    assert (v4.num_vms, v4.max_slices, v4.buffer_slices, v4.device_type, v4.device_variant, v4.device_count) == (
        4, 2, 0, "tpu", "v4-32", 4)
    assert (v4.cpu_millicores, v4.memory_bytes, v4.disk_bytes) == (240_000, 400 * GIB, 100 * GIB)  # sizes are binary
    assert (v4.region, v4.zone, v4.capacity_type, v4.preemptible) == ("us-central2", "us-central2-b", "preemptible", True)
    gpu = profile.group("gpu_h100x8")
    assert gpu is not None and dict(gpu.attributes) == {"leafgroup": "local-leaf-0"}
    assert (gpu.region, gpu.capacity_type, gpu.preemptible) == (None, "on_demand", False)
    assert gpu.routing_attributes() == {"device-type": "gpu", "device-variant": "h100", "preemptible": "false"}
    assert profile.regions == ("europe-west4", "us-central1", "us-central2")
    assert "v5p-16" in profile.device_variants


def test_loading_needs_no_marin(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['iris'] = None\n"
            "from fray_jupyter.cluster.profile import load_profile\n"
            "print(len(load_profile().groups))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(len(load_profile().groups))


def test_built_in_profile_is_valid_for_iris() -> None:
    import yaml
    from iris.cluster import config

    parsed = config.parse_config(yaml.safe_load(BUILT_IN.read_text()))
    ours = {g.name: g for g in load_profile().groups}
    for name, theirs in parsed.scale_groups.items():
        res = theirs.resources
        assert (ours[name].memory_bytes, ours[name].disk_bytes, ours[name].cpu_millicores) == (
            res.memory_bytes, res.disk_bytes, res.cpu_millicores)
        assert ours[name].capacity_type == res.capacity_type.value


def test_user_yaml_and_routing_order(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nscale_groups:\n"
        "  late: {num_vms: 1, max_slices: 1, priority: 50, resources: {device_type: cpu, capacity_type: reserved,"
        " cpu_millicores: 8000, memory_bytes: 1000}, slice_template: {coreweave: {region: US-EAST-04A}}}\n"
        "  early: {num_vms: 2, max_slices: 3, priority: 10, resources: {device_type: tpu, device_variant: v5p-16,"
        " device_count: 4, capacity_type: on-demand, ram: 1GB}, slice_template: {gcp: {zone: us-east5-a}}}\n")
    profile = load_profile(path)
    assert profile.name == "mine" and [g.name for g in profile.groups] == ["late", "early"]
    assert [g.name for g in profile.by_priority] == ["early", "late"]
    late = profile.group("late")
    assert late is not None and (late.region, late.zone, late.cpu_millicores, late.memory_bytes) == (
        "US-EAST-04A", "US-EAST-04A", 8000, 1000)
    assert profile.group("early").memory_bytes == GIB  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "message"), [
    ("scale_groups: {}", "scale_groups must be a non-empty mapping"),
    ("scale_groups: {a: {resources: {device_type: cpu}}}", "resources.capacity_type is required"),
    ("scale_groups: {a: {resources: {device_type: fpga, capacity_type: reserved}}}", "device_type must be one of"),
    ("scale_groups: {a: {num_vms: 0, resources: {device_type: cpu, capacity_type: reserved}}}", "num_vms must be"),
    ("scale_groups: {a: {resources: {device_type: cpu, capacity_type: reserved, ram: lots}}}", "resources.ram"),
    ("scale_groups: [", "not valid YAML"),
])
def test_bad_profiles_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=message) as error:
        load_profile(path)
    assert "\n" not in str(error.value)


def test_missing_file_names_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read cluster config .*give 'default', 'marin' or a path"):
        load_profile(tmp_path / "nope.yaml")


def test_marin_manifest_expands_through_iris() -> None:
    profile = load_profile("marin")
    assert len(profile.groups) == 82
    v4 = [g for g in profile.groups if g.device_variant == "v4-32"]
    assert {(g.num_vms, g.capacity_type, g.region) for g in v4} == {
        (4, "preemptible", "us-central2"), (4, "reserved", "us-central2")}
    assert profile.by_priority[0].priority <= profile.by_priority[-1].priority


def test_a_profile_survives_its_json_report() -> None:
    """What the embedded controller reports (``profile_to_json``) reads back as the same profile."""
    from fray_jupyter.cluster.profile import profile_from_json, profile_to_json

    profile = load_profile()
    assert profile_from_json(json.loads(json.dumps(profile_to_json(profile)))) == profile
    with pytest.raises(ProfileError, match="wrong type"):
        profile_from_json({"groups": [{**profile_to_json(profile)["groups"][0], "num_vms": "2"}]})
