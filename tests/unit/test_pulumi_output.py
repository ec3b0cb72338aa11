"""Reading Pulumi's printed summary in the e2e tests: exact counts, not substrings."""

from __future__ import annotations

from tests.support.pulumi_output import change_counts

UP = """Updating (dev):
     Type                 Name            Status
 ~   command:local:Command  lab-loss-plot  updated (0.1s)

Outputs:
    training_status: "succeeded"

Resources:
    ~ 11 updated
    - 1 deleted
    35 unchanged

Duration: 12s
"""


def test_the_summary_is_read_as_exact_counts_so_eleven_updates_are_not_one() -> None:
    assert change_counts(UP) == {"updated": 11, "deleted": 1, "unchanged": 35}
    assert change_counts(UP).get("updated") != 1


def test_a_preview_summary_with_planned_steps_is_read_too() -> None:
    preview = "Resources:\n    + 2 to create\n    +-1 to replace\n    30 unchanged\n"
    assert change_counts(preview) == {"to create": 2, "to replace": 1, "unchanged": 30}


def test_output_without_a_summary_has_no_counts() -> None:
    assert change_counts("error: update failed\n") == {}
