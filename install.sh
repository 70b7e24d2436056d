#!/bin/sh
# Placeholder until the release issue lands.
echo "install.sh: not implemented yet" >&2
exit 1
