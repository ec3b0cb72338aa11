"""One rule for every host step's result (components.hosts.step_result): the last stdout line's
JSON object; nothing printed is no result; a key the caller needs, missing, names the script and
never the output (the swarm manager's holds the join token)."""

from __future__ import annotations

import pytest

from components.hosts.step_result import step_result


def test_the_result_is_the_last_lines_object_and_nothing_printed_is_none() -> None:
    assert step_result('progress\n{"status": "running", "run": "r1"}\n', "deepspeed-launch.sh") == {
        "status": "running",
        "run": "r1",
    }
    assert step_result("", "deepspeed-launch.sh") == {}
    assert (
        step_result(
            "  \n",
            "preflight-check.sh",
        )
        == {}
    )


def test_a_missing_key_the_caller_needs_names_the_script_and_not_the_output() -> None:
    with pytest.raises(ValueError) as missing:
        step_result('{"join_token": "SWMTKN-1-secret"}', "swarm-manager.sh", ["join_token", "node_id"])
    assert str(missing.value) == "swarm-manager.sh printed no node_id in its result"
    with pytest.raises(ValueError, match="^the swarm step printed no node_id in its result$"):
        step_result("", "the swarm step", ["node_id"])
