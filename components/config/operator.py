"""`dslab:operator`: how the operator's machine reaches the hosts (key, known_hosts, how long
a host may take to answer)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, ConfigDict, Field, SecretStr, model_validator
from pydantic.json_schema import JsonDict

from components.config.base import FrozenModel, Problems
from components.config.fields import EncryptedSecret, Secret, not_a_boolean
from components.config.jump_host import JumpHost
from components.config.on_change import Effect, on_change
from components.config.shapes import Shape

MIN_HOST_TIMEOUT = 5
"""Seconds: a host's engine and sshd get at least this long to answer."""

HostTimeout = Annotated[
    int,
    BeforeValidator(not_a_boolean),
    Field(ge=MIN_HOST_TIMEOUT),
    Shape(f"integer ≥ {MIN_HOST_TIMEOUT} (seconds)", {"type": "integer", "minimum": MIN_HOST_TIMEOUT}, replace=True),
]

_OPERATOR_ONLY = "how this machine reaches the hosts"

# Exactly one of the two keys, given and not null (the cross-key rule _exactly_one_key checks).
_ONE_KEY: JsonDict = {
    "oneOf": [
        {"required": ["private_key_path"], "properties": {"private_key_path": {"type": "string"}}},
        {"required": ["private_key"], "properties": {"private_key": {"not": {"type": "null"}}}},
    ]
}


class OperatorConfig(FrozenModel):
    """How Pulumi reaches the hosts: one ssh key, and known host keys (always checked)."""

    model_config = ConfigDict(json_schema_extra=_ONE_KEY)

    private_key_path: str | None = Field(
        default=None,
        description=(
            "Operator's private key file, relative to the project directory or absolute; give it or private_key."
        ),
        examples=[".simhosts/operator_ed25519"],
        json_schema_extra=on_change(
            Effect.NOTHING, f"{_OPERATOR_ONLY}; another key must be authorized on every host first"
        ),
    )
    private_key: Secret | None = Field(
        default=None,
        description=(
            "The private key text, as a Pulumi secret (pulumi config set --secret); give it or private_key_path."
        ),
        examples=[{"secure": "v1:..."}],
        json_schema_extra=on_change(
            Effect.NOTHING, f"{_OPERATOR_ONLY}; another key must be authorized on every host first"
        ),
    )
    known_hosts_path: str = Field(
        default="~/.ssh/known_hosts",
        description=(
            "known_hosts file holding every host's key; strict host key checking is always "
            "on. Default ~/.ssh/known_hosts."
        ),
        examples=[".simhosts/known_hosts"],
        json_schema_extra=on_change(Effect.NOTHING, _OPERATOR_ONLY),
    )
    jump_host: JumpHost | None = Field(
        default=None,
        description=(
            "A bastion between this machine and the lab: every connection to a host goes "
            "through it (ssh -J), its host key checked in known_hosts_path too. Default none: "
            "each host reached directly."
        ),
        examples=[{"address": "192.0.2.10", "user": "ops"}],
        json_schema_extra=on_change(Effect.NOTHING, f"{_OPERATOR_ONLY}: every step runs again in place"),
    )
    host_timeout: HostTimeout = Field(
        default=60,
        description=(
            "How long a host's Docker engine or sshd may take to answer before the step waiting "
            "on it fails, naming the host. Default 60."
        ),
        examples=[120],
        json_schema_extra=on_change(
            Effect.NOTHING,
            "one update per host: the bound each host keeps for our scripts (~/.dslab/host-timeout); "
            "no container or run changes",
        ),
    )

    @model_validator(mode="after")
    def _exactly_one_key(self) -> OperatorConfig:
        if (self.private_key_path is None) == (self.private_key is None):
            given = "both" if self.private_key is not None else "neither"
            problems = Problems()
            problems.add(
                (),
                f"has {given} of private_key_path and private_key; give exactly one, "
                "e.g. private_key_path: ~/.ssh/id_ed25519",
            )
            problems.raise_if_any()
        return self

    @property
    def private_key_is_encrypted(self) -> bool:
        """True when the key came from a stack file still encrypted (validation only)."""
        return isinstance(self.private_key, EncryptedSecret)

    def secret_key_text(self) -> str:
        """The key given as a secret, as ssh reads it (one final newline)."""
        if not isinstance(self.private_key, SecretStr):
            raise ValueError("dslab:operator.private_key could not be decrypted; run through `pulumi up`")
        return self.private_key.get_secret_value().rstrip("\n") + "\n"
