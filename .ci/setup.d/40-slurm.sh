# The slurm tier (tests/slurm): Debian's Slurm 22.05 daemons and clients, iproute2 and
# util-linux for the network namespaces each node lives in, and PyTorch's CPU build for the
# tiny distributed entry point the jobs run. Auth is auth/none, so no munged is started.
apt_install slurm-wlm slurmctld slurmd slurm-client iproute2 util-linux
# The CPU-only wheel, pinned by its local version label so a CUDA build (several GB) can never
# be taken instead: this machine kind keeps torch-2.13.0+cpu on disk where pip finds it.
if ! .venv/bin/python -c 'import torch, sys; sys.exit(torch.version.cuda is not None)' 2>/dev/null; then
    .venv/bin/pip install -q 'torch==2.13.0+cpu'
fi
.venv/bin/python -c 'import torch; assert torch.version.cuda is None, torch.version.cuda; print("torch", torch.__version__)'
