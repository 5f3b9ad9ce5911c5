"""Talking to an Iris controller."""
