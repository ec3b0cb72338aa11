"""`dslab:operator`: how the operator's machine reaches the hosts (key, known_hosts, how long
a host may take to answer)."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator

from components.config.base import FrozenModel, Problems
from components.config.fields import EncryptedSecret, Seconds, Secret
from components.config.jump_host import JumpHost


class OperatorConfig(FrozenModel):
    """How Pulumi reaches the hosts: one ssh key, and known host keys (always checked)."""

    private_key_path: str | None = Field(
        default=None,
        description="Operator's private key file, relative to the project directory or absolute.",
        examples=[".simhosts/operator_ed25519"],
    )
    private_key: Secret | None = Field(
        default=None,
        description="The private key text, as a Pulumi secret (pulumi config set --secret).",
    )
    known_hosts_path: str = Field(
        default="~/.ssh/known_hosts",
        description=(
            "known_hosts file holding every host's key; strict host key checking is always "
            "on. Default ~/.ssh/known_hosts."
        ),
        examples=[".simhosts/known_hosts"],
    )
    jump_host: JumpHost | None = Field(
        default=None,
        description=(
            "A bastion between this machine and the lab: every connection to a host goes "
            "through it (ssh -J), its host key checked in known_hosts_path too. Default none: "
            "each host reached directly."
        ),
        examples=[{"address": "192.0.2.10", "user": "ops"}],
    )
    host_timeout: Seconds = Field(
        default=60,
        ge=5,
        description=(
            "How long a host's Docker engine or sshd may take to answer before the step waiting "
            "on it fails, naming the host. Default 60."
        ),
        examples=[120],
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
