"""Volcano's own end-to-end suites, built from its repository and run against Caldera (and,
for comparison, against Volcano itself) on a `caldera up` control plane."""
