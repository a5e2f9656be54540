"""Resource arithmetic shared by the whole scheduler core."""
