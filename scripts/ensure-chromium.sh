#!/usr/bin/env bash
# Makes sure the Chromium that the browser test drives is here: Debian's `chromium` package,
# installed (quietly) when /usr/bin/chromium is missing and MAINLINE_CHROMIUM names no other one.
# Needs root or sudo; without them it says what to install, and the browser test fails saying so.
set -u
if [ -n "${MAINLINE_CHROMIUM:-}" ] && [ -x "$MAINLINE_CHROMIUM" ]; then exit 0; fi
[ -x /usr/bin/chromium ] && exit 0
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo)
  else
    echo "Chromium is missing: install Debian's chromium package (apt-get install chromium) for the browser test." >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is missing and there is no apt-get: set MAINLINE_CHROMIUM to a Chromium for the browser test." >&2
  exit 1
fi
echo "== installing chromium (Debian's package) for the browser test ==" >&2
log=$(mktemp)
if { "${sudo[@]}" apt-get update -qq &&
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$log" 2>&1; then
  rm -f "$log"
  exit 0
fi
tail -n 20 "$log" >&2
rm -f "$log"
echo "Could not install chromium: the browser test will fail." >&2
exit 1
