"""Prints the non-local replace directives of a go.mod (given as `go mod edit -json`).

Used by install.sh to repeat pulumi/pkg's replaces in the CLI's wrapper module.
"""

import json
import sys


def main() -> None:
    module = json.load(sys.stdin)
    for replace in module.get("Replace") or []:
        new = replace["New"]
        if new["Path"].startswith((".", "/")):
            continue  # local paths point into pulumi's own repository
        old = replace["Old"]["Path"] + (f"@{replace['Old']['Version']}" if replace["Old"].get("Version") else "")
        print(f"{old}={new['Path']}@{new['Version']}")


if __name__ == "__main__":
    main()
