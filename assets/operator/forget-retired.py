"""Forget the steps an older dslab kept as RemoteScripts (a Pulumi dynamic provider) in a
stack's state, so the current version can take the stack over: `make upgrade STACK=NAME`.

Nothing on the hosts is touched. What those steps made (the swarm, the claims, the keys inside
the containers) is taken over by the next `pulumi up`, whose steps make the same things
idempotently. The image is built again by each engine's builder (its id changes, so the
containers are made again, each at its address). The older image stays on the hosts: under
its tag when this version's tag differs (the command names each, to remove once `up` has run),
else untagged (`docker image prune` removes it). An IPsec container (network.ipsec: strongswan) has the
same name as this version's: turn IPsec off and `up` with the older version first. The state is exported, the retired resources
and every reference to them removed, and imported again; the export is kept beside it as a
backup (`<stack>.before-upgrade.json`).

Usage: python forget-retired.py STACK   (in the project directory, `pulumi` on PATH)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

RETIRED = ("pulumi-python:dynamic", "pulumi:providers:pulumi-python")
"""Type prefixes: the dynamic resources (`pulumi-python:dynamic/dslab:RemoteScript`), their provider."""


def pulumi(*args: str) -> str:
    completed = subprocess.run(["pulumi", *args], capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        sys.exit(f"pulumi {' '.join(args)} failed:\n{completed.stderr.strip()}")
    return completed.stdout


IMAGE_SCRIPTS = ("host/image-build.sh", "host/image-load.sh")
"""The retired steps that put an image on a host: their first argument is its tag."""


def retired_images(resources: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Tag -> the hosts (or addresses) the older version put it on."""
    images: dict[str, set[str]] = {}
    for resource in resources:
        inputs = resource.get("inputs") or {}
        create = inputs.get("create") or {}
        if resource["type"].startswith(RETIRED) and create.get("script") in IMAGE_SCRIPTS and create.get("args"):
            connection = inputs.get("connection") or {}
            host = connection.get("name") or connection.get("host") or "its host"
            images.setdefault(str(create["args"][0]), set()).add(str(host))
    return images


def without_retired(deployment: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The deployment without the retired resources (and their provider), nor any reference to
    them; and how many resources went."""
    resources: list[dict[str, Any]] = deployment.get("resources") or []
    retired = {r["urn"] for r in resources if r["type"].startswith(RETIRED)}
    kept = []
    for resource in resources:
        if resource["urn"] in retired:
            continue
        if "dependencies" in resource:
            resource["dependencies"] = [urn for urn in resource["dependencies"] if urn not in retired]
        for key, urns in (resource.get("propertyDependencies") or {}).items():
            resource["propertyDependencies"][key] = [urn for urn in urns if urn not in retired]
        if resource.get("deletedWith") in retired:
            del resource["deletedWith"]
        kept.append(resource)
    return {**deployment, "resources": kept}, len(resources) - len(kept)


def main(stack: str) -> None:
    exported = json.loads(pulumi("stack", "export", "--stack", stack))
    deployment, forgotten = without_retired(exported["deployment"])
    if forgotten == 0:
        print(f"{stack}: nothing to forget; `pulumi up` takes it as it is")
        return
    backup = Path(f"{stack}.before-upgrade.json")
    backup.write_text(json.dumps(exported, indent=2))
    upgraded = Path(f"{stack}.upgraded.json")
    upgraded.write_text(json.dumps({**exported, "deployment": deployment}, indent=2))
    pulumi("stack", "import", "--stack", stack, "--file", str(upgraded))
    upgraded.unlink()
    print(f"{stack}: forgot {forgotten} resources of the older version (backup: {backup}); now run `pulumi up`")
    for tag, hosts in sorted(retired_images(exported["deployment"].get("resources") or []).items()):
        print(
            f"the older version's image {tag} stays on {', '.join(sorted(hosts))}: once `pulumi up` has run, "
            f"`docker image rm {tag}` there removes it (refused while a container uses it)"
        )
    print("(an older image whose tag this version took stays untagged: `docker image prune` removes it)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: forget-retired.py STACK")
    main(sys.argv[1])
