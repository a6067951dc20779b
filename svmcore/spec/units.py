"""Units: one definition of each, so every figure means the same thing everywhere."""

MiB = 2**20
