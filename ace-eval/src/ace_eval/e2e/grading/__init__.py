"""Grading a run against the gold: the grader's verdict as data, and whether a skill names what went wrong."""
