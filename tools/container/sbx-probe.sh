#!/bin/sh
# The pod's probes (deploy/kubernetes/), installed in the image as /usr/local/bin/sbx-probe:
# GET /v1/health on 127.0.0.1:PORT with the token from the Secret's file, which an httpGet
# probe cannot send. `live` passes while the server answers; `ready` while it answers "ok" (a
# draining server is alive but takes no new sessions). Usage: sbx-probe live|ready PORT
mode=$1
port=$2
case $mode in live | ready) ;; *) echo "usage: sbx-probe live|ready PORT" >&2; exit 2 ;; esac
token=$(cat /var/run/secrets/sbx/token) || exit 1
body=$(wget -q -O- --header "X-Sbx-Token: $token" "http://127.0.0.1:$port/v1/health") || exit 1
[ "$mode" = live ] || echo "$body" | grep -q '"status": *"ok"'
