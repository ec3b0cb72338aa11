"""Reads for `read_seconds` (as the lab program reads its imports and configuration), then
declares one RemoteScript on this machine, which reports when the process serving it (the
dynamic provider) started. Times are seconds since boot, the clock of /proc."""

import time
from pathlib import Path

import pulumi

from components.provider_start import start_dynamic_provider
from components.remote_script import RemoteScript, script_call

config = pulumi.Config()
if config.require_bool("start_early"):
    start_dynamic_provider()
reading_started = float(Path("/proc/uptime").read_text().split()[0])
time.sleep(config.require_float("read_seconds"))
step = RemoteScript("step", label="provider start", connection=None,
                    create=script_call(str(Path(__file__).resolve().parent / "scripts" / "provider-started.sh")))  # fmt: skip
pulumi.export("reading_started", reading_started)
pulumi.export("provider_started", step.result["provider_started"])
