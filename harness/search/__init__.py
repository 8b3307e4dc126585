"""Searches over plans: the bisection algorithm (`bisection`), running a bisect
(`bisect`) and a sweep (`sweep`), both measuring plans K trials at a time (`measure`)."""
