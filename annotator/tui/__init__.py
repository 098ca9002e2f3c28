"""The Textual annotation app (`mast annotate`): the only package that imports textual.

Screens and widgets draw and map keys; every rule and every read or write goes through
``annotator.annotating`` (the session, the queue, compare). Of the store the app only opens the
database and watches its ``data_version``.
"""
