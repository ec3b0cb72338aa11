"""Reaching the hosts: the operator's credentials, each host's engine, the step scripts' Commands, the probe."""
