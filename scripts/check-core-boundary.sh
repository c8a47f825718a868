#!/usr/bin/env bash
# vigil-core and vigil-protocol must build without Tauri or any GUI crate, so the runtime
# stays testable headless and a second front end keeps the boundary honest.
set -euo pipefail
bad=0
for crate in vigil-core vigil-protocol; do
  hits=$(cargo tree -p "$crate" -e normal,build --prefix none --format '{p}' 2>/dev/null \
    | grep -Ei '^(tauri|wry|tao|gtk|gdk|webkit2gtk|javascriptcore|soup|cairo|pango)[a-z0-9_-]* ' | sort -u || true)
  if [ -n "$hits" ]; then
    echo "FAIL: $crate depends on GUI crates:"; echo "$hits"; bad=1
  fi
done
[ $bad -eq 0 ] && echo "ok: vigil-core and vigil-protocol have no Tauri/GUI dependency"
exit $bad
