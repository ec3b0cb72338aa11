"""`steps` RemoteScripts on this machine that each wait `seconds`: the start times they
report show how many the dynamic provider runs at the same time."""

from pathlib import Path

import pulumi

from components.remote_script import RemoteScript, script_call

SCRIPTS = Path(__file__).resolve().parent / "scripts"
config = pulumi.Config()
steps = [
    RemoteScript(f"step-{index}", label=f"step {index}", connection=None,
                 create=script_call(str(SCRIPTS / "wait.sh"), config.require("seconds")))
    for index in range(config.require_int("steps"))
]  # fmt: skip
pulumi.export("started", [step.result["started"] for step in steps])
