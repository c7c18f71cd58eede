# One apt index refresh for every later set-up script (they call apt_install).
apt_install() {
    if [ "${_SBATCH_LSP_APT_UPDATED:-}" != 1 ]; then
        apt-get update -qq
        _SBATCH_LSP_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
