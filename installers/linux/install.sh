#!/bin/sh
# Add NLMeans Studio to this user's application menu and PATH (nothing outside $HOME is touched).
# Run it from the unpacked folder; run it again after moving the folder. Undo: install.sh --remove
set -eu
app=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
entry=$data/applications/nlmeans-studio.desktop
icon=$data/icons/hicolor/256x256/apps/nlmeans-studio.png
link=$HOME/.local/bin/nlmeans-studio
if [ "${1:-}" = "--remove" ]; then
  rm -f "$entry" "$icon" "$link"
  echo "removed the menu entry, the icon and $link; delete $app to remove the program"
  exit 0
fi
mkdir -p "$(dirname "$entry")" "$(dirname "$icon")" "$(dirname "$link")"
sed "s|@APP@|$app|" "$app/nlmeans-studio.desktop" > "$entry"
cp "$app/_internal/nlmeans_studio/resources/icon.png" "$icon"
ln -sf "$app/nlmeans-studio" "$link"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$data/applications" || true
echo "NLMeans Studio is in your application menu; 'nlmeans-studio' runs it from a terminal ($link)"
