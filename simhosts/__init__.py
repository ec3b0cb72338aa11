"""The host simulator: Docker "host" containers that behave like GPU-less servers.

A development and demo tool, separate from the Pulumi program it serves.
"""
