"""`make bench`: the lifecycle and the training network, measured on the simulated hosts."""
