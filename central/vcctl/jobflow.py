"""`caldera jobflow`, as `vcctl jobflow` (see `central.vcctl.flow`)."""

from central.vcctl.flow import add_arguments_for, run_for

add_arguments = add_arguments_for("jobflow")
run = run_for("jobflow")
