#!/usr/bin/env bash
# Installs the .deb that `make bundle` built, as a user would (apt-get install ./…deb), then
# starts the installed /usr/bin/vigil under Xvfb with a fresh home and data directory and
# checks that its window comes up. Prints the .deb's size and the time to a visible window,
# and saves a screenshot as tests/artifacts/bundle-installed.png. The package stays
# installed (remove it with `apt-get remove -y vigil`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ "${1:-}" != "--inside" ]; then
  deb=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/bundle/deb/*.deb 2>/dev/null | head -1 || true)
  [ -n "$deb" ] || { echo "no .deb found: run \`make bundle\` first" >&2; exit 1; }
  deb=$(realpath "$deb")
  echo "== installing $deb"
  apt-get install -y --no-install-recommends "$deb" >/tmp/vigil-bundle-install.log 2>&1 \
    || { cat /tmp/vigil-bundle-install.log >&2; exit 1; }
  echo "== package contents"
  dpkg -L vigil | while read -r f; do [ -f "$f" ] && echo "  $f"; done
  test -x /usr/bin/vigil
  test -x /usr/bin/vigil-sandbox # the sandbox's zygote, found beside the app
  desktop=$(dpkg -L vigil | grep '\.desktop$' | head -1)
  grep -q '^Exec=vigil' "$desktop" || { echo "the desktop entry does not start vigil" >&2; cat "$desktop" >&2; exit 1; }
  grep -q '^Icon=vigil' "$desktop"
  printf '== .deb size: %s bytes (%s MiB); installed size: %s KiB\n' "$(stat -c %s "$deb")" \
    "$(awk -v b="$(stat -c %s "$deb")" 'BEGIN { printf "%.1f", b / 1048576 }')" \
    "$(dpkg-query -W -f='${Installed-Size}' vigil)"
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$0" --inside
fi

scratch=$(mktemp -d /tmp/vigil-bundle-test-XXXXXX)
mkdir -p "$scratch/home"
export HOME="$scratch/home" VIGIL_DATA_DIR="$scratch/data" VIGIL_NO_KEYRING=1
start=$(date +%s%N)
/usr/bin/vigil >"$scratch/vigil.log" 2>&1 &
pid=$!
window=""
for _ in $(seq 1 300); do
  window=$(xdotool search --onlyvisible --name '^Vigil$' 2>/dev/null | head -1 || true)
  [ -n "$window" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.02
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ -z "$window" ]; then
  echo "FAIL: no Vigil window within 6 s" >&2
  cat "$scratch/vigil.log" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
fi
echo "== the installed Vigil showed its window after ${ms} ms"
# Give the web view time to paint before the screenshot.
sleep 2
mkdir -p "$ROOT/tests/artifacts"
import -window root "$ROOT/tests/artifacts/bundle-installed.png"
kill "$pid"
wait "$pid" 2>/dev/null || true
pkill -x dunst 2>/dev/null || true
echo "bundle-test: passed"
