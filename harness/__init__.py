"""Runs the project's own Pulumi CLI on copies of the project, against state directories of
their own: what the end-to-end tests and the bench both drive stacks with."""
