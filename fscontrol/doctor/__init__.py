"""`fscontrol doctor`: the rules (checks.py) over what fscontrol.slurm.survey reads."""
