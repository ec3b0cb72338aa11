"""Reusable validated types for the lab configuration.

Each type is an ``Annotated`` alias over a plain Python type plus one validator
function. Validators raise ``ValueError`` whose message continues the sentence
"<key>: <value received> ..." (the formatter in ``components.config.errors`` prefixes
the key path and the value), and always end with an example of a valid value.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainValidator, SecretStr

from components.config.shapes import (
    IPV4_HOST_ADDRESS,
    NO_LINE_BREAK,
    NO_NUL,
    NOT_BLANK,
    NUMBER_TEXT,
    SIZE_TEXT,
    Shape,
    integer_text,
)
from components.config.shapes import ipv4_network as ipv4_network_text

# --- plain validator functions ------------------------------------------------------

_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_APT_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$")
# A docker image reference: [registry[:port]/]path[:tag][@digest], lower-case path.
_IMAGE_REF = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$"
)
_PYTHON_VERSION = re.compile(r"^3\.[0-9]{1,2}(\.[0-9]{1,2})?$")
_SIZE = re.compile(r"^([0-9]+)\s*([bkmgt]?)i?b?$", re.IGNORECASE)
_SIZE_FACTORS_MB = {
    "": 1 / (1024 * 1024),
    "b": 1 / (1024 * 1024),
    "k": 1 / 1024,
    "m": 1,
    "g": 1024,
    "t": 1024 * 1024,
}

# The ulimit names docker accepts (``docker run --ulimit``), from its units package.
ULIMIT_NAMES = (
    "core",
    "cpu",
    "data",
    "fsize",
    "locks",
    "memlock",
    "msgqueue",
    "nice",
    "nofile",
    "nproc",
    "rss",
    "rtprio",
    "rttime",
    "sigpending",
    "stack",
)


def as_int(value: Any) -> int | None:
    """``value`` as an int if it is one, or a string of one (``pulumi config set --path``
    stores numbers as strings unless given ``--type int``); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value.strip())  # int() strips fewer characters than str.strip()
    return None


def host_name(value: str) -> str:
    """A DNS label: it becomes the container hostname and the hostfile entry."""
    if not _HOST_NAME.match(value):
        raise ValueError(
            "is not a valid host name; expected a lower-case DNS label "
            "(letters, digits, '-', at most 63 characters), e.g. server1"
        )
    return value


def ipv4_address(value: Any) -> str:
    """A dotted-quad IPv4 address a machine can have, kept as its canonical string."""
    try:
        address = ipaddress.IPv4Address(str(value).strip())
    except ValueError:
        raise ValueError("is not an IPv4 address; expected e.g. 10.0.18.2") from None
    if address.is_unspecified or address.is_loopback or address.is_multicast or address.is_reserved:
        raise ValueError(
            "is not an address another machine can reach (unspecified, loopback, multicast or reserved); "
            "expected e.g. 10.0.18.2"
        )
    return str(address)


def not_a_boolean(value: Any) -> Any:
    """YAML's true/false would otherwise count as 1/0 where a number is expected."""
    if isinstance(value, bool):
        raise ValueError("is a boolean; expected a number")
    return value


def ipv4_network(value: Any) -> str:
    """An IPv4 network in CIDR notation with no host bits set, kept as a string."""
    text = str(value).strip()
    if "/" not in text:
        raise ValueError("is not a subnet in CIDR notation; expected e.g. 10.0.3.0/24")
    try:
        network = ipaddress.IPv4Network(text, strict=True)
    except ValueError as error:
        if "has host bits set" in str(error):
            fixed = ipaddress.IPv4Network(text, strict=False)
            raise ValueError(f"has host bits set; expected the network address, i.e. {fixed}") from None
        raise ValueError("is not an IPv4 subnet; expected e.g. 10.0.3.0/24") from None
    return str(network)


def port(value: int) -> int:
    """A TCP port number."""
    if not 1 <= value <= 65535:
        raise ValueError("is not a TCP port; expected 1..65535, e.g. 22")
    return value


def slots(value: int) -> int:
    """Ranks per host in the hostfile."""
    if value < 1:
        raise ValueError("must be at least 1 (DeepSpeed starts one rank per slot); expected e.g. slots: 1")
    return value


def seconds(value: int) -> int:
    """A duration in whole seconds; 0 turns the thing it bounds off."""
    if value < 0:
        raise ValueError("must be 0 or more seconds; expected e.g. 600")
    return value


def non_negative_float(value: Any) -> float:
    """A number >= 0 (an int is taken as a float); a boolean is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("is not a number; expected e.g. 2.5")
    if value < 0:
        raise ValueError("must be 0 or more; expected e.g. 2.5")
    return float(value)


def positive_float(value: Any) -> float:
    """A number > 0 (an int is taken as a float); a boolean is refused."""
    number = non_negative_float(value)
    if number == 0:
        raise ValueError("must be more than 0; expected e.g. 16")
    return number


def mtu(value: int) -> int:
    """An Ethernet MTU for the overlay (VXLAN adds 50 bytes, so it is below the hosts')."""
    if not 576 <= value <= 9000:
        raise ValueError("is not a usable MTU; expected 576..9000, e.g. 1450")
    return value


def absolute_path(value: str) -> str:
    """An absolute POSIX path (on a host or in a container)."""
    if not value.startswith("/"):
        raise ValueError("is not an absolute path; expected e.g. /home/user/code")
    if "\n" in value or "\x00" in value:
        raise ValueError("contains a newline or NUL byte; expected e.g. /home/user/code")
    return value


def env_name(value: str) -> str:
    """An environment variable name."""
    if not _ENV_NAME.match(value):
        raise ValueError(
            "is not an environment variable name; expected letters, digits and '_', "
            "not starting with a digit, e.g. NCCL_DEBUG"
        )
    return value


def env_value(value: str) -> str:
    """An environment variable value: one line (``.deepspeed_env`` is line based)."""
    if "\n" in value or "\r" in value or "\x00" in value:
        raise ValueError("contains a line break; expected a single-line value, e.g. INFO")
    return value


def apt_package(value: str) -> str:
    """A Debian/Ubuntu package name, optionally pinned with ``=version``."""
    if not _APT_PACKAGE.match(value):
        raise ValueError("is not an apt package name; expected e.g. pdsh or vim=2:9.1*")
    return value


def pip_requirement(value: str) -> str:
    """One pip requirement line (a specifier, not an option or a file reference)."""
    text = value.strip()
    if not text or text.startswith("-") or "\n" in value:
        raise ValueError("is not a pip requirement; expected one specifier per item, e.g. deepspeed==0.12.3")
    return text


def image_reference(value: str) -> str:
    """A docker image reference such as ``nvidia/cuda:12.4.1-devel-ubuntu22.04``."""
    if not _IMAGE_REF.match(value):
        raise ValueError("is not a docker image reference; expected e.g. nvidia/cuda:12.4.1-devel-ubuntu22.04")
    return value


def python_version(value: Any) -> str:
    """A CPython 3 version ``3.X`` or ``3.X.Y`` (YAML reads 3.10 as the float 3.1: use quotes)."""
    text = str(value)
    if isinstance(value, float):
        raise ValueError('is a number, and YAML turns 3.10 into 3.1; quote it, e.g. python: "3.10"')
    if not _PYTHON_VERSION.match(text):
        raise ValueError('is not a Python 3 version; expected e.g. "3.10"')
    return text


def size_to_mb(text: str) -> int:
    """Parse a docker size such as ``40G``, ``512M`` or ``1g`` into MiB (docker's units are binary)."""
    match = _SIZE.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a size")
    number, unit = int(match.group(1)), match.group(2).lower()
    return int(number * _SIZE_FACTORS_MB[unit])


def size(value: Any) -> str:
    """A docker memory size with a unit; at least 1M."""
    text = str(value).strip()
    try:
        megabytes = size_to_mb(text)
    except ValueError:
        raise ValueError("is not a size; expected a number and a unit, e.g. 40G or 512M") from None
    if megabytes < 1:
        raise ValueError("is smaller than 1M; expected e.g. 40G or 512M")
    return text


def bucket_size(value: Any) -> int:
    """A byte count such as DeepSpeed's bucket sizes; accepts 5e8, "5e8" or 500000000."""
    if isinstance(value, bool):
        raise ValueError("is not a number of elements; expected e.g. 5e8")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("is not a number of elements; expected e.g. 5e8") from None
    if number != int(number) or number < 1:
        raise ValueError("must be a whole positive number of elements; expected e.g. 5e8")
    return int(number)


def zero_stage(value: Any) -> int:
    """A DeepSpeed ZeRO stage."""
    number = as_int(value)
    if number not in (0, 1, 2, 3):
        raise ValueError("is not a ZeRO stage; expected 0, 1, 2 or 3, e.g. zero_stage: 2")
    return number


def auto_or_positive_int(value: Any) -> int | Literal["auto"]:
    """``"auto"`` (resolved by the Hugging Face Trainer integration) or an integer >= 1."""
    if value == "auto":
        return "auto"
    number = as_int(value)
    if number is not None and number >= 1:
        return number
    raise ValueError('is neither "auto" nor a positive integer; expected e.g. "auto" or 8')


def auto_or_non_negative_float(value: Any) -> float | Literal["auto"]:
    """``"auto"`` or a number >= 0 (gradient clipping norm; 0 turns clipping off)."""
    if value == "auto":
        return "auto"
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ValueError('is neither "auto" nor a number >= 0; expected e.g. "auto" or 1.0')


def gpu_request(value: Any) -> GpuRequestValue:
    """Which GPUs a host's container gets: "all", "none", a count, or device ids."""
    example = 'expected "all", "none", a count such as 2, or device ids such as [0, 1]'
    if value in ("all", "none"):
        return value
    if isinstance(value, bool):
        raise ValueError(f"is not a GPU request; {example}")
    if as_int(value) is not None:
        value = as_int(value)
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f'is not a GPU count; use "none" for no GPUs; {example}')
        return value
    if isinstance(value, (list, tuple)) and value:
        ids: list[str] = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (int, str)) or str(item).strip() == "":
                raise ValueError(f"contains {item!r}, which is not a device id; {example}")
            if isinstance(item, int) and item < 0:
                raise ValueError(f"contains {item!r}, which is not a device id; {example}")
            ids.append(str(item).strip())
        if len(set(ids)) != len(ids):
            raise ValueError(f"lists a device id twice; {example}")
        return tuple(ids)
    raise ValueError(f"is not a GPU request; {example}")


_UNIX_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_DOCKER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")


def unix_user(value: str) -> str:
    """A login name on a host (used for ssh)."""
    if not _UNIX_USER.match(value):
        raise ValueError("is not a user name; expected e.g. root")
    return value


def docker_name(value: str) -> str:
    """A docker object name (container, network)."""
    if not _DOCKER_NAME.match(value):
        raise ValueError("is not a docker name; expected letters, digits, '_', '.', '-', e.g. test-net")
    return value


def interface_name(value: str) -> str:
    """A Linux network interface name (at most 15 characters)."""
    if not _IFNAME.match(value):
        raise ValueError("is not a network interface name; expected e.g. eth0")
    return value


def ulimit_name(value: str) -> str:
    """One of docker's ulimit names."""
    if value not in ULIMIT_NAMES:
        close = difflib.get_close_matches(value, ULIMIT_NAMES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"is not a ulimit name; {hint}expected one of {', '.join(ULIMIT_NAMES)}")
    return value


def container_path(value: Any) -> str:
    """A path inside the container, absolute or relative to the workload's workdir."""
    if not isinstance(value, str) or not value.strip() or value.startswith("-"):
        raise ValueError("is not a path; expected e.g. /opt/dslab/train_tiny.py")
    if "\n" in value or "\x00" in value:
        raise ValueError("contains a newline or NUL byte; expected e.g. /opt/dslab/train_tiny.py")
    return value


def argument(value: Any) -> str:
    """One command-line argument; numbers are turned into text (YAML reads 20 as an int)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError('is not a command-line argument; expected text, e.g. "--steps"')
    text = str(value)
    if "\x00" in text:
        raise ValueError('contains a NUL byte; expected text, e.g. "--steps"')
    return text


def flag_value(value: Any) -> str | int | float | bool:
    """A value of a ``--key value`` training argument: text, a number or a boolean."""
    if isinstance(value, (str, int, float, bool)):
        if isinstance(value, str) and "\x00" in value:
            raise ValueError('contains a NUL byte; expected text, e.g. "alpaca_gpt4_zh"')
        return value
    raise ValueError('is not a flag value; expected text, a number or true/false, e.g. "alpaca_gpt4_zh"')


_FLAG_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

#: Flags dslab passes itself (``--deepspeed <ds_config>``) or the launcher adds (``--local_rank``).
RESERVED_FLAGS = ("deepspeed", "deepspeed_config", "local_rank")


def flag_name(value: str) -> str:
    """The name of a ``--name value`` training argument, without the dashes."""
    if value in RESERVED_FLAGS:
        raise ValueError("is set by dslab (from training.deepspeed and the launcher); remove it")
    if not _FLAG_NAME.match(value):
        raise ValueError(
            "is not an argument name; expected lower-case words joined by '_', without the "
            "leading --, e.g. per_device_train_batch_size"
        )
    return value


_FLAG_OPTION = re.compile(r"^--[A-Za-z][A-Za-z0-9_-]*$")


def flag_option(value: str) -> str:
    """A command-line option as a script takes it, dashes included: ``--output_dir``."""
    if not _FLAG_OPTION.match(value):
        raise ValueError("is not an option; expected -- and a name, e.g. --output_dir")
    return value


# --- Pulumi secrets in stack files ---------------------------------------------------


class EncryptedSecret(BaseModel):
    """A ``{secure: v1:...}`` value from a stack file: decrypted by the Pulumi engine at run time.

    Only the file loader (``python -m components.validate``) sees these; the live program
    gets the decrypted value.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    secure: str


def secret_string(value: Any) -> SecretStr | EncryptedSecret:
    """A secret: a plain string (wrapped so it never prints) or a still-encrypted stack value."""
    if isinstance(value, SecretStr | EncryptedSecret):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("is empty; expected the secret text, set with pulumi config set --secret")
        return SecretStr(value)
    if isinstance(value, Mapping) and set(value) == {"secure"} and isinstance(value["secure"], str):
        return EncryptedSecret(secure=value["secure"])
    raise ValueError(
        "is not a secret string; expected the text itself or a Pulumi secret "
        "(pulumi config set --secret --path 'operator.private_key' < key)"
    )


def is_encrypted_value(value: Any) -> bool:
    """Whether a raw config value is a Pulumi ``{secure: ...}`` ciphertext."""
    return isinstance(value, Mapping) and set(value) == {"secure"}


# --- the Annotated types --------------------------------------------------------------
# Each ends with its Shape: the readable name the configuration reference prints, and the JSON
# Schema of what its validator takes (components.config.shapes), for schema/stack.schema.json.

GpuRequestValue = Literal["all", "none"] | int | tuple[str, ...]

_STRING: dict[str, Any] = {"type": "string"}


def _text(pattern: str) -> dict[str, Any]:
    """The JSON Schema of a string that matches PATTERN."""
    return {"type": "string", "pattern": pattern}


HostName = Annotated[str, AfterValidator(host_name), Shape("string (DNS label)", _text(_HOST_NAME.pattern))]
IPv4Str = Annotated[
    str, BeforeValidator(ipv4_address), Shape("string (IPv4 address)", _text(IPV4_HOST_ADDRESS), replace=True)
]
IPv4NetworkStr = Annotated[
    str, BeforeValidator(ipv4_network), Shape("string (IPv4 subnet, CIDR)", _text(ipv4_network_text()), replace=True)
]
Port = Annotated[
    int,
    BeforeValidator(not_a_boolean),
    AfterValidator(port),
    Shape("integer 1–65535", {"type": "integer", "minimum": 1, "maximum": 65535}),
]
Slots = Annotated[
    int, BeforeValidator(not_a_boolean), AfterValidator(slots), Shape("integer ≥ 1", {"type": "integer", "minimum": 1})
]
Mtu = Annotated[
    int, AfterValidator(mtu), Shape("integer 576–9000", {"type": "integer", "minimum": 576, "maximum": 9000})
]
Seconds = Annotated[
    int,
    BeforeValidator(not_a_boolean),
    AfterValidator(seconds),
    Shape("integer ≥ 0 (seconds)", {"type": "integer", "minimum": 0}),
]
NonNegativeFloat = Annotated[
    float, PlainValidator(non_negative_float), Shape("number ≥ 0", {"type": "number", "minimum": 0})
]
PositiveFloat = Annotated[
    float, PlainValidator(positive_float), Shape("number > 0", {"type": "number", "exclusiveMinimum": 0})
]
AbsolutePath = Annotated[
    str, AfterValidator(absolute_path), Shape("string (absolute path)", _text(r"^/(?![\s\S]*[\n\x00])"))
]
EnvName = Annotated[str, AfterValidator(env_name), Shape("string (variable name)", _text(_ENV_NAME.pattern))]
EnvValue = Annotated[str, AfterValidator(env_value), Shape("string (one line)", _text(NO_LINE_BREAK))]
AptPackage = Annotated[
    str, AfterValidator(apt_package), Shape("string (apt package, =version optional)", _text(_APT_PACKAGE.pattern))
]
PipRequirement = Annotated[
    str, AfterValidator(pip_requirement), Shape("string (pip requirement)", _text(r"^(?![\s\S]*\n)\s*[^\s-]"))
]
ImageReference = Annotated[
    str, AfterValidator(image_reference), Shape("string (image reference)", _text(_IMAGE_REF.pattern))
]
PythonVersion = Annotated[
    str, PlainValidator(python_version), Shape('string ("3.X" or "3.X.Y")', _text(_PYTHON_VERSION.pattern))
]
Size = Annotated[
    str,
    PlainValidator(size),
    Shape(
        "string (size with a unit, at least 1M)",
        # A bare number is a count of bytes.
        {"anyOf": [_text(SIZE_TEXT), {"type": "integer", "minimum": 1024 * 1024}]},
    ),
]
BucketSize = Annotated[
    int,
    PlainValidator(bucket_size),
    # YAML reads 5e8 as text, which float() takes; whether it is whole only the loader checks.
    Shape("integer ≥ 1 (5e8 too)", {"anyOf": [{"type": "integer", "minimum": 1}, _text(NUMBER_TEXT)]}),
]
ZeroStage = Annotated[
    int,
    PlainValidator(zero_stage),
    Shape("one of `0`/`1`/`2`/`3`", {"anyOf": [{"enum": [0, 1, 2, 3]}, _text(r"^\s*(?:-?0+|0*[1-3])\s*$")]}),
]
AutoOrPositiveInt = Annotated[
    int | Literal["auto"],
    PlainValidator(auto_or_positive_int),
    Shape(
        "`auto` or integer ≥ 1",
        {"anyOf": [{"const": "auto"}, {"type": "integer", "minimum": 1}, _text(integer_text(1))]},
    ),
]
AutoOrNonNegativeFloat = Annotated[
    float | Literal["auto"],
    PlainValidator(auto_or_non_negative_float),
    Shape("`auto` or number ≥ 0", {"anyOf": [{"const": "auto"}, {"type": "number", "minimum": 0}, _text(NUMBER_TEXT)]}),
]
GpuRequest = Annotated[
    GpuRequestValue,
    PlainValidator(gpu_request),
    Shape(
        "`all`, `none`, a count ≥ 1, or a list of device ids",
        {
            "anyOf": [
                {"enum": ["all", "none"]},
                {"type": "integer", "minimum": 1},
                _text(integer_text(1)),
                {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"anyOf": [{"type": "integer", "minimum": 0}, _text(NOT_BLANK)]},
                },
            ]
        },
    ),
]
Secret = Annotated[
    SecretStr | EncryptedSecret,
    PlainValidator(secret_string),
    Shape(
        "string (a secret), or `{secure: ...}`",
        {
            "anyOf": [
                _text(NOT_BLANK),
                {
                    "type": "object",
                    "properties": {"secure": _STRING},
                    "required": ["secure"],
                    "additionalProperties": False,
                },
            ]
        },
        replace=True,
    ),
]
UnixUser = Annotated[str, AfterValidator(unix_user), Shape("string (user name)", _text(_UNIX_USER.pattern))]
DockerName = Annotated[str, AfterValidator(docker_name), Shape("string (docker name)", _text(_DOCKER_NAME.pattern))]
InterfaceName = Annotated[str, AfterValidator(interface_name), Shape("string (interface name)", _text(_IFNAME.pattern))]
UlimitName = Annotated[str, AfterValidator(ulimit_name), Shape("ulimit name", {"enum": list(ULIMIT_NAMES)})]
ContainerPath = Annotated[
    str,
    PlainValidator(container_path),
    Shape("string (path in the container)", _text(r"^(?!-)(?=.*\S)(?![\s\S]*[\n\x00])")),
]
Argument = Annotated[
    str, PlainValidator(argument), Shape("string or number", {"anyOf": [_text(NO_NUL), {"type": "number"}]})
]
FLAG_VALUE_SCHEMA: dict[str, Any] = {"anyOf": [_text(NO_NUL), {"type": "number"}, {"type": "boolean"}]}
FlagValue = Annotated[
    str | int | float | bool, PlainValidator(flag_value), Shape("string, number or boolean", FLAG_VALUE_SCHEMA)
]
FLAG_NAME_PATTERN = rf"^(?!(?:{'|'.join(RESERVED_FLAGS)})$){_FLAG_NAME.pattern[1:]}"
"""An argument name dslab does not set itself (fields.flag_name)."""
FlagName = Annotated[str, AfterValidator(flag_name), Shape("string (argument name, no --)", _text(FLAG_NAME_PATTERN))]
FlagOption = Annotated[str, AfterValidator(flag_option), Shape("string (--option)", _text(_FLAG_OPTION.pattern))]
