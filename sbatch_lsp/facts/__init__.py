"""Facts: what every rule reads (DESIGN.md "Facts").

The package holds typed facts about one job, computed from the directives and the shell model:
``wrappers`` (the one wrapper table), ``values`` (abstract values with their scope and where
they are evaluated), ``layout`` (each srun step's effective layout and task placement, per
heterogeneous-job component), ``steps`` (the process tree per srun step: layout, GPUs,
container, launcher, world size, the environment that reaches its tasks), ``control`` (which
tasks run each command, background jobs and their waits, pipelines, ``set -e``, traps) and
``show`` (the ``sbatch-lint show`` face). Import the submodules directly; this module imports nothing so that
the readers below it (``launchers``, ``job``) can use the wrapper table without a cycle.
"""
