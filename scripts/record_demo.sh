#!/usr/bin/env bash
# Record a short scripted gputop session as an asciinema cast (make demo).
# Keys go in through tmux, as a person would type them: run, profile, pause,
# help, quit. Play it back with `asciinema play screenshots/demo.cast`.
set -euo pipefail
cast=${1:-screenshots/demo.cast}
gputop=${GPUTOP:-$(pwd)/.venv/bin/gputop}
command -v asciinema >/dev/null || { echo "record_demo: asciinema is not installed (apt-get install asciinema)"; exit 1; }
command -v tmux >/dev/null || { echo "record_demo: tmux is not installed (apt-get install tmux)"; exit 1; }
sock="gputop-demo-$$"
rm -f "$cast"
tmux -L "$sock" new-session -d -x 120 -y 40 \
  "asciinema rec --quiet --overwrite -c '$gputop --device local-task' '$cast'"
step() { sleep "$1"; tmux -L "$sock" send-keys "$2"; }
# Wait for the first calls, then: profile, pause, resume, help, quit.
for _ in $(seq 1 60); do
  tmux -L "$sock" capture-pane -p | grep -Eq "calls [1-9]" && break
  sleep 0.5
done
step 3 p; step 2 space; step 2 space; step 2 '?'; step 3 Escape; step 2 q
for _ in $(seq 1 40); do tmux -L "$sock" has-session 2>/dev/null || break; sleep 0.5; done
tmux -L "$sock" kill-server 2>/dev/null || true
test -s "$cast" && echo "recorded $cast ($(wc -l < "$cast") events)"
