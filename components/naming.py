"""The one type-token prefix of our components: `dslab:index:<Noun>`."""

PACKAGE = "dslab"


def component_type(noun: str) -> str:
    """`dslab:index:Swarm` for `Swarm`."""
    return f"{PACKAGE}:index:{noun}"
