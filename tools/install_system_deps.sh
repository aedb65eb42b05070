#!/usr/bin/env bash
# Installs the Debian packages the project needs when they are missing:
# graphviz (diagram export and server layout), chromium + fonts (viewer tests).
set -euo pipefail
need=()
command -v dot >/dev/null 2>&1 || need+=(graphviz)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need+=(fonts-dejavu-core)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "warning: missing Debian packages (${need[*]}) and no root to install them;" >&2
    echo "         tests that need them will be skipped" >&2
    exit 0
  fi
else
  SUDO=
fi
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
