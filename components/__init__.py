"""Pulumi components and the pure helpers they are built from."""
