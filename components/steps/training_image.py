"""TrainingImage: an image on every host, built there or built once and shipped."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_command as command
import pulumi_docker as docker

from components.hosts.host_script import script_text
from components.naming import component_type
from components.render.build_context import ImageSource
from components.steps.context_cache import context_dir
from components.steps.refresh_defaults import BUILD_DEFAULTS
from components.paths import ASSETS_DIR

SHIP_SCRIPT = ASSETS_DIR / "operator" / "image-ship.sh"
MARK_SCRIPT = "host/image-mark.sh"
RELAY_SCRIPT = ASSETS_DIR / "operator" / "image-relay.sh"
RELAY_HOP_SCRIPT = "host/image-relay-hop.sh"
IMAGE_STEP = "image"
"""The training image's shipped copy, as the hosts' probe names it."""


def copy_step_name(step: str, tag: str) -> str:
    """The mark of one copy of an image on a host: the step and the tag's content hash, so two
    copies of one image under different tags never share a mark."""
    return f"{step}-{tag.rpartition(':')[2][:16]}"


@dataclass(frozen=True)
class ImageHost:
    """A host as the image sees it: its engine, and how ssh reaches it from this machine."""

    name: str
    engine: docker.Provider
    ssh_destination: str
    """`user@address:port`."""
    ssh_options: tuple[str, ...]
    """How this machine's ssh reaches it (components.hosts.engines.operator_ssh_opts)."""


@dataclass(frozen=True)
class TrainingImageArgs:
    hosts: tuple[ImageHost, ...]
    """Manager first: with build-once it builds there."""
    source: ImageSource
    """Its tag (`name:<content hash>`: a new tag exactly when an input changed), context and args."""
    distribution: Literal["every-host", "build-once", "relay"]
    step: str
    """The hosts' probe's name for a shipped copy (components.hosts.probe)."""
    known_hosts_path: str = "~/.ssh/known_hosts"
    """The operator's known_hosts: with relay, each hop checks the next one's key against it."""
    generations: dict[str, int] = field(default_factory=dict)
    """Host name -> its shipped copy's generation, from the probe (0: not made yet)."""
    after: tuple[pulumi.Resource, ...] = ()
    """What must exist before any host is touched (the host claims)."""


class TrainingImage(pulumi.ComponentResource):
    """Creates, per host, a `docker.RemoteImage` that the host's engine builds (every-host) or,
    except on the manager, a local Command that copies the manager's image over and marks it for
    the probe (build-once): a copy removed behind our back is shipped again by the next `up`.

    Outputs:
        image_ids: host name -> the image id on that host.

    Attributes:
        ids: host name -> the image id on that host, each its own output.
    """

    image_ids: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: TrainingImageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("TrainingImage"), name, None, opts)
        self.tag = args.source.tag
        builder = args.hosts[0]
        built = self._build(name, builder, args)
        self.per_host: dict[str, pulumi.Resource] = {builder.name: built}
        ids: dict[str, pulumi.Output[str]] = {builder.name: built.image_id}
        relay = self._relay(name, builder, built, args) if args.distribution == "relay" and args.hosts[1:] else None
        for host in args.hosts[1:]:
            if args.distribution == "every-host":
                image = self._build(name, host, args)
                self.per_host[host.name], ids[host.name] = image, image.image_id
            else:
                # A loaded image keeps its id: the builder's, known to the preview.
                # After a relay the copy is there: the ship finds it and marks it.
                ship = self._ship(name, builder, host, built, args, relay)
                self.per_host[host.name], ids[host.name] = ship, built.image_id
        self.ids = ids
        self.image_ids = pulumi.Output.all(**ids)
        self.register_outputs({"image_ids": self.image_ids})

    def _build(self, name: str, host: ImageHost, args: TrainingImageArgs) -> docker.RemoteImage:
        context = context_dir(args.source.entries, args.source.tag)
        return docker.RemoteImage(
            f"{name}-{host.name}-build",
            name=args.source.tag,
            build=docker.RemoteImageBuildArgs(
                context=str(context),
                dockerfile=str(context / "Dockerfile"),
                build_args=args.source.build_args,
                **BUILD_DEFAULTS,
            ),
            keep_locally=False,
            opts=pulumi.ResourceOptions(parent=self, provider=host.engine, depends_on=list(args.after)),
        )

    def _relay(
        self, name: str, builder: ImageHost, built: docker.RemoteImage, args: TrainingImageArgs
    ) -> command.local.Command:
        """The image passed on from the builder to every other host, host to host over the lab's
        network (assets/operator/image-relay.sh). Run again when a host is planned to get it
        again (its generation, from the probe): the hosts that hold it are left out."""
        generations = ",".join(f"{host.name}:{args.generations.get(host.name, 0)}" for host in args.hosts[1:])
        hosts = [word for host in args.hosts for word in ("--", host.ssh_destination, *host.ssh_options)]
        return command.local.Command(
            f"{name}-relay",
            create=built.image_id.apply(
                lambda image_id: shlex.join(
                    [
                        "env",
                        f"DSLAB_GEN={generations}",
                        "bash",
                        str(RELAY_SCRIPT),
                        self.tag,
                        image_id,
                        args.known_hosts_path,
                        *hosts,
                    ]
                )  # fmt: skip
            ),
            stdin=script_text(RELAY_HOP_SCRIPT),
            logging=command.local.Logging.STDERR,
            add_previous_output_in_env=False,
            triggers=[self.tag],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[built, *args.after]),
        )

    def _ship(
        self,
        name: str,
        builder: ImageHost,
        host: ImageHost,
        built: docker.RemoteImage,
        args: TrainingImageArgs,
        relay: command.local.Command | None = None,
    ) -> command.local.Command:
        script = ["bash", str(SHIP_SCRIPT)]
        generation = args.generations.get(host.name, 0)
        return command.local.Command(
            f"{name}-{host.name}-ship",
            create=built.image_id.apply(
                lambda image_id: shlex.join(
                    [
                        "env",
                        f"DSLAB_GEN={generation}",
                        *script,
                        "ship",
                        self.tag,
                        args.step,
                        image_id,
                        builder.ssh_destination,
                        host.ssh_destination,
                        "--",
                        *builder.ssh_options,
                        # The host's own, where it is reached otherwise (another jump host).
                        *(["--", *host.ssh_options] if host.ssh_options != builder.ssh_options else []),
                    ]
                )  # fmt: skip
            ),
            delete=shlex.join([*script, "remove", self.tag, args.step, host.ssh_destination, "--", *host.ssh_options]),
            stdin=script_text(MARK_SCRIPT),
            logging=command.local.Logging.STDERR,
            add_previous_output_in_env=False,
            # A new tag ships anew, then the old copy goes (after the containers that use it).
            triggers=[self.tag],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[built, *args.after, *([relay] if relay else [])]),
        )
