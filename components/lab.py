"""Lab: the whole cluster, in the order the write-up does it by hand.

host claims -> swarm (init, joins) -> overlay network -> training image -> the workload's inputs
on every host -> one container per host -> SSH mesh -> DeepSpeed launch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from components.render.build_context import ipsec_image_source, training_image_source
from components.config import LabConfig
from components.config.address_plan import AddressPlanError
from components.config.base import NAMESPACE
from components.hosts.credentials import OperatorCredentials
from components.hosts.remote_host import RemoteHost, remote_host
from components.render.container_spec import container_spec
from components.hosts.host_steps import (
    HostSteps,
    host_timeout_verdict,
    image_verdict,
    results_verdict,
    run_report_verdict,
    swarm_verdict,
)
from components.hosts.input_manifest import InputsDiffer, check_same_inputs, inputs_digest
from components.hosts.probe import read_host_facts
from components.hosts.results_mount import ResultsMount, results_mount
from components.hosts.renames import taken_over_from_old_names
from components.hosts.engines import host_engine, operator_ssh_line, operator_ssh_opts, ssh_destination
from components.steps.deepspeed_launch import RUN_FILES_STEP, RUN_REPORT_STEP, DeepSpeedLaunch, DeepSpeedLaunchArgs
from components.steps.host_claims import HostClaims, HostClaimsArgs
from components.steps.host_ipsec import IPSEC_IMAGE_STEP, HostIpsec, HostIpsecArgs
from components.steps.host_timeout import HOST_TIMEOUT_STEP, HostTimeout, HostTimeoutArgs
from components.steps.training_image import IMAGE_STEP, ImageHost, TrainingImage, TrainingImageArgs, copy_step_name
from components.steps.input_check import InputCheck, InputCheckArgs
from components.steps.local_copy import LocalCopy, LocalCopyArgs
from components.render.loss_plot import loss_plot_copy, loss_plot_in_container, loss_plot_on_host
from components.naming import component_type
from components.steps.node_container import NodeContainer, NodeContainerArgs
from components.steps.overlay_network import OverlayNetwork, OverlayNetworkArgs, mtu_of_driver_option, tunnel_mtu
from components.steps.results_store import RESULTS_STEP, ResultsStore, ResultsStoreArgs
from components.render.preflight_call import preflight_call
from components.render.results import RUN_OUTPUT_DIR, emptied_dirs, host_results_dir, run_suffix, stack_tag
from components.render.run_files import RUN_DIR, run_deepspeed_env, run_files
from components.render.run_identity import identity_key, identity_text, run_identity
from components.steps.ssh_mesh import KEYS_STEP, REACH_STEP, TRUST_STEP, MeshMember, SshMesh, SshMeshArgs
from components.steps.swarm import SWARM_STEP, Swarm, SwarmArgs
from components.render.workload_inputs import input_roots, required_paths


class Lab(pulumi.ComponentResource):
    """Creates the HostClaims, Swarm and OverlayNetwork (overlay mode), TrainingImage, InputCheck
    (LLaMA-Factory inputs), one NodeContainer per host, the SshMesh, and (when `training.launch`)
    the DeepSpeedLaunch (its preflight, its run) and the LocalCopy of the loss curve.

    Outputs:
        container_ips: host name -> the container's overlay address (the host's in host mode).
        hostfile: the DeepSpeed hostfile.
        manager_address: the manager container's overlay address (DeepSpeed's master_addr).
        network_mode: overlay or host.
        network_name / network_id / network_mtu: the overlay network (overlay mode).
        image_ids: host name -> training image id.
        shell_command: how to open a shell in the manager container.
        training_status / training_log / training_summary: the run, when launched.
        training_results: host -> the run's directory there (under training.results_dir).
        training_resumed_from: the step the run went on from (training.resume), or null.
        training_log_command: an ssh command line that follows that log from the operator's shell.
        training_loss_plot: the loss curve LLaMA-Factory drew, copied to outputs/<stack>/ here.
        preflight_busbw_gbps: the all-reduce bus bandwidth measured right before the run (Gbit/s);
            null for one rank, which has no link to measure.
    """

    container_ips: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        config: LabConfig,
        project_dir: Path,
        owner: str,
        credentials: OperatorCredentials,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        self.results_dir = host_results_dir(config, owner)
        """Where each run gets its own directory, on every host."""
        strongswan = config.network.mode == "overlay" and config.network.encryption == "strongswan"
        self.image_sources = {IMAGE_STEP: training_image_source(config.image, project_dir)}
        if strongswan:
            self.image_sources[IPSEC_IMAGE_STEP] = ipsec_image_source(config.image)
        # Before anything is registered: a host that cannot be asked stops `up` with nothing made.
        self.input_roots = input_roots(config)
        self.facts = read_host_facts(
            config,
            owner,
            str(project_dir),
            [source.tag for source in self.image_sources.values()],
            self.results_dir,
            self.input_roots,
        )
        self.inputs_digest = self._same_inputs_everywhere(config)
        self.host_steps = HostSteps(self.facts)
        if self.facts.renamed:
            opts = pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(transformations=[taken_over_from_old_names(self.facts.renamed)])
            )
        super().__init__(component_type("Lab"), name, None, opts)
        self.config = config
        self.engines = {host.name: host_engine(host, config.operator, parent=self) for host in config.hosts}
        # Each host keeps the address its container holds: the list's order is not identity.
        try:
            self.plan = config.address_plan(self.facts.addresses, self.facts.in_use)
        except AddressPlanError as error:
            # One line, like every other configuration problem; nothing was changed yet.
            raise pulumi.RunError(f"{NAMESPACE}:{error.path}: {error}") from None
        self.claims = HostClaims(
            f"{name}-claim",
            HostClaimsArgs(
                engines={host.name: self.engines[host.name] for host in config.hosts_manager_first},
                owner=owner,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        self.host_timeout = self._create_host_timeout(name, credentials)
        self.hosts: dict[str, RemoteHost] = {
            host.name: remote_host(host, credentials, after=(self.host_timeout.per_host[host.name],))
            for host in config.hosts
        }
        self.nodes = tuple(self.hosts[host.name] for host in config.hosts_manager_first)
        """Every host, the manager first: the order steps on every host run in."""
        # On the hosts' network there is no overlay, hence no swarm to carry one.
        overlay = config.network.mode == "overlay"
        self.swarm = self._create_swarm(name) if overlay else None
        self.network = self._create_network(name, self.swarm) if self.swarm is not None else None
        self.ipsec = self._create_ipsec(name, self.network) if self.network is not None and strongswan else None
        self.image = self._create_image(name)
        self.inputs = self._create_input_check(name)
        self.results = self._create_results_store(name, owner)
        self.owner = owner
        self.run = run_files(config, self.plan)
        self.hostfile = self.run.hostfile
        self.identity = run_identity(
            argv=self.run.argv,
            ds_config=self.run.ds_config,
            dataset_info=self.run.dataset_info,
            hostfile=self.run.hostfile,
            image=self.image_sources[IMAGE_STEP].tag,
            inputs=self.inputs_digest,
        )
        self.run_suffix = run_suffix(owner, identity_key(self.identity))
        self.results_mount = self._results_mount()
        self.containers = {host.name: self._create_container(name, host.name, owner) for host in config.hosts}
        self.mesh = self._create_mesh(name)
        self.launch = self._create_launch(name) if config.training.launch else None
        self.loss_plot = self._create_loss_plot_copy(name, project_dir)
        self._register()

    def _same_inputs_everywhere(self, config: LabConfig) -> str:
        """The inputs' digest, once every host that answered holds the manager's copy; before
        anything is planned, a host whose copy differs stops preview and up, naming it and the
        first file that differs. A host that lacks an input altogether is the input check's to
        name (InputCheck), with what to copy where."""
        answered = [
            host.name
            for host in config.hosts
            if host.name not in self.facts.problems and not self.facts.inputs_absent.get(host.name)
        ]
        manifests = {host: self.facts.inputs.get(host, ()) for host in answered}
        try:
            check_same_inputs(manifests, config.manager.name, self.input_roots)
        except InputsDiffer as error:
            raise pulumi.RunError(f"{NAMESPACE}:training.workload: {error}") from None
        return inputs_digest(manifests, config.manager.name)

    def _results_mount(self) -> ResultsMount:
        """training.results_dir, or the directory the containers mount while the run going there
        goes on (components.hosts.results_mount): said, since the setting waits."""
        mount = results_mount(self.facts, self.config.manager.name, self.results_dir, self.run_suffix)
        if mount.kept_for:
            pulumi.log.warn(
                f"training.results_dir: run {mount.kept_for} is still going in {mount.directory}; the containers "
                f"keep that directory until it ends, and the first up after it moves them to {self.results_dir} "
                "(nothing but a new run stops a run)"
            )
        return mount

    def _create_swarm(self, name: str) -> Swarm:
        manager = self.config.manager
        verdicts = {
            host.name: swarm_verdict(self.facts, host.name, manager.name, manager.address) for host in self.nodes
        }
        known = {host: self.host_steps.swarm_node(host, verdict) for host, verdict in verdicts.items()}
        return Swarm(
            f"{name}-swarm",
            SwarmArgs(
                manager=self.hosts[manager.name],
                workers=tuple(self.hosts[worker.name] for worker in self.config.workers),
                generations={
                    host: self.host_steps.generation(host, SWARM_STEP, verdict) for host, verdict in verdicts.items()
                },
                known_nodes={host: node for host, node in known.items() if node is not None},
                after=self.claims.resources,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _create_network(self, name: str, swarm: Swarm) -> OverlayNetwork:
        network = self.config.network
        return OverlayNetwork(
            f"{name}-network",
            OverlayNetworkArgs(
                hosts=self.nodes,
                network_name=network.name,
                subnet=network.subnet,
                ip_range=self.plan.ip_range,
                gateway=self.plan.gateway,
                mtu=network.mtu,
                interface_mtus=tuple(self.facts.mtus[host.name] for host in self.nodes if host.name in self.facts.mtus),
                kept_mtu=self._kept_overlay_mtu(),
                encryption=network.encryption,
            ),
            pulumi.ResourceOptions(parent=self, depends_on=[swarm], providers=[self.engines[self.config.manager.name]]),
        )

    def _kept_overlay_mtu(self) -> int | None:
        """The overlay's MTU as it stands, while a host's interface MTU could not be read."""
        unknown = any(host.name not in self.facts.mtus for host in self.nodes)
        driver_mtu = self.facts.network_driver_mtu
        return mtu_of_driver_option(driver_mtu) if unknown and driver_mtu is not None else None

    def _create_ipsec(self, name: str, network: OverlayNetwork) -> HostIpsec:
        return HostIpsec(
            f"{name}-ipsec",
            HostIpsecArgs(
                hosts=self.nodes,
                engines=self.engines,
                container_name=f"{self.config.container.name}-ipsec",
                image=self._image_args(IPSEC_IMAGE_STEP),
                tunnel_mtu=network.mtu.apply(tunnel_mtu),
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _create_image(self, name: str) -> TrainingImage:
        return TrainingImage(
            f"{name}-image",
            self._image_args(IMAGE_STEP),
            pulumi.ResourceOptions(parent=self),
        )

    def _image_args(self, step: str) -> TrainingImageArgs:
        operator = self.config.operator
        by_name = {host.name: host for host in self.config.hosts}
        source = self.image_sources[step]
        # Named after this copy (its tag): a copy of another tag, deleted after this one is
        # made, never removes this one's mark.
        copy_step = copy_step_name(step, source.tag)
        return TrainingImageArgs(
            hosts=tuple(
                ImageHost(
                    node.name,
                    self.engines[node.name],
                    ssh_destination(by_name[node.name]),
                    tuple(operator_ssh_opts(operator, by_name[node.name])),
                )
                for node in self.nodes
            ),
            source=source,
            distribution=self.config.image.distribution,
            known_hosts_path=operator.known_hosts_path,
            step=copy_step,
            generations={
                node.name: self.host_steps.generation(
                    node.name, copy_step, image_verdict(self.facts, node.name, source.tag)
                )
                for node in self.nodes
            },
            after=self.claims.resources,
        )

    def _create_input_check(self, name: str) -> InputCheck | None:
        paths = required_paths(self.config)
        if not paths:
            return None
        return InputCheck(
            f"{name}-inputs",
            InputCheckArgs(
                hosts=self.nodes,
                paths=tuple(paths),
                image_tag=self.image.tag,
            ),
            # A host that is down or held by another stack is reported by its claim.
            pulumi.ResourceOptions(parent=self, depends_on=self.claims.resources),
        )

    def _create_host_timeout(self, name: str, credentials: OperatorCredentials) -> HostTimeout:
        seconds = self.config.operator.host_timeout
        hosts = tuple(remote_host(host, credentials) for host in self.config.hosts_manager_first)
        return HostTimeout(
            f"{name}-host-timeout",
            HostTimeoutArgs(
                hosts=hosts,
                seconds=seconds,
                generations={
                    host.name: self.host_steps.generation(
                        host.name, HOST_TIMEOUT_STEP, host_timeout_verdict(self.facts, host.name, seconds)
                    )
                    for host in hosts
                },
                after=self.claims.resources,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _create_results_store(self, name: str, owner: str) -> ResultsStore:
        operator = self.config.operator
        return ResultsStore(
            f"{name}-results",
            ResultsStoreArgs(
                hosts=self.nodes,
                results_dir=self.results_dir,
                generations={
                    node.name: self.host_steps.generation(
                        node.name, RESULTS_STEP, results_verdict(self.facts, node.name, self.results_dir)
                    )
                    for node in self.nodes
                },
                on_destroy=self.config.training.results_on_destroy,
                stack_file=f"Pulumi.{owner.rsplit('/', 1)[-1]}.yaml",
                destinations={host.name: ssh_destination(host) for host in self.config.hosts},
                ssh_options={host.name: tuple(operator_ssh_opts(operator, host)) for host in self.config.hosts},
                stack_tag=stack_tag(owner),
                emptied_dirs=emptied_dirs(self.config, owner),
                after=self.claims.resources,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _create_container(self, name: str, host_name: str, owner: str) -> NodeContainer:
        host = next(host for host in self.config.hosts if host.name == host_name)
        image = self.image.per_host[host_name]
        # A worker's container needs the worker in the swarm (to see the overlay).
        network: list[pulumi.Resource] = []
        if self.swarm is not None and self.network is not None:
            network = [self.network.resource]
            if host_name in self.swarm.joins:
                network.append(self.swarm.joins[host_name])
            # No overlay traffic before the host's tunnels are up.
            if self.ipsec is not None:
                network.append(self.ipsec.per_host[host_name])
        # The model and datasets must be on the host before `docker run --volume` (which
        # would make empty directories in their place).
        # The results directory's step too: deleted after the container, it may remove its runs.
        prepared: list[pulumi.Resource] = [self.inputs.per_host[host_name]] if self.inputs is not None else []
        prepared.append(self.results.per_host[host_name])
        return NodeContainer(
            f"{name}-{host_name}",
            NodeContainerArgs(
                host_name=host_name,
                spec=container_spec(
                    self.config, host, self.image.tag, owner, self.plan, results_dir=self.results_mount.directory
                ),
                image_id=self.image.ids[host_name],
                network_id=self.network.network_id if self.network is not None else None,
                swarm_node=self.swarm.node_ids[host_name] if self.swarm is not None else None,
            ),
            pulumi.ResourceOptions(
                parent=self, depends_on=[*network, image, *prepared], providers=[self.engines[host_name]]
            ),
        )

    def _create_mesh(self, name: str) -> SshMesh:
        return SshMesh(
            f"{name}-mesh",
            SshMeshArgs(
                members=tuple(
                    MeshMember(
                        host=self.hosts[host.name],
                        container_name=self.config.container.name,
                        container_id=self.containers[host.name].container_id,
                        address=self.config.node_address(host.name, self.plan),
                        ssh_port=self.config.container_ssh_port,
                        generations={
                            step: self.facts.generation(host.name, step) for step in (KEYS_STEP, TRUST_STEP, REACH_STEP)
                        },
                    )
                    for host in self.config.hosts_manager_first
                ),
                reach_timeout=self.config.training.preflight.reach_timeout,
            ),
            pulumi.ResourceOptions(parent=self, depends_on=[c.resource for c in self.containers.values()]),
        )

    def _create_launch(self, name: str) -> DeepSpeedLaunch:
        config = self.config
        manager = config.manager
        # The configured interface, or the one the manager's container found on the overlay.
        socket_ifname: pulumi.Input[str] = config.training.socket_ifname or self.mesh.socket_ifname
        deepspeed_env = pulumi.Output.from_input(socket_ifname).apply(lambda ifname: run_deepspeed_env(config, ifname))
        preflight = config.training.preflight
        return DeepSpeedLaunch(
            f"{name}-training",
            DeepSpeedLaunchArgs(
                manager=self.hosts[manager.name],
                nodes=self.nodes,
                container_name=config.container.name,
                workdir=config.training.workload.workdir,
                argv=list(self.run.argv),
                hostfile=self.run.hostfile,
                ds_config=self.run.ds_config,
                dataset_info=self.run.dataset_info,
                deepspeed_env=deepspeed_env,
                wait=config.training.wait,
                stall_timeout=config.training.stall_timeout,
                mesh=[*self.mesh.trusts, self.mesh.reach],
                container_ids={host: container.container_id for host, container in self.containers.items()},
                file_generations={host.name: self.facts.generation(host.name, RUN_FILES_STEP) for host in config.hosts},
                report_generation=self.host_steps.generation(
                    manager.name, RUN_REPORT_STEP, run_report_verdict(self.facts, manager.name)
                ),
                identity=identity_text(self.identity),
                run_suffix=self.run_suffix,
                record=RUN_OUTPUT_DIR,
                preflight=preflight_call(
                    preflight, workdir=config.training.workload.workdir, run_dir=RUN_DIR, argv=self.run.preflight_argv
                )
                if preflight.enabled
                else None,
                results_dir=self.results_mount.directory,
                resume=config.training.resume,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _create_loss_plot_copy(self, name: str, project_dir: Path) -> LocalCopy | None:
        if self.launch is None or loss_plot_in_container(self.config.training.workload) is None:
            return None
        operator = self.config.operator
        # A run draws its curve when it ends: copied once it succeeded (a background run's, by
        # the `up` that finds it so).
        source = pulumi.Output.all(self.launch.run_name, self.launch.status).apply(
            lambda run_and_status: loss_plot_on_host(self.results_mount.directory, run_and_status[0])
            if run_and_status[0] and run_and_status[1] == "succeeded"
            else ""
        )
        return LocalCopy(
            f"{name}-loss-plot",
            LocalCopyArgs(
                path=loss_plot_copy(project_dir, pulumi.get_stack()),
                source=source,
                destination=ssh_destination(self.config.manager),
                ssh_options=tuple(operator_ssh_opts(operator, self.config.manager)),
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _register(self) -> None:
        manager = self.config.manager
        self.container_ips = pulumi.Output.all(
            **{host: container.address for host, container in self.containers.items()}
        )
        self.manager_address = self.containers[manager.name].address
        container = self.config.container.name
        self.shell_command = operator_ssh_line(
            self.config.operator, manager, f"docker exec -it {container} bash", tty=True
        )
        outputs: dict[str, Any] = {
            "container_ips": self.container_ips,
            "hostfile": self.hostfile,
            "manager_address": self.manager_address,
            "network_mode": self.config.network.mode,
            "image_ids": self.image.image_ids,
            "shell_command": self.shell_command,
        }
        if self.network is not None:
            outputs |= {
                "network_name": self.network.name,
                "network_id": self.network.network_id,
                "network_mtu": self.network.mtu,
            }
        if self.launch is not None:
            outputs |= {
                "training_status": self.launch.status,
                "training_log": self.launch.log_path,
                "training_log_command": self.launch.log_path.apply(
                    lambda path: operator_ssh_line(
                        self.config.operator, manager, f"docker exec {container} tail -n 100 -F {path}"
                    )
                ),
                "training_summary": self.launch.summary,
                # The same path on every host; each holds what its ranks wrote (the manager the
                # finished run's outputs, every node its checkpoint shards).
                "training_resumed_from": self.launch.resumed_from,
                "training_results": self.launch.run_name.apply(
                    lambda run: {host.name: f"{self.results_mount.directory}/{run}" for host in self.nodes}
                    if run
                    else {}
                ),
            }
            if self.loss_plot is not None:
                outputs["training_loss_plot"] = self.loss_plot.path
            if self.launch.busbw_gbps is not None:
                outputs["preflight_busbw_gbps"] = self.launch.busbw_gbps
        self.outputs = outputs
        self.register_outputs(outputs)
