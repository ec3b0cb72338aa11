"""The ComponentResources, one per step of the write-up, that `components.lab.Lab` wires together."""
