"""vcctl-compatible commands (`caldera job|queue|pod|version`): same subcommands and flag letters."""
