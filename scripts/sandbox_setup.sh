#!/usr/bin/env bash
# Install what the python-grader sandbox (grpo_core/sandbox) needs; idempotent and quiet when done.
#  * bubblewrap (Tier 1) and Debian's python3.11 + venv, from apt only when missing (needs root);
#  * the sandbox interpreter environment: a venv of /usr/bin/python3.11 in a folder every uid can read
#    (/opt/rft-sandbox/py311 as root), because the service's own Python may sit under /root (mode 700) where the
#    unprivileged sandbox uid (65534) cannot execute it. It holds the packages graders commonly import
#    (OpenAI's grader image has numpy, sympy, rapidfuzz, ...). Rebuilt when PACKAGES changes, swapped in whole.
set -euo pipefail

PACKAGES="numpy==2.4.6 sympy==1.14.0 mpmath==1.3.0 rapidfuzz==3.14.6"
if [ "$(id -u)" = 0 ]; then default_env=/opt/rft-sandbox/py311; else default_env="$HOME/.cache/rft-sandbox/py311"; fi
ENV_DIR="${REWARD_SANDBOX_ENV:-$default_env}"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
[ -x /usr/bin/python3.11 ] || need_apt+=(python3.11)
installed python3.11-venv || need_apt+=(python3.11-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "sandbox_setup: missing ${need_apt[*]}; run as root or: sudo apt-get install ${need_apt[*]}" >&2
    exit 1
  fi
  echo "sandbox_setup: installing ${need_apt[*]} from Debian"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

mkdir -p "$(dirname "$ENV_DIR")"
chmod 755 "$(dirname "$ENV_DIR")"
exec 9>"$(dirname "$ENV_DIR")/.setup.lock"
flock 9  # several checkouts may run `make test` on one machine at once
stamp="$ENV_DIR/.rft-sandbox-packages"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$PACKAGES" ] && "$ENV_DIR/bin/python" -I -c 'import numpy, sympy' 2>/dev/null; then
  exit 0
fi

echo "sandbox_setup: building the sandbox Python environment in $ENV_DIR ($PACKAGES)"
umask 022
new="$ENV_DIR.new.$$"
log="$(mktemp)"
trap 'rm -rf "$new" "$log"' EXIT
/usr/bin/python3.11 -m venv "$new"
# Quiet on success; the whole pip log on failure.
if ! "$new/bin/python" -m pip install -q --disable-pip-version-check --no-input $PACKAGES >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
"$new/bin/python" -m pip uninstall -q -y pip setuptools >/dev/null 2>&1 || true
"$new/bin/python" -I -c 'import numpy, sympy, rapidfuzz'
echo "$PACKAGES" >"$new/.rft-sandbox-packages"
chmod -R a+rX "$new"
rm -rf "$ENV_DIR.old"
[ -e "$ENV_DIR" ] && mv "$ENV_DIR" "$ENV_DIR.old"
mv "$new" "$ENV_DIR"
rm -rf "$ENV_DIR.old"
echo "sandbox_setup: ready: $ENV_DIR/bin/python ($("$ENV_DIR/bin/python" -V 2>&1))"
