"""Screens of the annotation app: queue, replay, compare, and the modals they open."""
