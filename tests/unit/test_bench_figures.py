"""The bench's reading of a cold up: how much of it was shipping the image, and the ratio
of 8 to 2 hosts without it, and a registry against the copy."""

from __future__ import annotations

from bench.lifecycle import longest_ship
from bench.report import ratios

UP_OUTPUT = """
 +  docker:index:RemoteImage lab-image-server1-build created (12.5s)
 +  command:local:Command lab-image-server2-ship created (81.2s)
 +  command:local:Command lab-image-server3-ship creating (40s)
 +  command:local:Command lab-image-server3-ship created (90s)
 +  command:remote:Command lab-training-run created (3.1s)
"""


def test_the_slowest_finished_copy_is_the_shipping_time() -> None:
    assert longest_ship(UP_OUTPUT) == 90.0


def test_an_up_that_shipped_nothing_spent_nothing_shipping() -> None:
    assert longest_ship(" +  docker:index:RemoteImage lab-image-server1-build created (12.5s)") == 0.0


def test_the_8_over_2_ratio_without_shipping_uses_what_is_left_of_each_up() -> None:
    results = {
        "cold_up": [
            {"hosts": 2, "pulumi_up_s": 90.0, "floor_s": 80.0, "pulumi_up_without_ship_s": 30.0},
            {"hosts": 8, "pulumi_up_s": 300.0, "floor_s": 360.0, "pulumi_up_without_ship_s": 42.0},
        ]
    }
    figures = ratios(results)
    assert figures["cold_up_8_over_2"] == 3.333
    assert figures["cold_up_8_over_2_without_ship"] == 1.4


def test_the_registry_is_compared_with_the_copy_per_host_count() -> None:
    results = {
        "registry_vs_copy": [
            {"hosts": 2, "copy_s": 60.0, "registry_s": 75.0},
            {"hosts": 8, "copy_s": 250.0, "registry_s": 100.0},
        ]
    }
    figures = ratios(results)
    assert figures["registry_over_copy_2"] == 1.25
    assert figures["registry_over_copy_8"] == 0.4
