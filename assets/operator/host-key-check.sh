#!/bin/sh
# ssh's KnownHostsCommand on every connection pulumi-docker opens to a host
# (components/hosts/engines.py). ssh runs it with the key the server offered, before it compares
# that key with known_hosts. When the file holds another key of that type for this host, it
# prints the line that names the host, the cause and the command that accepts the new key
# (components/hosts/unreachable.py) and fails, so the connection ends there: that line comes
# first in ssh's stderr, which pulumi-docker quotes, instead of ssh's banner. It prints no key:
# known_hosts stays the only source of trust. POSIX sh, not bash: it runs on every connection.
# Usage: host-key-check.sh REASON KEY_TYPE KEY KNOWN_HOSTS_PATH NAME ADDRESS PORT
#   REASON, KEY_TYPE, KEY: ssh's %I, %t and %K tokens.
reason=$1 key_type=$2 key=$3 known_hosts=$4 name=$5 address=$6 port=$7
# ORDER (choosing algorithms) comes before any key is offered; ADDRESS is CheckHostIP's.
[ "$reason" = HOSTNAME ] || exit 0
# A literal "~/" from the stack file: ssh expands it in UserKnownHostsFile, ssh-keygen would not.
# shellcheck disable=SC2088
case $known_hosts in
  "~/"*) file=$HOME/${known_hosts#"~/"} ;;
  *) file=$known_hosts ;;
esac
entry=$address
[ "$port" = 22 ] || entry="[$address]:$port"
known=$(ssh-keygen -F "$entry" -f "$file" 2>/dev/null | grep -v '^#')
case $known in
  # Unknown host: ssh refuses it itself (StrictHostKeyChecking), and the probe names it.
  "") exit 0 ;;
  *" $key_type $key"*) exit 0 ;;
  # Another key of the same type is a changed key; keys of other types only are ssh's to judge.
  *" $key_type "*) ;;
  *) exit 0 ;;
esac
.venv/bin/python -I -S components/hosts/ssh_gate.py key-changed "$name" "$address" "$port" "$known_hosts"
exit 1
