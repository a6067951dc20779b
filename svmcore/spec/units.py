"""Units: one definition of each, so every figure means the same thing everywhere."""

MiB = 2**20


def apart(value: float, other: float) -> tuple[str, str, str]:
    """``value``, ``other`` and ``value - other`` as text (MiB figures) with the fewest
    decimals, up to 2, that tell the two apart: 143.3 against 143 is '143.3', '143.0',
    '0.3', not '143', '143' and '0'."""
    for digits in (0, 1, 2):
        a, b = f"{value:,.{digits}f}", f"{other:,.{digits}f}"
        if a != b:
            break
    return a, b, f"{value - other:,.{digits}f}"
