"""What a run is: the knob registry, the validated config, errors, event kinds, scores.

Rule: imports nothing from svmcore outside ``spec`` and nothing heavier than numpy;
every other layer may import it.
"""
