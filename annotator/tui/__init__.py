"""The Textual annotation app (`mast annotate`): the only package that imports textual.

Screens and widgets draw and map keys; every rule and every read or write goes through
``annotator.annotation``, ``annotator.queue`` and the store, the same functions the CLI uses.
"""
