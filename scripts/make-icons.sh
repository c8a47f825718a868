#!/usr/bin/env bash
# Regenerates the derived icons from icons/source.png (run by hand after changing it; the
# results are committed, so building never needs ImageMagick):
# - the sizes the desktop's icon theme looks for (hicolor 16…512), bundled into the .deb;
# - the tray icon and its "something needs you" variant (a badge at the top right).
set -euo pipefail
cd "$(dirname "$0")/../icons"
for size in 16 24 48 64 256; do
  convert source.png -resize "${size}x${size}" -depth 8 "PNG32:${size}x${size}.png"
done
convert source.png -resize 64x64 -depth 8 PNG32:tray.png
convert tray.png -fill '#e5484d' -stroke white -strokewidth 3 -draw 'circle 50,14 50,3' -depth 8 PNG32:tray-attention.png
