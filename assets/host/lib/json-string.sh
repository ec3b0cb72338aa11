# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/json-string.sh` (components/hosts/host_script.py).

# TEXT as a JSON string, quotes included, for a result line built with printf: backslashes
# and quotes escaped, control characters (a training log's carriage returns and colour
# escapes) dropped, since JSON allows none of them raw.
json_string() {
  local text
  text=$(printf '%s' "$1" | tr -d '\000-\037\177')
  text=${text//\\/\\\\}
  text=${text//\"/\\\"}
  printf '"%s"' "$text"
}
