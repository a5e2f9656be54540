"""`caldera jobtemplate`, as `vcctl jobtemplate` (see `central.vcctl.flow`)."""

from central.vcctl.flow import add_arguments_for, run_for

add_arguments = add_arguments_for("jobtemplate")
run = run_for("jobtemplate")
