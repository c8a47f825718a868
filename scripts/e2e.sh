#!/usr/bin/env bash
# Runs the end-to-end tests inside a virtual display and a private D-Bus session, where
# dunst (started by D-Bus activation) draws notifications as a desktop would.
set -uo pipefail
cd "$(dirname "$0")/.."
# With file arguments, runs those; without, every tests/e2e/*.test.mjs except the load test,
# whose frame-gap bounds are timings (`make test-load` runs it on its own).
if [ "${1:-}" != "--inside" ]; then
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$0" --inside "$@"
fi
shift
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(ls tests/e2e/*.test.mjs | grep -v '/load\.test\.mjs$')
fi
# A hung WebDriver session must fail the run, not stall CI for its whole limit.
timeout 1500 node --test --test-concurrency=1 "${files[@]}" 2> >(grep -v -e 'Failed to set fd limit' >&2)
rc=$?
# Stop this bus's notification daemon before the bus goes away, so it does not complain
# after the results; only ours (by the pid that owns the name here), never another run's.
daemon=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
  org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.Notifications 2>/dev/null |
  awk '/uint32/ { print $2 }')
[ -n "$daemon" ] && kill "$daemon" 2>/dev/null
sleep 0.2
exit $rc
