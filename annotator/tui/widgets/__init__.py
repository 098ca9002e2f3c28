"""Widgets of the annotation app: the step list, the step view and the taxonomy panel."""
