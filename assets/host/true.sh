#!/usr/bin/env bash
# Does nothing: for resources whose work is all in their delete script.
exit 0
