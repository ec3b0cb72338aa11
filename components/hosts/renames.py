"""A host renamed in the stack's list, on the same machine: its resources are the old name's,
taken over (Pulumi aliases), never made beside them. Made beside them they would collide on the
machine (one container name, one claim volume, one swarm membership that the old name's delete
would then leave)."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping

import pulumi


def old_name(resource_name: str, renamed: Mapping[str, str]) -> str | None:
    """RESOURCE_NAME as it was under the host's old name (every per-host resource has the host's
    name between dashes, or at either end), or None for a resource of no renamed host."""
    for new, old in renamed.items():
        pattern = rf"(?<![^-]){re.escape(new)}(?![^-])"
        if re.search(pattern, resource_name):
            return re.sub(pattern, old, resource_name)
    return None


def taken_over_from_old_names(renamed: Mapping[str, str]) -> pulumi.ResourceTransformation:
    """A transformation for the Lab: each resource of a renamed host gets an alias to its old name."""

    def alias_old_name(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        old = old_name(args.name, renamed)
        if old is None:
            return None
        taken_over = copy.copy(args.opts)
        taken_over.aliases = [*(args.opts.aliases or []), pulumi.Alias(name=old)]
        return pulumi.ResourceTransformationResult(args.props, taken_over)

    return alias_old_name
