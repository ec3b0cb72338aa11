"""What a configuration type looks like outside Python: a readable name for the configuration
reference, and the JSON Schema of what its validator accepts, for the stack file's schema
(components.config.stack_schema). The patterns say what the validators in ``fields`` say, in
Python's ``re`` as jsonschema runs them; where a rule has no pattern the schema is looser than
the loader.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

JsonSchema = dict[str, Any]


@dataclass(frozen=True, eq=False)
class Shape:
    """``Annotated`` metadata: the type's READABLE name, and its JSON Schema: SCHEMA's keys under
    what pydantic generates (so a Field's own ``ge`` still shows), or SCHEMA alone with REPLACE;
    ALSO lists other forms the validator takes (e.g. a ulimit's bare number), offered beside the
    generated schema. ``eq=False``: hashed by identity, as ``Annotated`` metadata must be hashable."""

    readable: str
    schema: Mapping[str, Any] = field(default_factory=dict)
    also: tuple[Mapping[str, Any], ...] = ()
    replace: bool = False

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # Copies: pydantic adds a field's description and default to the dict it is handed.
        mine = copy.deepcopy(dict(self.schema))
        if self.replace:
            return mine
        generated = handler(core_schema)
        if self.also:
            return {"anyOf": [generated, *(copy.deepcopy(dict(form)) for form in self.also)]}
        return {**mine, **generated}


# --- patterns -------------------------------------------------------------------------------

OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
"""0..255 without leading zeros (Python's ipaddress refuses them)."""

# 0..126 and 128..223: neither loopback (127/8) nor multicast (224/4) nor reserved (240/4).
_FIRST_OCTET = r"(?:22[0-3]|2[01][0-9]|1[3-9][0-9]|12[0-689]|1[01][0-9]|[1-9]?[0-9])"

IPV4_HOST_ADDRESS = rf"^\s*(?!0\.0\.0\.0\s*$){_FIRST_OCTET}(?:\.{OCTET}){{3}}\s*$"
"""An address a machine can have (fields.ipv4_address): not 0.0.0.0, loopback, multicast or reserved."""

NO_LINE_BREAK = r"^(?![\s\S]*[\r\n\x00])"
"""No CR, LF or NUL anywhere (a lookahead: ``$`` would let a final newline through)."""

NO_NUL = r"^(?![\s\S]*\x00)"

NOT_BLANK = r"\S"


def at_least(number: int) -> str:
    """A regular expression (unanchored) for the decimal integers >= NUMBER, leading zeros allowed."""
    if number < 0:
        raise ValueError(f"{number} is negative")
    digits = str(number)
    longer = f"[1-9][0-9]{{{len(digits)},}}"
    same_length = []
    for index, digit in enumerate(map(int, digits)):
        rest = len(digits) - index - 1
        if rest == 0:
            same_length.append(f"{digits[:index]}[{digit}-9]")
        elif digit < 9:
            same_length.append(f"{digits[:index]}[{digit + 1}-9][0-9]{{{rest}}}")
    return f"0*(?:{'|'.join([longer, *same_length])})"


def integer_text(minimum: int) -> str:
    """A string holding an integer >= MINIMUM, as fields.as_int reads one (spaces around allowed)."""
    return rf"^\s*{at_least(minimum)}\s*$"


NUMBER_TEXT = (
    r"^\s*\+?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)\s*$"
)
"""A string Python's float() reads as a number >= 0 (digits, a point, an exponent; inf)."""


def _netmask(prefix: int) -> str:
    """/PREFIX as a netmask: 24 -> 255.255.255.0."""
    bits = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF
    return ".".join(str((bits >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def _hostmask(prefix: int) -> str:
    """/PREFIX as a hostmask: 24 -> 0.0.0.255."""
    bits = 0xFFFFFFFF >> prefix
    return ".".join(str((bits >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def _network_address(prefix: int) -> str:
    """The addresses of /PREFIX networks with no host bits set."""
    whole, bits = divmod(prefix, 8)
    octets = [OCTET] * whole
    if whole < 4:
        step = 2 ** (8 - bits)
        octets.append("0" if bits == 0 else f"(?:{'|'.join(str(value) for value in range(0, 256, step))})")
        octets += ["0"] * (3 - whole)
    return r"\.".join(octets)


def ipv4_network(max_prefix: int = 32) -> str:
    """An IPv4 network as fields.ipv4_network takes it, with no host bits set and a prefix of at
    most MAX_PREFIX: ``10.0.3.0/24``, or the mask written out (``/255.255.255.0``, ``/0.0.0.255``)."""
    choices = []
    for prefix in range(max_prefix + 1):
        masks = [f"0*{prefix}" if prefix else "0+", re.escape(_netmask(prefix))]
        if 0 < prefix < 32:  # /0's hostmask is /32's netmask and the other way round
            masks.append(re.escape(_hostmask(prefix)))
        choices.append(f"{_network_address(prefix)}/(?:{'|'.join(masks)})")
    return rf"^\s*(?:{'|'.join(choices)})\s*$"


SIZE_TEXT = (
    rf"^\s*(?:{at_least(1024 * 1024)}\s*[bB]?[iI]?[bB]?"
    rf"|{at_least(1024)}\s*[kK][iI]?[bB]?"
    rf"|{at_least(1)}\s*[mMgGtT][iI]?[bB]?)\s*$"
)
"""A docker size of at least 1 MiB (fields.size): bytes, k, m, g or t, an optional i and b, any case."""
