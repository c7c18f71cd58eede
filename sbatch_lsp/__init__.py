"""sbatch-lsp: a linter and language server for Slurm batch scripts."""
__version__ = "0.1.0"
