#!/usr/bin/env bash
# Makes sure a headless Chromium is on PATH for the browser test of tests/viz/test_viz.py,
# which CI must run rather than skip. Idempotent: does nothing when one is found.
# Installs Debian's `chromium` with apt-get when running as root (or with sudo) and
# apt-get is there; otherwise says what to install and leaves the test to skip.
set -euo pipefail

for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then
        echo "ensure_chromium: found $(command -v "$name")"
        exit 0
    fi
done

if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: no chromium on PATH and no apt-get; install chromium to run the browser test" >&2
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "ensure_chromium: no chromium on PATH and not root; run: sudo apt-get install chromium" >&2
    exit 0
fi

echo "ensure_chromium: installing chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
${sudo[@]+"${sudo[@]}"} apt-get update -qq
${sudo[@]+"${sudo[@]}"} apt-get install -y -qq chromium >/dev/null
echo "ensure_chromium: installed $(command -v chromium)"
