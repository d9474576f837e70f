"""Recrawl maths (pure): change-rate estimators, revisit policies, freshness and age.

``estimate`` turns a page's visit history into a change rate; ``policy`` turns rates, importance
and a fetch budget into revisit frequencies; ``freshness`` scores a fetch schedule against a change
log and simulates the policies side by side. docs/recrawl.md has the formulas and the figures.
"""
