"""Starting the dynamic provider while the program is still being read.

Every RemoteScript is served by one Python process that the engine launches only when the
first of them registers, and the Python SDK sends registrations only after the whole program
has run: the provider's ~0.3 s of start-up (its interpreter importing the SDK) then comes
after the program's own imports and configuration, on every `preview`, `up` and argument
change. Asking the engine for any function of the dynamic provider loads that provider at
once, so a thread asks before the program reads the rest; the dynamic provider answers every
function with "not implemented", which is expected and dropped.
"""

from __future__ import annotations

import threading

import grpc
from pulumi.runtime import settings
from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

# No such function exists: the dynamic provider has none. Asking is what loads it.
START_TOKEN = "pulumi-python:dynamic:start"


def _ask_dynamic_provider(monitor: resource_pb2_grpc.ResourceMonitorStub) -> None:
    try:
        monitor.Invoke(resource_pb2.ResourceInvokeRequest(tok=START_TOKEN))
    except grpc.RpcError:
        pass  # "Invoke is not implemented by the dynamic provider": it has started


def start_dynamic_provider() -> None:
    """Has the engine launch the dynamic provider now, in the background; does nothing outside
    an engine run (no monitor, or the mocks of unit tests)."""
    monitor = settings.get_monitor()
    if isinstance(monitor, resource_pb2_grpc.ResourceMonitorStub):
        threading.Thread(target=_ask_dynamic_provider, args=(monitor,), name="dslab-provider-start", daemon=True).start()
