"""allreduce_bench.py's figures, which must import without torch."""

from __future__ import annotations

import pytest

from tests.support.asset_module import load_asset

bench = load_asset("allreduce_bench.py")


def test_two_ranks_carry_the_whole_message_once_each_way() -> None:
    # 1 GB in 1 s: algbw 8 Gbit/s; a ring of 2 moves it 2 * (2 - 1) / 2 = 1 times.
    assert bench.bus_bandwidth_gbps(1e9, 1.0, 2) == pytest.approx(8.0)
    assert bench.bus_bandwidth_gbps(1e9, 1.0, 8) == pytest.approx(14.0)


def test_one_rank_has_no_bus_bandwidth() -> None:
    # Its all-reduce copies nothing: size over a no-op's time was a meaningless figure.
    assert bench.bus_bandwidth_gbps(256e6, 1e-5, 1) is None
