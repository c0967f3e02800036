#!/bin/sh
# Regenerates the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
autoreconf --force --install --verbose
