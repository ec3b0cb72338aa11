"""TrainingImage: the training image on every host, built there or built once and shipped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pulumi

from components.connection import RemoteHost
from components.naming import component_type
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class TrainingImageArgs:
    hosts: tuple[RemoteHost, ...]
    """Manager first: with build-once it builds there."""
    tag: str
    """Full tag, `name:<content hash>`: a new tag exactly when an input changed."""
    context: dict[str, dict[str, Any]]
    """Build context entries, see components.build_context."""
    build_args: dict[str, str]
    distribution: Literal["every-host", "build-once"]
    after: tuple[pulumi.Resource, ...] = ()
    """What must exist before any host is touched (the host claims)."""


class TrainingImage(pulumi.ComponentResource):
    """Creates, per host, a RemoteScript that builds the image (every-host) or, except on
    the manager, one that copies the manager's image over (build-once).

    Outputs:
        image_ids: host name -> the image id on that host.
    """

    image_ids: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: TrainingImageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("TrainingImage"), name, None, opts)
        self.tag = args.tag
        builder = args.hosts[0]
        self.per_host: dict[str, RemoteScript] = {builder.name: self._build(name, builder, args)}
        for host in args.hosts[1:]:
            if args.distribution == "every-host":
                self.per_host[host.name] = self._build(name, host, args)
            else:
                self.per_host[host.name] = self._ship(name, builder, host, args)
        self.image_ids = pulumi.Output.all(
            **{host: image.result.apply(lambda result: str(result["image_id"])) for host, image in self.per_host.items()}
        )
        self.register_outputs({"image_ids": self.image_ids})

    def _build(self, name: str, host: RemoteHost, args: TrainingImageArgs) -> RemoteScript:
        build_flags = [f"--build-arg={key}={value}" for key, value in sorted(args.build_args.items())]
        return RemoteScript(
            f"{name}-{host.name}-build",
            label=f"{host.name}: image {args.tag}",
            connection=host.connection,
            create=script_call("host/image-build.sh", args.tag, *build_flags),
            stdin_archive=args.context,
            read=script_call("host/image-read.sh", args.tag),
            delete=script_call("host/image-remove.sh", args.tag),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )

    def _ship(self, name: str, builder: RemoteHost, host: RemoteHost, args: TrainingImageArgs) -> RemoteScript:
        tag = args.tag
        # `docker save` on the builder piped into `docker load` on the host, through this machine.
        return RemoteScript(
            f"{name}-{host.name}-ship",
            label=f"{host.name}: image {tag} from {builder.name}",
            connection=host.connection,
            create=script_call("host/image-load.sh", tag),
            pipe_from={"connection": builder.connection, "create": script_call("host/image-save.sh", tag)},
            read=script_call("host/image-read.sh", tag),
            delete=script_call("host/image-remove.sh", tag),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.per_host[builder.name], *args.after]),
        )
