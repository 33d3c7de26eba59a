"""fscontrol: a fair-share control agent for Slurm clusters that run classic fair-share."""

__version__ = "0.1.0"
