#!/bin/sh
# Runs every test (builds first when needed). See README, "Quick start".
exec "$(dirname "$0")/maint/test.sh" "$@"
